//! Live output through the runtime: the called tool's output arrives as the runtime node's own
//! `output_chunk` events.

use super::support::*;
use cheng_engine::{Event, MemorySink, RunOptions};
use cheng_node::{Decision, FixedApprover, OutputStream};
use serde_json::json;
use std::sync::Arc;

#[tokio::test]
async fn a_called_tools_output_becomes_the_runtime_nodes_output_chunks() {
    let (_d, ws) = temp_workspace();
    let events = Arc::new(MemorySink::default());
    let options = RunOptions::new(&ws)
        .expect("workspace")
        .approver(Arc::new(FixedApprover(Decision::Approved)))
        .events(events.clone());
    let config = json!({"exposed_tools": [{"type": "tools/workspace_shell", "name": "shell"}]});
    let input = json!({"action": "execute", "tool_call": {"name": "shell", "arguments": {"command": "sh", "args": ["-c", "echo out; echo err >&2"]}}});
    let result = engine(tools(false))
        .run_node(
            "tools/runtime",
            config.as_object().cloned().unwrap(),
            input.as_object().cloned().unwrap(),
            options,
        )
        .await
        .expect("validates");
    assert_eq!(result.outputs["status"], "ok", "{:?}", result.outputs);
    let mut out = String::new();
    let mut err = String::new();
    for event in events.events() {
        if let Event::OutputChunk {
            node, stream, text, ..
        } = event
        {
            assert_eq!(node, "tools/runtime", "the chunks are the runtime node's");
            match stream {
                OutputStream::Stdout => out.push_str(&text),
                OutputStream::Stderr => err.push_str(&text),
            }
        }
    }
    assert_eq!((out.as_str(), err.as_str()), ("out\n", "err\n"));
}
