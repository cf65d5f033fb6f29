//! Approval cards for file changes: what exactly would change, bounded like every other output.
//!
//! One card describes a set of [`Change`]s (one for write_file, edit_file and delete_path, one
//! per file for apply_patch): the card's command line names them with their byte counts, and
//! its details hold a unified diff of each (computed with `similar`), cut head+tail at
//! [`DIFF_CAP`] bytes with the number of omitted bytes named, plus the syntax lines.

use cheng_node::text::{head_tail, human_bytes};
use cheng_node::{ApprovalRequest, RunContext};

/// Most bytes of diff a card shows (head and tail kept).
pub const DIFF_CAP: usize = 32 * 1024;

/// Lines of context around each change in the diff.
pub const CONTEXT_LINES: usize = 3;

/// One change to one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Create (`old: None`) or replace a file; texts as the model sees them (LF line breaks).
    Write { display: String, old: Option<String>, new: String, old_bytes: u64, new_bytes: u64 },
    /// Move a file (apply_patch's `*** Move to:`), possibly with new content.
    Move { from: String, to: String, old: String, new: String, old_bytes: u64, new_bytes: u64 },
    /// Remove a file, or a directory with everything in it.
    Delete { display: String, directory: bool, files: u64, bytes: u64 },
}

impl Change {
    /// `write src/a.rs (120 B -> 140 B)`, `create b.txt (12 B)`, `delete dir/ (3 files, 1.2 KiB)`.
    pub fn headline(&self) -> String {
        match self {
            Change::Write { display, old: None, new_bytes, .. } => format!("create {display} ({})", human_bytes(*new_bytes)),
            Change::Write { display, old_bytes, new_bytes, .. } => {
                format!("write {display} ({} -> {})", human_bytes(*old_bytes), human_bytes(*new_bytes))
            }
            Change::Move { from, to, old_bytes, new_bytes, .. } => {
                format!("move {from} -> {to} ({} -> {})", human_bytes(*old_bytes), human_bytes(*new_bytes))
            }
            Change::Delete { display, directory: true, files, bytes } => {
                format!("delete {display}/ (directory: {files} file(s), {})", human_bytes(*bytes))
            }
            Change::Delete { display, bytes, .. } => format!("delete {display} ({})", human_bytes(*bytes)),
        }
    }

    /// The unified diff of this change (empty for a directory delete or an unchanged file).
    pub fn diff(&self) -> String {
        match self {
            Change::Write { display, old, new, .. } => {
                let (a, old) = match old {
                    Some(old) => (format!("a/{display}"), old.as_str()),
                    None => ("/dev/null".to_string(), ""),
                };
                unified(old, new, &a, &format!("b/{display}"))
            }
            Change::Move { from, to, old, new, .. } => unified(old, new, &format!("a/{from}"), &format!("b/{to}")),
            Change::Delete { .. } => String::new(),
        }
    }
}

/// A unified diff of `old` → `new` with file headers `a` and `b`.
pub fn unified(old: &str, new: &str, a: &str, b: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(CONTEXT_LINES)
        .missing_newline_hint(true)
        .header(a, b)
        .to_string()
}

/// The card text for `changes`: headlines, then the bounded diffs, then `notes` (syntax lines,
/// warnings).
pub fn details(changes: &[Change], notes: &[String]) -> String {
    let mut text = String::new();
    for change in changes {
        text.push_str(&change.headline());
        text.push('\n');
    }
    let mut diff = String::new();
    for change in changes {
        diff.push_str(&change.diff());
    }
    if !diff.is_empty() {
        let bounded = head_tail(diff.as_bytes(), DIFF_CAP);
        text.push_str(&bounded.text);
        if !bounded.text.ends_with('\n') {
            text.push('\n');
        }
    }
    for note in notes {
        text.push_str(note);
        text.push('\n');
    }
    text
}

/// The approval request for `changes`: the command line lists the headlines (`title` first,
/// e.g. `edit_file`), the details hold [`details`].
pub fn request(ctx: &RunContext, title: &str, changes: &[Change], notes: &[String]) -> ApprovalRequest {
    let headlines: Vec<String> = changes.iter().map(Change::headline).collect();
    let mut request = ApprovalRequest::new(ctx, format!("{title}: {}", headlines.join("; ")));
    request.details = Some(details(changes, notes));
    request
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_shows_exactly_the_change_with_paths_and_sizes() {
        let change = Change::Write {
            display: "src/a.rs".into(),
            old: Some("one\ntwo\nthree\n".into()),
            new: "one\n2\nthree\n".into(),
            old_bytes: 14,
            new_bytes: 12,
        };
        assert_eq!(change.headline(), "write src/a.rs (14 B -> 12 B)");
        let text = details(&[change], &["JSON syntax after the change: no problems".into()]);
        assert!(text.contains("--- a/src/a.rs\n+++ b/src/a.rs\n"), "{text}");
        assert!(text.contains("-two\n+2\n"), "{text}");
        assert!(text.ends_with("no problems\n"), "{text}");
    }

    #[test]
    fn huge_diffs_are_cut_head_and_tail() {
        let new: String = (0..100_000).map(|i| format!("line {i}\n")).collect();
        let change = Change::Write { display: "big".into(), old: None, new, old_bytes: 0, new_bytes: 1 };
        let text = details(&[change], &[]);
        assert!(text.len() < DIFF_CAP + 1024, "{}", text.len());
        assert!(text.contains("omitted") && text.contains("+line 0\n") && text.contains("+line 99999"), "bounded");
    }

    #[test]
    fn delete_names_file_count_and_bytes() {
        let change = Change::Delete { display: "build".into(), directory: true, files: 3, bytes: 2048 };
        assert_eq!(change.headline(), "delete build/ (directory: 3 file(s), 2.0 KiB)");
    }
}
