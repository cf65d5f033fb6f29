//! A person at a terminal: a closed pipe, Ctrl-C and the other answers at the approval prompt,
//! prompting on /dev/tty, graph order, messages that read right.
use super::support::*;
use super::tty::{cheng_line, Session};

use serde_json::json;
use std::process::Stdio;

const SHELL: &str = "tools/workspace_shell";

/// Runs cheng with stdout (and, with `close_stderr`, stderr) a pipe whose reader is already
/// gone, as `cheng … | head -c 0` leaves it; returns the exit status and stderr.
fn closed_pipe(args: &[&str], close_stderr: bool) -> (i32, String) {
    let mut cmd = cheng();
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn cheng");
    drop(child.stdout.take());
    if close_stderr {
        drop(child.stderr.take());
    }
    let out = child.wait_with_output().expect("cheng exits");
    (out.status.code().unwrap_or(-1), text(&out.stderr))
}

#[test]
fn a_closed_stdout_ends_quietly_without_a_panic() {
    // The reader is gone before the first byte, so every write fails with EPIPE: a plain
    // `println!` panics there ("failed printing to stdout"), exiting 101.
    let (_d, ws) = temp_workspace();
    let ws = ws.to_str().unwrap();
    let input = json!({"command": "seq", "args": ["1", "20000"]}).to_string();
    for args in [
        vec!["nodes"],
        vec!["nodes", "--json"],
        vec!["describe", SHELL],
        vec![
            "run",
            SHELL,
            "--workspace",
            ws,
            "--input",
            &input,
            "--approve",
        ],
    ] {
        let (code, stderr) = closed_pipe(&args, false);
        assert_eq!(code, 0, "{args:?}: {stderr}");
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn closed_stdout_and_stderr_with_events_end_quietly() {
    let (_d, ws) = temp_workspace();
    let input = json!({"command": "true"}).to_string();
    let args = [
        "run",
        SHELL,
        "--workspace",
        ws.to_str().unwrap(),
        "--input",
        &input,
        "--approve",
        "--events",
        "jsonl",
    ];
    let (code, _) = closed_pipe(&args, true);
    assert_eq!(code, 0, "a panic exits 101");
    // And with the events alone going nowhere, the run says nothing about them.
    let (code, stderr) = closed_pipe(&args, false);
    assert_eq!(code, 0);
    assert!(!stderr.contains("panicked"), "{stderr}");
}

fn shell_line(ws: &std::path::Path, input: &serde_json::Value, extra: &[&str]) -> String {
    let input = input.to_string();
    let mut args = vec![
        "run",
        SHELL,
        "--workspace",
        ws.to_str().unwrap(),
        "--input",
        &input,
    ];
    args.extend_from_slice(extra);
    cheng_line(&args)
}

#[test]
fn ctrl_c_at_the_prompt_cancels_at_once_with_130() {
    let (_d, ws) = temp_workspace();
    let line = shell_line(&ws, &json!({"command": "touch", "args": ["never"]}), &[]);
    let Some(mut tty) = Session::start(&line) else {
        return;
    };
    tty.wait_for("Approve?", 1);
    // Ctrl-C, and nothing else: no Enter, no end of input. The prompt must give way by itself.
    tty.type_keys("\u{3}");
    let (code, screen) = tty.finish();
    assert_eq!(code, 130, "{screen}");
    assert!(screen.contains("LOCAL_EXECUTOR_CANCELLED"), "{screen}");
    assert!(!screen.contains("APPROVAL_DENIED"), "{screen}");
    assert!(!ws.join("never").exists());
}

#[test]
fn q_at_the_prompt_cancels_the_run() {
    let (_d, ws) = temp_workspace();
    let line = shell_line(&ws, &json!({"command": "touch", "args": ["never"]}), &[]);
    let Some(mut tty) = Session::start(&line) else {
        return;
    };
    tty.wait_for("Approve?", 1);
    tty.type_keys("q\n");
    let (code, screen) = tty.finish();
    assert_eq!(code, 130, "{screen}");
    assert!(screen.contains("LOCAL_EXECUTOR_CANCELLED"), "{screen}");
    assert!(!ws.join("never").exists());
}

#[test]
fn an_unclear_answer_is_asked_again() {
    let (_d, ws) = temp_workspace();
    let line = shell_line(&ws, &json!({"command": "touch", "args": ["made"]}), &[]);
    let Some(mut tty) = Session::start(&line) else {
        return;
    };
    tty.wait_for("Approve?", 1);
    tty.type_keys("maybe\n");
    tty.wait_for("Please answer y, n, a or q", 1);
    tty.type_keys("y\n");
    let (code, screen) = tty.finish();
    assert_eq!(code, 0, "{screen}");
    assert!(ws.join("made").exists());
}

#[test]
fn with_stdin_a_pipe_the_prompt_asks_on_the_terminal() {
    let (_d, ws) = temp_workspace();
    // stdin is /dev/null, as in `cat input.json | cheng run …`: the old prompt denied at once
    // ("no terminal to ask on"); sudo, ssh and git ask on /dev/tty instead, and so does cheng.
    let line = format!(
        "{} </dev/null",
        shell_line(&ws, &json!({"command": "touch", "args": ["asked"]}), &[])
    );
    let Some(mut tty) = Session::start(&line) else {
        return;
    };
    tty.wait_for("Approve?", 1);
    tty.type_keys("y\n");
    let (code, screen) = tty.finish();
    assert_eq!(code, 0, "{screen}");
    assert!(ws.join("asked").exists(), "{screen}");
}

fn three_touches(ws: &std::path::Path) -> String {
    // Listed zeta, alpha, mid: neither alphabetical nor reverse.
    let graph = json!({"version": 1, "nodes": [
        {"id": "zeta", "type": SHELL, "inputs": {"command": "touch", "args": ["zeta"]}},
        {"id": "alpha", "type": SHELL, "inputs": {"command": "touch", "args": ["alpha"]}},
        {"id": "mid", "type": SHELL, "inputs": {"command": "touch", "args": ["mid"]}}]});
    let path = ws.join("graph.json");
    std::fs::write(&path, graph.to_string()).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn graph_requests_are_asked_in_graph_order_and_a_approves_the_rest() {
    let (_d, ws) = temp_workspace();
    let graph = three_touches(&ws);
    let line = cheng_line(&[
        "graph",
        "run",
        &graph,
        "--workspace",
        ws.to_str().unwrap(),
        "--jobs",
        "3",
    ]);
    let Some(mut tty) = Session::start(&line) else {
        return;
    };
    tty.wait_for("Approve?", 1);
    assert!(
        tty.screen().contains("node:     zeta ("),
        "{}",
        tty.screen()
    );
    tty.type_keys("n\n");
    tty.wait_for("Approve?", 2);
    assert!(
        tty.screen().contains("node:     alpha ("),
        "{}",
        tty.screen()
    );
    tty.type_keys("a\n");
    let (code, screen) = tty.finish();
    assert_eq!(
        screen.matches("Approve?").count(),
        2,
        "mid was approved by the `a`: {screen}"
    );
    assert_eq!(code, 1, "zeta was denied: {screen}");
    assert!(
        !ws.join("zeta").exists() && ws.join("alpha").exists() && ws.join("mid").exists(),
        "{screen}"
    );
}

#[test]
fn quiet_silences_the_approved_lines() {
    let (_d, ws) = temp_workspace();
    let input = json!({"command": "true"});
    let (code, _, stderr) = run_node(SHELL, &ws, &input, &["--approve"]);
    assert_eq!(code, 0);
    assert!(stderr.contains("approved (--approve)"), "{stderr}");
    let (code, _, stderr) = run_node(SHELL, &ws, &input, &["--approve", "--quiet"]);
    assert_eq!(code, 0);
    assert_eq!(stderr, "");
}

#[test]
fn a_denied_run_names_its_type_once() {
    let (_d, ws) = temp_workspace();
    let (code, out, stderr) = run_node(SHELL, &ws, &json!({"command": "true"}), &["--deny"]);
    assert_eq!(code, 1);
    let error = out["error"].as_str().unwrap();
    assert_eq!(error.matches(SHELL).count(), 1, "{error}");
    assert_eq!(stderr.matches(SHELL).count(), 1, "{stderr}");
}

#[test]
fn counts_of_one_are_singular() {
    if !require_or_skip("git") {
        return;
    }
    let (_d, ws) = temp_workspace();
    git(&ws, &["init", "-q"]);
    std::fs::write(ws.join("a.txt"), "a\n").unwrap();
    git(&ws, &["add", "a.txt"]);
    git(&ws, &["commit", "-qm", "one"]);
    std::fs::write(ws.join("a.txt"), "b\n").unwrap();
    let (_, out, _) = run_node(
        "tools/workspace_git",
        &ws,
        &json!({"operation": "status"}),
        &[],
    );
    let summary = out["summary"].as_str().unwrap();
    assert!(summary.contains(": 1 changed path —"), "{summary}");
    let (_, out, _) = run_node(
        "tools/workspace_git",
        &ws,
        &json!({"operation": "branch"}),
        &[],
    );
    let summary = out["summary"].as_str().unwrap();
    assert!(summary.starts_with("1 local branch;"), "{summary}");
    let (_, out, _) = run_node(
        "tools/workspace_git",
        &ws,
        &json!({"operation": "diff"}),
        &[],
    );
    let summary = out["summary"].as_str().unwrap();
    assert!(summary.starts_with("1 file changed"), "{summary}");
    let (_, out, _) = run_node(
        "tools/workspace_git",
        &ws,
        &json!({"operation": "show", "revision": "HEAD"}),
        &[],
    );
    let summary = out["summary"].as_str().unwrap();
    assert!(summary.ends_with("1 file changed"), "{summary}");
    std::fs::write(ws.join("Cargo.toml"), "[package]\nname = \"x\"\n").unwrap();
    let (_, out, _) = run_node(
        "tools/workspace_tests",
        &ws,
        &json!({"operation": "detect"}),
        &[],
    );
    let summary = out["summary"].as_str().unwrap();
    assert!(summary.starts_with("1 project under"), "{summary}");
    let (_, out, _) = run_node(
        "tools/workspace_preview",
        &ws,
        &json!({"operation": "artifact_summary", "path": "a.txt"}),
        &[],
    );
    let summary = out["summary"].as_str().unwrap();
    assert!(summary.ends_with(", 1 line"), "{summary}");
    let graph = ws.join("g.json");
    std::fs::write(
        &graph,
        json!({"version": 1, "nodes": [{"id": "a", "type": SHELL, "inputs": {"command": "true"}}]})
            .to_string(),
    )
    .unwrap();
    let out = run_cheng(&["graph", "check", graph.to_str().unwrap()]);
    assert!(
        text(&out.stdout).contains("1 node, 0 edges"),
        "{}",
        text(&out.stdout)
    );
}
