//! Locating a hunk's lines in a file, from strict to forgiving: exact, then ignoring trailing
//! whitespace, then ignoring whitespace at both ends, then also with typographic punctuation
//! folded to ASCII (dashes, quotes, odd spaces). The first level with a match wins, and within a
//! level the first position at or after `start`.

use std::borrow::Cow;

/// How two lines are compared, in the order the levels are tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Exact,
    TrimEnd,
    Trim,
    Folded,
}

const LEVELS: [Level; 4] = [Level::Exact, Level::TrimEnd, Level::Trim, Level::Folded];

fn same(level: Level, line: &str, pattern: &str) -> bool {
    match level {
        Level::Exact => line == pattern,
        Level::TrimEnd => line.trim_end() == pattern.trim_end(),
        Level::Trim => line.trim() == pattern.trim(),
        Level::Folded => fold(line) == fold(pattern),
    }
}

fn matches_at<S: AsRef<str>>(level: Level, lines: &[&str], pattern: &[S], at: usize) -> bool {
    lines[at..at + pattern.len()]
        .iter()
        .zip(pattern)
        .all(|(line, pat)| same(level, line, pat.as_ref()))
}

/// Where `pattern` starts in `lines`, at or after `start`. An empty pattern is found at `start`.
/// With `end_of_file`, the position that puts the pattern at the very end of the file is tried
/// first (every level), then the search from `start`.
pub fn seek<S: AsRef<str>>(
    lines: &[&str],
    pattern: &[S],
    start: usize,
    end_of_file: bool,
) -> Option<(usize, Level)> {
    if pattern.is_empty() {
        return Some((start.min(lines.len()), Level::Exact));
    }
    let last = lines.len().checked_sub(pattern.len())?;
    if end_of_file && last >= start {
        if let Some(level) = LEVELS
            .into_iter()
            .find(|&l| matches_at(l, lines, pattern, last))
        {
            return Some((last, level));
        }
    }
    LEVELS.into_iter().find_map(|level| {
        (start..=last)
            .find(|&at| matches_at(level, lines, pattern, at))
            .map(|at| (at, level))
    })
}

/// `line` trimmed, with typographic punctuation and spaces replaced by their ASCII forms.
pub fn fold(line: &str) -> Cow<'_, str> {
    let line = line.trim();
    if line.is_ascii() {
        return Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len());
    for c in line.chars() {
        match c {
            // hyphen, non-breaking hyphen, figure dash, en dash, em dash, horizontal bar,
            // small/full-width hyphen-minus, minus sign
            '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{2015}'
            | '\u{FE63}' | '\u{FF0D}' | '\u{2212}' => out.push('-'),
            // single quotes and primes
            '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' | '\u{FF07}' => {
                out.push('\'')
            }
            // double quotes and double primes
            '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' | '\u{FF02}'
            | '\u{00AB}' | '\u{00BB}' => out.push('"'),
            // no-break, fixed-width, narrow, mathematical and ideographic spaces
            '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => {
                out.push(' ')
            }
            '\u{2026}' => out.push_str("..."),
            // zero-width space and joiners, byte order mark: nothing
            '\u{200B}' | '\u{200C}' | '\u{200D}' | '\u{2060}' | '\u{FEFF}' => {}
            other => out.push(other),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_in_order() {
        let lines = ["a  ", "  b", "c", "x \u{2014} \u{201C}q\u{201D}\u{00A0}y"];
        assert_eq!(seek(&lines, &["c"], 0, false), Some((2, Level::Exact)));
        assert_eq!(seek(&lines, &["a"], 0, false), Some((0, Level::TrimEnd)));
        assert_eq!(seek(&lines, &["b"], 0, false), Some((1, Level::Trim)));
        assert_eq!(
            seek(&lines, &["x - \"q\" y"], 0, false),
            Some((3, Level::Folded))
        );
        assert_eq!(seek(&lines, &["x -- \"q\" y"], 0, false), None);
    }

    #[test]
    fn a_stricter_match_later_wins_over_a_looser_one_earlier() {
        let lines = ["foo ", "foo"];
        assert_eq!(seek(&lines, &["foo"], 0, false), Some((1, Level::Exact)));
    }

    #[test]
    fn start_is_respected() {
        let lines = ["x", "y", "x"];
        assert_eq!(seek(&lines, &["x"], 1, false), Some((2, Level::Exact)));
        assert_eq!(seek(&lines, &["y"], 2, false), None);
    }

    #[test]
    fn end_of_file_prefers_the_last_position_then_falls_back() {
        let lines = ["x", "y", "x"];
        assert_eq!(seek(&lines, &["x"], 0, true), Some((2, Level::Exact)));
        assert_eq!(seek(&lines, &["y"], 0, true), Some((1, Level::Exact)));
    }

    #[test]
    fn edge_cases_do_not_panic() {
        let empty: [&str; 0] = [];
        assert_eq!(seek(&empty, &["x"], 0, false), None);
        assert_eq!(seek(&["a"], &["a", "b", "c"], 0, true), None);
        assert_eq!(seek(&["a"], &empty, 5, false), Some((1, Level::Exact)));
        assert_eq!(seek(&["a"], &["a"], 3, true), None);
    }

    #[test]
    fn fold_table() {
        assert_eq!(
            fold("\u{2018}a\u{2019} \u{2013} b\u{2026}\u{200B}"),
            "'a' - b..."
        );
        assert_eq!(fold("  plain  "), "plain");
    }
}
