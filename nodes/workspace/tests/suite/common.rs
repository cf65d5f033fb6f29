//! Helpers shared by the git and test-runner suites: run a node in-process, build repositories.
#![allow(dead_code)]

use cheng_node::{Decision, Node, NodeError, RunContext, Values};
use serde_json::Value;
use std::path::{Path, PathBuf};

pub use cheng_test_support::{copy_dir, git, init_repo, temp_workspace};

/// The repository root (for `fixtures/`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repo root")
}

pub fn fixtures() -> PathBuf {
    repo_root().join("fixtures")
}

/// Runs `node` on `workspace` with `input` (an object), as the engine would after approval.
pub async fn run(node: &dyn Node, workspace: &Path, input: Value) -> Result<Values, NodeError> {
    let ctx =
        RunContext::for_workspace(node.spec().id, workspace.to_path_buf(), Decision::Approved);
    let input = input.as_object().cloned().unwrap_or_default();
    node.run(&ctx, input).await
}

/// The `error_kind` code of a failed run, whether reported as `Err` or as outputs.
pub fn error_code(result: &Result<Values, NodeError>) -> String {
    match result {
        Err(e) => e.kind.code().to_string(),
        Ok(out) => out
            .get("error_kind")
            .and_then(Value::as_str)
            .unwrap_or("none")
            .to_string(),
    }
}

pub use cheng_test_support::require_or_skip_that;
