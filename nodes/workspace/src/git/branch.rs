//! `git for-each-ref refs/heads/` into local branch entries.
//!
//! Each entry: `name`, `current`, `hash`, `upstream` (null when none), `ahead`/`behind` (null
//! without an upstream), `upstream_gone`, `subject`. Ref names cannot hold NUL or newlines, so one
//! line per branch with NUL-separated fields is unambiguous.

use serde_json::{json, Value};

pub const FORMAT: &str =
    "--format=%(HEAD)%00%(refname:lstrip=2)%00%(objectname)%00%(upstream:short)%00%(upstream:track,nobracket)%00%(contents:subject)";

pub fn parse(text: &str) -> Vec<Value> {
    text.lines().filter_map(line).collect()
}

fn line(line: &str) -> Option<Value> {
    let f: Vec<&str> = line.splitn(6, '\0').collect();
    if f.len() != 6 {
        return None;
    }
    let upstream = (!f[3].is_empty()).then_some(f[3]);
    let (ahead, behind) = track(f[4], upstream.is_some());
    Some(json!({
        "name": f[1],
        "current": f[0] == "*",
        "hash": f[2],
        "upstream": upstream,
        "ahead": ahead,
        "behind": behind,
        "upstream_gone": f[4] == "gone",
        "subject": f[5],
    }))
}

/// `ahead 1, behind 2` / `ahead 1` / `` (in sync) / `gone`.
fn track(text: &str, has_upstream: bool) -> (Option<u64>, Option<u64>) {
    if !has_upstream || text == "gone" {
        return (None, None);
    }
    let mut ahead = 0;
    let mut behind = 0;
    for part in text.split(", ") {
        if let Some(n) = part.strip_prefix("ahead ") {
            ahead = n.parse().unwrap_or(0);
        } else if let Some(n) = part.strip_prefix("behind ") {
            behind = n.parse().unwrap_or(0);
        }
    }
    (Some(ahead), Some(behind))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branches_with_and_without_upstream() {
        let text = "*\0main\0abc\0origin/main\0ahead 2, behind 1\0tip\n \0topic/x\0def\0\0\0wip\n \0old\x00123\0origin/old\0gone\0s\n";
        let b = parse(text);
        assert_eq!(b.len(), 3);
        assert_eq!(b[0]["current"], true);
        assert_eq!(b[0]["ahead"], 2);
        assert_eq!(b[0]["behind"], 1);
        assert_eq!(b[1]["name"], "topic/x");
        assert_eq!(b[1]["upstream"], Value::Null);
        assert_eq!(b[1]["ahead"], Value::Null);
        assert_eq!(b[2]["upstream_gone"], true);
    }
}
