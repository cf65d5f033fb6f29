//! Live output: workspace_shell, workspace_tests and workspace_git pass their commands' output to
//! `ctx.output` while they run (git: the operation's commands, not its repository probes).

use super::common::*;
use cheng_node::{Node, OutputStream};
use cheng_nodes_workspace::{WorkspaceGit, WorkspaceTests};
use cheng_test_support::LiveChunks;
use serde_json::json;
use std::sync::Arc;

async fn run_live(
    node: &dyn Node,
    ws: &std::path::Path,
    input: serde_json::Value,
) -> (cheng_node::Values, Arc<LiveChunks>) {
    let (ctx, keep) = LiveChunks::context(node, ws);
    let out = node
        .run(&ctx, input.as_object().cloned().unwrap_or_default())
        .await
        .expect("runs");
    (out, keep)
}

#[tokio::test]
async fn workspace_tests_passes_the_runners_output_on() {
    let (_d, ws) = temp_workspace();
    let (out, keep) = run_live(
        &WorkspaceTests,
        &ws,
        json!({"operation": "run", "command": "sh", "args": ["-c", "echo ran; echo warn >&2"]}),
    )
    .await;
    assert_eq!(out["success"], true, "{out:?}");
    assert_eq!(keep.text(OutputStream::Stdout), "ran\n");
    assert_eq!(keep.text(OutputStream::Stderr), "warn\n");
}

#[tokio::test]
async fn workspace_git_passes_the_operations_output_on_but_not_its_probes() {
    let (_d, ws) = temp_workspace();
    init_repo(&ws, &[("a.txt", "a\n")]);
    let (out, keep) = run_live(&WorkspaceGit, &ws, json!({"operation": "log"})).await;
    assert_eq!(out["success"], true, "{out:?}");
    let text = keep.text_of_processes(OutputStream::Stdout);
    assert!(text.contains("initial commit"), "{text}");
    assert!(
        !text.contains("core.repositoryformatversion"),
        "the configuration probe leaked into live output: {text}"
    );
}
