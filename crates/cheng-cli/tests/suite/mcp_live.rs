//! `cheng serve --stdio`: live output as `notifications/progress` and the server's warnings as
//! log messages — on the raw protocol, and with the official MCP Python SDK client
//! (`tests/mcp/live.py`) in its three connection modes.

use super::mcp_pipe::McpPipe;
use super::support::{git, repo_root, temp_workspace};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

/// A server on a pipe, initialised; it offers logging.
fn start(workspace: &Path, extra: &[&str]) -> McpPipe {
    let mut server = McpPipe::start(workspace, extra);
    server.send(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}));
    let (_, answer) = server.until_answer(0);
    assert!(
        answer["result"]["capabilities"].get("logging").is_some(),
        "logging is offered: {answer}"
    );
    server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    server
}

fn shell_call(id: i64, script: &str, meta: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "workspace_shell", "arguments": {"command": "sh", "args": ["-c", script]}, "_meta": meta}})
}

fn progress_of(messages: &[Value]) -> Vec<&Value> {
    messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect()
}

#[test]
fn a_progress_token_brings_the_output_as_progress_notifications_before_the_answer() {
    let (_dir, ws) = temp_workspace();
    let mut server = start(&ws, &["--approve"]);
    server.send(&shell_call(
        1,
        "echo hello; echo oops >&2; echo world",
        json!({"progressToken": "tok-1"}),
    ));
    let (before, answer) = server.until_answer(1);
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    let progress = progress_of(&before);
    assert!(
        !progress.is_empty(),
        "no progress notification before the answer: {before:?}"
    );
    let mut last = 0.0;
    let mut text = String::new();
    for note in &progress {
        let params = &note["params"];
        assert_eq!(params["progressToken"], "tok-1", "{note}");
        let value = params["progress"].as_f64().expect("progress is a number");
        assert!(value > last, "progress must increase: {progress:?}");
        last = value;
        text.push_str(params["message"].as_str().expect("message"));
        assert!(
            params.get("total").is_none(),
            "the total is unknown: {note}"
        );
    }
    // stdout and stderr both arrive; progress is the bytes of both so far.
    assert_eq!(last, "hello\nworld\noops\n".len() as f64, "{progress:?}");
    assert!(
        text.contains("hello\n") && text.contains("world\n") && text.contains("oops\n"),
        "{text}"
    );
}

#[test]
fn without_a_progress_token_nothing_but_the_answer_is_sent() {
    let (_dir, ws) = temp_workspace();
    let mut server = start(&ws, &["--approve"]);
    server.send(&shell_call(1, "echo hello", json!({})));
    let (before, answer) = server.until_answer(1);
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert!(
        progress_of(&before).is_empty(),
        "progress without a token: {before:?}"
    );
}

#[test]
fn log_messages_only_after_logging_set_level() {
    let (_dir, ws) = temp_workspace();
    // --deny (the default) and no elicitation: the call is refused, which the server warns of.
    let mut server = start(&ws, &[]);
    server.send(&shell_call(1, "true", json!({})));
    let (before, answer) = server.until_answer(1);
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(
        !before
            .iter()
            .any(|m| m["method"] == "notifications/message"),
        "a log message before setLevel: {before:?}"
    );
    server.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel", "params": {"level": "warning"}}));
    let (_, answer) = server.until_answer(2);
    assert!(
        answer.get("error").is_none(),
        "logging/setLevel is answered: {answer}"
    );
    server.send(&shell_call(3, "true", json!({})));
    let (before, _) = server.until_answer(3);
    let logs: Vec<&Value> = before
        .iter()
        .filter(|m| m["method"] == "notifications/message")
        .collect();
    assert_eq!(logs.len(), 1, "one warning: {before:?}");
    assert_eq!(logs[0]["params"]["level"], "warning");
    assert_eq!(logs[0]["params"]["logger"], "cheng");
    assert!(
        logs[0]["params"]["data"]
            .as_str()
            .unwrap_or("")
            .contains("A person has to allow it"),
        "{}",
        logs[0]
    );
    // Above the level: nothing.
    server.send(&json!({"jsonrpc": "2.0", "id": 4, "method": "logging/setLevel", "params": {"level": "error"}}));
    server.until_answer(4);
    server.send(&shell_call(5, "true", json!({})));
    let (before, _) = server.until_answer(5);
    assert!(
        !before
            .iter()
            .any(|m| m["method"] == "notifications/message"),
        "a warning below the level was sent: {before:?}"
    );
}

/// The official MCP Python SDK client, in each connection mode: a line, a 1 s pause, another
/// line — the client's progress callback sees the first line before the call returns; warnings
/// arrive as log messages once the client opted in.
#[test]
fn the_official_python_client_sees_output_while_the_call_runs() {
    if !super::support::mcp_sdk_available() {
        return;
    }
    let script = repo_root().join("crates/cheng-cli/tests/mcp/live.py");
    for mode in ["legacy", "2026-07-28", "auto"] {
        let (_dir, ws) = temp_workspace();
        git(&ws, &["init", "-q", "."]);
        let out = super::support::run_sdk_script(
            Command::new("python3")
                .arg(&script)
                .arg(env!("CARGO_BIN_EXE_cheng"))
                .arg(&ws)
                .arg(mode)
                .env_remove("CHENG_ENABLE_CODE_PYTHON")
                .env_remove("CHENG_ENABLE_CODE_JS")
                .env("LANG", "C")
                .env("LC_ALL", "C"),
            std::time::Duration::from_secs(180),
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains(&format!("ok {mode}")),
            "mode {mode}:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
