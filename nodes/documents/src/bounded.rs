//! The text pulldown-cmark parses: the source with its pathological shapes bounded first.
//!
//! Every Markdown parse, the preview's and workspace_markdown's, goes through [`Bounded`], so
//! no shape of input makes one cost more than linear time at the size cap: lines stacking
//! containers past the depth bound ([`prefix`]) and inline marks past [`marks::MAX_MARKS`]
//! ([`marks`]) are parsed as plain text. Both keep every byte offset, so a position in the
//! parsed text is the same position in the source, and [`Bounded::as_written`] reads a string
//! borrowed from the parsed text back from the source as it was written.

use crate::preview::{marks, prefix};
use pulldown_cmark::CowStr;

pub struct Bounded<'a> {
    source: &'a str,
    /// The bounded copy, when anything was bounded.
    parsed: Option<String>,
    /// Container levels left unopened on lines stacking too many markers.
    pub unopened_levels: usize,
    /// Inline marks past [`marks::MAX_MARKS`], parsed as plain text.
    pub plain_marks: usize,
}

impl<'a> Bounded<'a> {
    pub fn new(source: &'a str) -> Self {
        let (stacked, unopened_levels) = match prefix::bound(source) {
            Some((text, levels)) => (Some(text), levels),
            None => (None, 0),
        };
        let (parsed, plain_marks) = match marks::bound(stacked.as_deref().unwrap_or(source)) {
            Some((text, plain)) => (Some(text), plain),
            None => (stacked, 0),
        };
        Bounded {
            source,
            parsed,
            unopened_levels,
            plain_marks,
        }
    }

    /// Whether [`Bounded::text`] differs from the source.
    pub fn rewritten(&self) -> bool {
        self.parsed.is_some()
    }

    /// What to parse: the source itself when nothing was bounded.
    pub fn text(&self) -> &str {
        self.parsed.as_deref().unwrap_or(self.source)
    }

    /// `s`, when it lies in [`Bounded::text`], as the source has it at the same offsets (a mark
    /// made plain reads as the mark again); any other string as it is.
    pub fn as_written<'s>(&'s self, s: &'s str) -> &'s str {
        let Some(parsed) = &self.parsed else {
            return s;
        };
        let offset = (s.as_ptr() as usize).wrapping_sub(parsed.as_ptr() as usize);
        // Only ASCII bytes differ, so the same range is on character boundaries in both.
        offset
            .checked_add(s.len())
            .filter(|end| *end <= parsed.len())
            .and_then(|end| self.source.get(offset..end))
            .unwrap_or(s)
    }

    /// [`Bounded::as_written`] for a string of an event.
    pub fn cow_as_written<'s>(&'s self, s: &'s CowStr<'_>) -> &'s str {
        match s {
            CowStr::Borrowed(b) => self.as_written(b),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_of_the_parsed_text_read_back_as_written() {
        let plain = Bounded::new("# a *b*");
        assert_eq!(plain.text(), "# a *b*");
        assert_eq!(plain.plain_marks, 0);
        let source = format!(
            "{}x\n{}",
            ">".repeat(prefix::LINE_DEPTH + 3),
            "*a".repeat(marks::MAX_MARKS + 5)
        );
        let bounded = Bounded::new(&source);
        assert_eq!(bounded.unopened_levels, 3);
        // The `\` escaping the stacked markers counts as a mark.
        assert_eq!(bounded.plain_marks, 6);
        let parsed = bounded.text();
        assert_eq!(parsed.len(), source.len());
        assert!(parsed.ends_with("xaxaxaxaxa"));
        assert_eq!(bounded.as_written(&parsed[parsed.len() - 4..]), "*a*a");
        // A string from elsewhere comes back unchanged.
        assert_eq!(bounded.as_written("xa"), "xa");
        // The escape put in place of a stacked marker reads as the marker.
        let escaped = CowStr::Borrowed(&parsed[prefix::LINE_DEPTH..][..2]);
        assert_eq!(bounded.cow_as_written(&escaped), ">>");
    }
}
