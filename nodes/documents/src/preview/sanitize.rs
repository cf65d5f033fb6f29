//! Markdown → HTML → sanitised HTML.
//!
//! pulldown-cmark renders (GFM options, raw HTML passed through), then ammonia keeps only an
//! allowlist: no script/style (dropped with their content), iframe/object/embed/form/svg/math
//! (dropped, text kept), no event-handler or style attributes, link and image URLs limited to
//! `http`, `https` and `mailto` plus relative URLs. `data:` URLs are refused everywhere, images
//! included: inline images are rarely worth it in a preview and an SVG `data:` image is a
//! script-capable document in some contexts. Every link gets `rel="noopener noreferrer"`.
//! Headings carry their GitHub anchor as `id`, prefixed `user-content-` (as on GitHub) so they
//! cannot clobber page globals or document properties; no other element may carry an id, and
//! no element a `name`.

use crate::markdown::document::{options, Document};
use crate::preview::flatten::{flatten, MAX_DEPTH};
use pulldown_cmark::{CowStr, Event, Tag, TagEnd};
use ammonia::Builder;
use std::collections::HashSet;

/// Renders Markdown to HTML, unsanitised (only for [`sanitize`]). Headings get the same GitHub
/// anchors the outline reports (an explicit `{#id}` wins); ammonia then prefixes every id with
/// `user-content-`, as GitHub does, so no id can name a global or shadow a document property.
pub fn render_markdown(markdown: &str) -> String {
    match render_markdown_bounded(markdown, || Ok::<(), ()>(())) {
        Ok((html, _)) => html,
        Err(()) => String::new(),
    }
}

/// Events rendered between two calls of the caller's `check`.
const CHECK_EVERY_EVENTS: usize = 64 * 1024;

/// [`render_markdown`] with Markdown containers (block quotes, lists, emphasis, links, …) at
/// most [`MAX_DEPTH`] deep: a deeper container's own tags are left out and its content joins
/// its ancestor's (a deeper block ends with a line break). Returns the HTML and how many
/// containers were flattened; `check` runs every [`CHECK_EVERY_EVENTS`] events.
pub fn render_markdown_bounded<E>(markdown: &str, mut check: impl FnMut() -> Result<(), E>) -> Result<(String, usize), E> {
    let doc = Document::parse_checked(markdown, &mut check)?;
    let mut anchors = doc.headings.iter().map(|h| h.anchor.as_str());
    let mut depth = 0usize;
    let mut flattened = 0usize;
    let mut events = 0usize;
    let mut stopped: Option<E> = None;
    let parser = pulldown_cmark::Parser::new_ext(markdown, options()).map_while(|event| {
        events += 1;
        if events.is_multiple_of(CHECK_EVERY_EVENTS) {
            if let Err(e) = check() {
                stopped = Some(e);
                return None;
            }
        }
        Some(match event {
            Event::Start(tag) => {
                depth += 1;
                if depth > MAX_DEPTH {
                    flattened += 1;
                    return Some(None);
                }
                match tag {
                    Tag::Heading { level, id, classes, attrs } => {
                        // Same text, same options: the headings come in the same order as in
                        // `doc` (a flattened heading is still consumed above, so this holds).
                        let anchor = anchors.next().filter(|a| !a.is_empty());
                        let id = id.or_else(|| anchor.map(|a| CowStr::from(a.to_string())));
                        Some(Event::Start(Tag::Heading { level, id, classes, attrs }))
                    }
                    other => Some(Event::Start(other)),
                }
            }
            Event::End(tag) => {
                depth = depth.saturating_sub(1);
                if depth >= MAX_DEPTH {
                    return Some(block(&tag).then_some(Event::SoftBreak));
                }
                Some(Event::End(tag))
            }
            other => Some(other),
        })
    });
    let mut html = String::with_capacity(markdown.len() * 3 / 2);
    pulldown_cmark::html::push_html(&mut html, parser.flatten());
    if let Some(e) = stopped {
        return Err(e);
    }
    Ok((html, flattened))
}

/// Block containers: flattening one still ends a line.
fn block(tag: &TagEnd) -> bool {
    !matches!(
        tag,
        TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough | TagEnd::Superscript | TagEnd::Subscript | TagEnd::Link | TagEnd::Image
    )
}

fn builder() -> Builder<'static> {
    let mut b = Builder::default();
    b.url_schemes(HashSet::from(["http", "https", "mailto"]))
        .rm_tags(["area", "map"])
        .add_tags(["input"])
        .add_tag_attributes("input", ["type", "checked", "disabled"])
        .set_tag_attribute_value("input", "type", "checkbox")
        .set_tag_attribute_value("input", "disabled", "")
        .add_tag_attributes("h1", ["id"])
        .add_tag_attributes("h2", ["id"])
        .add_tag_attributes("h3", ["id"])
        .add_tag_attributes("h4", ["id"])
        .add_tag_attributes("h5", ["id"])
        .add_tag_attributes("h6", ["id"])
        .add_tag_attributes("a", ["title"])
        .add_tag_attributes("img", ["title"])
        .add_tag_attributes("td", ["style"])
        .filter_style_properties(HashSet::from(["text-align"]))
        .id_prefix(Some("user-content-"))
        .link_rel(Some("noopener noreferrer"))
        .strip_comments(true);
    b
}

/// Sanitises HTML with the preview allowlist.
pub fn sanitize(html: &str) -> String {
    builder().clean(html).to_string()
}

/// Markdown → safe HTML.
pub fn markdown_to_safe_html(markdown: &str) -> String {
    match markdown_to_safe_html_bounded(markdown, || Ok::<(), ()>(())) {
        Ok((html, _)) => html,
        Err(()) => String::new(),
    }
}

/// Markdown → safe HTML with nesting bounded at [`MAX_DEPTH`] (Markdown containers while
/// rendering, then the HTML, raw HTML included, before the sanitiser builds its tree), so the
/// whole pipeline is linear in the input. Returns the HTML and how many containers and elements
/// were flattened. `check` runs at bounded intervals of work and stops the pipeline.
pub fn markdown_to_safe_html_bounded<E>(markdown: &str, mut check: impl FnMut() -> Result<(), E>) -> Result<(String, usize), E> {
    let (html, in_markdown) = render_markdown_bounded(markdown, &mut check)?;
    let flat = flatten(&html, &mut check)?;
    drop(html);
    let safe = sanitize(&flat.html);
    check()?;
    Ok((safe, in_markdown + flat.dropped))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(html.contains(r#"<h1 id="user-content-hello-world">"#), "{html}");
        assert!(html.contains(r#"<h2 id="user-content-hello-world-1">"#), "{html}");
        assert!(html.contains(r#"<h2 id="user-content-mine">"#), "{html}");
        assert!(html.contains("<h2>???</h2>"), "an empty anchor gives no id: {html}");
        assert!(html.contains(r#"<h2 id="user-content-location">raw</h2>"#), "{html}");
    }

    #[test]
    fn task_lists_survive_as_disabled_checkboxes() {
        let html = markdown_to_safe_html("- [x] done\n");
        assert!(html.contains("checkbox") && html.contains("disabled"), "{html}");
    }
}
