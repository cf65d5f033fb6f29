//! `git status --porcelain=v2 --branch` into structured entries.
//!
//! Both record framings are parsed: `-z` (NUL-terminated records, raw path bytes) and the quoted
//! line form (one record per line, paths C-quoted by `core.quotePath`). The node runs `-z` and
//! reads git's stdout as raw bytes (`cheng_exec::run_with_stdout_bytes`): the format git
//! documents for machines, with no quoting to undo and no dependence on `core.quotePath`. The
//! quoted form stays supported for output captured as text.
//!
//! Each file entry: `path`, `orig_path` (renames and copies, else null), `index_status` and
//! `worktree_status` (git's one-letter codes: `M` modified, `A` added, `D` deleted, `R` renamed,
//! `C` copied, `T` type changed, `U` unmerged, `.` unchanged, `?` untracked), `staged`,
//! `untracked`, `conflicted`; plus `path_bytes_base64` / `orig_path_bytes_base64` for paths that
//! are not valid UTF-8 (see [`super::quote`]).

use super::quote::{insert_path, unquote};
use serde_json::{json, Map, Value};

/// The `# branch.*` headers.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct BranchInfo {
    /// `None` before the first commit (`(initial)`).
    pub oid: Option<String>,
    /// `None` on a detached HEAD.
    pub head: Option<String>,
    pub upstream: Option<String>,
    pub ahead: Option<u64>,
    pub behind: Option<u64>,
}

#[derive(Debug, Default)]
pub struct Status {
    pub branch: BranchInfo,
    pub files: Vec<Value>,
    /// Records that could not be parsed (kept out of `files`, counted for the summary).
    pub unparsed: usize,
}

/// Parses porcelain v2 output. `z` selects NUL framing with raw paths; otherwise lines with
/// quoted paths.
pub fn parse(output: &[u8], z: bool) -> Status {
    let mut status = Status::default();
    let sep = if z { 0u8 } else { b'\n' };
    let mut records = output.split(|b| *b == sep).filter(|r| !r.is_empty());
    while let Some(record) = records.next() {
        let text = String::from_utf8_lossy(record);
        if let Some(header) = text.strip_prefix("# ") {
            parse_header(header, &mut status.branch);
            continue;
        }
        let entry = match record.first() {
            Some(b'1') => ordinary(record, 9, z, None),
            Some(b'2') => {
                if z {
                    // The origin is the next record; a rename cut off before it is not guessed.
                    match records.next() {
                        Some(orig) => ordinary(record, 10, z, Some(Ok(orig.to_vec()))),
                        None => None,
                    }
                } else {
                    ordinary(record, 10, z, Some(Err(())))
                }
            }
            Some(b'u') => unmerged(record, z),
            Some(b'?') => record
                .get(2..)
                .and_then(|p| path(p, z))
                .map(|p| untracked(&p)),
            _ => None,
        };
        match entry {
            Some(entry) => status.files.push(entry),
            None => status.unparsed += 1,
        }
    }
    status
}

fn parse_header(header: &str, branch: &mut BranchInfo) {
    let (key, value) = header.split_once(' ').unwrap_or((header, ""));
    match key {
        "branch.oid" => branch.oid = (value != "(initial)").then(|| value.to_string()),
        "branch.head" => branch.head = (value != "(detached)").then(|| value.to_string()),
        "branch.upstream" => branch.upstream = Some(value.to_string()),
        "branch.ab" => {
            let mut parts = value.split(' ');
            branch.ahead = parts
                .next()
                .and_then(|a| a.strip_prefix('+'))
                .and_then(|a| a.parse().ok());
            branch.behind = parts
                .next()
                .and_then(|b| b.strip_prefix('-'))
                .and_then(|b| b.parse().ok());
        }
        _ => {}
    }
}

/// `1 XY sub mH mI mW hH hI path` or `2 XY sub mH mI mW hH hI Xscore path[\tTAB orig]`.
///
/// `orig`: `None` for type 1; for type 2 either the next `-z` record or `Err(())` meaning "split
/// the path field at its tab" (quoted form).
fn ordinary(
    record: &[u8],
    fields: usize,
    z: bool,
    orig: Option<Result<Vec<u8>, ()>>,
) -> Option<Value> {
    let mut parts = record.splitn(fields, |b| *b == b' ');
    parts.next()?;
    let xy = parts.next()?;
    let rest: Vec<&[u8]> = parts.collect();
    if rest.len() != fields - 2 || xy.len() != 2 {
        return None;
    }
    let path_field = rest[fields - 3];
    let (path_bytes, orig_bytes) = match orig {
        None => (path(path_field, z)?, None),
        Some(Ok(orig)) => (path(path_field, z)?, Some(orig)),
        Some(Err(())) => {
            let tab = path_field.iter().position(|b| *b == b'\t')?;
            (
                path(&path_field[..tab], z)?,
                Some(path(&path_field[tab + 1..], z)?),
            )
        }
    };
    let x = xy[0] as char;
    let y = xy[1] as char;
    let mut entry = Map::new();
    insert_path(&mut entry, "path", &path_bytes);
    match orig_bytes {
        Some(orig) => insert_path(&mut entry, "orig_path", &orig),
        None => {
            entry.insert("orig_path".into(), Value::Null);
        }
    }
    entry.insert("index_status".into(), json!(x.to_string()));
    entry.insert("worktree_status".into(), json!(y.to_string()));
    entry.insert("staged".into(), json!(x != '.'));
    entry.insert("untracked".into(), json!(false));
    entry.insert("conflicted".into(), json!(false));
    Some(Value::Object(entry))
}

/// `u XY sub m1 m2 m3 mW h1 h2 h3 path`.
fn unmerged(record: &[u8], z: bool) -> Option<Value> {
    let parts: Vec<&[u8]> = record.splitn(11, |b| *b == b' ').collect();
    if parts.len() != 11 || parts[1].len() != 2 {
        return None;
    }
    let mut entry = Map::new();
    insert_path(&mut entry, "path", &path(parts[10], z)?);
    entry.insert("orig_path".into(), Value::Null);
    entry.insert(
        "index_status".into(),
        json!((parts[1][0] as char).to_string()),
    );
    entry.insert(
        "worktree_status".into(),
        json!((parts[1][1] as char).to_string()),
    );
    entry.insert("staged".into(), json!(false));
    entry.insert("untracked".into(), json!(false));
    entry.insert("conflicted".into(), json!(true));
    Some(Value::Object(entry))
}

fn untracked(path_bytes: &[u8]) -> Value {
    let mut entry = Map::new();
    insert_path(&mut entry, "path", path_bytes);
    entry.insert("orig_path".into(), Value::Null);
    entry.insert("index_status".into(), json!("?"));
    entry.insert("worktree_status".into(), json!("?"));
    entry.insert("staged".into(), json!(false));
    entry.insert("untracked".into(), json!(true));
    entry.insert("conflicted".into(), json!(false));
    Value::Object(entry)
}

fn path(field: &[u8], z: bool) -> Option<Vec<u8>> {
    if z {
        Some(field.to_vec())
    } else {
        unquote(std::str::from_utf8(field).ok()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADERS: &str = "# branch.oid 1234abcd\n# branch.head main\n# branch.upstream origin/main\n# branch.ab +2 -1\n";

    #[test]
    fn headers_give_branch_and_tracking() {
        let status = parse(HEADERS.as_bytes(), false);
        assert_eq!(status.branch.head.as_deref(), Some("main"));
        assert_eq!(status.branch.upstream.as_deref(), Some("origin/main"));
        assert_eq!(
            (status.branch.ahead, status.branch.behind),
            (Some(2), Some(1))
        );
        let detached = parse(b"# branch.oid (initial)\n# branch.head (detached)\n", false);
        assert_eq!(detached.branch, BranchInfo::default());
    }

    #[test]
    fn quoted_lines_keep_spaces_newlines_and_raw_bytes() {
        let out = format!(
            "{HEADERS}1 .M N... 100644 100644 100644 aaa aaa dir/with space.txt\n\
             1 A. N... 000000 100644 100644 000 bbb \"new\\nline.txt\"\n\
             2 R. N... 100644 100644 100644 ccc ccc R100 \"caf\\303\\251.md\"\told name.md\n\
             u UU N... 100644 100644 100644 100644 d1 d2 d3 conflict.rs\n\
             ? \"bad\\377byte\"\n"
        );
        let status = parse(out.as_bytes(), false);
        assert_eq!(status.unparsed, 0);
        let f = &status.files;
        assert_eq!(f.len(), 5);
        assert_eq!(f[0]["path"], "dir/with space.txt");
        assert_eq!(f[0]["worktree_status"], "M");
        assert_eq!(f[0]["staged"], false);
        assert_eq!(f[1]["path"], "new\nline.txt");
        assert_eq!(f[1]["staged"], true);
        assert_eq!(f[2]["path"], "café.md");
        assert_eq!(f[2]["orig_path"], "old name.md");
        assert_eq!(f[2]["index_status"], "R");
        assert_eq!(f[3]["conflicted"], true);
        assert_eq!(f[4]["untracked"], true);
        assert_eq!(f[4]["path_bytes_base64"], "YmFk/2J5dGU=");
    }

    #[test]
    fn nul_framing_reads_raw_paths_and_rename_origins() {
        let out = b"# branch.head main\x001 .M N... 100644 100644 100644 a a x y.txt\x002 R. N... 100644 100644 100644 c c R90 new\nname\x00old\x00? \xff\x00";
        let status = parse(out, true);
        assert_eq!(status.unparsed, 0);
        assert_eq!(status.files[0]["path"], "x y.txt");
        assert_eq!(status.files[1]["path"], "new\nname");
        assert_eq!(status.files[1]["orig_path"], "old");
        assert_eq!(status.files[2]["path_bytes_base64"], "/w==");
    }

    #[test]
    fn nul_framing_takes_records_that_look_like_headers_as_paths() {
        // A rename origin named like a header, and a path with a tab and a quote: -z needs no
        // quoting, so they come through exactly.
        let out = b"2 R. N... 100644 100644 100644 c c R100 a\tb \"q\"\x00# branch.head evil\x00? \"x\"\x00";
        let status = parse(out, true);
        assert_eq!(status.unparsed, 0);
        assert_eq!(status.branch.head, None, "an origin path is not a header");
        assert_eq!(status.files[0]["path"], "a\tb \"q\"");
        assert_eq!(status.files[0]["orig_path"], "# branch.head evil");
        assert_eq!(status.files[1]["path"], "\"x\"");
        // A rename whose origin record was cut off is counted, not guessed.
        let cut = parse(b"2 R. N... 100644 100644 100644 c c R100 new\x00", true);
        assert!(cut.files.is_empty());
        assert_eq!(cut.unparsed, 1);
    }

    #[test]
    fn garbage_is_counted_not_guessed() {
        let status = parse(b"1 too few\nzzz\n? \"unterminated\n", false);
        assert!(status.files.is_empty());
        assert_eq!(status.unparsed, 3);
    }
}
