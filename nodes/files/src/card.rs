//! Approval cards for file changes: what exactly would change, bounded like every other output.
//!
//! One card describes a set of [`Change`]s (one for write_file, edit_file and delete_path, one
//! per file for apply_patch): the card's command line names them with their byte counts, and
//! its details hold a unified diff of each (computed with `similar`), cut head+tail at
//! [`DIFF_CAP`] bytes with the number of omitted bytes named, plus the syntax lines.
//!
//! A card is built before anybody is asked, and the diff is the one step of it that is not
//! linear (Myers is quadratic in the worst case: 100 000 lines replaced by one took 19 s). So
//! the diffs of one card, and of one writer's `diff` output, share a time budget
//! ([`DIFF_BUDGET`]); a change whose diff is not done within it is summarised ("100 000 lines
//! replaced by 1; diff too large to show").

use cheng_node::text::{head_tail, human_bytes};
use cheng_node::{ApprovalRequest, RunContext};
use std::time::{Duration, Instant};

/// Most bytes of diff a card shows (head and tail kept).
pub const DIFF_CAP: usize = 32 * 1024;

/// Lines of context around each change in the diff.
pub const CONTEXT_LINES: usize = 3;

/// How long the diffs of one card (or of one `diff` output) may take together.
pub const DIFF_BUDGET: Duration = Duration::from_millis(200);

/// Changed regions up to this many lines (old plus new) are always diffed in full: Myers is at
/// most quadratic in it, a few milliseconds, so small changes never depend on the clock.
const ALWAYS_DIFFED_LINES: usize = 2000;

/// The deadline for diffs starting now ([`DIFF_BUDGET`] from now).
pub fn deadline() -> Instant {
    Instant::now() + DIFF_BUDGET
}

/// One change to one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Create (`old: None`) or replace a file; texts as the model sees them (LF line breaks).
    Write {
        display: String,
        old: Option<String>,
        new: String,
        old_bytes: u64,
        new_bytes: u64,
    },
    /// Move a file (apply_patch's `*** Move to:`), possibly with new content.
    Move {
        from: String,
        to: String,
        old: String,
        new: String,
        old_bytes: u64,
        new_bytes: u64,
        /// The size of the file already at `to`, which the move replaces.
        replaces: Option<u64>,
    },
    /// Remove a file, or a directory with everything in it.
    Delete {
        display: String,
        directory: bool,
        files: u64,
        bytes: u64,
    },
}

impl Change {
    /// `write src/a.rs (120 B -> 140 B)`, `create b.txt (12 B)`, `delete dir/ (3 files, 1.2 KiB)`.
    pub fn headline(&self) -> String {
        match self {
            Change::Write {
                display,
                old: None,
                new_bytes,
                ..
            } => format!("create {display} ({})", human_bytes(*new_bytes)),
            Change::Write {
                display,
                old_bytes,
                new_bytes,
                ..
            } => {
                format!(
                    "write {display} ({} -> {})",
                    human_bytes(*old_bytes),
                    human_bytes(*new_bytes)
                )
            }
            Change::Move {
                from,
                to,
                old_bytes,
                new_bytes,
                replaces,
                ..
            } => {
                let replaces = replaces.map_or(String::new(), |bytes| {
                    format!("; replaces existing {to}, {}", human_bytes(bytes))
                });
                format!(
                    "move {from} -> {to} ({} -> {}{replaces})",
                    human_bytes(*old_bytes),
                    human_bytes(*new_bytes)
                )
            }
            Change::Delete {
                display,
                directory: true,
                files,
                bytes,
            } => {
                format!(
                    "delete {display}/ (directory: {files} file(s), {})",
                    human_bytes(*bytes)
                )
            }
            Change::Delete { display, bytes, .. } => {
                format!("delete {display} ({})", human_bytes(*bytes))
            }
        }
    }

    /// The unified diff of this change (empty for a directory delete or an unchanged file),
    /// summarised when it is not done by `deadline`.
    pub fn diff(&self, deadline: Instant) -> String {
        match self {
            Change::Write {
                display, old, new, ..
            } => {
                let (a, old) = match old {
                    Some(old) => (format!("a/{display}"), old.as_str()),
                    None => ("/dev/null".to_string(), ""),
                };
                unified_until(old, new, &a, &format!("b/{display}"), deadline)
            }
            Change::Move {
                from, to, old, new, ..
            } => unified_until(old, new, &format!("a/{from}"), &format!("b/{to}"), deadline),
            Change::Delete { .. } => String::new(),
        }
    }
}

/// The diffs of `changes` in order, all within one [`DIFF_BUDGET`].
pub fn diffs(changes: &[Change]) -> String {
    let deadline = deadline();
    changes.iter().map(|change| change.diff(deadline)).collect()
}

/// [`unified_until`] with a budget of its own.
pub fn unified(old: &str, new: &str, a: &str, b: &str) -> String {
    unified_until(old, new, a, b, deadline())
}

/// A unified diff of `old` → `new` with file headers `a` and `b` (empty when they are equal),
/// or, when it is not done by `deadline`, a summary of the changed lines.
///
/// Lines both texts share at their start and end are set aside first (beyond the context), so
/// a one-line edit of a 10 MB file diffs a few lines, not 200 000.
pub fn unified_until(old: &str, new: &str, a: &str, b: &str, deadline: Instant) -> String {
    if old == new {
        return String::new();
    }
    // Whole lines both share at the start and at the end (found with memcmp, then cut back to
    // line boundaries), less the context kept around the change.
    let (ob, nb) = (old.as_bytes(), new.as_bytes());
    let same = crate::tag::common_prefix(ob, nb);
    let mut head = memchr::memrchr(b'\n', &ob[..same]).map_or(0, |i| i + 1);
    for _ in 0..CONTEXT_LINES {
        head = memchr::memrchr(b'\n', &ob[..head.saturating_sub(1)]).map_or(0, |i| i + 1);
    }
    let start = memchr::memchr_iter(b'\n', &ob[..head]).count();
    let max_tail = ob.len().min(nb.len()) - head;
    let same_tail = ob
        .iter()
        .rev()
        .zip(nb.iter().rev())
        .take(max_tail)
        .take_while(|(o, n)| o == n)
        .count();
    // The shared tail, from the first line break inside it, keeping CONTEXT_LINES lines.
    let tail_from = |bytes: &[u8]| -> usize {
        let from = bytes.len() - same_tail;
        let mut end = match memchr::memchr(b'\n', &bytes[from..]) {
            Some(i) if from > head => from + i + 1,
            _ => return bytes.len(),
        };
        for _ in 0..CONTEXT_LINES {
            end = memchr::memchr(b'\n', &bytes[end..]).map_or(bytes.len(), |i| end + i + 1);
        }
        end
    };
    let (old_end, new_end) = (tail_from(ob), tail_from(nb));
    let old_lines: Vec<&str> = old[head..old_end].split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new[head..new_end].split_inclusive('\n').collect();
    let mut out = format!("--- {a}\n+++ {b}\n");
    let region = Region::of(start, &old_lines, &new_lines);
    // Only lines both removed and added make Myers slow: a pure insertion or deletion, or a
    // small change, is diffed in full whatever the clock says.
    let cheap = region.removed == 0
        || region.added == 0
        || region.removed + region.added <= ALWAYS_DIFFED_LINES;
    let diff = if cheap {
        similar::TextDiff::from_slices(&old_lines, &new_lines)
    } else {
        let diff = similar::TextDiff::configure()
            .deadline(deadline)
            .diff_slices(&old_lines, &new_lines);
        // Past the deadline `similar` stops looking for a short diff; what it has is correct
        // but may be far longer than the change, so the change is summarised instead.
        if Instant::now() >= deadline {
            out.push_str(&region.summary());
            return out;
        }
        diff
    };
    for group in diff.grouped_ops(CONTEXT_LINES) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let old_range = first.old_range().start..last.old_range().end;
        let new_range = first.new_range().start..last.new_range().end;
        out.push_str(&format!(
            "@@ -{} +{} @@\n",
            hunk_range(start + old_range.start, old_range.len()),
            hunk_range(start + new_range.start, new_range.len())
        ));
        for op in &group {
            for change in diff.iter_changes(op) {
                let sign = match change.tag() {
                    similar::ChangeTag::Equal => ' ',
                    similar::ChangeTag::Delete => '-',
                    similar::ChangeTag::Insert => '+',
                };
                let value: &str = change.value();
                out.push(sign);
                out.push_str(value);
                if !value.ends_with('\n') {
                    out.push_str("\n\\ No newline at end of file\n");
                }
            }
        }
    }
    out
}

/// The lines that differ between two slices of lines: the shared lines at both ends (the
/// context) left out.
struct Region {
    /// The 1-based line the change starts at.
    first: usize,
    removed: usize,
    added: usize,
}

impl Region {
    /// `start`: the 0-based line of the slices' first line.
    fn of(start: usize, old: &[&str], new: &[&str]) -> Region {
        let same_head = old.iter().zip(new).take_while(|(o, n)| o == n).count();
        let same_tail = old[same_head..]
            .iter()
            .rev()
            .zip(new[same_head..].iter().rev())
            .take_while(|(o, n)| o == n)
            .count();
        Region {
            first: start + same_head + 1,
            removed: old.len() - same_head - same_tail,
            added: new.len() - same_head - same_tail,
        }
    }

    /// `from line 12: 12 345 lines replaced by 1; diff too large to show`.
    fn summary(&self) -> String {
        let noun = if self.removed == 1 { "line" } else { "lines" };
        format!(
            "from line {}: {} {noun} replaced by {}; diff too large to show\n",
            grouped(self.first),
            grouped(self.removed),
            grouped(self.added)
        )
    }
}

/// `12345` as `12 345`.
fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(digit);
    }
    out
}

/// `start,len` of a hunk header (1-based; an empty range names the line before it).
fn hunk_range(start: usize, len: usize) -> String {
    if len == 0 {
        format!("{start},0")
    } else {
        format!("{},{len}", start + 1)
    }
}

/// The card text for `changes`: headlines, then the bounded diffs, then `notes` (syntax lines,
/// warnings).
pub fn details(changes: &[Change], notes: &[String]) -> String {
    let mut text = String::new();
    for change in changes {
        text.push_str(&change.headline());
        text.push('\n');
    }
    let diff = diffs(changes);
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
pub fn request(
    ctx: &RunContext,
    title: &str,
    changes: &[Change],
    notes: &[String],
) -> ApprovalRequest {
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
        let text = details(
            &[change],
            &["JSON syntax after the change: no problems".into()],
        );
        assert!(text.contains("--- a/src/a.rs\n+++ b/src/a.rs\n"), "{text}");
        assert!(text.contains("-two\n+2\n"), "{text}");
        assert!(text.ends_with("no problems\n"), "{text}");
    }

    #[test]
    fn hunks_far_into_a_file_are_numbered_from_its_start() {
        let old: String = (1..=1000).map(|i| format!("{i}\n")).collect();
        let new = old.replace("\n500\n", "\nfive hundred\n");
        assert_eq!(
            unified(&old, &new, "a/x", "b/x"),
            "--- a/x\n+++ b/x\n@@ -497,7 +497,7 @@\n 497\n 498\n 499\n-500\n+five hundred\n 501\n 502\n 503\n"
        );
        assert_eq!(unified("a", "b", "a/x", "b/x"), "--- a/x\n+++ b/x\n@@ -1,1 +1,1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n");
        assert_eq!(
            unified("", "x\n", "/dev/null", "b/x"),
            "--- /dev/null\n+++ b/x\n@@ -0,0 +1,1 @@\n+x\n"
        );
        assert_eq!(unified("same\n", "same\n", "a", "b"), "");
        assert_eq!(
            unified("a\nb\n", "a\nb\nc\n", "a", "b"),
            "--- a\n+++ b\n@@ -1,2 +1,3 @@\n a\n b\n+c\n"
        );
        assert_eq!(
            unified("x\na\nb\n", "a\nb\n", "a", "b"),
            "--- a\n+++ b\n@@ -1,3 +1,2 @@\n-x\n a\n b\n"
        );
        let old: String = (1..=20).map(|i| format!("{i}\n")).collect();
        let new = old.replace("\n10\n11\n", "\n10\n10.5\n11\n");
        assert_eq!(
            unified(&old, &new, "a", "b"),
            "--- a\n+++ b\n@@ -8,6 +8,7 @@\n 8\n 9\n 10\n+10.5\n 11\n 12\n 13\n"
        );
    }

    #[test]
    fn huge_diffs_are_cut_head_and_tail() {
        let new: String = (0..100_000).map(|i| format!("line {i}\n")).collect();
        let change = Change::Write {
            display: "big".into(),
            old: None,
            new,
            old_bytes: 0,
            new_bytes: 1,
        };
        let text = details(&[change], &[]);
        assert!(text.len() < DIFF_CAP + 1024, "{}", text.len());
        assert!(
            text.contains("omitted") && text.contains("+line 0\n") && text.contains("+line 99999"),
            "bounded"
        );
    }

    #[test]
    fn a_diff_past_its_deadline_is_summarised() {
        let old: String = (0..100_000).map(|i| format!("line {i}\n")).collect();
        let past = Instant::now();
        assert_eq!(
            unified_until(&old, "one\n", "a/x", "b/x", past),
            "--- a/x\n+++ b/x\nfrom line 1: 100 000 lines replaced by 1; diff too large to show\n"
        );
        // The shared lines around the change are not counted.
        let new = old
            .replace("line 500\n", "")
            .replace("line 90000\n", "x\ny\n");
        assert_eq!(
            unified_until(&old, &new, "a/x", "b/x", past),
            "--- a/x\n+++ b/x\nfrom line 501: 89 501 lines replaced by 89 501; diff too large to show\n"
        );
        // With its own budget, the 19-second diff is cut short too.
        let text = details(
            &[Change::Write {
                display: "x".into(),
                old: Some(old),
                new: "one\n".into(),
                old_bytes: 1,
                new_bytes: 4,
            }],
            &[],
        );
        assert!(
            text.contains("from line 1: 100 000 lines replaced by 1; diff too large to show"),
            "{text}"
        );
    }

    #[test]
    fn small_changes_are_diffed_whatever_the_clock() {
        let old: String = (0..100_000).map(|i| format!("line {i}\n")).collect();
        let new = old.replace("line 500\n", "five hundred\n");
        let diff = unified_until(&old, &new, "a", "b", Instant::now());
        assert!(diff.contains("-line 500\n+five hundred\n"), "{diff}");
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1 000");
        assert_eq!(grouped(1_234_567), "1 234 567");
    }

    #[test]
    fn a_move_onto_an_existing_file_says_so() {
        let change = Change::Move {
            from: "a.txt".into(),
            to: "existing.txt".into(),
            old: "a\n".into(),
            new: "a\n".into(),
            old_bytes: 2,
            new_bytes: 2,
            replaces: Some(24),
        };
        assert_eq!(
            change.headline(),
            "move a.txt -> existing.txt (2 B -> 2 B; replaces existing existing.txt, 24 B)"
        );
    }

    #[test]
    fn delete_names_file_count_and_bytes() {
        let change = Change::Delete {
            display: "build".into(),
            directory: true,
            files: 3,
            bytes: 2048,
        };
        assert_eq!(
            change.headline(),
            "delete build/ (directory: 3 file(s), 2.0 KiB)"
        );
    }
}
