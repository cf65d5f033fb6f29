//! `cheng run … --format diff`: markdown format suggestions as a patch `git apply` takes.

use super::support::*;
use std::process::Command;

#[test]
fn format_suggestions_as_a_diff_that_git_applies() {
    if !require_or_skip("git") {
        return;
    }
    let (_d, ws) = temp_workspace();
    std::fs::write(ws.join("t.md"), "# T\nSome text   \n* a\n+ b\n\n\n\nend").unwrap();
    let ws_str = ws.to_str().unwrap();
    let out = run_cheng(&[
        "run",
        "tools/workspace_markdown",
        "-w",
        ws_str,
        "--set",
        "operation=format_suggestions",
        "--set",
        "path=t.md",
        "--format",
        "diff",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let diff = text(&out.stdout);
    assert!(diff.starts_with("--- a/t.md\n+++ b/t.md\n@@"), "{diff}");
    assert!(
        text(&out.stderr).contains("suggested edits"),
        "the summary goes to stderr"
    );
    std::fs::write(ws.join("fix.diff"), &diff).unwrap();
    let applied = Command::new("git")
        .args(["apply", "fix.diff"])
        .current_dir(&ws)
        .output()
        .unwrap();
    assert!(applied.status.success(), "{}", text(&applied.stderr));
    std::fs::remove_file(ws.join("fix.diff")).unwrap();
    // Every finding was fixed by the patch.
    let out = run_cheng(&[
        "run",
        "tools/workspace_markdown",
        "-w",
        ws_str,
        "--set",
        "operation=diagnostics",
        "--set",
        "path=t.md",
        "--fail-on",
        "warning",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    // Other nodes have no edits to show.
    let out = run_cheng(&[
        "run",
        "tools/workspace_git",
        "-w",
        ws_str,
        "--set",
        "operation=status",
        "--format",
        "diff",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("format_suggestions"),
        "{}",
        text(&out.stderr)
    );
}
