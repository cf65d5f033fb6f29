//! The file nodes through `cheng serve --stdio`: one connection is one freshness scope (a read
//! lets a later call edit; an outside change in between is refused), and a new connection has
//! seen nothing.

use super::support::{cheng, temp_workspace};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

struct Server {
    child: Child,
    lines: Receiver<String>,
}

impl Server {
    fn start(workspace: &Path) -> Server {
        let mut child = cheng()
            .args(["serve", "--stdio", "--approve", "--workspace"])
            .arg(workspace)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("cheng serve starts");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let mut server = Server { child, lines };
        server.send(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}));
        server.answer(0);
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.child.stdin.as_mut().expect("stdin");
        stdin.write_all(format!("{message}\n").as_bytes()).expect("write");
        stdin.flush().expect("flush");
    }

    fn answer(&mut self, id: i64) -> Value {
        loop {
            let line = self.lines.recv_timeout(Duration::from_secs(30)).expect("an answer within 30 s");
            let message: Value = serde_json::from_str(&line).expect("JSON");
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    /// Calls tool `name`; returns its structured output.
    fn call(&mut self, id: i64, name: &str, arguments: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}}));
        self.answer(id)["result"]["structuredContent"].clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn one_connection_is_one_freshness_scope() {
    let (_dir, ws) = temp_workspace();
    std::fs::write(ws.join("a.txt"), "one\ntwo\n").unwrap();
    let mut server = Server::start(&ws);
    let edit = json!({"file_path": "a.txt", "old": "two", "new": "2"});
    let out = server.call(1, "edit_file", edit.clone());
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_FILE_CHANGED", "never read on this connection: {out}");
    let out = server.call(2, "read_file", json!({"file_path": "a.txt"}));
    assert_eq!(out["success"], true, "{out}");
    let out = server.call(3, "edit_file", edit);
    assert_eq!(out["success"], true, "{out}");
    assert_eq!(out["warnings"], json!([]), "the gate was on: {out}");
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "one\n2\n");
    // An outside change between calls.
    std::fs::write(ws.join("a.txt"), "one\n2\nthree\n").unwrap();
    let out = server.call(4, "edit_file", json!({"file_path": "a.txt", "old": "one", "new": "1"}));
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_FILE_CHANGED", "{out}");
    // A new connection has read nothing.
    drop(server);
    let mut server = Server::start(&ws);
    let out = server.call(1, "write_file", json!({"file_path": "a.txt", "content": "x\n"}));
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_FILE_CHANGED", "{out}");
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "one\n2\nthree\n");
}

/// The same through the official MCP Python SDK client, in both connection modes: the diff on
/// the elicitation card, a decline writes nothing, one card per edit, a new connection has read
/// nothing.
#[test]
fn the_python_sdk_reads_and_edits_with_approval_in_both_modes() {
    let sdk = std::process::Command::new("python3")
        .args(["-c", "import mcp, mcp_types; from mcp import Client"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !super::support::require_or_skip_that("the MCP Python SDK (pip install \"mcp>=2.3\")", sdk) {
        return;
    }
    for mode in ["legacy", "2026-07-28"] {
        let (_dir, ws) = temp_workspace();
        let out = std::process::Command::new("python3")
            .arg(super::support::repo_root().join("crates/cheng-cli/tests/mcp/files.py"))
            .arg(env!("CARGO_BIN_EXE_cheng"))
            .arg(&ws)
            .arg(mode)
            .stdin(Stdio::null())
            .output()
            .expect("python3 runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains(&format!("ok files ({mode})")),
            "{mode}:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
