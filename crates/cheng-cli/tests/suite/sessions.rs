//! Process sessions (`tools/exec_command`, `tools/write_stdin`): through the real
//! `cheng serve --stdio` with the official MCP Python SDK client (`tests/mcp/sessions.py`, one
//! check per test), in a graph run, and in a single `cheng run`.

use super::support::{
    cheng, repo_root, require_or_skip_that, run_node, send_signal, temp_workspace, write_graph,
};
use serde_json::{json, Value};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const EXEC: &str = "tools/exec_command";

fn sdk_available() -> bool {
    let curl = Command::new("curl")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    super::support::mcp_sdk_available() && require_or_skip_that("curl", curl)
}

/// Runs one check of `tests/mcp/sessions.py` against a fresh workspace (handshake-era approvals).
fn check(name: &str) {
    check_in(name, "legacy");
}

/// Runs one check in a connection mode (`legacy` or `2026-07-28`).
fn check_in(name: &str, mode: &str) {
    if !sdk_available() {
        return;
    }
    let (_dir, ws) = temp_workspace();
    let script = repo_root().join("crates/cheng-cli/tests/mcp/sessions.py");
    let out = super::support::run_sdk_script(
        Command::new("python3")
            .arg(&script)
            .arg(env!("CARGO_BIN_EXE_cheng"))
            .arg(&ws)
            .arg(name)
            .arg(mode)
            .env_remove("CHENG_ENABLE_CODE_PYTHON")
            .env_remove("CHENG_ENABLE_CODE_JS"),
        std::time::Duration::from_secs(180),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains(&format!("ok {name} ({mode})")),
        "check {name}:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_dev_server_is_reached_with_curl_in_the_same_connection_then_interrupted() {
    check("http_server");
}

#[test]
fn a_cat_session_echoes_each_write() {
    check("cat_session");
}

#[test]
fn a_cat_session_works_with_input_required_approvals() {
    // The 2026-07-28 era approves through input_required rounds, the card drawn before the call:
    // it still names the session's command.
    check_in("cat_session", "2026-07-28");
    check_in("cards", "2026-07-28");
}

#[test]
fn a_repl_keeps_its_state_over_several_writes() {
    check("repl");
}

#[test]
fn yield_time_is_clamped_to_250_to_30000_ms() {
    check("yield_clamping");
}

#[test]
fn an_empty_poll_waits_at_least_5_s_unless_output_arrives() {
    check("poll_floor");
}

#[test]
fn eviction_takes_ended_then_least_recent_and_spares_the_8_most_recent() {
    check("eviction");
}

#[test]
fn sessions_die_when_the_client_disconnects_even_what_left_the_group() {
    check("killed_on_exit");
}

#[test]
fn sessions_die_when_the_server_is_killed() {
    check("killed_on_server_kill");
}

#[test]
fn a_flooding_session_stays_bounded() {
    check("flood");
}

#[test]
fn every_start_has_its_approval_card() {
    check("cards");
}

/// Pids of live processes whose argv is exactly `argv`.
fn processes(argv: &[&str]) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        if stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z'))
        {
            continue;
        }
        let got: Vec<&[u8]> = cmdline
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .collect();
        if got.len() == argv.len() && got.iter().zip(argv).all(|(g, w)| g.ends_with(w.as_bytes())) {
            found.push(pid);
        }
    }
    found
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if done() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{what} did not happen within 10 s");
}

#[test]
fn a_single_run_waits_for_the_exit_and_says_so() {
    let (_d, ws) = temp_workspace();
    let (code, out, _) = run_node(
        EXEC,
        &ws,
        &json!({"command": "sh", "args": ["-c", "read x; echo got:$x; exit 4"]}),
        &["--approve"],
    );
    assert_eq!(code, 1, "{out}");
    // stdin was closed (no writer can come), so `read` saw end of file instead of hanging.
    assert_eq!(out["output"], "got:\n", "{out}");
    assert_eq!(out["exit_code"], 4);
    assert_eq!(out["running"], false);
    assert_eq!(out["session_id"], Value::Null);
    assert!(
        out["summary"]
            .as_str()
            .unwrap_or("")
            .contains("keeps no sessions"),
        "{out}"
    );
    // Its lifetime bound applies: exit code 124, the reference page's timeout code.
    let (_, out, _) = run_node(
        EXEC,
        &ws,
        &json!({"command": "sleep", "args": ["30"], "max_session_ms": 200}),
        &["--approve"],
    );
    assert_eq!(out["termination"], "timed_out", "{out}");
    assert_eq!(out["exit_code"], 124);
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_TIMED_OUT");
}

#[test]
fn a_graph_run_keeps_sessions_for_its_duration_only() {
    let (_d, ws) = temp_workspace();
    let secs = format!("1003.{}", std::process::id());
    let graph = write_graph(
        &ws,
        &json!({"version": 1, "nodes": [
            {"id": "cat", "type": EXEC, "inputs": {"command": "cat", "yield_time_ms": 250}},
            {"id": "sleep", "type": EXEC, "inputs": {"command": "sleep", "args": [secs], "yield_time_ms": 250}},
            {"id": "write", "type": "tools/write_stdin", "inputs": {"chars": "ping\n", "yield_time_ms": 500}}],
            "edges": [{"from": "cat.session_id", "to": "write.session_id"}, {"from": "sleep.summary", "to": "write.purpose"}]}),
    );
    let out = cheng()
        .args([
            "graph",
            "run",
            &graph,
            "--workspace",
            ws.to_str().unwrap_or(""),
            "--approve",
        ])
        .output()
        .expect("cheng runs");
    let result: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert_eq!(
        result["status"],
        "succeeded",
        "{result}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        result["nodes"]["cat"]["outputs"]["running"], true,
        "{result}"
    );
    assert_eq!(
        result["nodes"]["write"]["outputs"]["output"], "ping\n",
        "{result}"
    );
    // The run is over: its sessions are gone with it.
    wait_for("the graph's sleep session to die", || {
        processes(&["sleep", &secs]).is_empty()
    });
}

#[test]
fn ctrl_c_of_a_graph_run_kills_its_sessions() {
    let (_d, ws) = temp_workspace();
    let session = format!("1004.{}", std::process::id());
    let blocker = format!("1005.{}", std::process::id());
    let graph = write_graph(
        &ws,
        &json!({"version": 1, "nodes": [
            {"id": "session", "type": EXEC, "inputs": {"command": "sleep", "args": [session], "yield_time_ms": 250}},
            {"id": "block", "type": "tools/workspace_shell", "inputs": {"command": "sleep", "args": [blocker]}}],
            "edges": [{"from": "session.summary", "to": "block.purpose"}]}),
    );
    let child = cheng()
        .args([
            "graph",
            "run",
            &graph,
            "--workspace",
            ws.to_str().unwrap_or(""),
            "--approve",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn cheng");
    wait_for("the blocking node to start", || {
        !processes(&["sleep", &blocker]).is_empty()
    });
    assert_eq!(
        processes(&["sleep", &session]).len(),
        1,
        "the session is running while the graph runs"
    );
    assert!(send_signal(child.id(), "INT"));
    let out = child.wait_with_output().expect("cheng exits");
    assert_eq!(out.status.code(), Some(130));
    wait_for("the session to die after Ctrl-C", || {
        processes(&["sleep", &session]).is_empty()
    });
}

/// A workspace the sandbox user may enter without an idmapped mount.
fn listable_workspace() -> (tempfile::TempDir, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let (dir, ws) = temp_workspace();
    std::fs::set_permissions(&ws, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    (dir, ws)
}

#[test]
fn the_sandbox_switch_runs_the_session_in_bubblewrap() {
    if !super::support::bwrap_works() {
        return;
    }
    // A workspace others may enter, and a private one (as root the sandbox user sees it through
    // an idmapped mount, made from a thread of its own before the session starts).
    for (_d, ws) in [listable_workspace(), temp_workspace()] {
        std::fs::write(ws.join("seen.txt"), "inside\n").expect("write");
        let config = json!({"sandbox": true}).to_string();
        // The attack: write into the workspace from the session.
        let input =
            json!({"command": "sh", "args": ["-c", "cat seen.txt; touch made.txt; echo write=$?"]})
                .to_string();
        let out = cheng()
            .args([
                "run",
                EXEC,
                "--workspace",
                ws.to_str().unwrap_or(""),
                "--approve",
                "--config",
                &config,
                "--input",
                &input,
            ])
            .output()
            .expect("cheng runs");
        let result: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        assert_eq!(result["sandboxed"], true, "{result}");
        let output = result["output"].as_str().unwrap_or("");
        assert!(output.starts_with("inside\n"), "{result}");
        assert!(
            output.contains("write=1"),
            "the sandboxed session could write the workspace: {result}"
        );
        assert!(
            !ws.join("made.txt").exists(),
            "the session wrote the workspace"
        );
        // Without the switch the same command writes (the sandbox made the difference).
        let (_, result, _) = run_node(
            EXEC,
            &ws,
            &json!({"command": "touch", "args": ["made.txt"]}),
            &["--approve"],
        );
        assert_eq!(result["sandboxed"], false);
        assert!(ws.join("made.txt").exists(), "{result}");
    }
}

#[test]
fn a_sandboxed_session_fails_closed_without_bubblewrap() {
    let (_d, ws) = listable_workspace();
    let config = json!({"sandbox": true}).to_string();
    let input = json!({"command": "touch", "args": ["ran.txt"]}).to_string();
    let out = cheng()
        .env("CHENG_BWRAP", "/nonexistent/bwrap")
        .args([
            "run",
            EXEC,
            "--workspace",
            ws.to_str().unwrap_or(""),
            "--approve",
            "--config",
            &config,
            "--input",
            &input,
        ])
        .output()
        .expect("cheng runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_ne!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("LOCAL_EXECUTOR_SANDBOX_UNAVAILABLE")
            && stdout.contains("/nonexistent/bwrap"),
        "{stdout}"
    );
    assert!(!ws.join("ran.txt").exists(), "the command ran on the host");
}

#[test]
fn a_sandboxed_session_keeps_running_and_takes_writes_in_a_graph() {
    if !super::support::bwrap_works() {
        return;
    }
    let (_d, ws) = listable_workspace();
    let graph = write_graph(
        &ws,
        &json!({"version": 1, "nodes": [
            {"id": "sh", "type": EXEC, "config": {"sandbox": true}, "inputs": {"command": "sh", "yield_time_ms": 250}},
            {"id": "write", "type": "tools/write_stdin", "inputs": {"chars": "touch made.txt; echo write=$?\n", "yield_time_ms": 1000}}],
            "edges": [{"from": "sh.session_id", "to": "write.session_id"}]}),
    );
    let out = cheng()
        .args([
            "graph",
            "run",
            &graph,
            "--workspace",
            ws.to_str().unwrap_or(""),
            "--approve",
        ])
        .output()
        .expect("cheng runs");
    let result: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert_eq!(
        result["nodes"]["sh"]["outputs"]["running"],
        true,
        "{result}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        result["nodes"]["sh"]["outputs"]["sandboxed"], true,
        "{result}"
    );
    let output = result["nodes"]["write"]["outputs"]["output"]
        .as_str()
        .unwrap_or("");
    assert!(output.contains("write=1"), "{result}");
    assert!(
        !ws.join("made.txt").exists(),
        "the sandboxed session wrote the workspace"
    );
}

#[test]
fn a_session_start_obeys_workspace_shells_command_policy() {
    let (d, ws) = temp_workspace();
    // The operator allows raw shell for exec_command only when this file is given.
    let policy = d.path().join("policy.toml");
    std::fs::write(
        &policy,
        "[nodes.\"tools/exec_command\"]\nshell_syntax = true\n",
    )
    .expect("write policy");
    let run = |input: Value, config: Value| {
        let mut cmd = cheng();
        if config["allow_shell_string"] == true {
            cmd.arg("--policy").arg(&policy);
        }
        let out = cmd
            .args([
                "run",
                EXEC,
                "--workspace",
                ws.to_str().unwrap_or(""),
                "--approve",
            ])
            .args([
                "--config",
                &config.to_string(),
                "--input",
                &input.to_string(),
            ])
            .output()
            .expect("cheng runs");
        serde_json::from_slice::<Value>(&out.stdout).unwrap_or(Value::Null)
    };
    // Shell syntax without the author's allow_shell_string: denied, nothing ran.
    let out = run(json!({"cmd": "touch a; touch b"}), json!({}));
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_POLICY_DENIED", "{out}");
    assert!(
        out["error"]
            .as_str()
            .unwrap_or("")
            .contains("cmd uses shell syntax"),
        "{out}"
    );
    assert!(!ws.join("a").exists() && !ws.join("b").exists());
    // With it (and the operator's shell_syntax), the same string runs under sh.
    let out = run(
        json!({"cmd": "touch a; touch b"}),
        json!({"allow_shell_string": true}),
    );
    assert_eq!(out["exit_code"], 0, "{out}");
    assert!(ws.join("a").exists() && ws.join("b").exists());
    // A whitelist allows only its programs.
    let out = run(
        json!({"command": "touch", "args": ["c"]}),
        json!({"command_whitelist": "cat"}),
    );
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_POLICY_DENIED", "{out}");
    assert!(!ws.join("c").exists());
    // Loader hooks and names off the baseline are refused; the working directory stays inside.
    let out = run(
        json!({"command": "true", "env": {"LD_PRELOAD": "/tmp/x.so"}}),
        json!({}),
    );
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_INVALID_INPUT", "{out}");
    let out = run(
        json!({"command": "true", "env": {"SECRET_TOKEN": "x"}}),
        json!({}),
    );
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_INVALID_INPUT", "{out}");
    let out = run(json!({"command": "true", "workdir": ".."}), json!({}));
    assert_eq!(
        out["error_kind"], "LOCAL_EXECUTOR_PATH_OUTSIDE_WORKSPACE",
        "{out}"
    );
    // The fixed session environment is in place; an allowed variable is added.
    let out = run(
        json!({"command": "sh", "args": ["-c", "echo $TERM $NO_COLOR $PAGER $TZ"], "env": {"TZ": "UTC"}}),
        json!({}),
    );
    assert_eq!(out["output"], "dumb 1 cat UTC\n", "{out}");
}
