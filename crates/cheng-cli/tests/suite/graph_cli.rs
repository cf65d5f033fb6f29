//! `cheng graph run` and `cheng run` as a whole: the quickstart graph, events as JSON lines,
//! exit codes and skipped dependents, `after` ordering, and Ctrl-C cancelling runs and graphs
//! with everything they started.
use super::support::*;

use serde_json::{json, Value};
use std::process::Stdio;
use std::time::Duration;

const SHELL: &str = "tools/workspace_shell";

#[test]
fn quickstart_graph_succeeds() {
    let graph = fixtures().join("graphs/quickstart.json");
    let ws = fixtures().join("workspaces/hello");
    let (_d, scratch) = temp_workspace();
    let events = scratch.join("events.jsonl");
    let out = run_cheng(&[
        "graph",
        "run",
        graph.to_str().unwrap(),
        "--workspace",
        ws.to_str().unwrap(),
        "--approve",
        "--events",
        events.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let result: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(result["status"], "succeeded");
    let readme = &result["nodes"]["readme"];
    assert_eq!(readme["status"], "succeeded");
    assert!(readme["outputs"]["stdout"]
        .as_str()
        .unwrap()
        .starts_with("# hello"));
    let lines: Vec<Value> = std::fs::read_to_string(&events)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let names: Vec<&str> = lines.iter().map(|l| l["event"].as_str().unwrap()).collect();
    for name in [
        "node_started",
        "approval_requested",
        "approval_decided",
        "node_finished",
        "graph_finished",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    for line in &lines {
        let ts = line["ts"]
            .as_str()
            .unwrap_or_else(|| panic!("no ts: {line}"));
        assert!(ts.ends_with('Z') && ts.len() >= 20, "{ts}");
        if ["approval_decided", "node_finished", "graph_finished"]
            .contains(&line["event"].as_str().unwrap())
        {
            assert!(line["duration_ms"].is_u64(), "no duration: {line}");
        }
    }
    // The edge carried list.summary into readme's purpose, shown on the approval card.
    let card = lines
        .iter()
        .find(|l| l["event"] == "approval_requested" && l["node"] == "readme")
        .unwrap();
    assert!(
        card["request"]["purpose"]
            .as_str()
            .unwrap()
            .contains("ls -l"),
        "{card}"
    );
    let out = run_cheng(&["graph", "check", graph.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn events_jsonl_streams_json_lines_to_stderr() {
    let graph = fixtures().join("graphs/quickstart.json");
    let ws = fixtures().join("workspaces/hello");
    let (_d, cwd) = temp_workspace();
    let out = cheng()
        .current_dir(&cwd)
        .args([
            "graph",
            "run",
            graph.to_str().unwrap(),
            "--workspace",
            ws.to_str().unwrap(),
            "--approve",
            "--events",
            "jsonl",
        ])
        .output()
        .expect("cheng runs");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        !cwd.join("jsonl").exists(),
        "`--events jsonl` names the format, not a file"
    );
    // Event lines are the ones starting with `{`; the rest are `cheng:` messages.
    let events: Vec<Value> = stderr
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).expect(l))
        .collect();
    assert!(
        stderr
            .lines()
            .all(|l| l.starts_with('{') || l.starts_with("cheng: ")),
        "{stderr}"
    );
    let names: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    for name in [
        "node_started",
        "approval_requested",
        "approval_decided",
        "node_finished",
        "graph_finished",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    assert_eq!(names.last(), Some(&"graph_finished"));
}

#[test]
fn graph_run_exit_codes_and_skipped_dependents() {
    let (_d, ws) = temp_workspace();
    let failing = write_graph(
        &ws,
        &json!({"version": 1, "nodes": [
            {"id": "bad", "type": SHELL, "inputs": {"command": "false"}},
            {"id": "after", "type": SHELL, "inputs": {"command": "true"}}],
            "edges": [{"from": "bad.summary", "to": "after.purpose"}]}),
    );
    let out = run_cheng(&[
        "graph",
        "run",
        &failing,
        "--workspace",
        ws.to_str().unwrap(),
        "--approve",
        "--jobs",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["nodes"]["bad"]["status"], "failed");
    assert_eq!(result["nodes"]["after"]["status"], "skipped");
    assert!(result["nodes"]["after"]["reason"]
        .as_str()
        .unwrap()
        .contains("`bad`"));

    let invalid = write_graph(
        &ws,
        &json!({"version": 1, "nodes": [
            {"id": "a", "type": SHELL, "inputs": {"timeout_ms": 700000, "allow_shell_string": true}},
            {"id": "b", "type": SHELL}],
            "edges": [{"from": "a.summary", "to": "b.purpose"}, {"from": "b.summary", "to": "a.purpose"}]}),
    );
    for sub in ["run", "check"] {
        let mut args = vec!["graph", sub, invalid.as_str()];
        if sub == "run" {
            args.extend(["--workspace", ws.to_str().unwrap()]);
        }
        let out = run_cheng(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{sub}: {stderr}");
        assert!(stderr.contains("node `a`, port `timeout_ms`"), "{stderr}");
        assert!(stderr.contains("maximum 600000"), "{stderr}");
        assert!(
            stderr.contains("allow_shell_string is author-only; set it in the node's config"),
            "{stderr}"
        );
        assert!(
            stderr.contains("a → b → a") || stderr.contains("b → a → b"),
            "{stderr}"
        );
    }
    let v2 = write_graph(&ws, &json!({"version": 2, "nodes": []}));
    let out = run_cheng(&["graph", "check", &v2]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("version 1"));
}

/// Pids of processes whose command line is exactly `argv`.
fn processes_with_cmdline(argv: &[&str]) -> Vec<u32> {
    let wanted: Vec<u8> = argv.iter().flat_map(|a| a.bytes().chain([0])).collect();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()))
        .filter(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == wanted))
        .collect()
}

fn wait_for(what: &str, ready: impl FnMut() -> bool) {
    assert!(
        eventually(Duration::from_secs(20), ready),
        "timed out waiting for {what}"
    );
}

/// Starts `cheng args...`, waits for the `sleep <secs>` it runs, sends SIGINT; returns the exit
/// code and stdout, after checking the sleep is gone.
fn interrupt(args: &[&str], secs: &str) -> (i32, Value) {
    let child = cheng()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn cheng");
    let argv = ["sleep", secs];
    wait_for("the sleep to start", || {
        !processes_with_cmdline(&argv).is_empty()
    });
    assert!(send_signal(child.id(), "INT"), "kill -INT {}", child.id());
    let out = child.wait_with_output().expect("cheng exits");
    wait_for("the sleep to die", || {
        processes_with_cmdline(&argv).is_empty()
    });
    (
        out.status.code().unwrap_or(-1),
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null),
    )
}

#[test]
fn ctrl_c_cancels_run_kills_children_and_exits_130() {
    let (_d, ws) = temp_workspace();
    // A distinctive duration so that only our sleep matches.
    let secs = format!("1000.{}", std::process::id());
    let input = json!({"command": "sleep", "args": [secs]}).to_string();
    let (code, out) = interrupt(
        &[
            "run",
            SHELL,
            "--workspace",
            ws.to_str().unwrap(),
            "--input",
            &input,
            "--approve",
        ],
        &secs,
    );
    assert_eq!(code, 130, "{out}");
    assert_eq!(out["termination"], "cancelled", "{out}");
    assert_eq!(out["success"], false);
}

#[test]
fn ctrl_c_kills_grandchildren_too() {
    let (_d, ws) = temp_workspace();
    let secs = format!("1002.{}", std::process::id());
    // The sleep is sh's child, cheng's grandchild: only a process-group kill reaches it.
    let script = format!("sleep {secs} & wait");
    let input = json!({"command": "sh", "args": ["-c", script]}).to_string();
    let (code, out) = interrupt(
        &[
            "run",
            SHELL,
            "--workspace",
            ws.to_str().unwrap(),
            "--input",
            &input,
            "--approve",
        ],
        &secs,
    );
    assert_eq!(code, 130, "{out}");
    assert_eq!(out["termination"], "cancelled", "{out}");
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_CANCELLED");
    assert_eq!(out["terminal"], true);
    wait_for("the shell to die", || {
        processes_with_cmdline(&["sh", "-c", &script]).is_empty()
    });
}

#[test]
fn ctrl_c_cancels_a_graph_and_exits_130() {
    let (_d, ws) = temp_workspace();
    let secs = format!("1001.{}", std::process::id());
    let graph = write_graph(
        &ws,
        &json!({"version": 1, "nodes": [
            {"id": "sleep", "type": SHELL, "inputs": {"command": "sleep", "args": [secs]}},
            {"id": "after", "type": SHELL, "inputs": {"command": "true"}}],
            "edges": [{"from": "sleep.summary", "to": "after.purpose"}]}),
    );
    let (code, out) = interrupt(
        &[
            "graph",
            "run",
            &graph,
            "--workspace",
            ws.to_str().unwrap(),
            "--approve",
        ],
        &secs,
    );
    assert_eq!(code, 130, "{out}");
    assert_eq!(out["status"], "cancelled");
    assert_eq!(out["nodes"]["sleep"]["status"], "cancelled");
    assert_eq!(out["nodes"]["sleep"]["outputs"]["termination"], "cancelled");
    assert_eq!(out["nodes"]["after"]["status"], "cancelled");
}

/// `"after"` sequences two nodes without a port: the second sees what the first left behind, and
/// a failure skips it; `graph check` counts the dependency; the published schema accepts it.
#[test]
fn after_sequences_nodes_without_a_port() {
    let (_d, ws) = temp_workspace();
    let graph = json!({"version": 1, "nodes": [
        {"id": "read", "type": SHELL, "inputs": {"command": "cat", "args": ["made.txt"]}, "after": ["make"]},
        {"id": "make", "type": SHELL, "inputs": {"command": "touch", "args": ["made.txt"]}}]});
    let file = write_graph(&ws, &graph);
    let out = run_cheng(&["graph", "check", &file]);
    assert!(
        text(&out.stdout).contains("1 `after` dependency"),
        "{}",
        text(&out.stdout)
    );
    let out = run_cheng(&[
        "graph",
        "run",
        &file,
        "--workspace",
        ws.to_str().unwrap(),
        "--approve",
        "-q",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["nodes"]["read"]["status"], "succeeded", "{result}");
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("schemas/graph.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(
        validator.is_valid(&graph),
        "schemas/graph.json refuses `after`"
    );
}
