//! Helpers for the sandboxed executors' tests: defaults from the spec (as the engine applies
//! them), a fresh workspace, and whether bubblewrap works here.
#![allow(dead_code)]

use cheng_node::{Decision, Node, NodeError, RunContext, Values};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A canonical temporary workspace.
pub fn workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    (dir, root)
}

/// `input` with the spec's defaults filled in, as the engine would pass it.
pub fn with_defaults(node: &dyn Node, input: Value) -> Values {
    let mut values = input.as_object().cloned().unwrap_or_default();
    for port in node.spec().inputs {
        if !values.contains_key(port.name) {
            if let Some(default) = port.default_value() {
                values.insert(port.name.to_string(), default);
            }
        }
    }
    values
}

/// Runs `node` on `workspace` with `decision` for any approval it asks for.
pub async fn run_with(node: &dyn Node, workspace: &Path, input: Value, decision: Decision) -> Result<Values, NodeError> {
    let ctx = RunContext::for_workspace(node.spec().id, workspace.to_path_buf(), decision);
    node.run(&ctx, with_defaults(node, input)).await
}

pub async fn run(node: &dyn Node, workspace: &Path, input: Value) -> Values {
    match run_with(node, workspace, input, Decision::Approved).await {
        Ok(out) => out,
        Err(e) => panic!("node failed: {e}"),
    }
}

/// Whether the sandbox can be built here; tests that need it say so when they skip.
pub fn sandbox_available() -> bool {
    let ok = cheng_exec::bwrap::locate(None)
        .and_then(|b| cheng_exec::bwrap::probe(&b, &["--unshare-pid", "--unshare-net"]))
        .is_ok();
    if !ok {
        // CI installs bubblewrap: there a silent skip would turn every attack test into one
        // that cannot fail.
        assert!(
            std::env::var_os("CI").is_none(),
            "bubblewrap is not installed or cannot create namespaces, and CI is set: the sandbox tests must run in CI"
        );
        eprintln!("skipped: bubblewrap is not installed or cannot create namespaces here (apt-get install bubblewrap)");
    }
    ok
}

pub fn is_root() -> bool {
    // Root is what the fork-bomb and idmapped-mount paths are about.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("Uid:")).map(|l| l.split_whitespace().nth(2) == Some("0")))
        .unwrap_or(false)
}

/// An approver that denies one path and approves everything else, recording each request's
/// `requested_paths`.
pub struct PathApprover {
    pub deny: String,
    pub seen: std::sync::Mutex<Vec<Vec<String>>>,
}

#[cheng_node::async_trait]
impl cheng_node::Approver for PathApprover {
    async fn decide(&self, request: &cheng_node::ApprovalRequest) -> Decision {
        if let Ok(mut seen) = self.seen.lock() {
            seen.push(request.requested_paths.clone());
        }
        if request.requested_paths.contains(&self.deny) { Decision::Denied } else { Decision::Approved }
    }
}

/// Runs `node` with `approver` deciding.
pub async fn run_approved_by(
    node: &dyn Node,
    workspace: &Path,
    input: Value,
    approver: std::sync::Arc<dyn cheng_node::Approver>,
) -> Result<Values, NodeError> {
    let mut ctx = RunContext::for_workspace(node.spec().id, workspace.to_path_buf(), Decision::Approved);
    ctx.approver = approver;
    node.run(&ctx, with_defaults(node, input)).await
}
