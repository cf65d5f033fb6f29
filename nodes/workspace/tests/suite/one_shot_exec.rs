//! The one-shot `exec` of ChengOS's agent-tools reference (Codex CLI's exec semantics) is
//! tools/workspace_shell: each row of the mapping in docs/guides/one_shot_exec.md, shown on a
//! real process.

use cheng_node::{Decision, Node, RunContext, Values};
use cheng_nodes_workspace::WorkspaceShell;
use serde_json::{json, Value};

fn run_input(root: &std::path::Path, given: Value) -> Values {
    let mut values = Values::new();
    for port in WorkspaceShell.spec().inputs {
        values.insert(
            port.name.into(),
            port.default_value().unwrap_or(Value::Null),
        );
    }
    if let Value::Object(given) = given {
        values.extend(given);
    }
    values.insert("sandbox_root".into(), json!(root.to_str().unwrap()));
    values
}

/// Runs `script` under `sh -c` (the author's switch on, as exec runs a shell command line).
async fn exec(script: &str, extra: Value) -> Values {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let ctx = RunContext::for_workspace(WorkspaceShell.spec().id, root.clone(), Decision::Approved);
    let mut given = json!({"shell_string": script, "allow_shell_string": true});
    if let (Some(given), Value::Object(extra)) = (given.as_object_mut(), extra) {
        given.extend(extra);
    }
    WorkspaceShell
        .run(&ctx, run_input(&root, given))
        .await
        .unwrap()
}

#[test]
fn exec_s_default_limit_is_an_authors_config_away() {
    // exec: 10 s unless the call says otherwise. workspace_shell: 60 s by default; an author who
    // wants exec's default sets timeout_ms 10000 in the node's config (the engine applies config
    // before the spec default, and the agent's input before both).
    let port = WorkspaceShell.spec().input("timeout_ms").unwrap();
    assert_eq!(port.default_value(), Some(json!(60_000)));
    assert!(port.min.unwrap() <= 10_000 && port.max.unwrap() >= 10_000);
}

#[tokio::test]
async fn a_timeout_is_exec_s_124_as_termination_timed_out() {
    let out = exec("echo before; sleep 100", json!({"timeout_ms": 300})).await;
    assert_eq!(out["termination"], "timed_out");
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_TIMED_OUT");
    assert_eq!(
        out["exit_code"],
        Value::Null,
        "no 124: the reason is its own field"
    );
    assert_eq!(
        out["stdout"], "before\n",
        "what came before the kill is kept"
    );
}

#[tokio::test]
async fn a_signal_is_exec_s_128_plus_n_as_termination_signalled() {
    let out = exec("kill -KILL $$", json!({})).await;
    assert_eq!(out["termination"], "signalled");
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_SIGNALLED");
    assert_eq!(out["exit_code"], Value::Null);
    let error = out["error"].as_str().unwrap();
    assert!(error.contains("SIGKILL (9)"), "{error}");
}

#[tokio::test]
async fn output_written_after_the_kill_signal_is_still_drained() {
    // exec drains output for up to 2 s after a kill. workspace_shell sends SIGTERM, waits up to
    // 500 ms for the group to go, then SIGKILL; output until the pipes close is read, and 200 ms
    // beyond for anything outside the group (the reaper kills that too).
    let out = exec(
        "trap 'echo got TERM; exit 0' TERM; echo started; sleep 100 & wait",
        json!({"timeout_ms": 500}),
    )
    .await;
    assert_eq!(out["termination"], "timed_out");
    assert_eq!(out["stdout"], "started\ngot TERM\n");
}
