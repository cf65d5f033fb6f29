//! One pass of pulldown-cmark over a Markdown text, kept as plain data every operation reads:
//! headings, links and images, code blocks, front matter, raw-HTML anchors and the text runs
//! where bare URLs may hide. Offsets are byte offsets into the text; [`LineIndex`] turns them
//! into exact 1-indexed lines and columns (columns count Unicode scalar values).

use super::slug::Slugger;
use crate::bounded::Bounded;
use pulldown_cmark::{
    BrokenLink, CodeBlockKind, Event, LinkType, MetadataBlockKind, Options, Parser, Tag, TagEnd,
};
use regex::Regex;
use std::borrow::Cow;
use std::collections::HashSet;
use std::ops::Range;
use std::sync::LazyLock;

/// The GitHub-flavoured options every operation parses with.
pub fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_HEADING_ATTRIBUTES
        | Options::ENABLE_YAML_STYLE_METADATA_BLOCKS
        | Options::ENABLE_GFM
}

/// Events walked between two calls of [`Document::parse_checked`]'s `check`.
pub const CHECK_EVERY_EVENTS: usize = 64 * 1024;

/// Undefined references a [`Document`] keeps (the rest are counted): the most findings any
/// operation shows.
pub const KEPT_BROKEN_REFS: usize = super::MAX_DIAGNOSTICS;

/// Keeps the `keep` references that come first in the text, in text order; returns how many
/// were dropped. Linear: a text of 16 MiB can hold millions (`[a][b] ` repeated).
fn keep_first(refs: &mut Vec<BrokenRef>, keep: usize) -> usize {
    let total = refs.len();
    if total > keep {
        refs.select_nth_unstable_by_key(keep, |r| r.range.start);
        refs.truncate(keep);
    }
    refs.sort_by_key(|r| r.range.start);
    total - refs.len()
}

/// Byte offsets of line starts; lines are split on `\n` exactly as `str::split('\n')` does, so
/// a text ending in `\n` has a final empty line (markdownlint counts lines the same way).
#[derive(Debug, Clone)]
pub struct LineIndex {
    starts: Vec<usize>,
    len: usize,
    /// Characters before each [`CHAR_BLOCK`]-byte block of the text, so a column on a very long
    /// line costs one short scan instead of a scan from the line start (many findings on one
    /// 16 MiB line would otherwise be quadratic).
    chars_before: Vec<usize>,
}

/// Bytes per checkpoint of [`LineIndex`]'s character counts.
const CHAR_BLOCK: usize = 256;

/// Characters in `bytes`, which need not start or end on a character boundary: every byte that
/// is not a UTF-8 continuation byte starts one.
fn char_starts(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| (b as i8) >= -0x40).count()
}

impl LineIndex {
    pub fn new(text: &str) -> Self {
        let mut starts = Vec::with_capacity(text.len() / 40 + 1);
        starts.push(0);
        starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1));
        let mut chars_before = Vec::with_capacity(text.len() / CHAR_BLOCK + 1);
        let mut total = 0;
        for block in text.as_bytes().chunks(CHAR_BLOCK) {
            chars_before.push(total);
            total += char_starts(block);
        }
        chars_before.push(total);
        LineIndex {
            starts,
            len: text.len(),
            chars_before,
        }
    }

    /// Number of lines (at least 1).
    pub fn count(&self) -> usize {
        self.starts.len()
    }

    /// 0-based line of a byte offset.
    pub fn line_of(&self, offset: usize) -> usize {
        self.starts
            .partition_point(|&s| s <= offset)
            .saturating_sub(1)
    }

    /// Byte range of line `i` (0-based), without its `\n`.
    pub fn range(&self, i: usize) -> Range<usize> {
        let start = self.starts[i];
        let end = self.starts.get(i + 1).map_or(self.len, |next| next - 1);
        start..end
    }

    pub fn start(&self, i: usize) -> usize {
        self.starts[i]
    }

    /// 1-indexed (line, column) of a byte offset; the column counts characters.
    pub fn position(&self, text: &str, offset: usize) -> (usize, usize) {
        let line = self.line_of(offset);
        let start = self.starts[line];
        let column =
            if offset >= start && text.is_char_boundary(start) && text.is_char_boundary(offset) {
                self.chars_to(text, offset) - self.chars_to(text, start) + 1
            } else {
                1
            };
        (line + 1, column)
    }

    /// Characters in `text[..offset]`.
    fn chars_to(&self, text: &str, offset: usize) -> usize {
        let block = offset / CHAR_BLOCK;
        let before = self.chars_before.get(block).copied().unwrap_or(0);
        before
            + text
                .as_bytes()
                .get(block * CHAR_BLOCK..offset)
                .map_or(0, char_starts)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Heading {
    pub level: u8,
    /// Text content with inline markup stripped (image alt text excluded, as in GitHub's HTML);
    /// line breaks inside the heading read as spaces.
    pub text: String,
    /// The same text with line breaks kept, which is what GitHub slugs (they are dropped there).
    pub slug_text: String,
    /// Byte range of the whole heading (for Setext headings, both lines).
    pub range: Range<usize>,
    /// 0-based first and last line.
    pub first_line: usize,
    pub last_line: usize,
    pub setext: bool,
    /// An explicit `{#id}` attribute.
    pub explicit_id: Option<String>,
    /// The GitHub anchor (or the explicit id).
    pub anchor: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Link<'a> {
    pub image: bool,
    pub link_type: LinkType,
    /// Destination after reference resolution, as written (not percent-decoded); borrowed
    /// from the text when it appears there verbatim.
    pub dest: Cow<'a, str>,
    pub range: Range<usize>,
    /// True when the link text (or image alt text) is empty.
    pub text_empty: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CodeBlock {
    pub range: Range<usize>,
    pub fenced: bool,
    pub info: String,
}

/// A `[text][label]` or `[label][]` whose label has no definition.
#[derive(Debug, Clone, PartialEq)]
pub struct BrokenRef {
    pub range: Range<usize>,
    pub label: String,
}

#[derive(Debug, Clone)]
pub struct Document<'a> {
    pub text: &'a str,
    pub lines: LineIndex,
    pub headings: Vec<Heading>,
    pub links: Vec<Link<'a>>,
    pub code_blocks: Vec<CodeBlock>,
    /// The first [`KEPT_BROKEN_REFS`] undefined references in document order (every operation
    /// lists findings by position and shows at most that many, so a later one is never shown).
    pub broken_refs: Vec<BrokenRef>,
    /// Undefined references past those: counted, not kept.
    pub broken_refs_omitted: usize,
    pub front_matter: Option<Range<usize>>,
    pub front_matter_title: bool,
    /// `id`/`name` attributes found in raw HTML (valid link fragments too).
    pub html_anchors: HashSet<String>,
    /// Offsets of raw-HTML `<img>` tags without an `alt` attribute.
    pub html_images_without_alt: Vec<usize>,
    /// Byte ranges of bare URLs in ordinary text.
    pub bare_urls: Vec<Range<usize>>,
    /// `href` of raw-HTML `<a>` and `src` of raw-HTML `<img>`: (offset of the tag, is image,
    /// value with `&amp;` decoded). link_check_local checks them like Markdown links.
    pub html_links: Vec<(usize, bool, String)>,
    /// Inline marks past [`crate::preview::marks::MAX_MARKS`], read as plain text: links,
    /// emphasis and code spans after them are not seen.
    pub plain_marks: usize,
}

static HTML_ANCHOR: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r#"(?i)(?:^|[\s"'])(?:id|name)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))"#).ok()
});
static HTML_LINK_TAG: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?i)<(a|img)\s[^>]*>").ok());
static HTML_URL_ATTR: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r#"(?i)\s(href|src)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))"#).ok()
});
static HTML_IMG: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"(?i)<img\b[^>]*>").ok());
static HTML_ALT: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r#"(?i)[\s"'](?:alt\s*=|aria-hidden\s*=\s*["']?true)"#).ok());
static FRONT_MATTER_TITLE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?m)^\s*title\s*:").ok());

/// The parser every operation uses, recording `[text][label]` and `[label][]` references whose
/// label has no definition.
fn parser<'a, 'b>(
    text: &'a str,
    broken: &'b mut Vec<BrokenRef>,
) -> Parser<
    'a,
    impl FnMut(BrokenLink<'a>) -> Option<(pulldown_cmark::CowStr<'a>, pulldown_cmark::CowStr<'a>)> + 'b,
> {
    let callback = move |link: BrokenLink<'a>| {
        if matches!(link.link_type, LinkType::Reference | LinkType::Collapsed) {
            broken.push(BrokenRef {
                range: link.span.clone(),
                label: link.reference.into_string(),
            });
        }
        None
    };
    Parser::new_with_broken_link_callback(text, options(), Some(callback))
}

impl<'a> Document<'a> {
    pub fn parse(text: &'a str) -> Self {
        match Self::parse_checked(text, || Ok::<(), std::convert::Infallible>(())) {
            Ok(doc) => doc,
            Err(never) => match never {},
        }
    }

    /// [`Document::parse`], calling `check` every [`CHECK_EVERY_EVENTS`] events; its error
    /// stops the walk (pulldown-cmark's block pass, before the first event, is not covered).
    pub fn parse_checked<E>(
        text: &'a str,
        mut check: impl FnMut() -> Result<(), E>,
    ) -> Result<Self, E> {
        let mut doc = Document {
            text,
            lines: LineIndex::new(text),
            headings: Vec::new(),
            links: Vec::new(),
            code_blocks: Vec::new(),
            broken_refs: Vec::new(),
            broken_refs_omitted: 0,
            front_matter: None,
            front_matter_title: false,
            html_anchors: HashSet::new(),
            html_images_without_alt: Vec::new(),
            bare_urls: Vec::new(),
            html_links: Vec::new(),
            plain_marks: 0,
        };
        // Pathological shapes (containers stacked past the preview's depth bound, inline marks
        // past their bound) are parsed as text, as the preview renders them (same offsets).
        let bounded = Bounded::new(text);
        doc.plain_marks = bounded.plain_marks;
        let mut broken = Vec::new();
        doc.walk(
            parser(bounded.text(), &mut broken).into_offset_iter(),
            &bounded,
            &mut check,
        )?;
        doc.broken_refs_omitted = keep_first(&mut broken, KEPT_BROKEN_REFS);
        doc.broken_refs = broken;
        doc.assign_anchors();
        Ok(doc)
    }

    /// Borrows a string of the parsed text (`text`, or a [`Bounded`] copy with the same
    /// offsets) from `text`, as written there.
    fn rebase<'s>(&self, s: pulldown_cmark::CowStr<'s>, parsed: &'s str) -> Cow<'a, str> {
        if let pulldown_cmark::CowStr::Borrowed(b) = &s {
            let offset = (b.as_ptr() as usize).wrapping_sub(parsed.as_ptr() as usize);
            if let Some(original) = offset
                .checked_add(b.len())
                .filter(|end| *end <= parsed.len())
                .and_then(|end| self.text.get(offset..end))
            {
                return Cow::Borrowed(original);
            }
        }
        Cow::Owned(s.into_string())
    }

    /// Reads every event, calling `check` every [`CHECK_EVERY_EVENTS`] (here rather than in an
    /// iterator adapter: documents have millions of events, and each adapter moves every one).
    fn walk<'s, I: Iterator<Item = (Event<'s>, Range<usize>)>, E>(
        &mut self,
        events: I,
        bounded: &'s Bounded<'a>,
        check: &mut impl FnMut() -> Result<(), E>,
    ) -> Result<(), E> {
        let text = self.text;
        let source = bounded.text();
        // Open heading: (level, start, explicit id, text with line breaks as `\n`).
        let mut heading: Option<(u8, usize, Option<String>, String)> = None;
        let mut image_depth = 0usize;
        let mut link_depth = 0usize;
        // Index of the open link/image in `self.links` and whether it has text so far.
        let mut open_links: Vec<(usize, bool)> = Vec::new();
        let mut in_code = false;
        let mut in_metadata = false;
        let mut in_html_anchor = false;
        // A run of contiguous ordinary text, scanned for bare URLs when it ends.
        let mut run: Option<Range<usize>> = None;

        let mut count = 0usize;
        for (event, range) in events {
            count += 1;
            if count.is_multiple_of(CHECK_EVERY_EVENTS) {
                check()?;
            }
            let is_plain_text = matches!(event, Event::Text(_))
                && !in_code
                && !in_metadata
                && link_depth == 0
                && image_depth == 0
                && !in_html_anchor;
            if is_plain_text {
                match &mut run {
                    Some(r) if r.end == range.start => r.end = range.end,
                    _ => {
                        if let Some(r) = run.take() {
                            scan_bare_urls(text, r, &mut self.bare_urls);
                        }
                        run = Some(range.clone());
                    }
                }
            } else if let Some(r) = run.take() {
                scan_bare_urls(text, r, &mut self.bare_urls);
            }

            match event {
                Event::Start(Tag::Heading { level, id, .. }) => {
                    heading = Some((
                        level as u8,
                        range.start,
                        id.map(|s| s.into_string()),
                        String::new(),
                    ));
                }
                Event::End(TagEnd::Heading(_)) => {
                    if let Some((level, start, explicit_id, content)) = heading.take() {
                        let end = range.end.max(start);
                        let first_line = self.lines.line_of(start);
                        // The range ends after the heading's line break, if any.
                        let last_line = self.lines.line_of(end.saturating_sub(1).max(start));
                        let setext = !is_atx(&text[start..end]);
                        // GitHub slugs the rendered text untrimmed (an image before the text
                        // leaves a leading space, hence a leading `-`); the display text is trimmed.
                        let text = content.trim().replace('\n', " ");
                        let slug_text = content;
                        self.headings.push(Heading {
                            level,
                            text,
                            slug_text,
                            range: start..end,
                            first_line,
                            last_line,
                            setext,
                            explicit_id,
                            anchor: String::new(),
                        });
                    }
                }
                Event::Start(Tag::Link {
                    link_type,
                    dest_url,
                    ..
                }) => {
                    link_depth += 1;
                    open_links.push((self.links.len(), false));
                    self.links.push(Link {
                        image: false,
                        link_type,
                        dest: self.rebase(dest_url, source),
                        range: range.clone(),
                        text_empty: true,
                    });
                }
                Event::Start(Tag::Image {
                    link_type,
                    dest_url,
                    ..
                }) => {
                    image_depth += 1;
                    open_links.push((self.links.len(), false));
                    self.links.push(Link {
                        image: true,
                        link_type,
                        dest: self.rebase(dest_url, source),
                        range: range.clone(),
                        text_empty: true,
                    });
                }
                Event::End(TagEnd::Link) | Event::End(TagEnd::Image) => {
                    if matches!(event, Event::End(TagEnd::Link)) {
                        link_depth = link_depth.saturating_sub(1);
                    } else {
                        image_depth = image_depth.saturating_sub(1);
                    }
                    if let Some((index, has_text)) = open_links.pop() {
                        self.links[index].text_empty = !has_text;
                    }
                }
                Event::Start(Tag::CodeBlock(kind)) => {
                    in_code = true;
                    let (fenced, info) = match kind {
                        CodeBlockKind::Fenced(info) => (true, info.into_string()),
                        CodeBlockKind::Indented => (false, String::new()),
                    };
                    self.code_blocks.push(CodeBlock {
                        range: range.clone(),
                        fenced,
                        info,
                    });
                }
                Event::End(TagEnd::CodeBlock) => in_code = false,
                Event::Start(Tag::MetadataBlock(MetadataBlockKind::YamlStyle)) => {
                    in_metadata = true;
                    self.front_matter_title = FRONT_MATTER_TITLE
                        .as_ref()
                        .is_some_and(|re| re.is_match(&text[range.clone()]));
                    self.front_matter = Some(range.clone());
                }
                Event::Start(Tag::MetadataBlock(_)) => in_metadata = true,
                Event::End(TagEnd::MetadataBlock(_)) => in_metadata = false,
                Event::Text(t) | Event::Code(t) => {
                    if let Some(last) = open_links.last_mut() {
                        if !t.trim().is_empty() {
                            last.1 = true;
                        }
                    }
                    if let Some(h) = heading.as_mut() {
                        if image_depth == 0 {
                            h.3.push_str(bounded.cow_as_written(&t));
                        }
                    }
                }
                Event::SoftBreak | Event::HardBreak => {
                    if let Some(h) = heading.as_mut() {
                        h.3.push('\n');
                    }
                }
                Event::Html(html) | Event::InlineHtml(html) => {
                    let html = bounded.cow_as_written(&html);
                    self.scan_html(html, range.start);
                    if let Some(last) = open_links.last_mut() {
                        last.1 = true;
                    }
                    let tag = html.trim_start().as_bytes();
                    let starts = |prefix: &[u8]| {
                        tag.len() >= prefix.len()
                            && tag[..prefix.len()].eq_ignore_ascii_case(prefix)
                    };
                    if starts(b"<a ") || starts(b"<a>") {
                        in_html_anchor = !html.to_ascii_lowercase().contains("</a>");
                    } else if starts(b"</a") {
                        in_html_anchor = false;
                    }
                }
                _ => {}
            }
        }
        if let Some(r) = run.take() {
            scan_bare_urls(text, r, &mut self.bare_urls);
        }
        Ok(())
    }

    fn scan_html(&mut self, html: &str, offset: usize) {
        // Every pattern below needs an `=` (an attribute value) or `<img`: most raw HTML (`<b>`,
        // `</div>`) has neither and skips the regexes.
        let has_value = memchr::memchr(b'=', html.as_bytes()).is_some();
        let has_img = html
            .as_bytes()
            .windows(4)
            .any(|w| w.eq_ignore_ascii_case(b"<img"));
        if !has_value && !has_img {
            return;
        }
        if let Some(re) = HTML_ANCHOR.as_ref().filter(|_| has_value) {
            for cap in re.captures_iter(html) {
                if let Some(m) = cap.get(1).or_else(|| cap.get(2)).or_else(|| cap.get(3)) {
                    self.html_anchors.insert(m.as_str().to_string());
                }
            }
        }
        if let (Some(tag), Some(attr), true) =
            (HTML_LINK_TAG.as_ref(), HTML_URL_ATTR.as_ref(), has_value)
        {
            for t in tag.captures_iter(html) {
                let (Some(whole), Some(name)) = (t.get(0), t.get(1)) else {
                    continue;
                };
                let image = name.as_str().eq_ignore_ascii_case("img");
                let wanted = if image { "src" } else { "href" };
                let value = attr
                    .captures_iter(whole.as_str())
                    .find(|c| {
                        c.get(1)
                            .is_some_and(|a| a.as_str().eq_ignore_ascii_case(wanted))
                    })
                    .and_then(|c| c.get(2).or_else(|| c.get(3)).or_else(|| c.get(4)));
                if let Some(value) = value {
                    self.html_links.push((
                        offset + whole.start(),
                        image,
                        value.as_str().replace("&amp;", "&"),
                    ));
                }
            }
        }
        if let (Some(img), Some(alt), true) = (HTML_IMG.as_ref(), HTML_ALT.as_ref(), has_img) {
            for m in img.find_iter(html) {
                if !alt.is_match(m.as_str()) {
                    self.html_images_without_alt.push(offset + m.start());
                }
            }
        }
    }

    fn assign_anchors(&mut self) {
        let mut slugger = Slugger::new();
        for heading in &self.headings {
            if let Some(id) = &heading.explicit_id {
                slugger.reserve(id);
            }
        }
        for heading in &mut self.headings {
            heading.anchor = match &heading.explicit_id {
                Some(id) => id.clone(),
                None => slugger.slug(&heading.slug_text),
            };
        }
    }

    /// Every valid fragment target: heading anchors and raw-HTML ids/names.
    pub fn anchors(&self) -> HashSet<&str> {
        let mut set: HashSet<&str> = self.headings.iter().map(|h| h.anchor.as_str()).collect();
        set.extend(self.html_anchors.iter().map(String::as_str));
        set
    }

    /// Per line: inside a code block or the front matter (skipped by whitespace rules).
    ///
    /// The fence lines of a fenced block are not verbatim (markdownlint checks them for trailing
    /// whitespace too); only the lines between them are. An unclosed fence runs to the end.
    pub fn verbatim_lines(&self) -> Vec<bool> {
        let mut mask = vec![false; self.lines.count()];
        let blocks = self.code_blocks.iter().map(|c| (c.range.clone(), c.fenced));
        for (range, fenced) in blocks.chain(self.front_matter.clone().map(|r| (r, false))) {
            if range.is_empty() {
                continue;
            }
            let mut first = self.lines.line_of(range.start);
            let mut last = self.lines.line_of(range.end - 1);
            if fenced {
                let opening = self
                    .line_text(first)
                    .trim_start_matches(|c: char| c == '>' || c.is_whitespace());
                let fence_char = opening.chars().find(|c| *c == '`' || *c == '~');
                first += 1;
                let closing = self
                    .line_text(last)
                    .trim_start_matches(|c: char| c == '>' || c.is_whitespace())
                    .trim_end();
                let closes = last >= first
                    && fence_char
                        .is_some_and(|f| closing.len() >= 3 && closing.chars().all(|c| c == f));
                if closes {
                    last -= 1;
                }
                if last < first {
                    continue;
                }
            }
            for flag in &mut mask[first..=last] {
                *flag = true;
            }
        }
        mask
    }

    /// First line after the front matter (0 without one).
    pub fn first_content_line(&self) -> usize {
        match &self.front_matter {
            Some(r) if !r.is_empty() => self.lines.line_of(r.end - 1) + 1,
            _ => 0,
        }
    }

    pub fn position(&self, offset: usize) -> (usize, usize) {
        self.lines.position(self.text, offset)
    }

    pub fn line_text(&self, i: usize) -> &'a str {
        &self.text[self.lines.range(i)]
    }
}

/// ATX headings start with `#` after up to three spaces (or blockquote/list markers).
fn is_atx(source: &str) -> bool {
    source.trim_start_matches([' ', '\t', '>']).starts_with('#')
}

mod autolinks;
use autolinks::scan_bare_urls;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_one_indexed_and_count_characters() {
        let text = "# Title\n\né [x]()\n";
        let doc = Document::parse(text);
        assert_eq!(doc.position(0), (1, 1));
        let link = &doc.links[0];
        assert_eq!(doc.position(link.range.start), (3, 3));
        assert_eq!(doc.lines.count(), 4);
    }

    #[test]
    fn headings_in_code_blocks_are_not_headings() {
        let doc = Document::parse("# A\n\n```\n# not\n```\n\n    # indented\n\nB\n-\n");
        let texts: Vec<_> = doc
            .headings
            .iter()
            .map(|h| (h.text.as_str(), h.level, h.setext))
            .collect();
        assert_eq!(texts, [("A", 1, false), ("B", 2, true)]);
        assert_eq!(doc.headings[1].first_line, 8);
        assert_eq!(doc.headings[1].last_line, 9);
    }

    #[test]
    fn bare_urls_skip_links_code_and_autolinks() {
        let text = "see https://a.example/x_y. and <https://b.example> [https://c.example](https://d.example) `https://e.example` (https://f.example/p)\n";
        let doc = Document::parse(text);
        let urls: Vec<_> = doc.bare_urls.iter().map(|r| &text[r.clone()]).collect();
        assert_eq!(urls, ["https://a.example/x_y", "https://f.example/p"]);
    }

    #[test]
    fn broken_references_and_html_anchors_are_collected() {
        let doc = Document::parse(
            "[a][nope] [b][] [ok][d]\n\n<a name=\"here\"></a><div id='there'>\n\n[d]: x.md\n",
        );
        let labels: Vec<_> = doc.broken_refs.iter().map(|b| b.label.as_str()).collect();
        assert_eq!(labels, ["nope", "b"]);
        assert_eq!(doc.broken_refs_omitted, 0);
        assert!(doc.html_anchors.contains("here") && doc.html_anchors.contains("there"));
        assert_eq!(doc.links.len(), 1);
        assert_eq!(doc.links[0].dest, "x.md");
    }
}
