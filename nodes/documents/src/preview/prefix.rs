//! Container markers stacked on one line, bounded before pulldown-cmark parses them.
//!
//! `>>>>…` or `- - - …` on one line opens one block quote or list per marker, and pulldown-cmark
//! spends far more per byte on millions of open containers (16 MiB of `>` took seconds) than on
//! text. The preview keeps at most [`MAX_DEPTH`] containers anyway, so [`bound`] escapes the
//! first marker of a line that would open more than [`LINE_DEPTH`] (a `\` in place of `>`, `-`,
//! `+` or `*`, or of an ordered marker's `.`/`)`): it and everything after it on the line is
//! then ordinary text of the deepest container kept, shown as written. Only lines stacking that
//! many markers change; the replacement keeps every byte offset.

use super::flatten::MAX_DEPTH;

/// Container levels one line may open; a list marker counts two (the list and its item).
pub const LINE_DEPTH: usize = MAX_DEPTH - 4;

/// The text with the marker that passes [`LINE_DEPTH`] on each line escaped, and how many
/// container levels were left unopened; `None` when no line stacks that many.
pub fn bound(text: &str) -> Option<(String, usize)> {
    let mut out: Option<Vec<u8>> = None;
    let mut flattened = 0usize;
    let bytes = text.as_bytes();
    let mut start = 0usize;
    while start < bytes.len() {
        let end = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |i| start + i);
        // Cheap test first: a line that cannot hold LINE_DEPTH markers is left alone.
        if end - start > LINE_DEPTH
            && is_marker_start(
                bytes[start..end]
                    .iter()
                    .position(|b| *b != b' ' && *b != b'\t')
                    .map(|i| bytes[start + i]),
            )
        {
            let (at, levels) = scan(&bytes[start..end]);
            if let Some(at) = at {
                flattened += levels;
                out.get_or_insert_with(|| bytes.to_vec())[start + at] = b'\\';
            }
        }
        start = end + 1;
    }
    let out = out?;
    // Only ASCII bytes were replaced by an ASCII byte.
    String::from_utf8(out).ok().map(|s| (s, flattened))
}

fn is_marker_start(b: Option<u8>) -> bool {
    matches!(b, Some(b'>' | b'-' | b'+' | b'*' | b'0'..=b'9'))
}

/// The offset of the byte to escape in `line` (if its markers pass [`LINE_DEPTH`]) and the
/// container levels from there to the end of the markers.
fn scan(line: &[u8]) -> (Option<usize>, usize) {
    let mut i = 0usize;
    let mut depth = 0usize;
    let mut escape = None;
    let mut past = 0usize;
    loop {
        // Spaces and tabs between markers (at most four: more starts indented code).
        let mut spaces = 0;
        while i < line.len() && matches!(line[i], b' ' | b'\t') && spaces < 4 {
            i += 1;
            spaces += 1;
        }
        let Some(&b) = line.get(i) else { break };
        let blank_after = |j: usize| line.get(j).is_none_or(|c| matches!(c, b' ' | b'\t'));
        let (levels, width, at) = match b {
            b'>' => (1, 1, i),
            b'-' | b'+' | b'*' if blank_after(i + 1) => (2, 1, i),
            b'0'..=b'9' => {
                let digits = line[i..]
                    .iter()
                    .take(10)
                    .take_while(|c| c.is_ascii_digit())
                    .count();
                match line.get(i + digits) {
                    Some(b'.' | b')') if digits <= 9 && blank_after(i + digits + 1) => {
                        (2, digits + 1, i + digits)
                    }
                    _ => break,
                }
            }
            _ => break,
        };
        if escape.is_none() && depth + levels > LINE_DEPTH {
            escape = Some(at);
        }
        if escape.is_some() {
            past += levels;
        }
        depth += levels;
        i += width;
    }
    (escape, past)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_lines_past_the_bound_change_and_offsets_stay() {
        assert_eq!(bound("> a\n- b\n1. c\n"), None);
        assert_eq!(bound(&">".repeat(LINE_DEPTH)), None);
        let text = format!("# t\n{}x\n> y\n", ">".repeat(LINE_DEPTH + 10));
        let (out, levels) = bound(&text).unwrap_or_default();
        assert_eq!(out.len(), text.len());
        assert_eq!(levels, 10);
        assert_eq!(&out[4 + LINE_DEPTH..4 + LINE_DEPTH + 2], "\\>");
        assert!(out.ends_with("x\n> y\n"));
        let (out, levels) = bound(&format!("{}x", "- ".repeat(LINE_DEPTH))).unwrap_or_default();
        assert_eq!(levels, LINE_DEPTH);
        assert_eq!(&out[LINE_DEPTH..LINE_DEPTH + 3], "\\ -");
        let (out, _) = bound(&format!("{}x", "12. ".repeat(LINE_DEPTH))).unwrap_or_default();
        assert_eq!(&out[2 * LINE_DEPTH..2 * LINE_DEPTH + 4], "12\\ ");
    }
}
