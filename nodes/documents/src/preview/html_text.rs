//! HTML → a bounded text summary: title, headings, readable text (scripts, styles and other
//! non-content dropped, whitespace collapsed) and the link list.

use scraper::{Html, Node};

/// Most headings and links listed; text is bounded by the caller's byte cap.
pub const MAX_HEADINGS: usize = 200;
pub const MAX_LINKS: usize = 500;
const MAX_TITLE_CHARS: usize = 300;

#[derive(Debug, Default, Clone, PartialEq)]
pub struct Summary {
    pub title: Option<String>,
    pub headings: Vec<(u8, String)>,
    pub text: String,
    pub links: Vec<(String, String)>,
    pub total_headings: usize,
    pub total_links: usize,
}

/// Elements whose content is never readable text.
fn skipped(name: &str) -> bool {
    matches!(
        name,
        "script" | "style" | "noscript" | "template" | "head" | "svg" | "math" | "iframe" | "object" | "embed" | "canvas" | "select" | "button"
    )
}

/// Elements that start a new line of text.
fn block(name: &str) -> bool {
    matches!(
        name,
        "p" | "div" | "br" | "li" | "ul" | "ol" | "tr" | "table" | "section" | "article" | "header" | "footer" | "nav" | "aside"
            | "main" | "blockquote" | "pre" | "hr" | "dd" | "dt" | "dl" | "figure" | "figcaption" | "form" | "h1" | "h2" | "h3"
            | "h4" | "h5" | "h6" | "details" | "summary" | "body" | "html" | "td" | "th"
    )
}

pub fn summarize(source: &str) -> Summary {
    let html = Html::parse_document(source);
    let mut summary = Summary::default();
    let mut text = String::with_capacity(source.len().min(1 << 20));
    let mut skip_depth = 0usize;
    // Inside <pre> line breaks are content; elsewhere they are just whitespace.
    let mut pre_depth = 0usize;
    // Open heading / link collecting their text: (node id, buffer).
    let mut heading: Option<(ego_id::Id, u8, String)> = None;
    let mut link: Option<(ego_id::Id, String, String)> = None;
    for edge in html.tree.root().traverse() {
        match edge {
            ego_id::Edge::Open(node) => match node.value() {
                Node::Element(el) => {
                    let name = el.name();
                    if name == "title" && summary.title.is_none() {
                        let t: String = node.descendants().filter_map(|n| n.value().as_text().map(|t| t.to_string())).collect();
                        let t = collapse(&t);
                        summary.title = Some(t.chars().take(MAX_TITLE_CHARS).collect());
                    }
                    if skipped(name) || skip_depth > 0 {
                        skip_depth += 1;
                        continue;
                    }
                    if block(name) {
                        text.push('\n');
                    }
                    if name == "pre" {
                        pre_depth += 1;
                    }
                    if let Some(level) = name.strip_prefix('h').and_then(|l| l.parse::<u8>().ok()).filter(|l| (1..=6).contains(l)) {
                        heading = Some((node.id(), level, String::new()));
                    }
                    if name == "a" {
                        if let Some(href) = el.attr("href") {
                            link = Some((node.id(), href.trim().to_string(), String::new()));
                        }
                    }
                }
                Node::Text(t) if skip_depth == 0 => {
                    if pre_depth > 0 {
                        text.push_str(t);
                    } else {
                        text.extend(t.chars().map(|c| if c.is_whitespace() { ' ' } else { c }));
                    }
                    if let Some(h) = heading.as_mut() {
                        h.2.push_str(t);
                    }
                    if let Some(l) = link.as_mut() {
                        l.2.push_str(t);
                    }
                }
                _ => {}
            },
            ego_id::Edge::Close(node) => {
                if let Node::Element(el) = node.value() {
                    if skip_depth > 0 {
                        skip_depth -= 1;
                        continue;
                    }
                    if block(el.name()) {
                        text.push('\n');
                    }
                    if el.name() == "pre" {
                        pre_depth = pre_depth.saturating_sub(1);
                    }
                    if heading.as_ref().is_some_and(|h| h.0 == node.id()) {
                        if let Some((_, level, t)) = heading.take() {
                            summary.total_headings += 1;
                            if summary.headings.len() < MAX_HEADINGS {
                                summary.headings.push((level, collapse(&t)));
                            }
                        }
                    }
                    if link.as_ref().is_some_and(|l| l.0 == node.id()) {
                        if let Some((_, href, t)) = link.take() {
                            summary.total_links += 1;
                            if summary.links.len() < MAX_LINKS {
                                summary.links.push((collapse(&t), href));
                            }
                        }
                    }
                }
            }
        }
    }
    summary.text = collapse_lines(&text);
    summary
}

/// ego-tree names, re-exported through scraper's tree type.
mod ego_id {
    pub type Id = ego_tree::NodeId;
    pub use ego_tree::iter::Edge;
}

/// Whitespace runs → one space, trimmed.
fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Each line collapsed; runs of empty lines → one.
fn collapse_lines(s: &str) -> String {
    let mut out = String::with_capacity(s.len() / 2);
    let mut blank = true;
    for line in s.split('\n') {
        let line = collapse(line);
        if line.is_empty() {
            if !blank {
                out.push('\n');
                blank = true;
            }
            continue;
        }
        out.push_str(&line);
        out.push('\n');
        blank = false;
    }
    out.trim_end().to_string()
}

/// The summary as the preview text.
pub fn render(summary: &Summary) -> String {
    let mut out = String::new();
    out.push_str(&format!("Title: {}\n", summary.title.as_deref().filter(|t| !t.is_empty()).unwrap_or("(none)")));
    out.push_str(&format!("\nHeadings ({}):\n", summary.total_headings));
    for (level, text) in &summary.headings {
        out.push_str(&format!("{} {text}\n", "#".repeat(*level as usize)));
    }
    if summary.total_headings > summary.headings.len() {
        out.push_str(&format!("… {} more\n", summary.total_headings - summary.headings.len()));
    }
    out.push_str(&format!("\nLinks ({}):\n", summary.total_links));
    for (text, href) in &summary.links {
        out.push_str(&format!("- {} <{href}>\n", if text.is_empty() { "(no text)" } else { text }));
    }
    if summary.total_links > summary.links.len() {
        out.push_str(&format!("… {} more\n", summary.total_links - summary.links.len()));
    }
    out.push_str("\nText:\n");
    out.push_str(&summary.text);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heading_and_link_lists_are_bounded() {
        let mut page = String::from("<title>");
        page.push_str(&"t".repeat(1000));
        page.push_str("</title>");
        for i in 0..MAX_HEADINGS + 50 {
            page.push_str(&format!("<h2>H{i}</h2>"));
        }
        for i in 0..MAX_LINKS + 70 {
            page.push_str(&format!("<a href=\"/{i}\">L{i}</a>"));
        }
        let s = summarize(&page);
        assert_eq!((s.headings.len(), s.total_headings), (MAX_HEADINGS, MAX_HEADINGS + 50));
        assert_eq!((s.links.len(), s.total_links), (MAX_LINKS, MAX_LINKS + 70));
        assert_eq!(s.title.as_deref().map(|t| t.chars().count()), Some(MAX_TITLE_CHARS));
        let text = render(&s);
        assert!(text.contains("… 50 more\n") && text.contains("… 70 more\n"), "the rest is counted");
    }

    #[test]
    fn drops_scripts_and_collects_structure() {
        let s = summarize(
            "<html><head><title> My  Page </title><style>p{}</style><script>var x=1;</script></head>\
             <body><h1>Top</h1><p>Hello   <b>world</b>.</p><script>alert(1)</script>\
             <h2>Sub</h2><p>See <a href='/x'>the  docs</a>.</p></body></html>",
        );
        assert_eq!(s.title.as_deref(), Some("My Page"));
        assert_eq!(s.headings, [(1, "Top".to_string()), (2, "Sub".to_string())]);
        assert_eq!(s.links, [("the docs".to_string(), "/x".to_string())]);
        assert_eq!(s.text, "Top\n\nHello world.\n\nSub\n\nSee the docs.");
        assert!(!render(&s).contains("alert"));
    }
}
