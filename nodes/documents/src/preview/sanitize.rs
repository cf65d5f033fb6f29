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

use crate::markdown::document::options;
#[cfg(doc)]
use crate::markdown::document::Document;
use crate::markdown::slug::Slugger;
use crate::preview::flatten::{flatten, Flattened, MAX_DEPTH};
use crate::preview::prefix;
use pulldown_cmark::{CowStr, Event, Tag, TagEnd};
use ammonia::Builder;
use std::collections::{HashSet, VecDeque};

/// Renders Markdown to HTML, unsanitised (only for [`sanitize`]). Headings get the same GitHub
/// anchors the outline reports (an explicit `{#id}` wins); ammonia then prefixes every id with
/// `user-content-`, as GitHub does, so no id can name a global or shadow a document property.
pub fn render_markdown(markdown: &str) -> String {
    match render_markdown_bounded(markdown, || Ok::<(), ()>(())) {
        Ok(rendered) => rendered.html,
        Err(()) => String::new(),
    }
}

/// Events rendered between two calls of the caller's `check`.
const CHECK_EVERY_EVENTS: usize = 64 * 1024;

/// What [`render_markdown_bounded`] made.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MarkdownHtml {
    pub html: String,
    /// Markdown containers flattened past [`MAX_DEPTH`].
    pub flattened: usize,
    /// Whether the Markdown holds raw HTML (passed through into `html`). Without it `html` is
    /// pulldown-cmark's own well-nested output, at most [`MAX_DEPTH`] containers deep.
    pub raw_html: bool,
}

/// [`render_markdown`] with Markdown containers (block quotes, lists, emphasis, links, …) at
/// most [`MAX_DEPTH`] deep: a deeper container's own tags are left out and its content joins
/// its ancestor's (a deeper block ends with a line break). `check` runs every
/// [`CHECK_EVERY_EVENTS`] events.
///
/// Lines stacking more container markers than [`prefix::LINE_DEPTH`] are bounded first
/// ([`prefix::bound`]); the levels left unopened count as flattened.
///
/// One pulldown-cmark pass: each heading's events are held back until the heading ends, when
/// its anchor is known (the same text and slugger as [`Document`]'s outline). Explicit `{#id}`s
/// reserve their slug for the whole document, earlier headings included, so the first one met
/// restarts the rendering after one more pass that collects them all.
pub fn render_markdown_bounded<E>(markdown: &str, mut check: impl FnMut() -> Result<(), E>) -> Result<MarkdownHtml, E> {
    // Markers stacked past the bound on one line become text before pulldown-cmark sees them.
    let bounded = prefix::bound(markdown);
    let (markdown, unopened) = match &bounded {
        Some((text, levels)) => (text.as_str(), *levels),
        None => (markdown, 0),
    };
    let mut rendered = render_markdown_unprefixed(markdown, &mut check)?;
    rendered.flattened += unopened;
    Ok(rendered)
}

fn render_markdown_unprefixed<E>(markdown: &str, mut check: impl FnMut() -> Result<(), E>) -> Result<MarkdownHtml, E> {
    match render_pass(markdown, None, &mut check)? {
        Some(rendered) => Ok(rendered),
        None => {
            let mut reserved = Vec::new();
            let mut events = 0usize;
            for event in pulldown_cmark::Parser::new_ext(markdown, options()) {
                events += 1;
                if events.is_multiple_of(CHECK_EVERY_EVENTS) {
                    check()?;
                }
                if let Event::Start(Tag::Heading { id: Some(id), .. }) = event {
                    reserved.push(id.into_string());
                }
            }
            let mut slugger = Slugger::new();
            for id in &reserved {
                slugger.reserve(id);
            }
            Ok(render_pass(markdown, Some(slugger), &mut check)?.unwrap_or_default())
        }
    }
}

/// One rendering; `None` when `slugger` is `None` (explicit ids not collected yet) and a heading
/// has an explicit id.
fn render_pass<E>(markdown: &str, slugger: Option<Slugger>, check: &mut impl FnMut() -> Result<(), E>) -> Result<Option<MarkdownHtml>, E> {
    let mut events = Events {
        parser: pulldown_cmark::Parser::new_ext(markdown, options()),
        queue: VecDeque::new(),
        explicit_ids_known: slugger.is_some(),
        slugger: slugger.unwrap_or_default(),
        depth: 0,
        flattened: 0,
        raw_html: false,
        events: 0,
        check,
        stop: None,
    };
    let mut html = String::with_capacity(markdown.len() * 3 / 2);
    pulldown_cmark::html::push_html(&mut html, &mut events);
    match events.stop {
        Some(Stop::Checked(e)) => Err(e),
        Some(Stop::ExplicitId) => Ok(None),
        None => Ok(Some(MarkdownHtml { html, flattened: events.flattened, raw_html: events.raw_html })),
    }
}

enum Stop<E> {
    Checked(E),
    ExplicitId,
}

/// pulldown-cmark's events with containers deeper than [`MAX_DEPTH`] left out and heading
/// anchors filled in.
struct Events<'a, 'c, C, E> {
    parser: pulldown_cmark::Parser<'a>,
    /// A heading's events, its start last filled in, waiting to be rendered.
    queue: VecDeque<Event<'a>>,
    explicit_ids_known: bool,
    slugger: Slugger,
    depth: usize,
    flattened: usize,
    raw_html: bool,
    events: usize,
    check: &'c mut C,
    stop: Option<Stop<E>>,
}

impl<'a, C: FnMut() -> Result<(), E>, E> Events<'a, '_, C, E> {
    /// The next event from the parser, after the depth bound (`Some(None)`: left out).
    fn pull(&mut self) -> Option<Option<Event<'a>>> {
        if self.stop.is_some() {
            return None;
        }
        let event = self.parser.next()?;
        self.events += 1;
        if self.events.is_multiple_of(CHECK_EVERY_EVENTS) {
            if let Err(e) = (self.check)() {
                self.stop = Some(Stop::Checked(e));
                return None;
            }
        }
        Some(match event {
            Event::Start(tag) => {
                self.depth += 1;
                if self.depth > MAX_DEPTH {
                    self.flattened += 1;
                    // A flattened heading still takes its anchor, as in the outline.
                    if matches!(tag, Tag::Heading { .. }) {
                        return self.heading(tag, false);
                    }
                    return Some(None);
                }
                if matches!(tag, Tag::Heading { .. }) {
                    return self.heading(tag, true);
                }
                Some(Event::Start(tag))
            }
            Event::End(tag) => {
                self.depth = self.depth.saturating_sub(1);
                if self.depth >= MAX_DEPTH {
                    return Some(block(&tag).then_some(Event::SoftBreak));
                }
                Some(Event::End(tag))
            }
            Event::Html(_) | Event::InlineHtml(_) => {
                self.raw_html = true;
                Some(event)
            }
            other => Some(other),
        })
    }

    /// Reads a heading up to its end into the queue and returns its start (`None` when the
    /// heading is flattened, `!kept`) with the anchor as its id. The anchor's text is collected
    /// as [`Document`] collects it: text and code outside images, a line break for each break.
    fn heading(&mut self, start: Tag<'a>, kept: bool) -> Option<Option<Event<'a>>> {
        let explicit = match &start {
            Tag::Heading { id, .. } => id.as_ref().map(|id| id.to_string()),
            _ => None,
        };
        if explicit.is_some() && !self.explicit_ids_known {
            self.stop = Some(Stop::ExplicitId);
            return None;
        }
        let mut text = String::new();
        let mut image_depth = 0usize;
        let mut open = 1usize;
        // Headings hold only inline content: the end that balances the start closes it.
        while let Some(event) = self.parser.next() {
            self.events += 1;
            if self.events.is_multiple_of(CHECK_EVERY_EVENTS) {
                if let Err(e) = (self.check)() {
                    self.stop = Some(Stop::Checked(e));
                    return None;
                }
            }
            match &event {
                Event::Start(Tag::Image { .. }) => image_depth += 1,
                Event::End(TagEnd::Image) => image_depth = image_depth.saturating_sub(1),
                Event::Text(t) | Event::Code(t) if image_depth == 0 => text.push_str(t),
                Event::SoftBreak | Event::HardBreak => text.push('\n'),
                _ => {}
            }
            match event {
                Event::Start(_) => open += 1,
                Event::End(_) => open -= 1,
                _ => {}
            }
            // The depth bound applies inside the heading as everywhere else.
            let shaped = self.shape(event);
            if let Some(e) = shaped {
                self.queue.push_back(e);
            }
            if open == 0 {
                break;
            }
        }
        let anchor = match explicit {
            Some(id) => id,
            None => self.slugger.slug(&text),
        };
        if !kept {
            return Some(None);
        }
        Some(Some(match start {
            Tag::Heading { level, id, classes, attrs } => {
                let id = id.or_else(|| (!anchor.is_empty()).then(|| CowStr::from(anchor)));
                Event::Start(Tag::Heading { level, id, classes, attrs })
            }
            other => Event::Start(other),
        }))
    }

    /// The depth bound for an event inside a heading.
    fn shape(&mut self, event: Event<'a>) -> Option<Event<'a>> {
        match event {
            Event::Start(tag) => {
                self.depth += 1;
                if self.depth > MAX_DEPTH {
                    self.flattened += 1;
                    return None;
                }
                Some(Event::Start(tag))
            }
            Event::End(tag) => {
                self.depth = self.depth.saturating_sub(1);
                if self.depth >= MAX_DEPTH {
                    return block(&tag).then_some(Event::SoftBreak);
                }
                Some(Event::End(tag))
            }
            Event::Html(_) | Event::InlineHtml(_) => {
                self.raw_html = true;
                Some(event)
            }
            other => Some(other),
        }
    }
}

impl<'a, C: FnMut() -> Result<(), E>, E> Iterator for Events<'a, '_, C, E> {
    type Item = Event<'a>;

    fn next(&mut self) -> Option<Event<'a>> {
        loop {
            if let Some(event) = self.queue.pop_front() {
                return Some(event);
            }
            match self.pull()? {
                Some(event) => {
                    // A heading's start goes before the events queued behind it.
                    if !self.queue.is_empty() {
                        self.queue.push_front(event);
                        continue;
                    }
                    return Some(event);
                }
                None => continue,
            }
        }
    }
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
    let rendered = render_markdown_bounded(markdown, &mut check)?;
    let flat = flatten_rendered(rendered, &mut check)?;
    let safe = sanitize(&flat.html);
    check()?;
    Ok((safe, flat.dropped))
}

/// [`flatten`] for a Markdown rendering; `dropped` counts the Markdown containers flattened
/// too. Without raw HTML the rendering is pulldown-cmark's well-nested output, already bounded
/// by the Markdown containers (an element or two more than [`MAX_DEPTH`] at most: a code
/// block's `<pre><code>`, a table's `<tbody>`), so it is taken as it is (NULs replaced as the
/// tokenizer replaces them): html5ever's tree builder is linear on it, and the sanitiser parses
/// the same tree either way.
pub fn flatten_rendered<E>(rendered: MarkdownHtml, check: impl FnMut() -> Result<(), E>) -> Result<Flattened, E> {
    if !rendered.raw_html {
        // The tokenizer turns a NUL in text into U+FFFD; the tree builder would drop it.
        let html = if rendered.html.contains('\0') { rendered.html.replace('\0', "\u{fffd}") } else { rendered.html };
        return Ok(Flattened { html, dropped: rendered.flattened });
    }
    let flat = flatten(&rendered.html, check)?;
    Ok(Flattened { html: flat.html, dropped: flat.dropped + rendered.flattened })
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
