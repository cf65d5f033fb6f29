//! Helpers shared by the git and test-runner suites: run a node in-process, build repositories.
#![allow(dead_code)]

use cheng_node::{Decision, Node, NodeError, RunContext, Values};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository root (for `fixtures/`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repo root")
}

pub fn fixtures() -> PathBuf {
    repo_root().join("fixtures")
}

/// A fresh canonical temporary workspace.
pub fn temp_workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical tempdir");
    (dir, root)
}

/// Runs `node` on `workspace` with `input` (an object), as the engine would after approval.
pub async fn run(node: &dyn Node, workspace: &Path, input: Value) -> Result<Values, NodeError> {
    let ctx = RunContext::for_workspace(node.spec().id, workspace.to_path_buf(), Decision::Approved);
    let input = input.as_object().cloned().unwrap_or_default();
    node.run(&ctx, input).await
}

/// Runs `git` for fixture building with a fixed identity and no host configuration.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "Fixture")
        .env("GIT_AUTHOR_EMAIL", "fixture@example.invalid")
        .env("GIT_COMMITTER_NAME", "Fixture")
        .env("GIT_COMMITTER_EMAIL", "fixture@example.invalid")
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A repository at `dir` with `main` checked out and the given files committed.
pub fn init_repo(dir: &Path, files: &[(&str, &str)]) {
    std::fs::create_dir_all(dir).expect("mkdir");
    git(dir, &["-c", "init.defaultBranch=main", "init", "-q", "."]);
    for (name, content) in files {
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(path, content).expect("write");
    }
    if !files.is_empty() {
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-qm", "initial commit"]);
    }
}

/// The `error_kind` code of a failed run, whether reported as `Err` or as outputs.
pub fn error_code(result: &Result<Values, NodeError>) -> String {
    match result {
        Err(e) => e.kind.code().to_string(),
        Ok(out) => out.get("error_kind").and_then(Value::as_str).unwrap_or("none").to_string(),
    }
}

/// Whether `tool` is an executable on PATH.
pub fn on_path(tool: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .filter(|d| d.is_absolute())
                .any(|d| std::fs::metadata(d.join(tool)).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
        })
        .unwrap_or(false)
}

/// Whether a test may go on needing `tool` (a program on PATH). When it is missing the test
/// skips with a note, except in CI (env `CI` set), which installs every tool (scripts/test): there
/// a skip would turn the test into one that cannot fail, so the test fails instead.
pub fn require_or_skip(tool: &str) -> bool {
    require_or_skip_that(tool, on_path(tool))
}

/// [`require_or_skip`] for a requirement a PATH lookup cannot check: `what` names it (said in the
/// skip note and the CI failure), `available` says whether it is met.
pub fn require_or_skip_that(what: &str, available: bool) -> bool {
    if !available {
        assert!(
            std::env::var_os("CI").is_none(),
            "{what} missing, and CI is set: CI must provide it (scripts/test installs the tools), so this test may not skip"
        );
        eprintln!("skipping: {what} missing");
    }
    available
}
