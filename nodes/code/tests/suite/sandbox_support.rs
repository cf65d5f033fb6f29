//! Helpers for the sandboxed executors' tests: defaults from the spec (as the engine applies
//! them), a fresh workspace, and whether bubblewrap works here.
#![allow(dead_code)]

use cheng_node::{Decision, Node, NodeError, RunContext, Values};
use serde_json::Value;
use std::path::{Path, PathBuf};

pub use cheng_test_support::{eventually, none_left, pgrep, KillOnDrop};

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
pub async fn run_with(
    node: &dyn Node,
    workspace: &Path,
    input: Value,
    decision: Decision,
) -> Result<Values, NodeError> {
    let ctx = RunContext::for_workspace(node.spec().id, workspace.to_path_buf(), decision);
    node.run(&ctx, with_defaults(node, input)).await
}

pub async fn run(node: &dyn Node, workspace: &Path, input: Value) -> Values {
    match run_with(node, workspace, input, Decision::Approved).await {
        Ok(out) => out,
        Err(e) => panic!("node failed: {e}"),
    }
}

/// Whether the sandbox can be built here (see [`require_or_skip`]): CI installs bubblewrap, and
/// there a silent skip would turn every attack test into one that cannot fail.
pub fn sandbox_available() -> bool {
    let ok = cheng_sandbox::check_available().is_ok();
    require_or_skip_that(
        "a bubblewrap that can create namespaces (apt-get install bubblewrap)",
        ok,
    )
}

pub use cheng_test_support::{require_or_skip, require_or_skip_that};

/// A fresh directory under /var/tmp (outside the workspace and outside /tmp, which is private
/// inside the sandbox) with mode 0777, set explicitly (the umask applies at creation): the
/// script's uid, whatever it is, could write here on the host, so when a write does not land
/// only the sandbox can have stopped it.
pub fn world_writable_dir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir_in("/var/tmp").expect("tempdir in /var/tmp");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777))
        .expect("chmod 0777");
    let mode = std::fs::metadata(dir.path())
        .expect("stat")
        .permissions()
        .mode()
        & 0o7777;
    assert_eq!(
        mode,
        0o777,
        "{} is not world-writable",
        dir.path().display()
    );
    dir
}

/// A file `name` in `dir` holding `text`, mode 0666 (set explicitly).
pub fn world_writable_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).expect("chmod 0666");
    path
}

pub fn is_root() -> bool {
    // Root is what the fork-bomb and idmapped-mount paths are about.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(2) == Some("0"))
        })
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
        if request.requested_paths.contains(&self.deny) {
            Decision::Denied
        } else {
            Decision::Approved
        }
    }
}

/// Runs `node` with `approver` deciding.
pub async fn run_approved_by(
    node: &dyn Node,
    workspace: &Path,
    input: Value,
    approver: std::sync::Arc<dyn cheng_node::Approver>,
) -> Result<Values, NodeError> {
    let mut ctx =
        RunContext::for_workspace(node.spec().id, workspace.to_path_buf(), Decision::Approved);
    ctx.approver = approver;
    node.run(&ctx, with_defaults(node, input)).await
}

pub use cheng_test_support::assert_cut_to;

/// code_js runs scripts in the helper's worker mode (`cheng-sandbox-init __js-worker`): the one
/// `cargo build -p cheng-cli` puts in this test binary's target directory (scripts/test builds
/// it before the tests). Missing, the tests fail with the command that builds it.
#[cfg(feature = "js")]
pub fn use_js_worker() {
    static FOUND: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let path = FOUND.get_or_init(|| {
        let exe = std::env::current_exe().expect("the test binary's path");
        let helper = exe
            .parent()
            .and_then(|deps| deps.parent())
            .map(|profile| profile.join(cheng_exec::helper::HELPER_NAME))
            .expect("the target directory");
        assert!(
            helper.is_file(),
            "{} is missing: build it with `cargo build -p cheng-cli --bin cheng-sandbox-init`",
            helper.display()
        );
        helper
    });
    cheng_nodes_code::js::use_executable(path.clone());
}
