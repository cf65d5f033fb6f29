//! tools/run_command through its public face with real processes: sh -c, each output level on
//! real output over its budgets, exit codes, timeout, cancellation, stdin, working_dir scopes.
//! The cuts at every budget edge are shape.rs's unit tests; the operator's rule when it is off,
//! the timeout's config layer and the card are the CLI suite's (suite/run_command.rs).

use cheng_node::policy::Policy;
use cheng_node::{Decision, ErrorKind, Node, NodeError, RunContext, Values};
use cheng_nodes_workspace::run_command::{MAX_STDERR_ALL, MAX_STDOUT_ALL, MAX_STDOUT_INFO};
use cheng_nodes_workspace::RunCommand;
use serde_json::{json, Value};
use std::path::PathBuf;

/// The operator of these runs allows raw shell for run_command (and nothing else).
fn allow_shell() -> std::sync::Arc<Policy> {
    let policy = Policy::from_toml_str(
        "[nodes.\"tools/run_command\"]\nshell_syntax = true\n",
        "/test/policy.toml",
    )
    .unwrap();
    std::sync::Arc::new(policy)
}

struct Ws {
    _dir: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
}

fn workspace() -> Ws {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("ws");
    let outside = base.join("elsewhere");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    Ws {
        _dir: dir,
        root,
        outside,
    }
}

fn ctx(ws: &Ws) -> RunContext {
    RunContext::for_workspace(RunCommand.spec().id, ws.root.clone(), Decision::Approved)
        .under(allow_shell())
}

/// The engine's view of an input: spec defaults, then `given`.
fn input(given: Value) -> Values {
    let mut values = Values::new();
    for port in RunCommand.spec().inputs {
        values.insert(
            port.name.into(),
            port.default_value().unwrap_or(Value::Null),
        );
    }
    if let Value::Object(given) = given {
        values.extend(given);
    }
    values
}

async fn run(ws: &Ws, given: Value) -> Result<Values, NodeError> {
    RunCommand.run(&ctx(ws), input(given)).await
}

async fn ok(ws: &Ws, given: Value) -> Values {
    match run(ws, given.clone()).await {
        Ok(out) => out,
        Err(e) => panic!("{given} was refused: {e}"),
    }
}

#[tokio::test]
async fn a_command_line_runs_under_sh_with_every_output() {
    let ws = workspace();
    let out = ok(
        &ws,
        json!({"command": "printf 'a\\nb\\n' | wc -l; echo err >&2; echo $((6*7))"}),
    )
    .await;
    assert_eq!(out["success"], true);
    assert_eq!(out["stdout"], "2\n42\n");
    assert_eq!(out["stderr"], "err\n");
    assert_eq!(out["exit_code"], 0);
    assert_eq!(out["scope"], "workspace");
    assert_eq!(out["stdout_truncated"], false);
    assert_eq!(out["stdout_bytes_total"], 5);
    assert_eq!(out["stderr_bytes_total"], 4);
    assert_eq!(out["truncation_note"], Value::Null);
    assert_eq!(out["warning_count"], Value::Null);
    assert_eq!(out["stdout_warnings"], Value::Null);
    assert_eq!(out["error_kind"], Value::Null);
    for port in RunCommand.spec().outputs {
        assert!(out.contains_key(port.name), "missing output {}", port.name);
    }
}

#[tokio::test]
async fn stdin_is_null() {
    let ws = workspace();
    // `read` at end of input fails at once instead of waiting for a person.
    let out = ok(
        &ws,
        json!({"command": "read line; echo \"read=$? [$line]\"", "timeout_secs": 5}),
    )
    .await;
    assert_eq!(out["stdout"], "read=1 []\n");
}

#[tokio::test]
async fn info_keeps_the_tail_and_says_how_much_was_omitted() {
    let ws = workspace();
    let n = MAX_STDOUT_INFO + 1234;
    let command = format!("head -c {n} /dev/zero | tr '\\0' a; printf END");
    let out = ok(&ws, json!({"command": command})).await;
    let stdout = out["stdout"].as_str().unwrap();
    let dropped = n + 3 - MAX_STDOUT_INFO;
    assert!(
        stdout.starts_with(&format!("...[omitted {dropped} bytes]\naaa")),
        "{}",
        &stdout[..40]
    );
    assert!(stdout.ends_with("aEND"));
    assert_eq!(out["stdout_truncated"], true);
    assert_eq!(out["stdout_bytes_total"], n + 3);
    let note = out["truncation_note"].as_str().unwrap();
    assert!(note.contains("(0 bytes stderr)"), "{note}");
}

#[tokio::test]
async fn all_keeps_the_heads() {
    let ws = workspace();
    let command = format!(
        "printf START; head -c {} /dev/zero | tr '\\0' b; head -c {} /dev/zero | tr '\\0' c >&2",
        MAX_STDOUT_ALL,
        MAX_STDERR_ALL + 1
    );
    let out = ok(&ws, json!({"command": command, "output_level": "all"})).await;
    let stdout = out["stdout"].as_str().unwrap();
    assert!(stdout.starts_with("STARTbbb"));
    let total = MAX_STDOUT_ALL + 5;
    assert!(stdout.ends_with(&format!("b...[truncated, {total} bytes total]")));
    assert_eq!(
        stdout.len(),
        MAX_STDOUT_ALL + format!("...[truncated, {total} bytes total]").len()
    );
    let stderr = out["stderr"].as_str().unwrap();
    assert!(stderr.ends_with(&format!(
        "c...[truncated, {} bytes total]",
        MAX_STDERR_ALL + 1
    )));
    assert_eq!(out["stderr_truncated"], true);
    assert_eq!(
        out["truncation_note"],
        Value::Null,
        "only info has the note"
    );
}

#[tokio::test]
async fn error_returns_stderr_only() {
    let ws = workspace();
    let out = ok(
        &ws,
        json!({"command": "echo noise; echo 'error: it broke' >&2; exit 101", "output_level": "error"}),
    )
    .await;
    assert_eq!(out["stdout"], Value::Null);
    assert_eq!(out["stdout_bytes_total"], Value::Null);
    assert_eq!(out["stderr"], "error: it broke\n");
    assert_eq!(out["exit_code"], 101);
    assert_eq!(out["success"], false);
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_NON_ZERO_EXIT");
}

#[tokio::test]
async fn warning_returns_the_warning_lines_and_their_count() {
    let ws = workspace();
    let out = ok(
        &ws,
        json!({"command": "echo 'Compiling x'; echo 'warning: unused variable'; echo done; echo 'WARN later'", "output_level": "warning"}),
    )
    .await;
    assert_eq!(out["stdout"], Value::Null);
    assert_eq!(
        out["stdout_warnings"],
        "warning: unused variable\nWARN later"
    );
    assert_eq!(out["warning_count"], 2);
    assert_eq!(out["stdout_truncated"], false);
    assert_eq!(out["stdout_bytes_total"], 53);
}

#[tokio::test]
async fn a_timeout_kills_the_command_and_says_after_how_long() {
    let ws = workspace();
    let out = ok(
        &ws,
        json!({"command": "echo started; sleep 100", "timeout_secs": 1}),
    )
    .await;
    assert_eq!(out["success"], false);
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_TIMED_OUT");
    assert_eq!(out["exit_code"], -1);
    assert_eq!(out["stdout"], "started\n", "output before the kill is kept");
    let error = out["error"].as_str().unwrap();
    assert!(error.contains("timed out after 1 seconds"), "{error}");
}

#[tokio::test]
async fn a_cancelled_run_reports_cancelled() {
    let ws = workspace();
    let ctx = ctx(&ws);
    let cancel = ctx.cancel.clone();
    let run = RunCommand.run(&ctx, input(json!({"command": "sleep 100"})));
    let (out, ()) = tokio::join!(run, async {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        cancel.cancel();
    });
    let out = out.unwrap();
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_CANCELLED");
    assert_eq!(out["exit_code"], -1);
}

#[tokio::test]
async fn working_dir_is_relative_to_the_root_and_labelled() {
    let ws = workspace();
    let out = ok(&ws, json!({"command": "pwd", "working_dir": "sub"})).await;
    assert_eq!(
        out["stdout"],
        format!("{}\n", ws.root.join("sub").display())
    );
    assert_eq!(out["scope"], "workspace");
}

#[tokio::test]
async fn outside_the_workspace_is_refused_by_default_and_nothing_runs() {
    let ws = workspace();
    let marker = ws.outside.join("ran");
    let given = json!({"command": "touch ran", "working_dir": ws.outside.to_str().unwrap()});
    let e = run(&ws, given.clone()).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::PathOutsideWorkspace);
    assert!(e.message.contains("deny_outside"), "{}", e.message);
    let e = RunCommand
        .approval_request(&ctx(&ws), &input(given))
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::PathOutsideWorkspace, "no card is shown");
    let e = run(
        &ws,
        json!({"command": "touch ran", "working_dir": "../elsewhere"}),
    )
    .await
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::PathOutsideWorkspace);
    assert!(!marker.exists(), "nothing ran outside");

    // The positive control: the same command inside runs.
    ok(&ws, json!({"command": "touch ran"})).await;
    assert!(ws.root.join("ran").exists());
}

#[tokio::test]
async fn approve_outside_puts_the_directory_on_the_card_and_runs_there() {
    let ws = workspace();
    let given = json!({
        "command": "touch ran", "working_dir": ws.outside.to_str().unwrap(),
        "scope_policy": "approve_outside",
    });
    let card = RunCommand
        .approval_request(&ctx(&ws), &input(given.clone()))
        .unwrap();
    assert_eq!(card.cwd, ws.outside.display().to_string());
    assert_eq!(card.command_display, "sh -c 'touch ran'");
    let details = card.details.unwrap();
    assert!(details.contains("outside the workspace"), "{details}");
    let out = ok(&ws, given).await;
    assert_eq!(out["scope"], "outside_workspace");
    assert!(ws.outside.join("ran").exists());
}

#[tokio::test]
async fn bad_inputs_name_the_field() {
    let ws = workspace();
    let e = run(&ws, json!({"command": "  "})).await.unwrap_err();
    assert!(e.message.contains("command is required"), "{}", e.message);
    let e = run(&ws, json!({"command": "true", "working_dir": "missing"}))
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::NotFound);
    assert!(e.message.contains("working_dir"), "{}", e.message);
    let e = run(&ws, json!({"command": "true", "timeout_secs": 601}))
        .await
        .unwrap_err();
    assert!(e.message.contains("timeout_secs"), "{}", e.message);
    let e = run(&ws, json!({"command": "x".repeat(200_000)}))
        .await
        .unwrap_err();
    assert!(e.message.contains("at most 131071"), "{}", e.message);
}
