//! Inline markup bounded before pulldown-cmark parses it.
//!
//! pulldown-cmark builds a tree node for every inline mark of the whole document (`*`, `[`,
//! `<`, …, and the text between them) before its first event, then resolves emphasis, links
//! and code spans over them: 16 MiB of `*a` or `[a](` is some 16 million nodes, 800 MB and
//! seconds of parsing, where an ordinary document has one mark in twenty bytes. [`bound`]
//! keeps the first [`MAX_MARKS`] marks and makes each later one plain text (an `x` in its
//! place, same offsets): the parse stays linear and cheap at the size cap, and strings read
//! from the parsed text are read back from the source as written ([`crate::bounded`]).

/// Inline marks parsed as markup; later ones are plain text. An ordinary document has about
/// one mark in twenty bytes (about 960 000 in 16 MiB of prose, links, lists and tables).
pub const MAX_MARKS: usize = 2_000_000;

/// The bytes that open inline markup for pulldown-cmark with the nodes' options (line breaks
/// aside, which cannot be replaced), named in the warnings.
pub const MARKS: &str = "* _ ~ ` [ ] < & \\ |";

/// What stands in for a mark past the bound: a letter is never markup.
const PLAIN: u8 = b'x';

/// The summary's note (preview and workspace_markdown) when `plain` marks were made plain.
pub fn warning(plain: usize) -> String {
    format!(
        "; inline markup past the first {MAX_MARKS} marks ({MARKS}) was flattened to plain text ({plain} later mark{}): links, emphasis and code after that point are shown as written and not analysed; split the file to process all of it",
        if plain == 1 { "" } else { "s" }
    )
}

#[inline]
fn is_mark(b: u8) -> bool {
    // Comparisons rather than a table: the count over 16 MiB vectorises.
    (b == b'*')
        | (b == b'_')
        | (b == b'~')
        | (b == b'`')
        | (b == b'[')
        | (b == b']')
        | (b == b'<')
        | (b == b'&')
        | (b == b'\\')
        | (b == b'|')
}

/// The text with every mark after the first [`MAX_MARKS`] replaced by a letter, and how many
/// were replaced; `None` when the text has no more than that.
pub fn bound(text: &str) -> Option<(String, usize)> {
    bound_at(text, MAX_MARKS)
}

fn bound_at(text: &str, max: usize) -> Option<(String, usize)> {
    let bytes = text.as_bytes();
    // Counted in byte lanes, 255 bytes at a time (a lane cannot overflow): every document is
    // counted, and a count in word lanes took 8 % of an ordinary 10 MB document's analysis.
    let total: usize = bytes
        .chunks(255)
        .map(|chunk| {
            let mut n = 0u8;
            for b in chunk {
                n += u8::from(is_mark(*b));
            }
            usize::from(n)
        })
        .sum();
    if total <= max {
        return None;
    }
    let mut out = bytes.to_vec();
    let mut seen = 0usize;
    for b in out.iter_mut() {
        if is_mark(*b) {
            seen += 1;
            if seen > max {
                *b = PLAIN;
            }
        }
    }
    // Only ASCII bytes were replaced by an ASCII byte.
    String::from_utf8(out).ok().map(|s| (s, total - max))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_past_the_bound_become_letters_at_the_same_offsets() {
        assert_eq!(bound_at("*a* [b](c) <d> e & f | `g`", 14), None);
        let (out, plain) = bound_at("*a* [b](c) é `g` \\* ~~h~~", 4).unwrap_or_default();
        assert_eq!(out, "*a* [b](c) é xgx xx xxhxx");
        assert_eq!(plain, 8);
        // Every byte of MARKS is one.
        let all: String = MARKS.split(' ').collect();
        assert_eq!(bound_at(&all, 0).map(|(_, n)| n), Some(all.len()));
        assert_eq!(bound_at("abc !.-#>(){}$^=", 0), None);
    }
}
