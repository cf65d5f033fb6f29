//! Codex CLI's own 23 apply_patch scenarios (fixtures/codex-apply-patch, see its PROVENANCE.md),
//! run through tools/apply_patch in the engine, approved, the way Codex runs them: copy `input/`
//! into an empty workspace, apply `patch.txt` (success or failure), compare the whole tree with
//! `expected/`. The freshness gate is on: every input file counts as read by the model first.
//!
//! One deliberate difference: scenario 015 adds a file and then fails on an update of a missing
//! file. Codex writes operation by operation and leaves the added file (its `expected/`);
//! tools/apply_patch is all or nothing, so the expected tree is 015's `input/` (empty).

use super::apply_patch_support::*;
use cheng_engine::NodeStatus;
use std::path::{Path, PathBuf};

const ALL_OR_NOTHING: &str = "015_failure_after_partial_success_leaves_changes";

fn scenarios() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/codex-apply-patch")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn codex_scenarios_through_the_node() {
    let mut names: Vec<String> = std::fs::read_dir(scenarios())
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), 23, "{names:?}");
    // The scenarios whose patch Codex refuses (nothing changes), with what the error must say.
    let refused = [
        (
            "005_rejects_empty_patch",
            "LOCAL_EXECUTOR_INVALID_INPUT",
            "changes nothing",
        ),
        (
            "006_rejects_missing_context",
            "LOCAL_EXECUTOR_INVALID_INPUT",
            "hunk 1 at patch line 3: could not find the lines to change",
        ),
        (
            "007_rejects_missing_file_delete",
            "LOCAL_EXECUTOR_NOT_FOUND",
            "cannot delete 'missing.txt': the file does not exist",
        ),
        (
            "008_rejects_empty_update_hunk",
            "LOCAL_EXECUTOR_INVALID_INPUT",
            "patch line 2: '*** Update File: foo.txt' has no hunk",
        ),
        (
            "009_requires_existing_file_for_update",
            "LOCAL_EXECUTOR_NOT_FOUND",
            "'missing.txt' (patch line 2): the file does not exist",
        ),
        (
            "012_delete_directory_fails",
            "LOCAL_EXECUTOR_INVALID_INPUT",
            "cannot delete 'dir': it is a directory",
        ),
        (
            "013_rejects_invalid_hunk_header",
            "LOCAL_EXECUTOR_INVALID_INPUT",
            "patch line 2: expected a file operation",
        ),
        (
            ALL_OR_NOTHING,
            "LOCAL_EXECUTOR_NOT_FOUND",
            "'missing.txt' (patch line 4): the file does not exist",
        ),
    ];
    let mut failures = Vec::new();
    for name in &names {
        let dir = scenarios().join(name);
        let ws = Ws::new();
        if dir.join("input").is_dir() {
            copy_dir(&dir.join("input"), &ws.root);
        }
        ws.seen_all();
        let patch = std::fs::read_to_string(dir.join("patch.txt")).unwrap();
        let result = ws.apply(&patch);
        match refused.iter().find(|(n, _, _)| n == name) {
            Some((_, kind, text)) => {
                let (got_kind, message) = error_of(&result);
                if got_kind != *kind || !message.contains(text) {
                    failures.push(format!("{name}: {got_kind}: {message}"));
                }
                assert!(
                    message.ends_with("nothing was written"),
                    "{name}: {message}"
                );
            }
            None => {
                if result.status != NodeStatus::Succeeded {
                    failures.push(format!("{name}: {:?}", result.outputs));
                }
            }
        }
        // All or nothing: 015 leaves its input (empty) where Codex leaves the added file.
        let expected = if name == ALL_OR_NOTHING {
            tree(&dir.join("input"))
        } else {
            tree(&dir.join("expected"))
        };
        if ws.tree() != expected {
            failures.push(format!(
                "{name}: the tree differs from the expected one: {:?}",
                ws.tree().keys().collect::<Vec<_>>()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn summary_and_files_say_what_changed() {
    let ws = Ws::new();
    ws.write("modify.txt", "line1\nline2\n");
    ws.write("delete.txt", "x\n");
    ws.write("old/name.txt", "old content\n");
    ws.seen_all();
    let patch =
        std::fs::read_to_string(scenarios().join("002_multiple_operations/patch.txt")).unwrap();
    let result = ws.apply(&patch);
    assert_eq!(result.status, NodeStatus::Succeeded, "{:?}", result.outputs);
    assert_eq!(
        result.outputs["summary"],
        "Success. Updated the following files:\nA nested/new.txt\nD delete.txt\nM modify.txt"
    );
    let files = result.outputs["files"].as_array().unwrap();
    assert_eq!(files[0]["tag"], cheng_nodes_files::tag::tag(b"created\n"));
    assert_eq!(
        files[2]["tag"],
        cheng_nodes_files::tag::tag(b"line1\nchanged\n")
    );
    assert_eq!(files[1]["tag"], serde_json::Value::Null);
    assert_eq!(result.outputs["warnings"], serde_json::json!([]));
    let diff = result.outputs["diff"].as_str().unwrap();
    assert!(
        diff.contains("--- /dev/null\n+++ b/nested/new.txt\n")
            && diff.contains("-line2\n+changed\n"),
        "{diff}"
    );
    // The new tags are registered: a second patch on the result needs no new read.
    let again = ws.apply(
        "*** Begin Patch\n*** Update File: modify.txt\n@@\n-changed\n+again\n*** End Patch\n",
    );
    assert_eq!(again.status, NodeStatus::Succeeded, "{:?}", again.outputs);
    assert_eq!(ws.read("modify.txt"), b"line1\nagain\n");
}
