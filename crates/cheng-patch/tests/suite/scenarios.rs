//! Codex CLI's own 23 end-to-end apply_patch scenarios (fixtures/codex-apply-patch, see its
//! PROVENANCE.md), run the way Codex runs them: copy `input/` into an empty directory, apply
//! `patch.txt` there (ignoring success or failure), compare the whole tree with `expected/`.
//!
//! The applier below is the smallest all-or-nothing one: every change is computed and checked
//! before the first write. One deliberate difference follows from it: scenario 015 adds a file
//! and then fails on an update of a missing file; Codex writes operation by operation and leaves
//! the added file behind (its `expected/`), while here nothing is written, so the expected tree
//! is 015's `input/` (empty).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use cheng_patch::{apply, parse, Change, PatchError};

/// The scenario whose expected tree is its input under the all-or-nothing rule.
const ALL_OR_NOTHING: &str = "015_failure_after_partial_success_leaves_changes";

fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/codex-apply-patch")
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Every entry under `root`: relative path → file bytes, or `None` for a directory.
fn tree(root: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Option<Vec<u8>>>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            if path.is_dir() {
                out.insert(rel, None);
                walk(root, &path, out);
            } else {
                out.insert(rel, Some(fs::read(&path).unwrap()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// Applies `patch` in `root`, all or nothing: everything is computed and checked first.
fn apply_all_or_nothing(root: &Path, patch: &str) -> Result<(), String> {
    let changes = apply(&parse(patch).map_err(|e| e.to_string())?, |p| {
        fs::read_to_string(root.join(p))
    })
    .map_err(|e: PatchError| e.to_string())?;
    for change in &changes {
        if let Change::Delete { path } = change {
            // Only a file that exists now, or that an earlier change adds.
            let added = changes.iter().any(|c| match c {
                Change::Add { path: p, .. } => p == path,
                Change::Update {
                    move_to: Some(p), ..
                } => p == path,
                _ => false,
            });
            if !added && !root.join(path).is_file() {
                return Err(format!("'{}' is not a file", path.display()));
            }
        }
    }
    for change in changes {
        match change {
            Change::Add { path, content } => write(&root.join(path), &content),
            Change::Update {
                path,
                move_to: None,
                new_content,
                ..
            } => write(&root.join(path), &new_content),
            Change::Update {
                path,
                move_to: Some(to),
                new_content,
                ..
            } => {
                write(&root.join(to), &new_content);
                fs::remove_file(root.join(path)).unwrap();
            }
            Change::Delete { path } => fs::remove_file(root.join(path)).unwrap(),
        }
    }
    Ok(())
}

fn write(path: &Path, content: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, content).unwrap();
}

#[test]
fn codex_scenarios() {
    let mut names: Vec<String> = fs::read_dir(scenarios_dir())
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names.len(),
        23,
        "the scenario directory is incomplete: {names:?}"
    );
    let mut failures = Vec::new();
    let mut outcomes = Vec::new();
    for name in &names {
        let dir = scenarios_dir().join(name);
        let work = tempfile::tempdir().unwrap();
        if dir.join("input").is_dir() {
            copy_dir(&dir.join("input"), work.path());
        }
        let patch = fs::read_to_string(dir.join("patch.txt")).unwrap();
        let outcome = apply_all_or_nothing(work.path(), &patch);
        outcomes.push((name.clone(), outcome.clone()));
        let expected = if name == ALL_OR_NOTHING {
            // All or nothing: the added file must not be left behind (Codex expects it).
            assert!(outcome.is_err(), "{name} must fail");
            tree(&dir.join("input"))
        } else {
            tree(&dir.join("expected"))
        };
        if tree(work.path()) != expected {
            failures.push(format!("{name}: tree differs (outcome {outcome:?})"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The rejects fail with messages that say what is wrong.
    let expect_err = [
        ("005_rejects_empty_patch", "changes nothing"),
        (
            "006_rejects_missing_context",
            "could not find the lines to change",
        ),
        (
            "007_rejects_missing_file_delete",
            "'missing.txt' is not a file",
        ),
        (
            "008_rejects_empty_update_hunk",
            "patch line 2: '*** Update File: foo.txt' has no hunk",
        ),
        ("009_requires_existing_file_for_update", "does not exist"),
        ("012_delete_directory_fails", "'dir' is not a file"),
        (
            "013_rejects_invalid_hunk_header",
            "patch line 2: expected a file operation",
        ),
        (
            ALL_OR_NOTHING,
            "'missing.txt' (patch line 4): the file does not exist",
        ),
    ];
    for (name, outcome) in &outcomes {
        match expect_err.iter().find(|(n, _)| n == name) {
            Some((_, text)) => match outcome {
                Err(e) => assert!(e.contains(text), "{name}: {e}"),
                Ok(()) => panic!("{name} should fail"),
            },
            None => assert!(outcome.is_ok(), "{name}: {outcome:?}"),
        }
    }
}

#[test]
fn the_fixtures_match_their_checksums() {
    // The copy is byte for byte; a changed fixture (an editor adding a newline, a CRLF checkout)
    // would test something else than the scenarios upstream runs.
    use sha2::{Digest, Sha256};
    let dir = scenarios_dir();
    let sums = fs::read_to_string(dir.join("SHA256SUMS")).unwrap();
    assert_eq!(sums.lines().count(), 77);
    for line in sums.lines() {
        let (sum, path) = line.split_once("  ").unwrap();
        let bytes = fs::read(dir.join(path)).unwrap();
        let got: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(got, sum, "{path} differs from the upstream bytes");
    }
}
