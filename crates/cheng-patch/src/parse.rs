//! The patch grammar:
//!
//! ```text
//! patch     := "*** Begin Patch" NL operation* "*** End Patch" NL?
//! operation := add | delete | update
//! add       := "*** Add File: " path NL ("+" line NL)*
//! delete    := "*** Delete File: " path NL
//! update    := "*** Update File: " path NL ("*** Move to: " path NL)? hunk+
//! hunk      := ("@@" | "@@ " anchor)* NL  (" " | "-" | "+") line NL ...  ("*** End of File" NL)?
//! ```
//!
//! Leniencies, each one a form models are known to produce: markers may be padded with
//! whitespace; blank lines between operations and hunks are skipped; the first hunk of an update
//! may omit its `@@`; an empty line inside a hunk is an empty context line; `*** End Of File` is
//! taken for `*** End of File`; in [`ParseMode::Lenient`], a heredoc wrapper (`<<'EOF'` … `EOF`)
//! around the whole patch is removed. Several `@@ anchor` lines in a row narrow the position step
//! by step (a class, then a method in it).

use std::path::PathBuf;

use crate::PatchError;

pub(crate) const BEGIN: &str = "*** Begin Patch";
pub(crate) const END: &str = "*** End Patch";
const ADD: &str = "*** Add File:";
const DELETE: &str = "*** Delete File:";
const UPDATE: &str = "*** Update File:";
const MOVE: &str = "*** Move to:";
const END_OF_FILE: [&str; 2] = ["*** End of File", "*** End Of File"];

/// A parsed patch: its file operations in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    pub operations: Vec<Operation>,
}

/// One file operation. `line` is the 1-based line of its header in the patch text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operation {
    /// Create the file (or replace it) with `content`.
    Add {
        path: PathBuf,
        content: String,
        line: usize,
    },
    /// Remove the file.
    Delete { path: PathBuf, line: usize },
    /// Change the file hunk by hunk, then optionally rename it.
    Update {
        path: PathBuf,
        move_to: Option<PathBuf>,
        hunks: Vec<Hunk>,
        line: usize,
    },
}

impl Operation {
    /// The path named in the operation's header.
    pub fn path(&self) -> &std::path::Path {
        match self {
            Operation::Add { path, .. }
            | Operation::Delete { path, .. }
            | Operation::Update { path, .. } => path,
        }
    }

    /// The 1-based patch line of the operation's header.
    pub fn line(&self) -> usize {
        match self {
            Operation::Add { line, .. }
            | Operation::Delete { line, .. }
            | Operation::Update { line, .. } => *line,
        }
    }
}

/// One hunk of an update: replace `old_lines` (found after the `anchors`, in order) by
/// `new_lines`. With `end_of_file`, `old_lines` are looked for at the end of the file first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    pub anchors: Vec<String>,
    pub old_lines: Vec<String>,
    pub new_lines: Vec<String>,
    pub end_of_file: bool,
    /// 1-based patch line where the hunk starts (its first `@@`, or its first line).
    pub line: usize,
}

/// How forgiving the parser is about what surrounds the patch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseMode {
    /// The text must start with `*** Begin Patch` and end with `*** End Patch`.
    Strict,
    /// As strict, but a heredoc wrapper around the patch (`<<'EOF'`, `<<EOF`, `<<"EOF"` on the
    /// first line, the delimiter alone on the last) is removed first.
    Lenient,
}

/// Parses `text` in [`ParseMode::Lenient`].
pub fn parse(text: &str) -> Result<Patch, PatchError> {
    parse_with(text, ParseMode::Lenient)
}

/// Parses `text` in the given mode. Errors name the patch line and what was expected there.
pub fn parse_with(text: &str, mode: ParseMode) -> Result<Patch, PatchError> {
    let lines: Vec<Line> = text
        .lines()
        .enumerate()
        .map(|(i, text)| Line { no: i + 1, text })
        .collect();
    let lines = trim_blank(&lines);
    let body = match boundaries(lines) {
        Ok(body) => body,
        Err(err) => match mode {
            ParseMode::Strict => return Err(err),
            ParseMode::Lenient => match strip_heredoc(lines) {
                Some(inner) => boundaries(trim_blank(inner))?,
                None => return Err(err),
            },
        },
    };
    Parser { lines: body, at: 0 }.operations()
}

#[derive(Debug, Clone, Copy)]
struct Line<'a> {
    no: usize,
    text: &'a str,
}

fn trim_blank<'a, 'b>(mut lines: &'b [Line<'a>]) -> &'b [Line<'a>] {
    while let [first, rest @ ..] = lines {
        if !first.text.trim().is_empty() {
            break;
        }
        lines = rest;
    }
    while let [rest @ .., last] = lines {
        if !last.text.trim().is_empty() {
            break;
        }
        lines = rest;
    }
    lines
}

/// The lines between `*** Begin Patch` and `*** End Patch`.
fn boundaries<'a, 'b>(lines: &'b [Line<'a>]) -> Result<&'b [Line<'a>], PatchError> {
    let Some(first) = lines.first() else {
        return Err(PatchError::parse(
            1,
            format!("the patch is empty; expected '{BEGIN}' on the first line, the operations, then '{END}' on the last line"),
        ));
    };
    if first.text.trim() != BEGIN {
        return Err(PatchError::parse(
            first.no,
            format!(
                "expected '{BEGIN}' as the first line of the patch, found '{}'",
                shorten(first.text)
            ),
        ));
    }
    match lines {
        [_, body @ .., last] if last.text.trim() == END => Ok(body),
        [.., last] => Err(PatchError::parse(
            last.no,
            format!(
                "expected '{END}' as the last line of the patch, found '{}'",
                shorten(last.text)
            ),
        )),
        [] => Err(PatchError::parse(1, format!("expected '{BEGIN}'"))),
    }
}

/// `<<EOF` / `<<'EOF'` / `<<"EOF"` / `<<-EOF` (any word) on the first line and the word alone on
/// the last: the lines in between.
fn strip_heredoc<'a, 'b>(lines: &'b [Line<'a>]) -> Option<&'b [Line<'a>]> {
    let [first, inner @ .., last] = lines else {
        return None;
    };
    let opener = first.text.trim().strip_prefix("<<")?;
    let opener = opener.strip_prefix('-').unwrap_or(opener).trim_start();
    let word = match opener.chars().next()? {
        quote @ ('\'' | '"') => opener.strip_prefix(quote)?.strip_suffix(quote)?,
        _ => opener,
    };
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    (plain && last.text.trim() == word && inner.len() >= 2).then_some(inner)
}

/// A line cut for an error message.
fn shorten(text: &str) -> String {
    const MAX: usize = 80;
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// A header's path: the rest of the (trimmed) line after the marker.
fn header<'a>(text: &'a str, marker: &str) -> Option<&'a str> {
    text.trim().strip_prefix(marker).map(str::trim)
}

fn is_operation_header(text: &str) -> bool {
    let t = text.trim();
    [ADD, DELETE, UPDATE].iter().any(|m| t.starts_with(m)) || t == END || t == BEGIN
}

fn is_end_of_file(text: &str) -> bool {
    END_OF_FILE.contains(&text.trim_end())
}

/// `@@` or `@@ anchor`: `Some(None)` for a bare marker, `Some(Some(anchor))` with one.
fn hunk_marker(text: &str) -> Option<Option<&str>> {
    if text.trim() == "@@" {
        return Some(None);
    }
    let rest = text.strip_prefix("@@ ")?;
    Some((!rest.trim().is_empty()).then_some(rest))
}

struct Parser<'a, 'b> {
    lines: &'b [Line<'a>],
    at: usize,
}

impl<'a> Parser<'a, '_> {
    fn peek(&self) -> Option<Line<'a>> {
        self.lines.get(self.at).copied()
    }

    fn skip_blank(&mut self) {
        while self.peek().is_some_and(|l| l.text.trim().is_empty()) {
            self.at += 1;
        }
    }

    fn operations(mut self) -> Result<Patch, PatchError> {
        let mut operations = Vec::new();
        loop {
            self.skip_blank();
            let Some(line) = self.peek() else { break };
            self.at += 1;
            let path = |marker: &str| -> Result<Option<PathBuf>, PatchError> {
                match header(line.text, marker) {
                    None => Ok(None),
                    Some("") => Err(PatchError::parse(
                        line.no,
                        format!("expected a path after '{marker}'"),
                    )),
                    Some(p) => Ok(Some(PathBuf::from(p))),
                }
            };
            if let Some(path) = path(ADD)? {
                let mut content = String::new();
                while let Some(added) = self.peek().and_then(|l| l.text.strip_prefix('+')) {
                    content.push_str(added);
                    content.push('\n');
                    self.at += 1;
                }
                operations.push(Operation::Add {
                    path,
                    content,
                    line: line.no,
                });
            } else if let Some(path) = path(DELETE)? {
                operations.push(Operation::Delete {
                    path,
                    line: line.no,
                });
            } else if let Some(path) = path(UPDATE)? {
                operations.push(self.update(path, line)?);
            } else if line.text.trim() == END {
                return Err(PatchError::parse(
                    line.no,
                    format!("'{END}' appears before the end of the patch; end the patch with it only once, on its last line"),
                ));
            } else {
                return Err(PatchError::parse(
                    line.no,
                    format!(
                        "expected a file operation ('{ADD} PATH', '{UPDATE} PATH' or '{DELETE} PATH'), found '{}'",
                        shorten(line.text)
                    ),
                ));
            }
        }
        Ok(Patch { operations })
    }

    fn update(&mut self, path: PathBuf, header_line: Line<'a>) -> Result<Operation, PatchError> {
        let mut move_to = None;
        if let Some(line) = self.peek() {
            if let Some(target) = header(line.text, MOVE) {
                if target.is_empty() {
                    return Err(PatchError::parse(
                        line.no,
                        format!("expected a path after '{MOVE}'"),
                    ));
                }
                move_to = Some(PathBuf::from(target));
                self.at += 1;
            }
        }
        let mut hunks = Vec::new();
        loop {
            self.skip_blank();
            let Some(line) = self.peek() else { break };
            if line.text.starts_with('*') || is_operation_header(line.text) {
                break;
            }
            hunks.push(self.hunk(&path, hunks.is_empty())?);
        }
        if hunks.is_empty() {
            return Err(PatchError::parse(
                header_line.no,
                format!(
                    "'{UPDATE} {}' has no hunk; expected '@@' followed by lines starting with ' ' (context), '-' (removed) or '+' (added)",
                    path.display()
                ),
            ));
        }
        Ok(Operation::Update {
            path,
            move_to,
            hunks,
            line: header_line.no,
        })
    }

    fn hunk(&mut self, path: &std::path::Path, first: bool) -> Result<Hunk, PatchError> {
        let start = self.peek().map_or(0, |l| l.no);
        let mut anchors = Vec::new();
        let mut markers = 0;
        while let Some(marker) = self.peek().and_then(|l| hunk_marker(l.text)) {
            markers += 1;
            if let Some(anchor) = marker {
                anchors.push(anchor.to_string());
            }
            self.at += 1;
        }
        if markers == 0 && !first {
            let found = self.peek().map_or("", |l| l.text);
            return Err(PatchError::parse(
                start,
                format!(
                    "expected '@@' to start the next hunk of '{}', found '{}'",
                    path.display(),
                    shorten(found)
                ),
            ));
        }
        let mut hunk = Hunk {
            anchors,
            old_lines: Vec::new(),
            new_lines: Vec::new(),
            end_of_file: false,
            line: start,
        };
        let mut count = 0;
        while let Some(line) = self.peek() {
            if is_end_of_file(line.text) {
                if count == 0 {
                    return Err(PatchError::parse(
                        line.no,
                        "'*** End of File' closes a hunk that has no lines; put the hunk's lines before it",
                    ));
                }
                hunk.end_of_file = true;
                self.at += 1;
                break;
            }
            let mut chars = line.text.chars();
            match chars.next() {
                None => {
                    hunk.old_lines.push(String::new());
                    hunk.new_lines.push(String::new());
                }
                Some(' ') => {
                    hunk.old_lines.push(chars.as_str().to_string());
                    hunk.new_lines.push(chars.as_str().to_string());
                }
                Some('-') => hunk.old_lines.push(chars.as_str().to_string()),
                Some('+') => hunk.new_lines.push(chars.as_str().to_string()),
                Some(_) if count > 0 => break,
                Some(_) => {
                    return Err(PatchError::parse(
                        line.no,
                        format!(
                            "expected a hunk line of '{}' starting with ' ' (context), '-' (removed) or '+' (added), found '{}'",
                            path.display(),
                            shorten(line.text)
                        ),
                    ))
                }
            }
            count += 1;
            self.at += 1;
        }
        if count == 0 {
            let at = self.peek().map_or(start, |l| l.no);
            return Err(PatchError::parse(
                at,
                format!(
                    "the hunk of '{}' starting at line {start} has no lines; expected lines starting with ' ' (context), '-' (removed) or '+' (added) after '@@'",
                    path.display()
                ),
            ));
        }
        Ok(hunk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops(text: &str) -> Vec<Operation> {
        parse(text).unwrap().operations
    }

    fn err(text: &str) -> (usize, String) {
        match parse(text).unwrap_err() {
            PatchError::Parse { line, message } => (line, message),
            other => panic!("not a parse error: {other:?}"),
        }
    }

    #[test]
    fn every_operation_kind() {
        let got = ops("*** Begin Patch\n\
             *** Add File: a/new.txt\n+one\n+\n+two\n\
             *** Delete File: old.txt\n\
             *** Update File: src/x.rs\n*** Move to: src/y.rs\n@@ fn f()\n-    a\n+    b\n ctx\n\
             *** End Patch\n");
        assert_eq!(
            got,
            vec![
                Operation::Add {
                    path: "a/new.txt".into(),
                    content: "one\n\ntwo\n".into(),
                    line: 2
                },
                Operation::Delete {
                    path: "old.txt".into(),
                    line: 6
                },
                Operation::Update {
                    path: "src/x.rs".into(),
                    move_to: Some("src/y.rs".into()),
                    hunks: vec![Hunk {
                        anchors: vec!["fn f()".into()],
                        old_lines: vec!["    a".into(), "ctx".into()],
                        new_lines: vec!["    b".into(), "ctx".into()],
                        end_of_file: false,
                        line: 9,
                    }],
                    line: 7,
                },
            ]
        );
    }

    #[test]
    fn padded_markers_and_crlf_are_accepted() {
        let got = ops("  *** Begin Patch \r\n  *** Update File: f.txt  \r\n@@\r\n-a\r\n+b\r\n *** End Patch\r\n");
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].path(), std::path::Path::new("f.txt"));
    }

    #[test]
    fn several_anchors_and_end_of_file() {
        let got = ops("*** Begin Patch\n*** Update File: f\n@@ class A\n@@ def g\n-x\n+y\n*** End Of File\n@@\n+z\n*** End of File\n*** End Patch");
        let Operation::Update { hunks, .. } = &got[0] else {
            panic!()
        };
        assert_eq!(hunks.len(), 2);
        assert_eq!(hunks[0].anchors, vec!["class A", "def g"]);
        assert!(hunks[0].end_of_file && hunks[1].end_of_file);
        assert_eq!(hunks[1].line, 8);
    }

    #[test]
    fn first_hunk_may_omit_its_marker_the_next_may_not() {
        let got = ops("*** Begin Patch\n*** Update File: f\n ctx\n+new\n*** End Patch");
        let Operation::Update { hunks, .. } = &got[0] else {
            panic!()
        };
        assert_eq!(hunks[0].old_lines, vec!["ctx"]);
        assert_eq!(hunks[0].new_lines, vec!["ctx", "new"]);
        // An empty line inside a hunk is an empty context line; a blank line between hunks is not.
        let got = ops("*** Begin Patch\n*** Update File: f\n@@\n a\n\n b\n\n@@\n-c\n*** End Patch");
        let Operation::Update { hunks, .. } = &got[0] else {
            panic!()
        };
        assert_eq!(hunks[0].old_lines, vec!["a", "", "b", ""]);
        assert_eq!(hunks[1].old_lines, vec!["c"]);
    }

    #[test]
    fn heredoc_wrapper_is_removed_in_lenient_mode_only() {
        for opener in ["<<'EOF'", "<<EOF", "<<\"EOF\"", "<<-PATCH"] {
            let close = opener
                .trim_start_matches("<<-")
                .trim_start_matches("<<")
                .trim_matches(['\'', '"']);
            let text =
                format!("{opener}\n*** Begin Patch\n*** Delete File: a\n*** End Patch\n{close}\n");
            assert_eq!(ops(&text).len(), 1, "{opener}");
            let strict = parse_with(&text, ParseMode::Strict).unwrap_err();
            assert!(strict.to_string().contains("line 1"), "{strict}");
        }
        // The delimiter must close it.
        let (line, message) =
            err("<<'EOF'\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEND\n");
        assert_eq!(line, 1);
        assert!(message.contains("'*** Begin Patch'"), "{message}");
    }

    #[test]
    fn errors_name_the_line_and_what_was_expected() {
        let (line, message) = err("");
        assert_eq!(line, 1);
        assert!(message.contains("empty"), "{message}");

        let (line, message) = err("hello\n*** End Patch");
        assert_eq!(
            (line, message.as_str()),
            (
                1,
                "expected '*** Begin Patch' as the first line of the patch, found 'hello'"
            )
        );

        let (line, message) = err("\n\n*** Begin Patch\n*** Delete File: a\n");
        assert_eq!(line, 4);
        assert!(
            message.contains("'*** End Patch' as the last line"),
            "{message}"
        );

        let (line, message) = err("*** Begin Patch\n*** Frobnicate File: foo\n*** End Patch");
        assert_eq!(line, 2);
        assert!(
            message.starts_with("expected a file operation"),
            "{message}"
        );
        assert!(message.contains("'*** Frobnicate File: foo'"), "{message}");

        let (line, message) = err("*** Begin Patch\n*** Update File: foo.txt\n*** End Patch");
        assert_eq!(line, 2);
        assert!(message.contains("has no hunk"), "{message}");

        let (line, message) = err("*** Begin Patch\n*** Update File: f\n@@\n-a\nx\n*** End Patch");
        assert_eq!(line, 5);
        assert!(
            message.contains("expected '@@' to start the next hunk of 'f', found 'x'"),
            "{message}"
        );

        let (line, message) = err("*** Begin Patch\n*** Update File: f\n@@\nbad\n*** End Patch");
        assert_eq!(line, 4);
        assert!(message.contains("starting with ' ' (context)"), "{message}");

        let (line, message) =
            err("*** Begin Patch\n*** Update File: f\n@@\n*** End of File\n*** End Patch");
        assert_eq!(line, 4);
        assert!(message.contains("no lines"), "{message}");

        let (line, message) = err("*** Begin Patch\n*** Add File:   \n*** End Patch");
        assert_eq!(
            (line, message.as_str()),
            (2, "expected a path after '*** Add File:'")
        );

        let (line, message) =
            err("*** Begin Patch\n*** Update File: f\n*** Move to:\n@@\n-a\n*** End Patch");
        assert_eq!(
            (line, message.as_str()),
            (3, "expected a path after '*** Move to:'")
        );

        let (line, message) = err(
            "*** Begin Patch\n*** Delete File: a\n*** End Patch\n*** Delete File: b\n*** End Patch",
        );
        assert_eq!(line, 3);
        assert!(message.contains("before the end"), "{message}");
    }

    #[test]
    fn inside_a_hunk_a_line_like_a_header_is_content() {
        // Patching a text about patches: " *** Add File: x" is a context line, as in Codex.
        let got = ops("*** Begin Patch\n*** Update File: doc.md\n@@\n *** Add File: x\n-+old\n++new\n*** End Patch");
        let Operation::Update { hunks, .. } = &got[0] else {
            panic!()
        };
        assert_eq!(hunks[0].old_lines, vec!["*** Add File: x", "+old"]);
        assert_eq!(hunks[0].new_lines, vec!["*** Add File: x", "+new"]);
    }

    #[test]
    fn an_empty_patch_parses_to_no_operations() {
        assert!(ops("*** Begin Patch\n*** End Patch").is_empty());
    }
}
