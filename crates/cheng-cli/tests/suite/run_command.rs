//! tools/run_command through the real binary: the operator's rule (off by default: refused
//! before any card, nothing runs), an approved run, a run nobody approved, the timeout's three
//! layers (input, the author's config, 30 s), the guide's examples as written, and the official
//! MCP Python SDK (`tests/mcp/run_command.py`, both protocol generations).

use super::support::{mcp_sdk_available, repo_root, run_node, run_sdk_script, temp_workspace};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const RUN: &str = "tools/run_command";

/// A policy file allowing raw shell for run_command only.
fn allowing(dir: &Path) -> PathBuf {
    let path = dir.join("policy.toml");
    std::fs::write(
        &path,
        "[nodes.\"tools/run_command\"]\nshell_syntax = true\n",
    )
    .expect("write policy");
    path
}

#[test]
fn the_default_policy_refuses_raw_shell_before_any_card_and_nothing_runs() {
    let (_d, ws) = temp_workspace();
    let (code, out, stderr) = run_node(RUN, &ws, &json!({"command": "touch ran"}), &["--approve"]);
    assert_ne!(code, 0, "{out}");
    let said = format!("{out}{stderr}");
    assert!(
        said.contains("LOCAL_EXECUTOR_POLICY_DENIED")
            && said.contains("shell_syntax = true")
            && said.contains("tools/run_command"),
        "{said}"
    );
    assert!(!ws.join("ran").exists(), "the refused command ran");

    // The positive control: the same call with the operator's rule on runs.
    let (dir, ws) = temp_workspace();
    let policy = allowing(dir.path());
    let args = ["--approve", "--policy", policy.to_str().unwrap()];
    let (code, out, stderr) = run_node(RUN, &ws, &json!({"command": "touch ran"}), &args);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out["success"], true, "{out}");
    assert!(ws.join("ran").exists());

    // `policy show` lists the rule under the node, with where it came from.
    let shown =
        super::support::run_cheng(&["policy", "show", "--policy", policy.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&shown.stdout);
    let section = text
        .split("[nodes.\"tools/run_command\"]")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .unwrap_or_default();
    assert!(
        section.contains("shell_syntax = true") && section.contains(policy.to_str().unwrap()),
        "{text}"
    );
}

#[test]
fn without_a_person_or_approve_nothing_runs() {
    let (dir, ws) = temp_workspace();
    let policy = allowing(dir.path());
    let args = ["--policy", policy.to_str().unwrap()];
    let (code, out, stderr) = run_node(RUN, &ws, &json!({"command": "touch ran"}), &args);
    assert_ne!(code, 0, "{out}");
    assert!(
        format!("{out}{stderr}").contains("APPROVAL_DENIED"),
        "{out}{stderr}"
    );
    assert!(!ws.join("ran").exists());
}

#[test]
fn the_timeout_is_the_input_else_the_authors_config_else_30_seconds() {
    let (dir, ws) = temp_workspace();
    let policy = allowing(dir.path());
    let p = policy.to_str().unwrap();
    // The author's config: 1 s.
    let config = [
        "--approve",
        "--policy",
        p,
        "--config",
        r#"{"timeout_secs": 1}"#,
    ];
    let (_, out, stderr) = run_node(RUN, &ws, &json!({"command": "sleep 5"}), &config);
    assert_eq!(
        out["error_kind"], "LOCAL_EXECUTOR_TIMED_OUT",
        "{out}{stderr}"
    );
    assert!(out["error"]
        .as_str()
        .unwrap_or("")
        .contains("after 1 seconds"));
    // The input beats the config.
    let (code, out, stderr) = run_node(
        RUN,
        &ws,
        &json!({"command": "sleep 2; echo done", "timeout_secs": 10}),
        &config,
    );
    assert_eq!(code, 0, "{out}{stderr}");
    assert_eq!(out["stdout"], "done\n");
    // Neither: the spec's 30.
    let described = super::support::run_cheng(&["describe", RUN, "--json"]);
    let spec: Value = serde_json::from_slice(&described.stdout).unwrap_or(Value::Null);
    let timeout = spec["inputs"]
        .as_array()
        .and_then(|ports| ports.iter().find(|p| p["name"] == "timeout_secs"))
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(timeout["default"], json!(30), "{spec}");
}

#[test]
fn the_guides_examples_run_as_written() {
    let (dir, ws) = temp_workspace();
    let policy = allowing(dir.path());
    std::fs::create_dir_all(ws.join("logs")).unwrap();
    std::fs::write(ws.join("logs/a.log"), "line 1\nwarning: disk at 91%\n").unwrap();
    std::fs::write(
        ws.join("deploy.sh"),
        "#!/bin/sh\necho \"deploying with $*\"\n",
    )
    .unwrap();
    let args = ["--approve", "--policy", policy.to_str().unwrap()];
    // docs/guides/run_command.md, "Examples".
    let (code, out, stderr) = run_node(
        RUN,
        &ws,
        &json!({"command": "for f in *.log; do echo \"=== $f ===\"; tail -n 20 \"$f\"; done", "working_dir": "logs", "output_level": "warning", "timeout_secs": 60}),
        &args,
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out["stdout_warnings"], "warning: disk at 91%");
    assert_eq!(out["warning_count"], 1);
    let (code, out, stderr) = run_node(
        RUN,
        &ws,
        &json!({"command": "sh ./deploy.sh --env production --dry-run", "output_level": "all"}),
        &args,
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out["stdout"], "deploying with --env production --dry-run\n");
    let (code, out, _) = run_node(
        RUN,
        &ws,
        &json!({"command": "echo building; echo 'error: it broke' >&2; exit 2", "output_level": "error"}),
        &args,
    );
    assert_ne!(code, 0);
    assert_eq!(out["stdout"], Value::Null);
    assert_eq!(out["stderr"], "error: it broke\n");
    assert_eq!(out["exit_code"], 2);
}

#[test]
fn the_python_sdk_is_offered_run_command_approves_it_and_is_refused_by_default() {
    if !mcp_sdk_available() {
        return;
    }
    let script = repo_root().join("crates/cheng-cli/tests/mcp/run_command.py");
    for mode in ["legacy", "2026-07-28"] {
        let (dir, ws) = temp_workspace();
        let policy = allowing(dir.path());
        let out = run_sdk_script(
            Command::new("python3")
                .arg(&script)
                .arg(env!("CARGO_BIN_EXE_cheng"))
                .arg(&ws)
                .arg(&policy)
                .arg(mode)
                .env_remove("CHENG_POLICY"),
            Duration::from_secs(120),
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains(&format!("ok {mode}")),
            "mode {mode}:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn the_terminal_shows_the_levels_text_with_its_marker_and_the_note() {
    let (dir, ws) = temp_workspace();
    let policy = allowing(dir.path());
    let out = super::support::cheng()
        .args(["run", RUN, "--workspace"])
        .arg(&ws)
        .args(["--policy", policy.to_str().unwrap(), "--approve", "--quiet"])
        .args(["--format", "text", "--color", "never", "--input"])
        .arg(json!({"command": "head -c 600000 /dev/zero | tr '\\0' x; printf END"}).to_string())
        .output()
        .expect("cheng runs");
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.starts_with("...[omitted 88003 bytes]\nxxx") && stdout.ends_with("xEND\n"),
        "{}",
        &stdout[..60]
    );
    assert!(
        stderr.contains("warning: Output was truncated. Use output_level=\"error\""),
        "{stderr}"
    );
    assert!(!stderr.contains("head and tail kept"), "{stderr}");
}
