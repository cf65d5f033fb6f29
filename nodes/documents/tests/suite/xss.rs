//! The Markdown preview against an XSS corpus: each payload is rendered, sanitised, parsed
//! with an HTML5 parser (html5ever via scraper), and the resulting DOM is searched for anything
//! executable.

use cheng_nodes_documents::preview::sanitize::markdown_to_safe_html;
use cheng_nodes_documents::preview::{bound, Operation};
use scraper::{Html, Node};

const PAYLOADS: &[&str] = &[
    // Raw HTML.
    "<script>alert(1)</script>",
    "<SCRIPT SRC=//evil.example/x.js></SCRIPT>",
    "<scr<script>ipt>alert(1)</script>",
    "<style>body{background:url(javascript:alert(1))}</style>",
    "<img src=x onerror=alert(1)>",
    "<img src=\"x\" ONERROR=\"alert(1)\">",
    "<body onload=alert(1)>",
    "<iframe src=\"https://evil.example\"></iframe>",
    "<iframe srcdoc=\"<script>alert(1)</script>\"></iframe>",
    "<object data=\"evil.swf\"></object>",
    "<embed src=\"evil.swf\">",
    "<form action=\"https://evil.example\"><input name=p><button>go</button></form>",
    "<a href=\"javascript:alert(1)\">x</a>",
    "<a href=\"JaVaScRiPt:alert(1)\">x</a>",
    "<a href=\"  javascript:alert(1)\">x</a>",
    "<a href=\"vbscript:msgbox(1)\">x</a>",
    "<a href=\"data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==\">x</a>",
    "<img src=\"data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+\">",
    "<div style=\"background:url(javascript:alert(1))\">x</div>",
    "<meta http-equiv=\"refresh\" content=\"0;url=javascript:alert(1)\">",
    "<base href=\"javascript:alert(1)//\">",
    "<link rel=stylesheet href=\"javascript:alert(1)\">",
    "<details open ontoggle=alert(1)>x</details>",
    "<video><source onerror=alert(1)></video>",
    "<a href=\"https://ok.example\" onclick=\"alert(1)\">x</a>",
    "<p onmouseover=alert(1)>hover</p>",
    "<!--<img src=x onerror=alert(1)>-->",
    "<noscript><p title=\"</noscript><img src=x onerror=alert(1)>\"></noscript>",
    "<template><script>alert(1)</script></template>",
    "<input autofocus onfocus=alert(1)>",
    "<textarea><script>alert(1)</script></textarea>",
    // Entity-encoded and split schemes.
    "<a href=\"&#106;&#97;&#118;&#97;&#115;&#99;&#114;&#105;&#112;&#116;&#58;alert(1)\">x</a>",
    "<a href=\"&#x6A;avascript&#x3A;alert(1)\">x</a>",
    "<a href=\"java\tscript:alert(1)\">x</a>",
    "<a href=\"java&#x09;script:alert(1)\">x</a>",
    "<a href=\"java\nscript:alert(1)\">x</a>",
    "<a href=\"java&NewLine;script:alert(1)\">x</a>",
    "<a href=\"&#0000106&#0000097vascript:alert(1)\">x</a>",
    // SVG and MathML.
    "<svg onload=alert(1)></svg>",
    "<svg><script>alert(1)</script></svg>",
    "<svg><a xlink:href=\"javascript:alert(1)\"><text y=20>x</text></a></svg>",
    "<svg><animate onbegin=alert(1) attributeName=x dur=1s>",
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)></style></mglyph></table></mtext></math>",
    "<math href=\"javascript:alert(1)\">x</math>",
    "<svg><foreignObject><iframe src=javascript:alert(1)></iframe></foreignObject></svg>",
    // Markdown link and image syntax.
    "[x](javascript:alert(1))",
    "[x](JAVASCRIPT:alert(1))",
    "[x](<javascript:alert(1)>)",
    "[x](javascript&#58;alert(1))",
    "[x](java%09script:alert(1))",
    "[x](vbscript:msgbox(1))",
    "[x](data:text/html,<script>alert(1)</script>)",
    "![x](javascript:alert(1))",
    "![x](data:image/svg+xml,<svg onload=alert(1)>)",
    "![x\" onerror=\"alert(1)](x.png)",
    "[x](https://ok.example \"title\\\" onmouseover=\\\"alert(1)\")",
    "[x][r]\n\n[r]: javascript:alert(1)",
    "[x](#\"onmouseover=\"alert(1))",
    // Autolinks.
    "<javascript:alert(1)>",
    "<vbscript:msgbox(1)>",
    "<data:text/html,alert(1)>",
    "<JaVaScRiPt:alert(1)>",
    // Mixed Markdown and HTML.
    "# Heading <img src=x onerror=alert(1)>",
    "- [ ] <script>alert(1)</script>",
    "| a |\n|---|\n| <img src=x onerror=alert(1)> |",
    "`<script>` is code, <script>alert(1)</script> is not",
    "```html\n<script>alert(1)</script>\n```",
    "## Title {#x onclick=alert(1)}",
    "<a href=\"//evil.example\" target=\"_blank\">protocol-relative</a>",
    // OWASP filter-evasion classics not covered above.
    "<a href=\"&#x6A;avascript:alert(1)\">x</a>",
    "<IMG SRC=JaVaScRiPt:alert(1)>",
    "<IMG SRC=`javascript:alert(1)`>",
    "<IMG SRC=\"jav&#x0A;ascript:alert(1);\">",
    "<IMG SRC=\"jav&#x0D;ascript:alert(1);\">",
    "<IMG SRC=\" &#14;  javascript:alert(1);\">",
    "<a href=\"javascript&colon;alert(1)\">x</a>",
    "<a href=\"javas&#99;ript:alert(1)\">x</a>",
    "<a href=\"\u{1}javascript:alert(1)\">x</a>",
    "<img srcset=\"javascript:alert(1) 1x\">",
    "<img src=x:alert(alt) onerror=eval(src) alt=0>",
    "<button formaction=\"javascript:alert(1)\">x</button>",
    "<input type=\"image\" formaction=\"javascript:alert(1)\" src=x>",
    "<object data=\"javascript:alert(1)\"></object>",
    "<isindex action=\"javascript:alert(1)\" type=image>",
    "<div style=\"width: expression(alert(1))\">x</div>",
    "<span style=\"background-image: url(javascript:alert(1))\">x</span>",
    "<svg><use href=\"data:image/svg+xml,&lt;svg id='x' xmlns='http://www.w3.org/2000/svg'&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;/svg&gt;#x\"></use></svg>",
    "<math><maction actiontype=\"statusline\" xlink:href=\"javascript:alert(1)\">x</maction></math>",
    "<a href=\"https://ok.example\" id=\"location\" name=\"cookie\">clobber</a>",
    "<img name=\"getElementById\" src=\"x.png\" alt=\"x\">",
    "<form id=\"test\"><input name=\"attributes\"></form>",
    "# Heading {#__proto__}",
    "[x](&#x6A;avascript:alert(1))",
    "![x](&#106;avascript:alert(1))",
    "[x]( javascript:alert(1) )",
    "<https://ok.example/\"onmouseover=\"alert(1)>",
    "<a href=\"https://ok.example\" target=\"_blank\">tabnabbing</a>",
];

/// Elements whose presence is a failure whatever their attributes.
const FORBIDDEN: &[&str] = &[
    "script", "style", "iframe", "object", "embed", "form", "svg", "math", "base", "meta", "link",
    "frame", "frameset", "textarea", "button", "select", "video", "audio", "source", "template",
    "noscript",
];
/// Attributes carrying URLs.
const URL_ATTRIBUTES: &[&str] = &[
    "href",
    "src",
    "action",
    "formaction",
    "xlink:href",
    "srcset",
    "background",
    "poster",
    "data",
    "cite",
];

fn assert_safe(payload: &str, html: &str) {
    let doc = Html::parse_fragment(html);
    for node in doc.tree.nodes() {
        let Node::Element(el) = node.value() else {
            continue;
        };
        let name = el.name();
        assert!(
            !FORBIDDEN.contains(&name),
            "payload {payload:?} left <{name}> in {html}"
        );
        for (attr, value) in el.attrs() {
            let attr = attr.to_ascii_lowercase();
            // DOM clobbering: ids only with GitHub's prefix, never `name`.
            assert_ne!(attr, "name", "payload {payload:?} left name= in {html}");
            if attr == "id" {
                assert!(
                    value.starts_with("user-content-"),
                    "payload {payload:?} left id={value:?} in {html}"
                );
            }
            assert!(
                !["srcdoc", "formaction", "action"].contains(&attr.as_str()),
                "payload {payload:?} left {attr}= in {html}"
            );
            assert!(
                !attr.starts_with("on"),
                "payload {payload:?} left {attr}= in {html}"
            );
            assert_ne!(attr, "style", "payload {payload:?} left style= in {html}");
            if URL_ATTRIBUTES.contains(&attr.as_str()) {
                // What a browser would see: entities are already decoded by the parser; it also
                // strips ASCII tab/newline and leading control characters before the scheme.
                let squashed: String = value
                    .chars()
                    .filter(|c| !c.is_ascii_whitespace() && !c.is_control())
                    .collect();
                let lower = squashed.to_ascii_lowercase();
                for scheme in ["javascript:", "vbscript:", "data:"] {
                    assert!(
                        !lower.starts_with(scheme),
                        "payload {payload:?} left {attr}={value:?} in {html}"
                    );
                }
            }
        }
        if name == "a" && el.attr("href").is_some() {
            assert_eq!(
                el.attr("rel"),
                Some("noopener noreferrer"),
                "payload {payload:?}: link without rel in {html}"
            );
        }
        if name == "input" {
            assert_eq!(
                el.attr("type"),
                Some("checkbox"),
                "payload {payload:?}: {html}"
            );
            assert!(el.attr("disabled").is_some(), "payload {payload:?}: {html}");
        }
    }
}

#[test]
fn corpus_has_at_least_forty_payloads() {
    assert!(PAYLOADS.len() >= 40, "{}", PAYLOADS.len());
}

#[test]
fn no_payload_survives_sanitising() {
    for payload in PAYLOADS {
        let html = markdown_to_safe_html(payload);
        assert_safe(payload, &html);
        // The same payload inside a list and a blockquote.
        for wrapped in [
            format!("- {payload}"),
            format!("> {payload}"),
            format!("text\n\n{payload}\n\ntext"),
        ] {
            assert_safe(&wrapped, &markdown_to_safe_html(&wrapped));
        }
    }
}

#[test]
fn the_checker_itself_catches_an_unsanitised_payload() {
    // Guard against a vacuous test: raw rendering of the corpus must trip the checks.
    let raw =
        cheng_nodes_documents::preview::sanitize::render_markdown("<img src=x onerror=alert(1)>");
    let caught = std::panic::catch_unwind(|| assert_safe("raw", &raw));
    assert!(caught.is_err(), "the DOM check missed {raw}");
    // The clobbering checks too: an un-prefixed id, a name.
    for raw in [
        "<p id=\"location\">x</p>",
        "<img name=\"cookie\" src=\"x.png\" alt=\"x\">",
    ] {
        let caught = std::panic::catch_unwind(|| assert_safe("raw", raw));
        assert!(caught.is_err(), "the DOM check missed {raw}");
    }
}

#[test]
fn truncation_cannot_splice_a_payload_together() {
    // Text that contains attribute-like quotes, cut at every size: the spliced head+tail is
    // sanitised again, so nothing executable can appear at the seam.
    let markdown = format!(
        "[link](https://ok.example \"t\")\n\n{}\n\n\" onmouseover=\"alert(1)\" x=\"\n\n<img src=\"a.png\" alt=\"{}\">\n",
        "filler ".repeat(40),
        "\" onerror=\"alert(1)".repeat(3)
    );
    let html = markdown_to_safe_html(&markdown);
    for cap in (20..html.len()).step_by(7) {
        let (preview, truncated) = bound(Operation::Markdown, &html, cap);
        assert!(truncated);
        // The cap includes the omission marker.
        assert!(preview.len() <= cap, "cap {cap}: {} bytes", preview.len());
        assert_safe(&format!("cut at {cap}"), &preview);
    }
}

#[test]
fn table_alignment_styles_cannot_carry_css() {
    // GFM alignment is the one style ammonia keeps (td `text-align`); nothing else may ride along.
    let payloads = [
        "| a |\n|:-:|\n| <td style=\"text-align:center;background:url(javascript:alert(1))\">x</td> |",
        "<table><tr><td style=\"text-align: left; width: expression(alert(1))\">x</td></tr></table>",
        "<table><tr><td style=\"background-image:url(javascript:alert(1))\">x</td></tr></table>",
        "| a | b |\n|:--|--:|\n| 1 | 2 |",
    ];
    for payload in payloads {
        let html = markdown_to_safe_html(payload);
        let doc = Html::parse_fragment(&html);
        for node in doc.tree.nodes() {
            let Node::Element(el) = node.value() else {
                continue;
            };
            if let Some(style) = el.attr("style") {
                assert!(
                    matches!(el.name(), "td" | "th"),
                    "{payload:?}: style on <{}> in {html}",
                    el.name()
                );
                let lower = style.to_ascii_lowercase();
                for bad in [
                    "url(",
                    "expression(",
                    "javascript",
                    "background",
                    "width",
                    ";",
                ] {
                    assert!(
                        !lower.contains(bad),
                        "{payload:?}: {bad} in style {style:?}"
                    );
                }
                // ammonia may leave an empty `style=""` once every property is filtered out.
                assert!(
                    lower.trim().is_empty() || lower.trim_start().starts_with("text-align"),
                    "{payload:?}: style {style:?}"
                );
            }
        }
        assert_safe_except_style(payload, &html);
    }
}

/// [`assert_safe`] without the blanket ban on `style` (checked precisely by the caller).
fn assert_safe_except_style(payload: &str, html: &str) {
    let stripped = Html::parse_fragment(html);
    let mut copy = html.to_string();
    for node in stripped.tree.nodes() {
        if let Node::Element(el) = node.value() {
            if let Some(style) = el.attr("style") {
                copy = copy.replace(&format!(" style=\"{style}\""), "");
            }
        }
    }
    assert_safe(payload, &copy);
}
