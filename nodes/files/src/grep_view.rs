//! What `tools/grep` shows of its matches beyond the file list: matched lines with line numbers
//! and context (`content`), or match counts per file (`count`), and the `offset`/`head_limit`
//! window over the result lines every mode shares.
//!
//! The lines come from ripgrep's own searcher (`grep-searcher`): it numbers the lines, merges
//! overlapping context ranges and reports a break between groups that do not touch, as `rg -n
//! -A/-B/-C` prints them (`path:N:text` for a matched line, `path-N-text` for a context line, `--`
//! between groups). The files are opened by the caller through the workspace handle; this module
//! only reads what it is handed.

use grep_matcher::Matcher;
use grep_searcher::{Searcher, Sink, SinkContext, SinkMatch};
use std::fs::File;

/// Most bytes of one shown line; a longer line is cut at a character boundary and marked.
pub const MAX_LINE_BYTES: usize = 500;
/// What ends a line cut at [`MAX_LINE_BYTES`].
pub const CUT_MARKER: &str = "…[cut]";
/// Largest `context`, `context_before` and `context_after`.
pub const MAX_CONTEXT: i64 = 100;

/// What the search returns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Mode {
    /// Matching files, newest-modified first (Codex's `grep_files`).
    #[default]
    FilesWithMatches,
    /// Matched lines (and context) with line numbers.
    Content,
    /// How many lines match in each file.
    Count,
}

impl Mode {
    /// The `output_mode` port's values, in [`Mode::parse`]'s order.
    pub const NAMES: &'static [&'static str] = &["files_with_matches", "content", "count"];

    pub fn parse(name: &str) -> Option<Mode> {
        match name {
            "files_with_matches" => Some(Mode::FilesWithMatches),
            "content" => Some(Mode::Content),
            "count" => Some(Mode::Count),
            _ => None,
        }
    }
}

/// The output options of one request; the default is Codex's plain file list.
#[derive(Debug, Clone, Default)]
pub struct View {
    pub mode: Mode,
    /// Lines shown before and after each match (content mode only).
    pub before: usize,
    pub after: usize,
    pub case_insensitive: bool,
    pub multiline: bool,
    /// Result lines skipped before the first shown, then at most `head_limit` shown.
    pub offset: usize,
    pub head_limit: Option<usize>,
}

/// `line` without its line terminator, lossily decoded, cut at [`MAX_LINE_BYTES`].
pub fn shown_line(bytes: &[u8]) -> String {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    let text = String::from_utf8_lossy(bytes);
    if text.len() <= MAX_LINE_BYTES {
        return text.into_owned();
    }
    format!(
        "{}{CUT_MARKER}",
        crate::list_dir::cut(&text, MAX_LINE_BYTES)
    )
}

/// The `offset`/`head_limit` window over result lines, bounded in bytes: every line is counted,
/// only the window's lines that fit in `max_bytes` are kept.
pub struct Window {
    offset: usize,
    take: usize,
    max_bytes: usize,
    bytes: usize,
    /// Result lines seen in all.
    pub total: usize,
    /// Lines in the window that did not fit in `max_bytes`.
    pub dropped: usize,
    pub lines: Vec<String>,
}

impl Window {
    pub fn new(view: &View, max_bytes: usize) -> Self {
        Window {
            offset: view.offset,
            take: view.head_limit.unwrap_or(usize::MAX),
            max_bytes,
            bytes: 0,
            total: 0,
            dropped: 0,
            lines: Vec::new(),
        }
    }

    pub fn push(&mut self, line: String) {
        self.total += 1;
        if self.total <= self.offset || self.lines.len() + self.dropped >= self.take {
            return;
        }
        let extra = line.len() + usize::from(!self.lines.is_empty());
        if self.dropped == 0 && self.bytes + extra <= self.max_bytes {
            self.bytes += extra;
            self.lines.push(line);
        } else {
            self.dropped += 1;
        }
    }

    /// Whether every result line is shown.
    pub fn complete(&self) -> bool {
        self.lines.len() == self.total
    }
}

/// Collects one file's result lines (content mode) or match count (count mode).
struct Collect<'a> {
    shown: &'a str,
    content: bool,
    /// Whether a group was already emitted (a `--` goes between groups when context is on).
    grouped: &'a mut bool,
    context: bool,
    lines: Vec<String>,
    count: u64,
}

impl Collect<'_> {
    fn group_start(&mut self) {
        if self.context && *self.grouped {
            self.lines.push("--".to_string());
        }
        *self.grouped = true;
    }
}

impl Sink for Collect<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _searcher: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.count += 1;
        if !self.content {
            return Ok(true);
        }
        if self.lines.is_empty() {
            self.group_start();
        }
        // A multiline match spans several lines: each is shown with its own number.
        let first = mat.line_number().unwrap_or(0);
        for (n, line) in mat.lines().enumerate() {
            self.lines.push(format!(
                "{}:{}:{}",
                self.shown,
                first + n as u64,
                shown_line(line)
            ));
        }
        Ok(true)
    }

    fn context(
        &mut self,
        _searcher: &Searcher,
        ctx: &SinkContext<'_>,
    ) -> Result<bool, Self::Error> {
        if self.lines.is_empty() {
            self.group_start();
        }
        // `-` rather than `:` marks a context line, as grep and ripgrep print it.
        self.lines.push(format!(
            "{}-{}-{}",
            self.shown,
            ctx.line_number().unwrap_or(0),
            shown_line(ctx.bytes())
        ));
        Ok(true)
    }

    fn context_break(&mut self, _searcher: &Searcher) -> Result<bool, Self::Error> {
        if self.content && self.context {
            self.lines.push("--".to_string());
        }
        Ok(true)
    }
}

/// Searches `file` (opened through the workspace handle) and adds its result lines to `window`:
/// its matched and context lines in content mode, `shown:N` in count mode. `grouped` tracks
/// whether an earlier file already put a group out, so `--` separates files as it does groups.
pub fn search_lines(
    searcher: &mut Searcher,
    matcher: &impl Matcher,
    file: &File,
    shown: &str,
    view: &View,
    grouped: &mut bool,
    window: &mut Window,
) -> std::io::Result<()> {
    let mut sink = Collect {
        shown,
        content: view.mode == Mode::Content,
        grouped,
        context: view.before > 0 || view.after > 0,
        lines: Vec::new(),
        count: 0,
    };
    searcher.search_file(matcher, file, &mut sink)?;
    if view.mode == Mode::Count {
        if sink.count > 0 {
            window.push(format!("{shown}:{}", sink.count));
        }
    } else {
        for line in sink.lines {
            window.push(line);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_are_cut_at_a_character_boundary_and_marked() {
        let long = "é".repeat(400);
        let shown = shown_line(long.as_bytes());
        assert!(shown.ends_with(CUT_MARKER));
        assert_eq!(shown.len(), MAX_LINE_BYTES + CUT_MARKER.len());
        assert_eq!(shown_line(b"short\r\n"), "short");
    }

    #[test]
    fn the_window_skips_offset_and_stops_at_head_limit_and_bytes() {
        let view = View {
            offset: 1,
            head_limit: Some(2),
            ..View::default()
        };
        let mut window = Window::new(&view, 1024);
        for n in 0..5 {
            window.push(format!("line {n}"));
        }
        assert_eq!(window.lines, ["line 1", "line 2"]);
        assert_eq!(window.total, 5);
        let mut small = Window::new(&View::default(), 8);
        for n in 0..3 {
            small.push(format!("line {n}"));
        }
        assert_eq!(small.lines, ["line 0"]);
        assert_eq!(small.dropped, 2);
    }
}
