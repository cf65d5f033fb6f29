use super::*;

/// A long line is one text event; it goes to the writer in pieces, so the rendering's
/// tail can still be cut at one of them (one event would keep the whole line in the tail).
#[test]
fn a_long_line_is_handed_out_in_pieces_the_ends_can_cut() {
    let keep = 1000;
    for line in ["a".repeat(100_000), "é ".repeat(50_000)] {
        let kept = render_markdown_kept(&line, keep, || Ok::<(), ()>(()));
        let Ok(MarkdownHtml {
            html,
            cut: Some(cut),
            ..
        }) = kept
        else {
            panic!("not cut");
        };
        assert!(
            cut.tail.len() <= 2 * keep + JOINED_TEXT_BYTES,
            "tail of {}",
            cut.tail.len()
        );
        let whole = render_markdown(&line);
        assert!(whole.starts_with(&html) && whole.ends_with(&cut.tail));
        assert_eq!(html.len() + cut.omitted + cut.tail.len(), whole.len());
    }
}

#[test]
fn texts_joined_into_one_event_render_as_they_came() {
    let brackets = "[a](".repeat(3000);
    for markdown in [
        brackets.as_str(),
        "a *b* c `d` e\\*f &amp; g\nh  \ni [x] y [z",
        "> q [r\n\n| a | [b |\n|---|---|\n| c | d] |\n",
        "```\nx < y\n[z\n```\n\n![alt [ text](u) after [ ]\n\n- [ ] [t\n",
    ] {
        let mut plain = String::new();
        pulldown_cmark::html::push_html(
            &mut plain,
            pulldown_cmark::Parser::new_ext(markdown, options()),
        );
        assert_eq!(render_markdown(markdown), plain, "{markdown:?}");
    }
    // The run is handed to the writer as a few events, not three per four bytes.
    let boundary = Cell::new(false);
    let mut check = || Ok::<(), ()>(());
    let bounded = Bounded::new(&brackets);
    let events = Events {
        parser: pulldown_cmark::Parser::new_ext(&brackets, options()),
        source: &brackets,
        bounded: &bounded,
        after_text: false,
        queue: VecDeque::new(),
        explicit_ids_known: true,
        slugger: Slugger::default(),
        depth: 0,
        flattened: 0,
        raw_html: false,
        events: 0,
        check: &mut check,
        stop: None,
        boundary: &boundary,
        images: 0,
    };
    assert!(events.count() <= 3 + brackets.len().div_ceil(JOINED_TEXT_BYTES));
}

#[test]
fn scripts_and_handlers_go_links_get_rel() {
    let html = markdown_to_safe_html("# T\n\n<script>alert(1)</script>\n\n[x](javascript:alert(1)) [y](https://e.example) <img src=x onerror=alert(1)>\n");
    assert!(!html.contains("script"), "{html}");
    assert!(!html.contains("onerror"), "{html}");
    assert!(!html.contains("javascript"), "{html}");
    assert!(html.contains(r#"rel="noopener noreferrer""#), "{html}");
}

#[test]
fn headings_carry_prefixed_github_ids() {
    let html = markdown_to_safe_html("# Hello, World!\n\n## Hello, World!\n\n## Custom {#mine}\n\n## ???\n\n<h2 id=\"location\">raw</h2>\n");
    assert!(
        html.contains(r#"<h1 id="user-content-hello-world">"#),
        "{html}"
    );
    assert!(
        html.contains(r#"<h2 id="user-content-hello-world-1">"#),
        "{html}"
    );
    assert!(html.contains(r#"<h2 id="user-content-mine">"#), "{html}");
    assert!(
        html.contains("<h2>???</h2>"),
        "an empty anchor gives no id: {html}"
    );
    assert!(
        html.contains(r#"<h2 id="user-content-location">raw</h2>"#),
        "{html}"
    );
}

#[test]
fn task_lists_survive_as_disabled_checkboxes() {
    let html = markdown_to_safe_html("- [x] done\n");
    assert!(
        html.contains("checkbox") && html.contains("disabled"),
        "{html}"
    );
}
