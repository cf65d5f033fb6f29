//! The file nodes through `cheng serve --stdio`: one connection is one freshness scope (a read
//! lets a later call edit; an outside change in between is refused), and a new connection has
//! seen nothing.

use super::mcp_pipe::McpPipe;
use super::support::temp_workspace;
use serde_json::json;
use std::path::Path;

/// A server on a pipe that approves every call, initialised.
fn start(workspace: &Path) -> McpPipe {
    let mut server = McpPipe::start(workspace, &["--approve"]);
    server.initialize();
    server
}

#[test]
fn one_connection_is_one_freshness_scope() {
    let (_dir, ws) = temp_workspace();
    std::fs::write(ws.join("a.txt"), "one\ntwo\n").unwrap();
    let mut server = start(&ws);
    let edit = json!({"file_path": "a.txt", "old": "two", "new": "2"});
    let out = server.call(1, "edit_file", edit.clone());
    assert_eq!(
        out["error_kind"], "LOCAL_EXECUTOR_FILE_CHANGED",
        "never read on this connection: {out}"
    );
    let out = server.call(2, "read_file", json!({"file_path": "a.txt"}));
    assert_eq!(out["success"], true, "{out}");
    let out = server.call(3, "edit_file", edit);
    assert_eq!(out["success"], true, "{out}");
    assert_eq!(out["warnings"], json!([]), "the gate was on: {out}");
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        "one\n2\n"
    );
    // An outside change between calls.
    std::fs::write(ws.join("a.txt"), "one\n2\nthree\n").unwrap();
    let out = server.call(
        4,
        "edit_file",
        json!({"file_path": "a.txt", "old": "one", "new": "1"}),
    );
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_FILE_CHANGED", "{out}");
    // A new connection has read nothing.
    drop(server);
    let mut server = start(&ws);
    let out = server.call(
        1,
        "write_file",
        json!({"file_path": "a.txt", "content": "x\n"}),
    );
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_FILE_CHANGED", "{out}");
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        "one\n2\nthree\n"
    );
}

/// The same through the official MCP Python SDK client, in both connection modes: the diff on
/// the elicitation card, a decline writes nothing, one card per edit, a new connection has read
/// nothing.
#[test]
fn the_python_sdk_reads_and_edits_with_approval_in_both_modes() {
    if !super::support::mcp_sdk_available() {
        return;
    }
    for mode in ["legacy", "2026-07-28"] {
        let (_dir, ws) = temp_workspace();
        let out = super::support::run_sdk_script(
            std::process::Command::new("python3")
                .arg(super::support::repo_root().join("crates/cheng-cli/tests/mcp/files.py"))
                .arg(env!("CARGO_BIN_EXE_cheng"))
                .arg(&ws)
                .arg(mode),
            std::time::Duration::from_secs(180),
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains(&format!("ok files ({mode})")),
            "{mode}:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
