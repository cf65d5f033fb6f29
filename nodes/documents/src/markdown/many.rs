//! `diagnostics` and `link_check_local` over a folder or a glob, as markdownlint takes them:
//! every Markdown file under the folder (or matching the glob, relative to the workspace root),
//! walked with the `ignore` crate (.gitignore and .ignore respected, hidden entries and `.git`
//! skipped, symlinks not followed), each analysed exactly as a single file would be. Findings
//! carry their file's `path` and come grouped per file, files in path order. The walk goes by
//! path (the `ignore` crate has no walk relative to a descriptor); every file it finds is read
//! through the workspace handle (`crate::source`), so nothing is read through a directory
//! swapped for a symlink during the walk.
//!
//! Bounded: at most [`MAX_FILES`] files and [`MAX_TOTAL_BYTES`] read per run; past either the
//! summary says how many files were left out.

use super::{analyze_checked, Operation, MAX_DIAGNOSTICS};
use crate::source::{read_text, MAX_TEXT_BYTES};
use cheng_node::paths::resolve_existing;
use cheng_node::text::human_bytes;
use cheng_node::{ErrorKind, NodeError, Values};
use serde_json::{json, Value};
use std::path::{Component, Path, PathBuf};

/// Most files analysed in one run.
pub const MAX_FILES: usize = 2_000;
/// Most bytes read in one run (files over [`MAX_TEXT_BYTES`] are skipped on their own).
pub const MAX_TOTAL_BYTES: u64 = 256 * 1024 * 1024;

/// Whether `path` names many files: a glob (`*`, `?`, `[`, `{`) or an existing directory.
pub fn names_many(root: &Path, path: &str) -> bool {
    is_glob(path) || resolve_existing(root, Some(path), "path").is_ok_and(|p| p.is_dir())
}

fn is_glob(path: &str) -> bool {
    path.contains(['*', '?', '[', '{'])
}

/// The files `path` names, sorted, relative to `root`.
fn matching_files(root: &Path, path: &str) -> Result<(Vec<String>, usize), NodeError> {
    let (base, matcher) = if is_glob(path) {
        if Path::new(path).is_absolute()
            || Path::new(path)
                .components()
                .any(|c| c == Component::ParentDir)
        {
            return Err(NodeError::new(
                ErrorKind::PathOutsideWorkspace,
                format!("path {path:?}: a glob is relative to the workspace root and may not contain `..`"),
            ));
        }
        let glob = globset::GlobBuilder::new(path)
            .literal_separator(true)
            .build()
            .map_err(|e| {
                NodeError::invalid_input(format!("path {path:?} is not a valid glob: {e}"))
            })?
            .compile_matcher();
        // Walk only below the glob's literal directory prefix.
        let literal: PathBuf = Path::new(path)
            .components()
            .take_while(|c| !is_glob(&c.as_os_str().to_string_lossy()))
            .collect();
        let literal = if literal.as_os_str() == path {
            PathBuf::new()
        } else {
            literal
        };
        let base = if literal.as_os_str().is_empty() {
            root.to_path_buf()
        } else {
            resolve_existing(root, literal.to_str(), "path")?
        };
        (base, Some(glob))
    } else {
        (resolve_existing(root, Some(path), "path")?, None)
    };
    let mut files = Vec::new();
    let mut over = 0usize;
    let walk = ignore::WalkBuilder::new(&base)
        .hidden(true)
        .follow_links(false)
        .require_git(false)
        .build();
    for entry in walk.flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        let keep = match &matcher {
            Some(glob) => glob.is_match(rel),
            None => rel.extension().is_some_and(|e| {
                e.eq_ignore_ascii_case("md") || e.eq_ignore_ascii_case("markdown")
            }),
        };
        if !keep {
            continue;
        }
        if files.len() < MAX_FILES {
            files.push(rel.to_string_lossy().into_owned());
        } else {
            over += 1;
        }
    }
    files.sort();
    Ok((files, over))
}

/// Runs `operation` (diagnostics or link_check_local) on every file `path` names.
pub fn analyze(
    root: &Path,
    path: &str,
    operation: Operation,
    mut check: impl FnMut() -> Result<(), NodeError>,
) -> Result<Values, NodeError> {
    let (files, mut left_out) = matching_files(root, path)?;
    let mut diagnostics: Vec<Value> = Vec::new();
    let mut findings = 0usize;
    let mut per_file: Vec<(String, usize)> = Vec::new();
    let mut skipped: Vec<String> = Vec::new();
    let mut read = 0u64;
    let mut analysed = 0usize;
    for rel in &files {
        check()?;
        if read >= MAX_TOTAL_BYTES {
            left_out += 1;
            continue;
        }
        let file = match read_text(root, rel, "path", MAX_TEXT_BYTES) {
            Ok(file) => file,
            Err(e) => {
                skipped.push(format!("{rel} ({})", e.message));
                continue;
            }
        };
        read += file.bytes;
        analysed += 1;
        let out = analyze_checked(root, &file, operation, &mut check)?;
        let found = out
            .get("diagnostics")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if !found.is_empty() {
            per_file.push((rel.clone(), found.len()));
        }
        findings += found.len();
        for mut d in found {
            if diagnostics.len() >= MAX_DIAGNOSTICS {
                break;
            }
            if let Value::Object(map) = &mut d {
                map.insert("path".into(), json!(rel));
            }
            diagnostics.push(d);
        }
    }
    let mut summary = format!(
        "{path}: {analysed} Markdown file{} {}",
        plural(analysed),
        if operation == Operation::LinkCheckLocal {
            "link-checked"
        } else {
            "checked"
        }
    );
    if findings == 0 {
        summary.push_str(", no findings");
    } else {
        let worst: Vec<String> = per_file
            .iter()
            .take(5)
            .map(|(f, n)| format!("{f} ×{n}"))
            .collect();
        summary.push_str(&format!(
            ", {findings} finding{} in {} file{} ({}{})",
            plural(findings),
            per_file.len(),
            plural(per_file.len()),
            worst.join(", "),
            if per_file.len() > 5 { ", …" } else { "" }
        ));
    }
    if findings > MAX_DIAGNOSTICS {
        summary.push_str(&format!("; showing the first {MAX_DIAGNOSTICS}"));
    }
    if !skipped.is_empty() {
        summary.push_str(&format!(
            "; skipped {}: {}",
            skipped.len(),
            skipped
                .iter()
                .take(3)
                .cloned()
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    if left_out > 0 {
        summary.push_str(&format!(
            "; {left_out} more file{} left out (at most {MAX_FILES} files and {} per run; narrow the path)",
            plural(left_out),
            human_bytes(MAX_TOTAL_BYTES)
        ));
    }
    let mut out = Values::new();
    out.insert("operation".into(), json!(operation.name()));
    out.insert("path".into(), json!(path));
    out.insert("success".into(), json!(true));
    out.insert("summary".into(), json!(summary));
    out.insert("outline".into(), Value::Null);
    out.insert("diagnostics".into(), json!(diagnostics));
    out.insert("suggested_edits".into(), Value::Null);
    cheng_node::failure::fill::<()>(&mut out, &Ok(()));
    Ok(out)
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
