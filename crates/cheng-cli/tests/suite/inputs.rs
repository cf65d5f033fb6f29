//! Inputs without JSON gymnastics: `--input @-`, `--set`/`--config-set`, the workspace default,
//! short node ids.
use super::support::*;

use serde_json::Value;
use std::io::Write;
use std::process::{Output, Stdio};

const SHELL: &str = "tools/workspace_shell";

fn json_out(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

/// `cheng args...` with `stdin` piped in.
fn with_stdin(args: &[&str], stdin: &str) -> Output {
    let mut child = cheng()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // cheng may refuse before reading stdin (and close it): a failed write is not the test's concern.
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    child.wait_with_output().unwrap()
}

#[test]
fn input_at_dash_reads_stdin() {
    let (_d, ws) = temp_workspace();
    let ws = ws.to_str().unwrap();
    let out = with_stdin(
        &["run", SHELL, "-w", ws, "--input", "@-", "--approve"],
        r#"{"command":"echo","args":["from stdin"]}"#,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(json_out(&out)["stdout"], "from stdin\n");
    let out = with_stdin(
        &["run", SHELL, "-w", ws, "--input", "@-", "--config", "@-"],
        "{}",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("both ask for standard input"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_file_passed_without_at_gets_a_hint() {
    let (_d, ws) = temp_workspace();
    std::fs::write(ws.join("input.json"), r#"{"command":"true"}"#).unwrap();
    let out = cheng()
        .args(["run", SHELL, "--input", "input.json"])
        .current_dir(&ws)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("did you mean --input @input.json?"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn set_builds_inputs_without_json_quoting() {
    let (_d, ws) = temp_workspace();
    // Quotes of both kinds, a newline: a file's text, passed as is.
    std::fs::write(ws.join("cmd.sh"), "echo \"it's\" 'quoted'\n").unwrap();
    // Raw shell syntax needs the operator too (the built-in policy says no).
    std::fs::write(
        ws.join("policy.toml"),
        "[nodes.\"tools/workspace_shell\"]\nshell_syntax = true\n",
    )
    .unwrap();
    let out = cheng()
        .args([
            "run",
            SHELL,
            "--approve",
            "--policy",
            "policy.toml",
            "--set",
            "shell_string=@cmd.sh",
            "--config-set",
            "allow_shell_string:=true",
        ])
        .current_dir(&ws)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stderr),
        text(&out.stdout)
    );
    assert_eq!(json_out(&out)["stdout"], "it's quoted\n");
}

#[test]
fn set_overrides_input_and_refuses_a_port_twice() {
    let (_d, ws) = temp_workspace();
    let ws = ws.to_str().unwrap();
    let base = r#"{"command":"echo","args":["from input"]}"#;
    let out = cheng()
        .args([
            "run",
            SHELL,
            "-w",
            ws,
            "--approve",
            "--input",
            base,
            "--set",
            "args:=[\"from set\"]",
        ])
        .output()
        .unwrap();
    assert_eq!(
        json_out(&out)["stdout"],
        "from set\n",
        "{}",
        text(&out.stderr)
    );
    let out = cheng()
        .args([
            "run",
            SHELL,
            "-w",
            ws,
            "--approve",
            "--set",
            "command=ls",
            "--set",
            "command=pwd",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--set command is given twice"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn set_edge_cases_are_usage_errors_that_say_what_to_write() {
    let (_d, ws) = temp_workspace();
    let ws = ws.to_str().unwrap();
    for (assignment, expected) in [
        ("command", "expected PORT=TEXT, PORT=@FILE or PORT:=JSON"),
        ("=ls", "port name before `=` is empty"),
        ("args:=[oops", "not valid JSON"),
        ("stdin=@/nonexistent/cheng-input", "cannot read the file"),
        // An unknown port: the engine's did-you-mean.
        ("comand=ls", "Did you mean `command`?"),
    ] {
        let out = cheng()
            .args(["run", SHELL, "-w", ws, "--approve", "--set", assignment])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{assignment}");
        assert!(
            text(&out.stderr).contains(expected),
            "{assignment}: {}",
            text(&out.stderr)
        );
        assert!(out.stdout.is_empty(), "nothing ran");
    }
}

#[test]
fn config_set_sets_author_ports_from_text_and_files() {
    let (_d, ws) = temp_workspace();
    std::fs::write(ws.join("allowed.txt"), "echo\n").unwrap();
    let run = |command: &str| {
        cheng()
            .args([
                "run",
                SHELL,
                "--approve",
                "--set",
                &format!("command={command}"),
                "--config-set",
                "command_whitelist=@allowed.txt",
            ])
            .current_dir(&ws)
            .output()
            .unwrap()
    };
    assert_eq!(run("echo").status.code(), Some(0));
    let refused = run("pwd");
    assert_ne!(
        refused.status.code(),
        Some(0),
        "pwd is not on the whitelist read from the file"
    );
    // An unknown config port: did-you-mean, like inputs.
    let out = cheng()
        .args([
            "run",
            SHELL,
            "--config-set",
            "allow_shell_strin:=true",
            "--set",
            "command=true",
        ])
        .current_dir(&ws)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("allow_shell_string"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn the_workspace_defaults_to_the_current_directory_or_cheng_workspace() {
    let (_d, ws) = temp_workspace();
    let (_e, other) = temp_workspace();
    let out = cheng()
        .args(["run", SHELL, "--approve", "--set", "command=pwd"])
        .current_dir(&ws)
        .output()
        .unwrap();
    assert_eq!(
        json_out(&out)["stdout"],
        format!("{}\n", ws.display()),
        "{}",
        text(&out.stderr)
    );
    let out = cheng()
        .args(["run", SHELL, "--approve", "--set", "command=pwd"])
        .current_dir(&ws)
        .env("CHENG_WORKSPACE", &other)
        .output()
        .unwrap();
    assert_eq!(json_out(&out)["stdout"], format!("{}\n", other.display()));
    // The flag beats the variable.
    let out = cheng()
        .args([
            "run",
            SHELL,
            "--approve",
            "--set",
            "command=pwd",
            "-w",
            ws.to_str().unwrap(),
        ])
        .env("CHENG_WORKSPACE", &other)
        .output()
        .unwrap();
    assert_eq!(json_out(&out)["stdout"], format!("{}\n", ws.display()));
    let out = cheng()
        .args(["run", SHELL, "--set", "command=pwd"])
        .env("CHENG_WORKSPACE", "/nonexistent/ws")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("CHENG_WORKSPACE /nonexistent/ws"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn short_node_ids_resolve_when_unambiguous() {
    let (_d, ws) = temp_workspace();
    let out = cheng()
        .args([
            "run",
            "workspace_shell",
            "--approve",
            "-q",
            "--set",
            "command=true",
        ])
        .current_dir(&ws)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = run_cheng(&["describe", "workspace_git"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).contains("tools/workspace_git"));
    // A gated node by its short id: the engine's own hint on how to enable it.
    let out = cheng()
        .args(["run", "code_js", "--set", "script=1"])
        .current_dir(&ws)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("CHENG_ENABLE_CODE_JS"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn an_absolute_path_inside_the_workspace_is_taken_relative_and_one_outside_is_refused() {
    let (_d, ws) = temp_workspace();
    std::fs::create_dir_all(ws.join("docs")).unwrap();
    std::fs::write(ws.join("docs/guide.md"), "# Guide\n\n## Part\n").unwrap();
    let ws_arg = ws.to_str().unwrap();
    let inside = ws.join("docs/guide.md");
    let out = cheng()
        .args([
            "run",
            "workspace_markdown",
            "-w",
            ws_arg,
            "--json",
            "--set",
            "operation=outline",
        ])
        .args(["--set", &format!("path={}", inside.display())])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        json_out(&out)["summary"]
            .as_str()
            .unwrap_or("")
            .contains("docs/guide.md"),
        "{}",
        text(&out.stdout)
    );
    // An absolute path anywhere else is still outside (the prefix rule is tested in cheng-node).
    let (_o, outside) = temp_workspace();
    std::fs::write(outside.join("guide.md"), "# Other\n").unwrap();
    let out = cheng()
        .args([
            "run",
            "workspace_markdown",
            "-w",
            ws_arg,
            "--json",
            "--set",
            "operation=outline",
        ])
        .args([
            "--set",
            &format!("path={}", outside.join("guide.md").display()),
        ])
        .output()
        .unwrap();
    assert_eq!(
        json_out(&out)["error_kind"],
        "LOCAL_EXECUTOR_PATH_OUTSIDE_WORKSPACE",
        "{}",
        text(&out.stdout)
    );
}

/// `--set port=TEXT` on an integer or boolean port takes the number or boolean the text spells
/// (as `gh api -F` does); text that spells neither is still refused naming the port.
#[test]
fn set_text_becomes_a_number_or_boolean_where_the_port_takes_one() {
    let (_d, ws) = temp_workspace();
    let out = cheng()
        .args([
            "run",
            SHELL,
            "--approve",
            "--json",
            "--set",
            "command=sleep",
            "--set",
            "args:=[\"5\"]",
            "--set",
            "timeout_ms=300",
        ])
        .current_dir(&ws)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(
        json_out(&out)["termination"],
        "timed_out",
        "{}",
        text(&out.stdout)
    );
    let out = cheng()
        .args([
            "run",
            SHELL,
            "--approve",
            "--set",
            "command=true",
            "--set",
            "timeout_ms=soon",
        ])
        .current_dir(&ws)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("port `timeout_ms`: expected integer"),
        "{}",
        text(&out.stderr)
    );
    // A string port keeps digits as text.
    let out = cheng()
        .args([
            "run",
            SHELL,
            "--approve",
            "--json",
            "--set",
            "command=echo",
            "--set",
            "purpose=42",
        ])
        .current_dir(&ws)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}
