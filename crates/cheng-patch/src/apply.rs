//! Computing every file's new content in memory. Operations run in patch order against a view of
//! the files that already includes the earlier operations (an Add then an Update of the same path
//! updates the added text), so the returned changes, written in order, give what applying the
//! operations one by one would. Nothing is written here.

use std::collections::HashMap;
use std::io;
use std::path::{Component, Path, PathBuf};

use crate::parse::{Hunk, Operation, Patch};
use crate::seek::seek;
use crate::PatchError;

/// One file's change, as computed from the patch. Paths are the patch's own, unresolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Create `path` with `content` (replacing it if it exists, as the format says).
    Add { path: PathBuf, content: String },
    /// Replace `path`'s text `old_content` (what `read` returned, or an earlier operation left)
    /// by `new_content`; with `move_to`, write it there and remove `path`.
    Update {
        path: PathBuf,
        move_to: Option<PathBuf>,
        old_content: String,
        new_content: String,
    },
    /// Remove the file `path`. Whether it exists and is a file is the caller's to check.
    Delete { path: PathBuf },
}

impl Change {
    /// The path the change starts from.
    pub fn path(&self) -> &Path {
        match self {
            Change::Add { path, .. } | Change::Update { path, .. } | Change::Delete { path } => {
                path
            }
        }
    }
}

/// What an earlier operation of the patch left at a path.
enum Seen {
    Text(String),
    Gone { by_line: usize },
}

/// Computes the changes of `patch`. `read` returns a file's current text; it is called once for
/// each Update of a path no earlier operation touched, and never for Add or Delete. Fails without
/// partial result on the first operation that cannot be applied, naming its file and hunk; a
/// patch with no operation fails too (it would change nothing, which is never what was meant).
pub fn apply(
    patch: &Patch,
    read: impl Fn(&Path) -> io::Result<String>,
) -> Result<Vec<Change>, PatchError> {
    if patch.operations.is_empty() {
        return Err(PatchError::NoOperations);
    }
    let mut seen: HashMap<PathBuf, Seen> = HashMap::new();
    let mut changes = Vec::with_capacity(patch.operations.len());
    for op in &patch.operations {
        let fail = |hunk: Option<(usize, usize)>, message: String| PatchError::File {
            path: op.path().to_path_buf(),
            line: op.line(),
            hunk,
            message,
        };
        match op {
            Operation::Add { path, content, .. } => {
                seen.insert(key(path), Seen::Text(content.clone()));
                changes.push(Change::Add {
                    path: path.clone(),
                    content: content.clone(),
                });
            }
            Operation::Delete { path, line } => {
                if let Some(Seen::Gone { by_line }) = seen.get(&key(path)) {
                    return Err(fail(
                        None,
                        format!("it was already deleted or moved away by the operation at patch line {by_line}"),
                    ));
                }
                seen.insert(key(path), Seen::Gone { by_line: *line });
                changes.push(Change::Delete { path: path.clone() });
            }
            Operation::Update {
                path,
                move_to,
                hunks,
                line,
            } => {
                let old = match seen.get(&key(path)) {
                    Some(Seen::Text(text)) => text.clone(),
                    Some(Seen::Gone { by_line }) => {
                        return Err(fail(
                            None,
                            format!(
                            "it was deleted or moved away by the operation at patch line {by_line}"
                        ),
                        ))
                    }
                    None => read(path).map_err(|e| {
                        fail(
                            None,
                            if e.kind() == io::ErrorKind::NotFound {
                                "the file does not exist; create it with '*** Add File:'"
                                    .to_string()
                            } else {
                                format!("cannot read it: {e}")
                            },
                        )
                    })?,
                };
                let new = update(&old, hunks)
                    .map_err(|(i, message)| fail(Some((i + 1, hunks[i].line)), message))?;
                let move_to = move_to.as_ref().filter(|to| key(to) != key(path));
                match move_to {
                    Some(to) => {
                        seen.insert(key(path), Seen::Gone { by_line: *line });
                        seen.insert(key(to), Seen::Text(new.clone()));
                    }
                    None => {
                        seen.insert(key(path), Seen::Text(new.clone()));
                    }
                }
                changes.push(Change::Update {
                    path: path.clone(),
                    move_to: move_to.cloned(),
                    old_content: old,
                    new_content: new,
                });
            }
        }
    }
    Ok(changes)
}

/// `path` with `.` dropped and `..` folded where it can be, so `a/./b` and `a/c/../b` name the
/// same entry of the view.
pub(crate) fn key(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if matches!(out.components().next_back(), Some(Component::Normal(_))) {
                    out.pop();
                } else {
                    out.push(c);
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// A file's lines, each with the line ending it had (`None` for a last line without one).
struct Source<'a> {
    lines: Vec<(&'a str, Option<&'a str>)>,
    /// The first line ending of the file, used for every line the patch adds.
    ending: &'a str,
}

impl<'a> Source<'a> {
    fn parse(text: &'a str) -> Self {
        let mut lines = Vec::new();
        let mut ending = None;
        let mut rest = text;
        while let Some(nl) = rest.find('\n') {
            let (line, end) = match rest[..nl].strip_suffix('\r') {
                Some(line) => (line, &rest[nl - 1..=nl]),
                None => (&rest[..nl], &rest[nl..=nl]),
            };
            ending.get_or_insert(end);
            lines.push((line, Some(end)));
            rest = &rest[nl + 1..];
        }
        if !rest.is_empty() {
            lines.push((rest, None));
        }
        Source {
            lines,
            ending: ending.unwrap_or("\n"),
        }
    }
}

/// One replacement: `old_len` lines at `start` become `new`.
struct Replacement<'h> {
    start: usize,
    old_len: usize,
    new: &'h [String],
}

/// `text` with the hunks applied. Every line keeps its own ending; added lines take the file's
/// first ending; the result ends with a line ending. Errors carry the failing hunk's index.
fn update(text: &str, hunks: &[Hunk]) -> Result<String, (usize, String)> {
    let source = Source::parse(text);
    let lines: Vec<&str> = source.lines.iter().map(|(l, _)| *l).collect();
    let mut replacements: Vec<Replacement> = Vec::with_capacity(hunks.len());
    let mut cursor = 0;
    for (i, hunk) in hunks.iter().enumerate() {
        for anchor in &hunk.anchors {
            match seek(&lines, std::slice::from_ref(anchor), cursor, false) {
                Some((at, _)) => cursor = at + 1,
                None => {
                    let where_ = if cursor > 0
                        && seek(&lines, std::slice::from_ref(anchor), 0, false).is_some()
                    {
                        " after the previous hunk or anchor (hunks must follow the file's order)"
                    } else {
                        ""
                    };
                    return Err((i, format!("could not find the context line '@@ {anchor}'{where_}; read the file again and copy the line exactly")));
                }
            }
        }
        if hunk.old_lines.is_empty() {
            // Pure addition: after the anchors when there are some, else at the end of the file
            // (before a final empty line).
            let start = if !hunk.anchors.is_empty() {
                cursor
            } else if !hunk.end_of_file && lines.last() == Some(&"") {
                lines.len() - 1
            } else {
                lines.len()
            };
            replacements.push(Replacement {
                start,
                old_len: 0,
                new: &hunk.new_lines,
            });
            continue;
        }
        let mut old: &[String] = &hunk.old_lines;
        let mut new: &[String] = &hunk.new_lines;
        let mut found = seek(&lines, old, cursor, hunk.end_of_file);
        if found.is_none() && old.last().is_some_and(String::is_empty) {
            // A trailing empty context line often stands for the file's final newline.
            old = &old[..old.len() - 1];
            if new.last().is_some_and(String::is_empty) {
                new = &new[..new.len() - 1];
            }
            found = seek(&lines, old, cursor, hunk.end_of_file);
        }
        match found {
            Some((start, _)) => {
                replacements.push(Replacement {
                    start,
                    old_len: old.len(),
                    new,
                });
                cursor = start + old.len();
            }
            None => {
                let shown: Vec<String> = hunk.old_lines.iter().map(|l| format!("  {l}")).collect();
                let where_ = if cursor > 0 && seek(&lines, old, 0, false).is_some() {
                    " after the previous hunk (hunks must follow the file's order)"
                } else {
                    ""
                };
                return Err((
                    i,
                    format!(
                        "could not find the lines to change{where_}:\n{}\nread the file again and copy the lines exactly",
                        shown.join("\n")
                    ),
                ));
            }
        }
    }
    // Pure additions at the end can come before later hunks in the list; order by position,
    // keeping the patch order at equal positions.
    let mut order: Vec<usize> = (0..replacements.len()).collect();
    order.sort_by_key(|&i| replacements[i].start);
    let mut out = String::with_capacity(text.len() + 64);
    let mut next = 0;
    let mut prev: Option<usize> = None;
    for &i in &order {
        let r = &replacements[i];
        if r.start < next {
            let other = prev.map_or(0, |p| p + 1);
            return Err((
                i,
                format!("it changes lines that hunk {other} already changes; merge the two hunks into one"),
            ));
        }
        for (line, end) in &source.lines[next..r.start] {
            out.push_str(line);
            out.push_str(end.unwrap_or(source.ending));
        }
        for line in r.new {
            out.push_str(line);
            out.push_str(source.ending);
        }
        next = r.start + r.old_len;
        prev = Some(i);
    }
    for (line, end) in &source.lines[next..] {
        out.push_str(line);
        out.push_str(end.unwrap_or(source.ending));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    fn run(patch: &str, files: &[(&str, &str)]) -> Result<Vec<Change>, PatchError> {
        let files: HashMap<PathBuf, String> = files
            .iter()
            .map(|(p, c)| (PathBuf::from(p), c.to_string()))
            .collect();
        apply(&parse(patch)?, |p| {
            files
                .get(p)
                .cloned()
                .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
        })
    }

    fn updated(patch: &str, old: &str) -> String {
        match run(patch, &[("f", old)]).unwrap().pop() {
            Some(Change::Update { new_content, .. }) => new_content,
            other => panic!("{other:?}"),
        }
    }

    fn update_patch(body: &str) -> String {
        format!("*** Begin Patch\n*** Update File: f\n{body}\n*** End Patch\n")
    }

    #[test]
    fn line_endings_are_kept_per_line_and_added_lines_take_the_first() {
        let got = updated(&update_patch("@@\n a\n-b\n+B\n+C"), "a\r\nb\r\nc\n");
        assert_eq!(got, "a\r\nB\r\nC\r\nc\n");
        // A last line without an ending gets one.
        assert_eq!(updated(&update_patch("@@\n-x\n+y"), "w\nx"), "w\ny\n");
        assert_eq!(updated(&update_patch("@@\n-x\n+y"), "x\r\nz"), "y\r\nz\r\n");
    }

    #[test]
    fn anchors_narrow_the_position_in_order() {
        let old = "class A:\n  def f():\n    return 1\nclass B:\n  def f():\n    return 1\n";
        let got = updated(
            &update_patch("@@ class B:\n@@   def f():\n-    return 1\n+    return 2"),
            old,
        );
        assert_eq!(
            got,
            "class A:\n  def f():\n    return 1\nclass B:\n  def f():\n    return 2\n"
        );
    }

    #[test]
    fn pure_addition_goes_after_its_anchor_or_at_the_end() {
        assert_eq!(
            updated(&update_patch("@@ a\n+new"), "a\nb\n"),
            "a\nnew\nb\n"
        );
        assert_eq!(updated(&update_patch("@@\n+new"), "a\nb\n"), "a\nb\nnew\n");
        assert_eq!(updated(&update_patch("@@\n+new"), "a\n\n"), "a\nnew\n\n");
        assert_eq!(updated(&update_patch("@@\n+new"), ""), "new\n");
    }

    #[test]
    fn end_of_file_hunk_matches_the_last_occurrence() {
        let got = updated(&update_patch("@@\n-x\n+y\n*** End of File"), "x\nmid\nx\n");
        assert_eq!(got, "x\nmid\ny\n");
    }

    #[test]
    fn trailing_empty_context_line_may_stand_for_the_final_newline() {
        let got = updated(&update_patch("@@\n-last\n+LAST\n"), "first\nlast\n");
        assert_eq!(got, "first\nLAST\n");
        let got = updated(
            "*** Begin Patch\n*** Update File: f\n@@\n-last\n+LAST\n \n*** End Patch",
            "first\nlast\n",
        );
        assert_eq!(got, "first\nLAST\n");
    }

    #[test]
    fn whitespace_and_punctuation_leniency() {
        assert_eq!(
            updated(&update_patch("@@\n-  x = 1\n+  x = 2"), "  x = 1   \n"),
            "  x = 2\n"
        );
        assert_eq!(
            updated(&update_patch("@@\n-x = 1\n+x = 2"), "\tx = 1\n"),
            "x = 2\n"
        );
        assert_eq!(
            updated(
                &update_patch("@@\n-say \"hi\" - now\n+ok"),
                "say \u{201C}hi\u{201D} \u{2014} now\n"
            ),
            "ok\n"
        );
    }

    #[test]
    fn later_operations_see_earlier_ones() {
        let patch = "*** Begin Patch\n*** Add File: n\n+one\n*** Update File: n\n*** Move to: m\n@@\n-one\n+two\n*** Update File: m\n@@\n-two\n+three\n*** End Patch";
        let changes = run(patch, &[]).unwrap();
        assert_eq!(
            changes.last(),
            Some(&Change::Update {
                path: "m".into(),
                move_to: None,
                old_content: "two\n".into(),
                new_content: "three\n".into()
            })
        );
        let err = run(
            "*** Begin Patch\n*** Delete File: a\n*** Update File: ./a\n@@\n-x\n*** End Patch",
            &[("a", "x\n")],
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "'./a' (patch line 3): it was deleted or moved away by the operation at patch line 2"
        );
        let err = run(
            "*** Begin Patch\n*** Delete File: a\n*** Delete File: a\n*** End Patch",
            &[("a", "x\n")],
        )
        .unwrap_err();
        assert!(err.to_string().contains("already deleted"), "{err}");
    }

    #[test]
    fn a_move_onto_itself_is_a_plain_update() {
        let changes = run(
            "*** Begin Patch\n*** Update File: f\n*** Move to: ./f\n@@\n-a\n+b\n*** End Patch",
            &[("f", "a\n")],
        )
        .unwrap();
        assert!(matches!(&changes[0], Change::Update { move_to: None, .. }));
    }

    #[test]
    fn errors_name_the_file_and_the_hunk() {
        let err = run(
            &update_patch("@@\n-a\n+b\n@@\n-zzz\n+y"),
            &[("f", "a\nb\n")],
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("'f' (patch line 2), hunk 2 at patch line 6: could not find the lines to change:\n  zzz\n"), "{text}");
        let err = run(&update_patch("@@ nope\n-a"), &[("f", "a\n")]).unwrap_err();
        assert!(
            err.to_string()
                .contains("hunk 1 at patch line 3: could not find the context line '@@ nope'"),
            "{err}"
        );
        let err = run(&update_patch("@@\n-b\n@@\n-a"), &[("f", "a\nb\n")]).unwrap_err();
        assert!(err.to_string().contains("after the previous hunk"), "{err}");
        let err = run(&update_patch("@@\n-a"), &[]).unwrap_err();
        assert!(err.to_string().contains("does not exist"), "{err}");
        let err = run("*** Begin Patch\n*** End Patch", &[]).unwrap_err();
        assert_eq!(err, PatchError::NoOperations);
    }

    #[test]
    fn overlapping_hunks_are_refused() {
        // The addition goes before the final empty line, which the second hunk replaces too.
        let err = run(&update_patch("@@\n+tail\n@@\n-a\n-"), &[("f", "a\n\n")]).unwrap_err();
        assert!(
            err.to_string()
                .contains("hunk 1 at patch line 3: it changes lines that hunk 2 already changes"),
            "{err}"
        );
        // Addition at the end and a change of the last line do not overlap: both apply.
        let got = updated(
            &update_patch("@@\n+tail\n*** End of File\n@@\n-b\n+B"),
            "a\nb\n",
        );
        assert_eq!(got, "a\nB\ntail\n");
    }

    #[test]
    fn key_folds_dots() {
        assert_eq!(key(Path::new("./a/b/../c")), PathBuf::from("a/c"));
        assert_eq!(key(Path::new("../a")), PathBuf::from("../a"));
    }
}
