//! `cheng run tools/workspace_shell` through the real binary: exit codes and the wiring the node
//! cannot show by itself (approval flags, the author's `--config`, the engine-injected root, the
//! process environment cheng itself was started with). The node's behaviour and policy are tested
//! in nodes/workspace/tests/suite/shell.rs; the environment and kill rules in cheng-exec.
#![allow(unused_imports)]
use super::support::*;

use serde_json::{json, Value};
use std::path::Path;

const NODE: &str = "tools/workspace_shell";

/// Runs the node approved, with `config` as the author's config.
fn shell(ws: &Path, input: Value, config: Value) -> (i32, Value, String) {
    // Raw shell needs both the author's switch and the operator's policy.
    let policy = super::support::fixtures().join("policy/shell-syntax.toml");
    let mut args = vec!["--approve", "--config"];
    let config_text = config.to_string();
    args.push(&config_text);
    let policy_text = policy.display().to_string();
    if config["allow_shell_string"] == true {
        args.extend(["--policy", &policy_text]);
    }
    run_node(NODE, ws, &input, &args)
}

/// The `LOCAL_EXECUTOR_*` code of a failed run, from the output object or (for errors reported
/// before any output) from stderr. Asserts the run failed.
fn failure(code: i32, out: &Value, stderr: &str) -> String {
    assert_ne!(code, 0, "expected a failure; stdout {out}, stderr {stderr}");
    if let Some(kind) = out.get("error_kind").and_then(Value::as_str) {
        assert_eq!(out["success"], false, "{out}");
        return kind.to_string();
    }
    let start = stderr
        .find("LOCAL_EXECUTOR_")
        .unwrap_or_else(|| panic!("no error code in stderr: {stderr}"));
    stderr[start..]
        .chars()
        .take_while(|c| c.is_ascii_uppercase() || *c == '_')
        .collect()
}

/// The failure's message: the output's `error`, else what cheng printed on stderr.
fn message(out: &Value, stderr: &str) -> String {
    out.get("error")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| stderr.to_string())
}

#[test]
fn runs_a_command_and_exits_zero() {
    let (_d, ws) = temp_workspace();
    let (code, out, stderr) = shell(
        &ws,
        json!({"command": "echo", "args": ["hello"]}),
        json!({}),
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out["success"], true);
    assert_eq!(out["stdout"], "hello\n");
    assert_eq!(out["termination"], "exited");
    assert_eq!(out["command_display"], "echo hello");
}

#[test]
fn non_zero_exit_is_exit_status_one_with_output_intact() {
    let (_d, ws) = temp_workspace();
    let (code, out, _) = shell(
        &ws,
        json!({"command": "sh", "args": ["-c", "echo out; echo err >&2; exit 7"]}),
        json!({}),
    );
    assert_eq!(code, 1);
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_NON_ZERO_EXIT");
    assert_eq!(out["terminal"], false);
    assert_eq!(out["exit_code"], 7);
    assert_eq!(out["stdout"], "out\n");
    assert_eq!(out["stderr"], "err\n");
}

#[test]
fn denied_approval_runs_nothing() {
    let (_d, ws) = temp_workspace();
    let input = json!({"command": "touch", "args": ["pwned"]});
    let (code, out, stderr) = run_node(NODE, &ws, &input, &["--deny"]);
    assert_eq!(
        failure(code, &out, &stderr),
        "LOCAL_EXECUTOR_APPROVAL_DENIED"
    );
    // Without a TTY and without a flag, gated nodes are denied too.
    let (code, out, stderr) = run_node(NODE, &ws, &input, &[]);
    assert_eq!(
        failure(code, &out, &stderr),
        "LOCAL_EXECUTOR_APPROVAL_DENIED"
    );
    assert!(!ws.join("pwned").exists());
}

#[test]
fn timeout_above_the_maximum_is_rejected_not_clamped() {
    let (_d, ws) = temp_workspace();
    let (code, _, stderr) = shell(
        &ws,
        json!({"command": "true", "timeout_ms": 700000}),
        json!({}),
    );
    assert_eq!(code, 2);
    assert!(stderr.contains("600000"), "{stderr}");
}

#[test]
fn the_author_switch_enables_sh_but_only_from_config() {
    let (_d, ws) = temp_workspace();
    let (code, out, stderr) = shell(
        &ws,
        json!({"shell_string": "echo a | tr a b"}),
        json!({"allow_shell_string": true}),
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out["stdout"], "b\n");
    // An agent cannot turn the switch on from its input.
    let input = json!({"shell_string": "echo a | tr a b", "allow_shell_string": true});
    let (code, _, stderr) = run_node(NODE, &ws, &input, &["--approve"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("allow_shell_string"), "{stderr}");
}

#[test]
fn sandbox_root_cannot_be_supplied() {
    let (_d, ws) = temp_workspace();
    let input = json!({"command": "pwd", "sandbox_root": "/"});
    let (code, _, stderr) = run_node(NODE, &ws, &input, &["--approve"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("sandbox_root"), "{stderr}");
    // The injected value is the workspace.
    let (code, out, _) = shell(&ws, json!({"command": "pwd"}), json!({}));
    assert_eq!(code, 0);
    assert_eq!(
        out["stdout"].as_str().unwrap_or("").trim_end(),
        ws.to_str().unwrap_or("")
    );
}

#[test]
fn host_secrets_never_reach_the_command() {
    let (_d, ws) = temp_workspace();
    // Credential-like names on cheng's own environment, including LC_* ones (LC_* is otherwise
    // passed through) and every marker in lower and mixed case.
    let secrets = [
        ("CHENG_TEST_API_KEY", "k-1"),
        ("GITHUB_TOKEN", "t-2"),
        ("AWS_SECRET_ACCESS_KEY", "s-3"),
        ("DB_PASSWORD", "p-4"),
        ("LC_API_KEY", "k-5"),
        ("LC_SECRET", "s-6"),
        ("LC_gh_token", "t-7"),
        ("LC_Db_Password", "p-8"),
    ];
    let input = json!({"command": "env"}).to_string();
    let ws_arg = ws.to_str().expect("utf-8 workspace");
    let mut cmd = cheng();
    cmd.args([
        "run",
        NODE,
        "--workspace",
        ws_arg,
        "--input",
        &input,
        "--approve",
    ]);
    for (name, value) in secrets {
        cmd.env(name, value);
    }
    // A harmless host variable that is not on the allowlist does not pass either.
    cmd.env("CHENG_TEST_PLAIN", "plain-9").env("LC_TIME", "C");
    let out = cmd.output().expect("cheng runs");
    let value: Value = serde_json::from_slice(&out.stdout).expect("JSON output");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let env = value["stdout"].as_str().expect("stdout");
    for (name, secret) in secrets {
        assert!(!env.contains(secret), "{name} reached the command:\n{env}");
    }
    assert!(
        !env.contains("plain-9"),
        "a host variable outside the allowlist reached the command:\n{env}"
    );
    assert!(
        env.lines().any(|l| l == "LC_TIME=C"),
        "the allowlisted LC_TIME is missing:\n{env}"
    );
    assert!(env.lines().any(|l| l.starts_with("PATH=")), "{env}");
    // The caller's own env input is the one way to pass a credential, explicit and only for
    // names the operator allowed.
    let input = json!({"command": "env", "env": {"MY_API_KEY": "given"}});
    let (code, refused, stderr) = shell(&ws, input.clone(), json!({}));
    assert_eq!(
        failure(code, &refused, &stderr),
        "LOCAL_EXECUTOR_INVALID_INPUT"
    );
    assert!(
        message(&refused, &stderr).contains("adding \"MY_API_KEY\" to env_allow"),
        "{refused}"
    );
    let policy = ws.join("env-policy.toml");
    std::fs::write(
        &policy,
        "[nodes.\"tools/workspace_shell\"]\nenv_allow = [\"MY_API_KEY\"]\n",
    )
    .expect("policy");
    let (code, out, stderr) = run_node(
        NODE,
        &ws,
        &input,
        &["--approve", "--policy", policy.to_str().expect("utf-8")],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(out["stdout"]
        .as_str()
        .unwrap_or("")
        .lines()
        .any(|l| l == "MY_API_KEY=given"));
}
