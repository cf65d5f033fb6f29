//! `git log -z --format=<fields>` into commit entries.
//!
//! Fields are separated by NUL and so are commits; a commit has exactly [`FIELDS`] fields, so the
//! stream is cut into groups of that size (a subject may be empty, never contains NUL).

use serde_json::{json, Value};

/// The format every log/show call uses: hash, short hash, author, email, ISO 8601 date, subject.
pub const FORMAT: &str = "--format=%H%x00%h%x00%an%x00%ae%x00%aI%x00%s";
pub const FIELDS: usize = 6;

/// Parses `-z` log output (`complete` false drops a trailing partial commit, e.g. after truncation).
pub fn parse(text: &str, complete: bool) -> Vec<Value> {
    let text = text.strip_suffix('\0').unwrap_or(text);
    if text.is_empty() {
        return Vec::new();
    }
    let fields: Vec<&str> = text.split('\0').collect();
    let usable = if complete {
        fields.len()
    } else {
        fields.len().saturating_sub(1)
    };
    fields[..usable].chunks_exact(FIELDS).map(commit).collect()
}

/// One commit from its fields (hash, short, author, email, date, subject).
pub fn commit(f: &[&str]) -> Value {
    json!({
        "hash": f[0].trim_start_matches('\n'),
        "short_hash": f[1],
        "author": f[2],
        "email": f[3],
        "date": f[4],
        "subject": f[5],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commits_come_in_groups_of_six() {
        let text = "aaa\0a\0Ann\0ann@x\x002024-01-02T03:04:05+01:00\0fix: it\0bbb\0b\0Bob\0bob@x\x002024-01-01T00:00:00Z\0\0";
        let commits = parse(text, true);
        assert_eq!(commits.len(), 2);
        assert_eq!(commits[0]["subject"], "fix: it");
        assert_eq!(commits[0]["date"], "2024-01-02T03:04:05+01:00");
        assert_eq!(
            commits[1]["subject"], "",
            "an empty subject is still a commit"
        );
        assert!(parse("", true).is_empty());
    }

    #[test]
    fn a_cut_stream_drops_the_partial_commit() {
        let text = "aaa\0a\0Ann\0ann@x\0d\0s\0bbb\0b\0Bo";
        assert_eq!(parse(text, false).len(), 1);
    }
}
