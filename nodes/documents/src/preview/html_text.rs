//! HTML → a bounded text summary: title, headings, readable text (scripts, styles and other
//! non-content dropped, whitespace collapsed) and the link list.
//!
//! Two ways to the same summary: [`summarize`] walks the tree an HTML parser builds (of the
//! flattened markup); [`summarize_stream`] reads the flattening pass's element stream directly,
//! without a tree (one tokenizer pass instead of two plus the tree; the preview uses it past
//! [`STREAM_ABOVE_BYTES`]). On well-formed markup both give the same summary; where a parser
//! would repair malformed markup the stream keeps the source order instead (text inside a
//! `<table>` but outside its cells is not moved before the table, a block element inside an
//! unclosed `<p>` does not end the paragraph, content after `</body>` stays where it is), and a
//! `<title>`'s text is never part of the text (a parser puts a title outside `<head>` into the
//! body).

use crate::preview::flatten::{flatten_into, Emit};
use html5ever::tokenizer::Tag;
use html5ever::LocalName;
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
        "script"
            | "style"
            | "noscript"
            | "template"
            | "head"
            | "svg"
            | "math"
            | "iframe"
            | "object"
            | "embed"
            | "canvas"
            | "select"
            | "button"
    )
}

/// Elements that start a new line of text.
fn block(name: &str) -> bool {
    matches!(
        name,
        "p" | "div"
            | "br"
            | "li"
            | "ul"
            | "ol"
            | "tr"
            | "table"
            | "section"
            | "article"
            | "header"
            | "footer"
            | "nav"
            | "aside"
            | "main"
            | "blockquote"
            | "pre"
            | "hr"
            | "dd"
            | "dt"
            | "dl"
            | "figure"
            | "figcaption"
            | "form"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "details"
            | "summary"
            | "body"
            | "html"
            | "td"
            | "th"
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
                        let t: String = node
                            .descendants()
                            .filter_map(|n| n.value().as_text().map(|t| t.to_string()))
                            .collect();
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
                    if let Some(level) = name
                        .strip_prefix('h')
                        .and_then(|l| l.parse::<u8>().ok())
                        .filter(|l| (1..=6).contains(l))
                    {
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

/// Sources larger than this are summarised from the token stream ([`summarize_stream`]).
pub const STREAM_ABOVE_BYTES: usize = 1024 * 1024;

/// The summary of `source` from the flattening pass's element stream (see the module docs),
/// with the number of start tags flattened past the depth bound. `check` runs as in
/// [`flatten_into`].
pub fn summarize_stream<E>(
    source: &str,
    check: impl FnMut() -> Result<(), E>,
) -> Result<(Summary, usize), E> {
    let stream = Stream {
        text: String::with_capacity(source.len().min(1 << 20)),
        ..Stream::default()
    };
    let (stream, dropped) = flatten_into(source, stream, check)?;
    let mut summary = stream.summary;
    summary.text = collapse_lines(&stream.text);
    Ok((summary, dropped))
}

/// [`summarize`]'s tree walk, fed by the element stream: an element's open and close are the
/// walk's `Open` and `Close` edges.
#[derive(Default)]
struct Stream {
    summary: Summary,
    text: String,
    /// Open (non-void) elements.
    depth: usize,
    skip_depth: usize,
    pre_depth: usize,
    /// The element whose text is the title (its depth), while it is open.
    title: Option<(usize, String)>,
    heading: Option<(usize, u8, String)>,
    link: Option<(usize, String, String)>,
    /// Right after a `<pre>` (or `<listing>`, `<textarea>`) start tag: a parser drops a line
    /// feed that comes first.
    strip_lf: bool,
}

impl Stream {
    fn finish_heading(&mut self) {
        if let Some((_, level, t)) = self.heading.take() {
            self.summary.total_headings += 1;
            if self.summary.headings.len() < MAX_HEADINGS {
                self.summary.headings.push((level, collapse(&t)));
            }
        }
    }

    fn finish_link(&mut self) {
        if let Some((_, href, t)) = self.link.take() {
            self.summary.total_links += 1;
            if self.summary.links.len() < MAX_LINKS {
                self.summary.links.push((collapse(&t), href));
            }
        }
    }

    /// The walk's `Close` edge of the element at `self.depth` (before it is decremented).
    fn closed(&mut self, name: &str) {
        if self.title.as_ref().is_some_and(|t| t.0 == self.depth) {
            if let Some((_, t)) = self.title.take() {
                self.summary.title = Some(collapse(&t).chars().take(MAX_TITLE_CHARS).collect());
            }
        }
        if self.skip_depth > 0 {
            self.skip_depth -= 1;
            return;
        }
        if block(name) {
            self.text.push('\n');
        }
        if name == "pre" {
            self.pre_depth = self.pre_depth.saturating_sub(1);
        }
        if self.heading.as_ref().is_some_and(|h| h.0 == self.depth) {
            self.finish_heading();
        }
        if self.link.as_ref().is_some_and(|l| l.0 == self.depth) {
            self.finish_link();
        }
    }
}

impl Emit for Stream {
    fn open(&mut self, tag: &Tag, void: bool) {
        self.strip_lf = false;
        self.depth += 1;
        let name: &str = &tag.name;
        if name == "title" && self.summary.title.is_none() && self.title.is_none() {
            self.title = Some((self.depth, String::new()));
        }
        // A title is head content: its text is the title only.
        if skipped(name) || name == "title" || self.skip_depth > 0 {
            self.skip_depth += 1;
        } else {
            if block(name) {
                self.text.push('\n');
            }
            if name == "pre" {
                self.pre_depth += 1;
            }
            if matches!(name, "pre" | "listing" | "textarea") {
                self.strip_lf = true;
            }
            if let Some(level) = name
                .strip_prefix('h')
                .and_then(|l| l.parse::<u8>().ok())
                .filter(|l| (1..=6).contains(l))
            {
                // A heading start ends an open heading (as a parser closes it).
                self.finish_heading();
                self.heading = Some((self.depth, level, String::new()));
            }
            if name == "a" {
                if let Some(href) = tag.attrs.iter().find(|a| &*a.name.local == "href") {
                    // A link start ends an open link (as a parser's adoption agency does).
                    self.finish_link();
                    self.link = Some((self.depth, href.value.trim().to_string(), String::new()));
                }
            }
        }
        if void {
            self.closed(name);
            self.depth -= 1;
        }
    }

    fn close(&mut self, name: &LocalName) {
        self.strip_lf = false;
        self.closed(name);
        self.depth = self.depth.saturating_sub(1);
    }

    fn text(&mut self, t: &str) {
        let t = if std::mem::take(&mut self.strip_lf) {
            t.strip_prefix('\n').unwrap_or(t)
        } else {
            t
        };
        if let Some((_, title)) = self.title.as_mut() {
            title.push_str(t);
        }
        if self.skip_depth > 0 {
            return;
        }
        if self.pre_depth > 0 {
            self.text.push_str(t);
        } else {
            self.text
                .extend(t.chars().map(|c| if c.is_whitespace() { ' ' } else { c }));
        }
        if let Some(h) = self.heading.as_mut() {
            h.2.push_str(t);
        }
        if let Some(l) = self.link.as_mut() {
            l.2.push_str(t);
        }
    }
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

/// HTML as readable text, the way workspace_preview's `html` operation and tools/web_fetch give
/// it: markup nested past the depth bound flattened first, and past [`STREAM_ABOVE_BYTES`]
/// summarised from the token stream without a tree, so no page can exhaust the stack or build
/// a tree of its whole size. Returns the text and the number of start tags flattened; `check`
/// runs as in [`flatten_into`] (a time budget, or nothing).
pub fn readable_text<E>(
    source: &str,
    check: impl FnMut() -> Result<(), E>,
) -> Result<(String, usize), E> {
    if source.len() > STREAM_ABOVE_BYTES {
        let (summary, dropped) = summarize_stream(source, check)?;
        return Ok((render(&summary), dropped));
    }
    let flat = crate::preview::flatten::flatten(source, check)?;
    Ok((render(&summarize(&flat.html)), flat.dropped))
}

/// The summary as the preview text.
pub fn render(summary: &Summary) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "Title: {}\n",
        summary
            .title
            .as_deref()
            .filter(|t| !t.is_empty())
            .unwrap_or("(none)")
    ));
    out.push_str(&format!("\nHeadings ({}):\n", summary.total_headings));
    for (level, text) in &summary.headings {
        out.push_str(&format!("{} {text}\n", "#".repeat(*level as usize)));
    }
    if summary.total_headings > summary.headings.len() {
        out.push_str(&format!(
            "… {} more\n",
            summary.total_headings - summary.headings.len()
        ));
    }
    out.push_str(&format!("\nLinks ({}):\n", summary.total_links));
    for (text, href) in &summary.links {
        out.push_str(&format!(
            "- {} <{href}>\n",
            if text.is_empty() { "(no text)" } else { text }
        ));
    }
    if summary.total_links > summary.links.len() {
        out.push_str(&format!(
            "… {} more\n",
            summary.total_links - summary.links.len()
        ));
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
        assert_eq!(
            (s.headings.len(), s.total_headings),
            (MAX_HEADINGS, MAX_HEADINGS + 50)
        );
        assert_eq!((s.links.len(), s.total_links), (MAX_LINKS, MAX_LINKS + 70));
        assert_eq!(
            s.title.as_deref().map(|t| t.chars().count()),
            Some(MAX_TITLE_CHARS)
        );
        let text = render(&s);
        assert!(
            text.contains("… 50 more\n") && text.contains("… 70 more\n"),
            "the rest is counted"
        );
    }

    fn both_ways(page: &str) -> (Summary, Summary) {
        let flat = crate::preview::flatten::flatten(page, || Ok::<(), ()>(())).unwrap_or_default();
        let tree = summarize(&flat.html);
        let (stream, dropped) = summarize_stream(page, || Ok::<(), ()>(())).unwrap_or_default();
        assert_eq!(dropped, flat.dropped, "{page}");
        (tree, stream)
    }

    /// Ordinary pages: the streaming summary is the tree walk's, field for field.
    #[test]
    fn the_stream_summary_is_the_tree_summary_on_ordinary_pages() {
        let pages = [
            "<!doctype html><html><head><title>Release notes</title><script>track()</script></head><body>\
             <h1>v2.0</h1><p>Faster   and\n smaller.</p><style>.x{}</style><h2>Fixes</h2>\
             <ul><li>One <a href=\"https://e.example/1\">issue</a></li></ul><noscript>enable js</noscript></body></html>",
            "<html><head><meta charset=utf-8><title> A &amp; B </title><link rel=x href=y></head>\
             <body><header><nav><a href='/'>Home</a> | <a href=\"/docs\">Docs &gt;</a></nav></header>\
             <main><article><h2 id=x>Intro <small>v1</small></h2><p>One<br>two<br/>three</p>\
             <pre>\nline 1\n  line 2</pre><p>x &lt; y &#169; <img src=a.png alt=pic> <code>z</code></p>\
             <table><thead><tr><th>A</th><th>B</th></tr></thead><tbody><tr><td>1</td><td>2</td></tr></tbody></table>\
             <dl><dt>T</dt><dd>D</dd></dl><ol><li>a</li><li>b <a href=\" /sp \">spaced</a></li></ol>\
             <form><input name=q><button>Go</button><select><option>o</select></form>\
             <div><div><p>deep</p></div></div><h3></h3><a href=x></a><a>no href</a>\
             <svg><title>svg title</title><text>t</text></svg><template><p>tpl</p></template>\
             <textarea>\nkept</textarea><blockquote>q\u{0}z</blockquote></article></main>\
             <footer>© 2026</footer></body></html>",
            "<p>no html or body<p>two paragraphs<ul><li>a<li>b</ul><h1>H</h1>tail text",
            "plain text only",
            "",
        ];
        for page in pages {
            let (tree, stream) = both_ways(page);
            assert_eq!(render(&stream), render(&tree), "{page}");
            assert_eq!(stream, tree, "{page}");
        }
        // Many of them, and nesting past the bound.
        let body = &pages[1]
            [pages[1].find("<body>").unwrap_or(0) + 6..pages[1].find("</body>").unwrap_or(0)];
        let big = format!("<title>T</title>{}", body.repeat(200));
        let (tree, stream) = both_ways(&big);
        assert!(stream == tree, "a long page differs");
        let deep = format!(
            "{}<h1>deep <a href=d>link</a></h1>{}",
            "<div>".repeat(400),
            "</div>".repeat(400)
        );
        let (tree, stream) = both_ways(&deep);
        assert_eq!(stream, tree);
        assert!(
            stream.headings.is_empty() && stream.text == "deep link",
            "the heading lies past the bound: {stream:?}"
        );
    }

    /// What the stream does not repair (documented in the module docs), so that a change there
    /// is a decision: text a parser moves out of a table, and a title in the body.
    #[test]
    fn the_stream_keeps_source_order_where_a_parser_repairs() {
        let (tree, stream) = both_ways("<table><tr><td>cell</td></tr>loose</table>");
        assert_eq!(
            (tree.text.as_str(), stream.text.as_str()),
            ("loose\n\ncell", "cell\n\nloose")
        );
        let (tree, stream) = both_ways("<p>before</p><title>T</title><p>after</p>");
        assert_eq!(tree.title.as_deref(), Some("T"));
        assert_eq!(stream.title.as_deref(), Some("T"));
        assert!(
            tree.text.contains('T') && !stream.text.contains('T'),
            "{tree:?} / {stream:?}"
        );
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
