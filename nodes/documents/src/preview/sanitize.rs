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

use crate::bounded::Bounded;
use crate::markdown::document::options;
#[cfg(doc)]
use crate::markdown::document::Document;
use crate::markdown::slug::Slugger;
use crate::preview::flatten::{flatten, Flattened, MAX_DEPTH};
use ammonia::Builder;
use pulldown_cmark::{CowStr, Event, Tag, TagEnd};
use std::cell::Cell;
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

/// The most bytes of source text [`Events::join_texts`] hands on as one event (a kept tail
/// starts at an event's output, so events stay this short).
const JOINED_TEXT_BYTES: usize = 4096;

/// What [`render_markdown_bounded`] made.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MarkdownHtml {
    pub html: String,
    /// Markdown containers flattened past [`MAX_DEPTH`].
    pub flattened: usize,
    /// Whether the Markdown holds raw HTML (passed through into `html`). Without it `html` is
    /// pulldown-cmark's own well-nested output, at most [`MAX_DEPTH`] containers deep.
    pub raw_html: bool,
    /// Inline marks past [`crate::preview::marks::MAX_MARKS`], rendered as plain text.
    pub plain_marks: usize,
    /// Set when the rendering was longer than the bytes asked to keep
    /// ([`render_markdown_kept`]): `html` is then its head and this its tail.
    pub cut: Option<Cut>,
}

/// The end of a rendering too long to keep whole.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cut {
    /// The rendering's last bytes (at least the bytes asked to keep), starting where an event's
    /// output starts: outside any tag pulldown-cmark wrote.
    pub tail: String,
    /// Bytes of the rendering between the head and the tail, not kept.
    pub omitted: usize,
}

/// [`render_markdown`] with Markdown containers (block quotes, lists, emphasis, links, …) at
/// most [`MAX_DEPTH`] deep: a deeper container's own tags are left out and its content joins
/// its ancestor's (a deeper block ends with a line break). `check` runs every
/// [`CHECK_EVERY_EVENTS`] events.
///
/// The text parsed is [`Bounded`]: lines stacking more container markers than
/// [`crate::preview::prefix::LINE_DEPTH`] have the markers past it read as text (the levels
/// left unopened count as flattened), and inline marks past
/// [`crate::preview::marks::MAX_MARKS`] are plain text, shown as written
/// ([`MarkdownHtml::plain_marks`]).
///
/// One pulldown-cmark pass: each heading's events are held back until the heading ends, when
/// its anchor is known (the same text and slugger as [`Document`]'s outline). Explicit `{#id}`s
/// reserve their slug for the whole document, earlier headings included, so the first one met
/// restarts the rendering after one more pass that collects them all.
pub fn render_markdown_bounded<E>(
    markdown: &str,
    check: impl FnMut() -> Result<(), E>,
) -> Result<MarkdownHtml, E> {
    render_markdown_kept(markdown, usize::MAX, check)
}

/// [`render_markdown_bounded`] keeping at most about `keep` bytes of each end of the rendering:
/// a longer one comes back as its first `keep` bytes and a [`Cut`] tail, never whole in memory
/// (a preview shows only its ends).
pub fn render_markdown_kept<E>(
    markdown: &str,
    keep: usize,
    mut check: impl FnMut() -> Result<(), E>,
) -> Result<MarkdownHtml, E> {
    // Markers stacked past the bound on one line, and inline marks past theirs, become text
    // before pulldown-cmark sees them.
    let bounded = Bounded::new(markdown);
    let mut rendered = render_markdown_unprefixed(&bounded, keep, &mut check)?;
    rendered.flattened += bounded.unopened_levels;
    rendered.plain_marks = bounded.plain_marks;
    Ok(rendered)
}

fn render_markdown_unprefixed<E>(
    bounded: &Bounded<'_>,
    keep: usize,
    mut check: impl FnMut() -> Result<(), E>,
) -> Result<MarkdownHtml, E> {
    let markdown = bounded.text();
    match render_pass(bounded, None, keep, &mut check)? {
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
            Ok(render_pass(bounded, Some(slugger), keep, &mut check)?.unwrap_or_default())
        }
    }
}

/// One rendering; `None` when `slugger` is `None` (explicit ids not collected yet) and a heading
/// has an explicit id.
fn render_pass<E>(
    bounded: &Bounded<'_>,
    slugger: Option<Slugger>,
    keep: usize,
    check: &mut impl FnMut() -> Result<(), E>,
) -> Result<Option<MarkdownHtml>, E> {
    let markdown = bounded.text();
    let boundary = Cell::new(false);
    let mut events = Events {
        parser: pulldown_cmark::Parser::new_ext(markdown, options()),
        source: markdown,
        bounded,
        after_text: false,
        queue: VecDeque::new(),
        explicit_ids_known: slugger.is_some(),
        slugger: slugger.unwrap_or_default(),
        depth: 0,
        flattened: 0,
        raw_html: false,
        events: 0,
        check,
        stop: None,
        boundary: &boundary,
        images: 0,
    };
    let mut out = Ends::new(keep, markdown.len().saturating_mul(3) / 2, &boundary);
    // Writing to `Ends` cannot fail.
    let _ = pulldown_cmark::html::write_html_fmt(&mut out, &mut events);
    match events.stop {
        Some(Stop::Checked(e)) => Err(e),
        Some(Stop::ExplicitId) => Ok(None),
        None => {
            let (html, cut) = out.finish();
            Ok(Some(MarkdownHtml {
                html,
                flattened: events.flattened,
                raw_html: events.raw_html,
                plain_marks: 0,
                cut,
            }))
        }
    }
}

/// The HTML writer's output, kept whole up to `3 × keep` bytes; past that, its first `keep`
/// bytes and its last `keep` to `2 × keep` bytes, the tail starting where an event's output
/// starts.
struct Ends<'b> {
    keep: usize,
    head: String,
    /// Whether `head` holds `keep` bytes and later output goes to `tail`.
    full: bool,
    /// Output after `head`; trimmed from the front to at least `keep` bytes, at an event's
    /// start, whenever it passes `2 × keep`.
    tail: String,
    /// Where in `tail` the outputs of events start (ascending).
    starts: VecDeque<usize>,
    /// Bytes written after `head` and dropped from the front of `tail`.
    dropped: usize,
    /// Set by [`Events`] when the event it hands out starts outside any tag: the next write
    /// starts that event's output.
    boundary: &'b Cell<bool>,
}

impl<'b> Ends<'b> {
    fn new(keep: usize, expected: usize, boundary: &'b Cell<bool>) -> Self {
        let head = String::with_capacity(expected.min(keep));
        Ends {
            keep,
            head,
            full: false,
            tail: String::new(),
            starts: VecDeque::new(),
            dropped: 0,
            boundary,
        }
    }

    /// The whole rendering, or its head and a [`Cut`] when bytes were dropped between them.
    fn finish(mut self) -> (String, Option<Cut>) {
        if self.dropped == 0 {
            self.head.push_str(&self.tail);
            return (self.head, None);
        }
        (
            self.head,
            Some(Cut {
                tail: self.tail,
                omitted: self.dropped,
            }),
        )
    }
}

impl std::fmt::Write for Ends<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let starts_event = self.boundary.replace(false);
        if !self.full {
            if self.head.len() + s.len() <= self.keep {
                self.head.push_str(s);
                return Ok(());
            }
            // The head takes what fits (to a char boundary); the rest starts the tail.
            let fit = super::floor_char_boundary(s, self.keep - self.head.len());
            self.head.push_str(&s[..fit]);
            self.full = true;
            self.tail.push_str(&s[fit..]);
            return Ok(());
        }
        if starts_event {
            self.starts.push_back(self.tail.len());
        }
        self.tail.push_str(s);
        if self.tail.len() > 2 * self.keep {
            // Drop the front, up to the last event start that leaves at least `keep` bytes.
            let limit = self.tail.len() - self.keep;
            let mut cut = 0;
            while let Some(&start) = self.starts.front() {
                if start > limit {
                    break;
                }
                cut = start;
                self.starts.pop_front();
            }
            if cut > 0 {
                self.tail.drain(..cut);
                self.dropped += cut;
                for start in self.starts.iter_mut() {
                    *start -= cut;
                }
            }
        }
        Ok(())
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
    /// The text parsed, of which borrowed texts are stretches (see [`Events::join_texts`]).
    source: &'a str,
    /// What `source` was made from: strings handed out are read back from it as written.
    bounded: &'a Bounded<'a>,
    /// Whether the last event pulled was a text borrowed from the source.
    after_text: bool,
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
    /// Raised for each event handed out whose output starts outside a tag (see [`Ends`]): all
    /// but those inside an image, whose text the writer puts in the `alt` attribute.
    boundary: &'c Cell<bool>,
    images: usize,
}

impl<'a, C: FnMut() -> Result<(), E>, E> Events<'a, '_, C, E> {
    /// Counts an event pulled from the parser and runs `check` every [`CHECK_EVERY_EVENTS`];
    /// `false` once the check stopped the rendering.
    #[inline]
    fn counted(&mut self) -> bool {
        self.events += 1;
        if self.events.is_multiple_of(CHECK_EVERY_EVENTS) {
            if let Err(e) = (self.check)() {
                self.stop = Some(Stop::Checked(e));
                return false;
            }
        }
        true
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
            if !self.counted() {
                return None;
            }
            match &event {
                Event::Start(Tag::Image { .. }) => image_depth += 1,
                Event::End(TagEnd::Image) => image_depth = image_depth.saturating_sub(1),
                Event::Text(t) | Event::Code(t) if image_depth == 0 => {
                    text.push_str(self.bounded.cow_as_written(t))
                }
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
            Tag::Heading {
                level,
                id,
                classes,
                attrs,
            } => {
                let id = id.or_else(|| (!anchor.is_empty()).then(|| CowStr::from(anchor)));
                Event::Start(Tag::Heading {
                    level,
                    id,
                    classes,
                    attrs,
                })
            }
            other => Event::Start(other),
        }))
    }

    /// The depth bound for an event inside a heading.
    fn shape(&mut self, event: Event<'a>) -> Option<Event<'a>> {
        match self.bound_depth(&event) {
            Bound::Keep => Some(event),
            Bound::Drop => None,
            Bound::LineBreak => Some(Event::SoftBreak),
        }
    }

    /// What the depth bound does with `event` (the depth, the flattened count and the raw HTML
    /// flag follow it). Takes the event by reference: documents have millions of events, and
    /// each move of one costs.
    #[inline]
    fn bound_depth(&mut self, event: &Event<'a>) -> Bound {
        match event {
            Event::Start(_) => {
                self.depth += 1;
                if self.depth > MAX_DEPTH {
                    self.flattened += 1;
                    return Bound::Drop;
                }
                Bound::Keep
            }
            Event::End(tag) => {
                self.depth = self.depth.saturating_sub(1);
                if self.depth < MAX_DEPTH {
                    Bound::Keep
                } else if block(tag) {
                    Bound::LineBreak
                } else {
                    Bound::Drop
                }
            }
            Event::Html(_) | Event::InlineHtml(_) => {
                self.raw_html = true;
                Bound::Keep
            }
            _ => Bound::Keep,
        }
    }

    /// Joins the texts that follow `first` while each is the next stretch of the source, up to
    /// [`JOINED_TEXT_BYTES`]; `None` when the next event is not such a text. The event that ends
    /// the run goes through the depth bound and heading anchors here and waits in the queue.
    ///
    /// pulldown-cmark makes a text event of each inline piece (`[a](` repeated gives three per
    /// four bytes, twelve million at the size cap), and texts that are one stretch of the source
    /// render exactly as the one text they make (the writer escapes text character by
    /// character). Only runs are looked into: most texts are followed by a tag, and looking
    /// ahead of each would cost every event a copy.
    fn join_texts(&mut self, first: &'a str) -> Option<Event<'a>> {
        let base = self.source.as_ptr() as usize;
        let start = (first.as_ptr() as usize).checked_sub(base)?;
        let mut end = start
            .checked_add(first.len())
            .filter(|end| *end <= self.source.len())?;
        let mut joined = false;
        while end - start < JOINED_TEXT_BYTES {
            match self.parser.next() {
                Some(Event::Text(CowStr::Borrowed(text)))
                    if text.as_ptr() as usize == base + end =>
                {
                    end += text.len();
                    joined = true;
                    if !self.counted() {
                        break;
                    }
                }
                Some(other) => {
                    self.after_text = false;
                    self.queue_after_run(other);
                    break;
                }
                None => break,
            }
        }
        // Both ends are ends of strs lying in the source, so they are character boundaries.
        joined
            .then(|| self.source.get(start..end))
            .flatten()
            .map(|text| Event::Text(CowStr::Borrowed(text)))
    }

    /// What [`Iterator::next`] does with an event it pulled, for the one that ended a run of
    /// joined texts: its outcome waits in the (empty) queue behind the joined text. Kept apart
    /// from `next`, whose loop handles every event of the document and must not copy them once
    /// more through a shared helper.
    #[cold]
    fn queue_after_run(&mut self, event: Event<'a>) {
        let bound = self.bound_depth(&event);
        if let Event::Start(Tag::Heading { .. }) = &event {
            let Event::Start(tag) = event else { return };
            // `heading` queues the heading's events; its start goes before them.
            if let Some(Some(start)) = self.heading(tag, matches!(bound, Bound::Keep)) {
                self.queue.push_front(start);
            }
            return;
        }
        match bound {
            Bound::Keep => self.queue.push_back(event),
            Bound::LineBreak => self.queue.push_back(Event::SoftBreak),
            Bound::Drop => {}
        }
    }

    /// Hands `event` to the writer: whether its output starts outside a tag (see [`Ends`]), and
    /// the images it opens or closes.
    #[inline]
    fn hand_out(&mut self, event: Event<'a>) -> Option<Event<'a>> {
        self.boundary.set(self.images == 0);
        match &event {
            Event::Start(Tag::Image { .. }) => self.images += 1,
            Event::End(TagEnd::Image) => self.images = self.images.saturating_sub(1),
            Event::Text(CowStr::Borrowed(text)) if text.len() > JOINED_TEXT_BYTES => {
                return Some(self.split_text(text));
            }
            _ => {}
        }
        if self.bounded.rewritten() {
            return Some(self.as_written(event));
        }
        Some(event)
    }

    /// The first [`JOINED_TEXT_BYTES`] of a longer text (as written), the rest queued to be
    /// handed out next. A line of plain text is one event however long (16 MiB of it, or of
    /// marks made plain), and [`Ends`] can drop output only where an event starts; the pieces
    /// render exactly as the whole.
    #[cold]
    fn split_text(&mut self, text: &'a str) -> Event<'a> {
        let text = self.bounded.as_written(text);
        let (head, rest) = text.split_at(super::floor_char_boundary(text, JOINED_TEXT_BYTES));
        self.queue.push_front(Event::Text(CowStr::Borrowed(rest)));
        Event::Text(CowStr::Borrowed(head))
    }

    /// A text or raw HTML as the source has it: marks made plain read as written.
    fn as_written(&self, event: Event<'a>) -> Event<'a> {
        let written = |s: CowStr<'a>| match s {
            CowStr::Borrowed(b) => CowStr::Borrowed(self.bounded.as_written(b)),
            other => other,
        };
        match event {
            Event::Text(t) => Event::Text(written(t)),
            Event::Code(t) => Event::Code(written(t)),
            Event::Html(t) => Event::Html(written(t)),
            Event::InlineHtml(t) => Event::InlineHtml(written(t)),
            other => other,
        }
    }
}

/// What the depth bound does with an event.
enum Bound {
    Keep,
    Drop,
    /// A flattened block's end: a line break in its place.
    LineBreak,
}

impl<'a, C: FnMut() -> Result<(), E>, E> Iterator for Events<'a, '_, C, E> {
    type Item = Event<'a>;

    // Called once per event of documents of millions of events: an event is matched by
    // reference and returned as it came; only headings use the queue.
    fn next(&mut self) -> Option<Event<'a>> {
        loop {
            if let Some(event) = self.queue.pop_front() {
                return self.hand_out(event);
            }
            if self.stop.is_some() {
                return None;
            }
            let event = self.parser.next()?;
            if !self.counted() {
                return None;
            }
            if let Event::Text(CowStr::Borrowed(text)) = &event {
                if std::mem::replace(&mut self.after_text, true) {
                    if let Some(joined) = self.join_texts(text) {
                        return self.hand_out(joined);
                    }
                }
            } else {
                self.after_text = false;
            }
            let bound = self.bound_depth(&event);
            if let Event::Start(Tag::Heading { .. }) = &event {
                let Event::Start(tag) = event else { continue };
                // A heading takes its anchor even when flattened, as in the outline; its start
                // goes before the events queued behind it.
                match self.heading(tag, matches!(bound, Bound::Keep)) {
                    Some(Some(start)) => return self.hand_out(start),
                    Some(None) => continue,
                    None => return None,
                }
            }
            match bound {
                Bound::Keep => return self.hand_out(event),
                Bound::LineBreak => return self.hand_out(Event::SoftBreak),
                Bound::Drop => {}
            }
        }
    }
}

/// Block containers: flattening one still ends a line.
fn block(tag: &TagEnd) -> bool {
    !matches!(
        tag,
        TagEnd::Emphasis
            | TagEnd::Strong
            | TagEnd::Strikethrough
            | TagEnd::Superscript
            | TagEnd::Subscript
            | TagEnd::Link
            | TagEnd::Image
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
pub fn markdown_to_safe_html_bounded<E>(
    markdown: &str,
    mut check: impl FnMut() -> Result<(), E>,
) -> Result<(String, usize), E> {
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
pub fn flatten_rendered<E>(
    rendered: MarkdownHtml,
    check: impl FnMut() -> Result<(), E>,
) -> Result<Flattened, E> {
    if !rendered.raw_html {
        // The tokenizer turns a NUL in text into U+FFFD; the tree builder would drop it.
        let html = if rendered.html.contains('\0') {
            rendered.html.replace('\0', "\u{fffd}")
        } else {
            rendered.html
        };
        return Ok(Flattened {
            html,
            dropped: rendered.flattened,
        });
    }
    let flat = flatten(&rendered.html, check)?;
    Ok(Flattened {
        html: flat.html,
        dropped: flat.dropped + rendered.flattened,
    })
}

#[cfg(test)]
mod tests;
