//! Live output: workspace_shell, workspace_tests and workspace_git pass their commands' output to
//! `ctx.output` while they run (git: the operation's commands, not its repository probes).

use super::common::*;
use cheng_node::{Decision, Node, Output, OutputSink, OutputStream, RunContext};
use cheng_nodes_workspace::{WorkspaceGit, WorkspaceTests};
use serde_json::json;
use std::sync::{Arc, Mutex};

/// Keeps every chunk; checks that each stream's offsets are contiguous.
#[derive(Default)]
struct Keep(Mutex<Vec<(OutputStream, String, u64)>>);

impl OutputSink for Keep {
    fn chunk(&self, stream: OutputStream, bytes: &[u8], offset: u64) {
        self.0
            .lock()
            .unwrap()
            .push((stream, String::from_utf8_lossy(bytes).into_owned(), offset));
    }
}

impl Keep {
    /// The text of `stream`; offsets are contiguous within each process (a node that runs
    /// several commands, like git, starts again at 0 with each).
    fn text(&self, stream: OutputStream) -> String {
        let mut text = String::new();
        let mut next = 0;
        for (_, t, offset) in self.0.lock().unwrap().iter().filter(|c| c.0 == stream) {
            assert!(
                *offset == next || *offset == 0,
                "offsets must be contiguous within a process: {offset} after {next}"
            );
            next = offset + t.len() as u64;
            text.push_str(t);
        }
        text
    }
}

async fn run_live(
    node: &dyn Node,
    ws: &std::path::Path,
    input: serde_json::Value,
) -> (cheng_node::Values, Arc<Keep>) {
    let keep = Arc::new(Keep::default());
    let mut ctx = RunContext::for_workspace(node.spec().id, ws.to_path_buf(), Decision::Approved);
    ctx.output = Output::new(keep.clone());
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
    let text = keep.text(OutputStream::Stdout);
    assert!(text.contains("initial commit"), "{text}");
    assert!(
        !text.contains("core.repositoryformatversion"),
        "the configuration probe leaked into live output: {text}"
    );
}
