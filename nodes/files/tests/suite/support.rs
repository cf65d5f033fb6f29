//! Calling the file nodes directly or through the engine.
#![allow(dead_code)]

use cheng_node::{Decision, Node, RunContext, Scope, ScopeKind, Values};
use serde_json::Value;
use std::path::Path;

pub use cheng_test_support::temp_workspace;

/// A context in `ws` with a scope of `kind` (Graph keeps a freshness table in memory).
pub fn ctx(node: &dyn Node, ws: &Path, kind: ScopeKind) -> RunContext {
    let mut ctx = RunContext::for_workspace(node.spec().id, ws.to_path_buf(), Decision::Approved);
    ctx.scope = Scope::new(kind);
    ctx
}

/// The same scope, for another node type.
pub fn with_node(ctx: &RunContext, node: &dyn Node) -> RunContext {
    let mut other = ctx.clone();
    other.node_type = node.spec().id;
    other.node_id = node.spec().id.to_string();
    other
}

pub fn values(v: Value) -> Values {
    v.as_object().cloned().expect("an object")
}

/// Runs `node` (no approval step: that is the engine's) and returns its outputs.
pub fn call(node: &dyn Node, ctx: &RunContext, input: Value) -> Values {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let ctx = with_node(ctx, node);
    match rt.block_on(node.run(&ctx, values(input))) {
        Ok(out) => out,
        Err(e) => e.to_outputs(),
    }
}

/// `call`, asserting success.
pub fn ok(node: &dyn Node, ctx: &RunContext, input: Value) -> Values {
    let out = call(node, ctx, input);
    assert_eq!(out["success"], true, "{}: {out:#?}", node.spec().id);
    out
}

/// `call`, asserting failure with `code`; returns the error message.
pub fn fails(node: &dyn Node, ctx: &RunContext, input: Value, code: &str) -> String {
    let out = call(node, ctx, input);
    assert_eq!(out["success"], false, "{}: {out:#?}", node.spec().id);
    assert_eq!(out["error_kind"], code, "{out:#?}");
    out["error"].as_str().unwrap_or_default().to_string()
}

/// The approval card's details for `input` (or the error the node refuses with).
pub fn card(
    node: &dyn Node,
    ctx: &RunContext,
    input: Value,
) -> Result<cheng_node::ApprovalRequest, cheng_node::NodeError> {
    node.approval_request(&with_node(ctx, node), &values(input))
}

/// A file under each protected name the list gained for other tools' code-running config and
/// credentials, as the tools name them.
pub const OTHER_TOOLS_PROTECTED: &[&str] = &[
    ".hg/hgrc",
    ".jj/repo/config.toml",
    ".sl/config",
    ".svn/wc.db",
    ".bzr/branch/branch.conf",
    ".git-credentials",
    ".kube/config",
    ".docker/config.json",
    ".gnupg/gpg-agent.conf",
    ".azure/config",
    ".cargo/config",
    ".cargo/config.toml",
    "crates/x/.cargo/config.toml",
    ".cargo/credentials.toml",
    ".pypirc",
    ".terraformrc",
    ".config/gcloud/credentials.db",
];

/// `path` as written, in upper case, and with its first letter upper-cased (`.HG/hgrc`,
/// `.Kube/config`); then the case-folding spellings of `.git/hooks/pre-commit`.
pub fn in_any_case(path: &str) -> Vec<String> {
    let mut first_upper = String::new();
    let mut done = false;
    for c in path.chars() {
        if !done && c.is_ascii_alphabetic() {
            first_upper.push(c.to_ascii_uppercase());
            done = true;
        } else {
            first_upper.push(c);
        }
    }
    vec![path.to_string(), path.to_uppercase(), first_upper]
}

/// Spellings a case-insensitive file system takes for `.git/hooks/pre-commit`.
pub const GIT_HOOK_SPELLINGS: &[&str] = &[
    ".GIT/hooks/pre-commit",
    ".Git/HOOKS/pre-commit",
    "sub/.gIt/config",
    ".g\u{131}t/hooks/pre-commit",
    ".g\u{200c}it/hooks/pre-commit",
];
