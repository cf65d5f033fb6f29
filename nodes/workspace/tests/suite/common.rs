//! Helpers shared by the git and test-runner suites: run a node in-process, build repositories.
#![allow(dead_code)]

use cheng_node::{Decision, Node, NodeError, RunContext, Values};
use serde_json::Value;
use std::path::{Path, PathBuf};

pub use cheng_test_support::{copy_dir, git, init_repo, temp_workspace};

/// The repository root (for `fixtures/`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repo root")
}

pub fn fixtures() -> PathBuf {
    repo_root().join("fixtures")
}

/// Runs `node` on `workspace` with `input` (an object), as the engine would after approval.
pub async fn run(node: &dyn Node, workspace: &Path, input: Value) -> Result<Values, NodeError> {
    let ctx = RunContext::for_workspace(node.spec().id, workspace.to_path_buf(), Decision::Approved);
    let input = input.as_object().cloned().unwrap_or_default();
    node.run(&ctx, input).await
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
