//! `cheng serve --stdio`: the raw protocol's robustness, and the official MCP Python SDK client
//! (`tests/mcp/client.py`) in its three connection modes, which also carries the security checks
//! (author/engine ports, presets, operator-disabled nodes, children on stdin close).

use super::support::{cheng, git, repo_root, temp_workspace};
use serde_json::{json, Value};
use std::process::Command;
use std::time::Duration;

use super::mcp_pipe::McpPipe as Server;

#[test]
fn negotiates_every_handshake_revision_and_offers_the_newest_otherwise() {
    let (_dir, ws) = temp_workspace();
    for (asked, answered) in [
        ("2024-11-05", "2024-11-05"),
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
    ] {
        let mut server = Server::start(&ws, &[]);
        server.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": asked, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}));
        let answer = server.answer(1);
        assert_eq!(
            answer["result"]["protocolVersion"], answered,
            "asked {asked}: {answer}"
        );
        assert_eq!(answer["result"]["serverInfo"]["name"], "cheng");
    }
}

#[test]
fn malformed_lines_unknown_methods_and_bad_params_are_answered_and_the_server_goes_on() {
    let (_dir, ws) = temp_workspace();
    let mut server = Server::start(&ws, &[]);
    // Before the handshake and after it: a line that is not JSON.
    server.send_raw(b"{not json\n");
    let answer = server.read();
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    assert_eq!(answer["id"], Value::Null);
    server.initialize();
    server.send_raw(b"][\n");
    assert_eq!(server.read()["error"]["code"], -32700);
    server.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "no/such/method"}));
    assert_eq!(server.answer(2)["error"]["code"], -32601);
    server.send(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"arguments": {}}}),
    );
    let answer = server.answer(3);
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("`name`"),
        "the error names the field: {answer}"
    );
    server.send(&json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "no_such_tool"}}));
    let answer = server.answer(4);
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("no_such_tool"),
        "{answer}"
    );
    server.send(&json!({"jsonrpc": "2.0", "id": 5, "method": "ping"}));
    assert_eq!(server.answer(5)["result"], json!({}));
}

#[test]
fn a_message_over_the_cap_is_refused_without_being_held_and_the_server_goes_on() {
    let (_dir, ws) = temp_workspace();
    let mut server = Server::start(&ws, &["--max-message", "65536"]);
    server.initialize();
    // 1 MiB of one string, no newline until the end: far over the 64 KiB cap.
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\",\"params\":{{\"x\":\"{}\"}}}}\n",
        "a".repeat(1 << 20)
    );
    server.send_raw(big.as_bytes());
    let answer = server.read();
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("65536"),
        "the error names the cap: {answer}"
    );
    server.send(&json!({"jsonrpc": "2.0", "id": 10, "method": "ping"}));
    assert_eq!(server.answer(10)["result"], json!({}));
}

#[test]
fn without_elicitation_a_gated_call_is_denied_by_default_and_runs_with_approve() {
    let (_dir, ws) = temp_workspace();
    let call = |id: i64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "workspace_shell", "arguments": {"command": "touch", "args": ["ran"]}}})
    };
    let mut server = Server::start(&ws, &[]);
    server.initialize();
    server.send(&call(1));
    let result = server.answer(1)["result"].clone();
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(
        result["structuredContent"]["error_kind"],
        "LOCAL_EXECUTOR_APPROVAL_DENIED"
    );
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .contains("--approve"),
        "{result}"
    );
    assert!(!ws.join("ran").exists(), "a denied call ran");
    drop(server);
    let mut server = Server::start(&ws, &["--approve"]);
    server.initialize();
    server.send(&call(1));
    let result = server.answer(1)["result"].clone();
    assert_eq!(result["isError"], false, "{result}");
    assert!(ws.join("ran").exists());
}

#[test]
fn a_slow_call_does_not_delay_ping_or_tools_list() {
    let (_dir, ws) = temp_workspace();
    let mut server = Server::start(&ws, &["--approve", "--jobs", "1"]);
    server.initialize();
    server.send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "workspace_shell", "arguments": {"command": "sleep", "args": ["5"]}}}),
    );
    server.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    server.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}));
    // Both answers arrive before the sleep's: the first message read is not id 1.
    let first = server.read();
    assert_ne!(
        first["id"], 1,
        "tools/list or ping waited for the slow call: {first}"
    );
    let second = server.read();
    assert_ne!(
        second["id"], 1,
        "tools/list or ping waited for the slow call: {second}"
    );
}

/// code_js through the server, whose calls share a pool of worker processes: every call gets its
/// own answer: quick ones back to back and after a pause, a longer one, a failing one, and one
/// after a call refused before it ran.
#[test]
fn code_js_calls_through_the_server_each_get_their_own_answer() {
    let (_dir, ws) = temp_workspace();
    let mut server = Server::start_with_env(&ws, &[], &[("CHENG_ENABLE_CODE_JS", "1")]);
    server.initialize();
    let mut id = 10;
    let mut call = |server: &mut Server, arguments: Value| {
        id += 1;
        server.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "code_js", "arguments": arguments}}));
        server.answer(id)
    };
    for n in 0..5 {
        let answer = call(&mut server, json!({"script": "input * 2", "input": n}));
        assert_eq!(
            answer["result"]["structuredContent"]["result"],
            json!(n * 2),
            "{answer}"
        );
        if n == 2 {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let long = "let t = Date.now(); while (Date.now() - t < 30) {} 'done'";
    let answer = call(&mut server, json!({"script": long}));
    assert_eq!(
        answer["result"]["structuredContent"]["result"], "done",
        "{answer}"
    );
    let answer = call(&mut server, json!({"script": "throw new Error('boom')"}));
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"]["error_kind"], "LOCAL_EXECUTOR_SCRIPT_ERROR",
        "{answer}"
    );
    let answer = call(&mut server, json!({"script": "1", "timeout_ms": 0}));
    assert_eq!(
        answer["result"]["isError"], true,
        "refused before it ran: {answer}"
    );
    let answer = call(
        &mut server,
        json!({"script": "[1, 2, 3].map((x) => x + 1)"}),
    );
    assert_eq!(
        answer["result"]["structuredContent"]["result"],
        json!([2, 3, 4]),
        "{answer}"
    );
}

/// The soak: 10 000 calls of a read-only node and 1 000 of workspace_shell `true` in one server
/// process leave its open descriptors and child processes at their count after a warm-up, and
/// its resident memory within 8 MiB of it. (`cargo bench -p cheng-cli --bench serve` prints the
/// same figures for a release build.)
#[test]
fn many_calls_in_one_server_leave_no_descriptor_child_or_memory_behind() {
    // Every workspace_shell call must run a child: one refused before it starts would leave no
    // child or descriptor behind whatever the server does with them.
    if !super::support::bwrap_works() {
        return;
    }
    let (_dir, ws) = temp_workspace();
    std::fs::write(
        ws.join("doc.md"),
        "# Title\n\n## Part\n\ntext with a [link](#part)\n".repeat(20),
    )
    .expect("write");
    let mut server = Server::start(&ws, &["--approve"]);
    server.initialize();
    let pid = server.child.id();
    let read = json!({"operation": "outline", "path": "doc.md"});
    let shell = json!({"command": "true"});
    let mut id = 10;
    let mut call = |server: &mut Server, name: &str, arguments: &Value| {
        id += 1;
        let result = server.call(id, name, arguments.clone());
        assert!(result.is_object(), "{name}: no structured result: {result}");
        result
    };
    for _ in 0..200 {
        assert_eq!(
            call(&mut server, "workspace_markdown", &read)["success"],
            true
        );
    }
    for _ in 0..21 {
        let result = call(&mut server, "workspace_shell", &shell);
        assert_eq!(
            result["success"], true,
            "workspace_shell did not run: {result}"
        );
    }
    let before = cheng_test_support::footprint(pid);
    for i in 0..10_000 {
        assert_eq!(
            call(&mut server, "workspace_markdown", &read)["success"],
            true
        );
        if i % 10 == 0 {
            let result = call(&mut server, "workspace_shell", &shell);
            assert_eq!(result["success"], true, "call {i}: {result}");
        }
    }
    // A child that exited a moment ago may still be waiting to be reaped.
    let settled = cheng_test_support::eventually(Duration::from_secs(10), || {
        let now = cheng_test_support::footprint(pid);
        now.fds <= before.fds && now.children <= before.children
    });
    let after = cheng_test_support::footprint(pid);
    assert!(
        settled,
        "descriptors or children left behind: before {before:?}, after {after:?}"
    );
    assert!(
        after.rss_kib <= before.rss_kib + 8 * 1024,
        "resident memory grew by more than 8 MiB: before {before:?}, after {after:?}"
    );
}

/// `cheng serve --stdio` on `ws` with an `exposed_tools` file holding `tools` (and `extra`),
/// stdin closed at once: what a server that refuses to start leaves.
fn serve_with_tools(ws: &std::path::Path, tools: &str, extra: &[&str]) -> std::process::Output {
    let (dir, _) = temp_workspace();
    let file = dir.path().join("tools.json");
    std::fs::write(&file, tools).expect("write");
    cheng()
        .args(["serve", "--stdio"])
        .args(extra)
        .arg("--workspace")
        .arg(ws)
        .arg("--tools")
        .arg(&file)
        .output()
        .expect("runs")
}

#[test]
fn a_broken_tools_file_refuses_to_start_and_names_the_entry() {
    let (_dir, ws) = temp_workspace();
    let out = serve_with_tools(
        &ws,
        r#"[{"type": "tools/workspace_git"}, {"type": "tools/nope"}]"#,
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("exposed_tools[1]") && err.contains("tools/nope"),
        "{err}"
    );
    assert!(
        out.stdout.is_empty(),
        "stdout carries protocol messages only"
    );
}

#[test]
fn a_tools_file_offers_exactly_its_entries() {
    let (dir, ws) = temp_workspace();
    let file = dir.path().join("tools.json");
    std::fs::write(&file, r#"[{"type": "tools/workspace_git", "name": "git"}]"#).expect("write");
    let mut server = Server::start(&ws, &["--tools", file.to_str().unwrap_or("")]);
    server.initialize();
    server.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
    let tools = server.answer(1)["result"]["tools"].clone();
    let names: Vec<&str> = tools
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["git"]);
}

/// The conformance suite's fixture tools (a test build's `--conformance-fixtures`) are offered
/// only when asked for, after the nodes, and answer; without the flag they do not exist.
#[test]
fn the_conformance_fixtures_are_offered_only_with_their_flag() {
    let (_dir, ws) = temp_workspace();
    let names = |server: &mut Server| -> Vec<String> {
        server.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
        server.answer(1)["result"]["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["name"].as_str().map(str::to_string))
            .collect()
    };
    let simple_text = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "test_simple_text", "arguments": {}}});

    let mut plain = Server::start(&ws, &[]);
    plain.initialize();
    let nodes = names(&mut plain);
    assert!(nodes.iter().any(|n| n == "read_file"), "{nodes:?}");
    assert!(!nodes.iter().any(|n| n.starts_with("test_")), "{nodes:?}");
    plain.send(&simple_text);
    let refused = plain.answer(2);
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("unknown tool `test_simple_text`")),
        "{refused}"
    );

    let mut fixtures = Server::start(&ws, &["--conformance-fixtures"]);
    fixtures.initialize();
    let offered = names(&mut fixtures);
    assert!(
        offered.starts_with(&nodes),
        "the fixtures come after every node: {offered:?}"
    );
    let extra = &offered[nodes.len()..];
    assert!(
        ["test_simple_text", "json_schema_2020_12_tool"]
            .iter()
            .all(|f| extra.iter().any(|n| n == f)),
        "{extra:?}"
    );
    // A tool of the catalog with a fixture's name: refused at start, not shadowed.
    let out = serve_with_tools(
        &ws,
        r#"[{"type": "tools/workspace_git", "name": "test_simple_text"}]"#,
        &["--conformance-fixtures"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("fixture tool `test_simple_text` has the name of a tool"),
        "{err}"
    );

    fixtures.send(&simple_text);
    let answered = fixtures.answer(2);
    assert_eq!(
        answered["result"]["content"][0]["text"], "This is a simple text response for testing.",
        "{answered}"
    );
}

/// The official MCP Python SDK client, in each connection mode.
#[test]
fn the_official_python_client_lists_calls_approves_declines_and_cancels() {
    if !super::support::mcp_sdk_available() {
        return;
    }
    let script = repo_root().join("crates/cheng-cli/tests/mcp/client.py");
    let forbidden = forbidden_ports().to_string();
    for mode in ["legacy", "2026-07-28", "auto"] {
        let (_dir, ws) = temp_workspace();
        git(&ws, &["init", "-q", "."]);
        let out = super::support::run_sdk_script(
            Command::new("python3")
                .arg(&script)
                .arg(env!("CARGO_BIN_EXE_cheng"))
                .arg(&ws)
                .arg(mode)
                .arg(&forbidden)
                .env_remove("CHENG_ENABLE_CODE_PYTHON")
                .env_remove("CHENG_ENABLE_CODE_JS"),
            Duration::from_secs(300),
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains(&format!("ok {mode}")),
            "mode {mode}:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// One accepted approval runs one call: the official Python SDK client sends the same
/// `requestState` and `inputResponses` again (and to a restarted server), and `count.txt`
/// shows one run per approval.
#[test]
fn an_approval_runs_once_and_a_replay_says_why() {
    if !super::support::mcp_sdk_available() {
        return;
    }
    let script = repo_root().join("crates/cheng-cli/tests/mcp/replay.py");
    let (_dir, ws) = temp_workspace();
    let out = super::support::run_sdk_script(
        Command::new("python3")
            .arg(&script)
            .arg(env!("CARGO_BIN_EXE_cheng"))
            .arg(&ws),
        std::time::Duration::from_secs(120),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("ok replay"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let count = std::fs::read_to_string(ws.join("count.txt")).unwrap_or_default();
    assert_eq!(count.lines().count(), 2, "runs recorded: {count:?}");
}

/// `{tool name: [author and engine port names]}` for every tool the server offers, written here
/// from the node specs' documented audiences rather than read from the binary (`cheng nodes
/// --json`): a port that lost its marking would then vanish from both sides of the comparison.
/// The script fails on a tool missing from this list, so a new node's ports get stated here.
fn forbidden_ports() -> Value {
    json!({
        "apply_patch": ["sandbox_root", "read_tracking"],
        "code_js": [],
        // tools/code_python: the host list is the author's.
        "code_python": ["allowed_hosts"],
        // tools/code_shell: the host list is the author's (request_hosts is the agent's).
        "code_shell": ["allowed_hosts"],
        "delete_path": ["sandbox_root"],
        "edit_file": ["read_tracking", "sandbox_root"],
        "exec_command": ["sandbox_root", "sandbox", "allowed_hosts", "allow_shell_string", "command_whitelist"],
        "glob": ["read_roots", "sandbox_root"],
        "grep": ["read_roots", "sandbox_root"],
        "list_dir": ["read_roots", "sandbox_root"],
        "read_file": ["read_roots", "read_tracking", "sandbox_root"],
        "run_command": ["sandbox_root", "scope_policy"],
        "workspace_git": ["sandbox_root"],
        "workspace_markdown": ["sandbox_root"],
        "workspace_preview": ["sandbox_root"],
        "workspace_shell": ["sandbox_root", "allow_shell_string", "command_whitelist"],
        "workspace_tests": ["sandbox_root"],
        "write_file": ["read_tracking", "sandbox_root"],
        "write_stdin": [],
        // tools/skill and the notes tools: their directories and switch are the author's.
        "skill": ["skill_dirs"],
        "notes_list": ["notes_dir"],
        "notes_read": ["notes_dir"],
        "notes_write": ["notes_dir", "notes_write_sensitive"],
        // tools/web_fetch: the approval switch, the host list and the user agent are the author's.
        "web_fetch": ["sensitive", "allowed_hosts", "user_agent"],
    })
}
