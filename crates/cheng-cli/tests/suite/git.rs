//! `cheng run tools/workspace_git` through the real binary: a hostile repository, option
//! injection, and the error codes.
#![allow(unused_imports)]
use super::support::*;

use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

const NODE: &str = "tools/workspace_git";

fn repo_with_commit(ws: &Path) {
    git(ws, &["-c", "init.defaultBranch=main", "init", "-q", "."]);
    std::fs::write(ws.join("a.txt"), "a\n").expect("write");
    git(ws, &["add", "a.txt"]);
    git(ws, &["commit", "-qm", "first"]);
}

/// The `LOCAL_EXECUTOR_*` code of a failed run, from the output object or from stderr.
fn failure(code: i32, out: &Value, stderr: &str) -> String {
    assert_ne!(code, 0, "expected a failure; stdout {out}, stderr {stderr}");
    if let Some(kind) = out.get("error_kind").and_then(Value::as_str) {
        return kind.to_string();
    }
    let start = stderr
        .find("LOCAL_EXECUTOR_")
        .unwrap_or_else(|| panic!("no error code in stderr: {stderr}"));
    stderr[start..]
        .chars()
        .take_while(|c| c.is_ascii_uppercase() || *c == '_')
        .collect()
}

#[test]
fn status_and_log_print_structured_json() {
    let (_d, ws) = temp_workspace();
    repo_with_commit(&ws);
    std::fs::write(ws.join("a.txt"), "changed\n").expect("write");
    let (code, out, stderr) = run_node(NODE, &ws, &json!({"operation": "status"}), &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out["operation"], "status");
    assert_eq!(out["files"][0]["path"], "a.txt");
    assert_eq!(out["files"][0]["worktree_status"], "M");
    assert_eq!(out["current_branch"], "main");
    let (code, out, stderr) = run_node(NODE, &ws, &json!({"operation": "log"}), &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out["commits"][0]["subject"], "first");
}

#[test]
fn hostile_repository_cannot_run_programs_through_the_cli() {
    let (_d, ws) = temp_workspace();
    let outside = tempfile::tempdir().expect("tempdir");
    let marker = outside.path().join("pwned");
    let status = Command::new("sh")
        .arg(fixtures().join("repos/hostile.sh"))
        .arg(ws.join("repo"))
        .arg(&marker)
        .status()
        .expect("sh");
    assert!(status.success());
    for input in [
        json!({"operation": "status", "cwd": "repo"}),
        json!({"operation": "diff", "cwd": "repo"}),
        json!({"operation": "log", "cwd": "repo"}),
        json!({"operation": "show", "cwd": "repo", "revision": "HEAD~1"}),
        json!({"operation": "branch", "cwd": "repo"}),
    ] {
        let (code, out, stderr) = run_node(NODE, &ws, &input, &[]);
        assert_eq!(code, 0, "{input}: {out} {stderr}");
        assert!(
            !marker.exists(),
            "{input} ran a program named by the repository"
        );
    }
}

#[test]
fn option_injection_is_refused_before_git_runs() {
    let (_d, ws) = temp_workspace();
    repo_with_commit(&ws);
    let target = tempfile::tempdir().expect("tempdir");
    let written = target.path().join("x");
    let option = format!("--output={}", written.display());
    for input in [
        json!({"operation": "show", "revision": option}),
        json!({"operation": "diff", "pathspecs": [option]}),
        json!({"operation": "log", "pathspecs": [":(top)"]}),
        json!({"operation": "show", "revision": "HEAD:a.txt"}),
    ] {
        let (code, out, stderr) = run_node(NODE, &ws, &input, &[]);
        assert_eq!(
            failure(code, &out, &stderr),
            "LOCAL_EXECUTOR_INVALID_INPUT",
            "{input}"
        );
        assert!(!written.exists());
    }
}

#[test]
fn error_codes_for_missing_repository_git_and_limits() {
    let (_d, ws) = temp_workspace();
    let (code, out, stderr) = run_node(NODE, &ws, &json!({"operation": "status"}), &[]);
    assert_eq!(
        failure(code, &out, &stderr),
        "LOCAL_EXECUTOR_NOT_A_REPOSITORY"
    );

    repo_with_commit(&ws);
    let (code, out, stderr) = run_node(
        NODE,
        &ws,
        &json!({"operation": "log", "max_count": 101}),
        &[],
    );
    assert_ne!(code, 0);
    assert!(format!("{out}{stderr}").contains("100"), "{out} {stderr}");
    // The spec's maximum is enforced before the node runs: a validation error (exit 2) naming
    // the port and citing the maximum; 100 itself is accepted.
    assert_eq!(code, 2, "{out} {stderr}");
    assert!(
        stderr.contains("max_count") && stderr.contains("maximum 100"),
        "{stderr}"
    );
    let (code, _, stderr) = run_node(
        NODE,
        &ws,
        &json!({"operation": "log", "max_count": 100}),
        &[],
    );
    assert_eq!(code, 0, "{stderr}");

    // git missing from PATH: SPAWN_FAILED naming git.
    let empty = tempfile::tempdir().expect("tempdir");
    let input = json!({"operation": "status"}).to_string();
    let output = cheng()
        .args([
            "run",
            NODE,
            "--workspace",
            ws.to_str().unwrap_or("."),
            "--input",
            &input,
        ])
        .env("PATH", empty.path())
        .output()
        .expect("cheng runs");
    let stdout: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let code = output.status.code().unwrap_or(-1);
    assert_eq!(
        failure(code, &stdout, &stderr),
        "LOCAL_EXECUTOR_SPAWN_FAILED"
    );
    assert!(
        format!("{stdout}{stderr}").contains("git"),
        "{stdout} {stderr}"
    );
}

/// git is looked up on cheng's own PATH, absolute entries only: a `git` placed in the workspace
/// (or on a relative PATH entry) is never run, and without a git on PATH the error names git.
#[test]
fn git_is_found_on_absolute_path_entries_only() {
    use std::os::unix::fs::PermissionsExt;
    let (_d, ws) = temp_workspace();
    repo_with_commit(&ws);
    let outside = tempfile::tempdir().expect("tempdir");
    let marker = outside.path().join("fake-git-ran");
    std::fs::create_dir_all(ws.join("bin")).expect("mkdir");
    let fake = ws.join("bin/git");
    std::fs::write(&fake, format!("#!/bin/sh\ntouch '{}'\n", marker.display())).expect("write");
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let empty = tempfile::tempdir().expect("tempdir");
    let path = format!("bin:./bin:{}", empty.path().display());
    let input = json!({"operation": "status"}).to_string();
    let output = cheng()
        .args([
            "run",
            NODE,
            "--workspace",
            ws.to_str().unwrap_or("."),
            "--input",
            &input,
        ])
        .current_dir(&ws)
        .env("PATH", &path)
        .output()
        .expect("cheng runs");
    let stdout: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let code = output.status.code().unwrap_or(-1);
    assert_eq!(
        failure(code, &stdout, &stderr),
        "LOCAL_EXECUTOR_SPAWN_FAILED",
        "{stdout} {stderr}"
    );
    assert!(
        stdout["error"]
            .as_str()
            .unwrap_or_default()
            .contains("git could not be started"),
        "{stdout}"
    );
    assert!(!marker.exists(), "a git from a relative PATH entry ran");
}
