//! `cheng run tools/workspace_shell`: behaviour, policy and attacks through the real binary.
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
    let start = stderr.find("LOCAL_EXECUTOR_").unwrap_or_else(|| panic!("no error code in stderr: {stderr}"));
    stderr[start..].chars().take_while(|c| c.is_ascii_uppercase() || *c == '_').collect()
}

/// The human-readable message of a failed run (output `error` or stderr).
fn message(out: &Value, stderr: &str) -> String {
    out.get("error").and_then(Value::as_str).map(str::to_string).unwrap_or_else(|| stderr.to_string())
}

#[test]
fn runs_a_command_and_exits_zero() {
    let (_d, ws) = temp_workspace();
    let (code, out, stderr) = shell(&ws, json!({"command": "echo", "args": ["hello"]}), json!({}));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out["success"], true);
    assert_eq!(out["stdout"], "hello\n");
    assert_eq!(out["termination"], "exited");
    assert_eq!(out["command_display"], "echo hello");
}

#[test]
fn non_zero_exit_is_exit_status_one_with_output_intact() {
    let (_d, ws) = temp_workspace();
    let (code, out, _) = shell(&ws, json!({"command": "sh", "args": ["-c", "echo out; echo err >&2; exit 7"]}), json!({}));
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
    assert_eq!(failure(code, &out, &stderr), "LOCAL_EXECUTOR_APPROVAL_DENIED");
    // Without a TTY and without a flag, gated nodes are denied too.
    let (code, out, stderr) = run_node(NODE, &ws, &input, &[]);
    assert_eq!(failure(code, &out, &stderr), "LOCAL_EXECUTOR_APPROVAL_DENIED");
    assert!(!ws.join("pwned").exists());
}

#[test]
fn neither_or_both_of_command_and_shell_string_is_invalid() {
    let (_d, ws) = temp_workspace();
    for input in [json!({}), json!({"command": "ls", "shell_string": "ls"})] {
        let (code, out, stderr) = shell(&ws, input.clone(), json!({}));
        assert_eq!(failure(code, &out, &stderr), "LOCAL_EXECUTOR_INVALID_INPUT", "{input}");
        let text = message(&out, &stderr);
        assert!(text.contains("command") && text.contains("shell_string"), "{text}");
    }
}

#[test]
fn timeout_kills_a_script_and_its_background_grandchild() {
    let (_d, ws) = temp_workspace();
    let input = json!({"command": "sh", "args": ["-c", "echo $$; sleep 1000 & echo $!; sleep 1000"], "timeout_ms": 500});
    let (code, out, _) = shell(&ws, input, json!({}));
    assert_eq!(code, 1);
    assert_eq!(out["termination"], "timed_out");
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_TIMED_OUT");
    let pids: Vec<u32> = out["stdout"].as_str().unwrap_or("").lines().filter_map(|l| l.parse().ok()).collect();
    assert_eq!(pids.len(), 2, "{out}");
    for pid in pids {
        let gone = (0..250).any(|_| {
            let alive = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|s| !s.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'))
                .unwrap_or(false);
            if alive {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            !alive
        });
        assert!(gone, "process {pid} outlived the timeout");
    }
}

#[test]
fn timeout_above_the_maximum_is_rejected_not_clamped() {
    let (_d, ws) = temp_workspace();
    let (code, _, stderr) = shell(&ws, json!({"command": "true", "timeout_ms": 700000}), json!({}));
    assert_eq!(code, 2);
    assert!(stderr.contains("600000"), "{stderr}");
}

#[test]
fn a_missing_program_is_spawn_failed() {
    let (_d, ws) = temp_workspace();
    let (code, out, _) = shell(&ws, json!({"command": "no-such-program-cheng"}), json!({}));
    assert_eq!(code, 1);
    assert_eq!(out["termination"], "spawn_failed");
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_SPAWN_FAILED");
}

#[test]
fn output_flood_is_bounded_and_stderr_flood_does_not_deadlock() {
    let (_d, ws) = temp_workspace();
    let script = "head -c 30000000 /dev/zero | tr '\\0' x; head -c 30000000 /dev/zero >&2; echo";
    let (code, out, stderr) = shell(&ws, json!({"command": "sh", "args": ["-c", script], "timeout_ms": 120000}), json!({}));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out["stdout_truncated"], true);
    assert_eq!(out["stderr_truncated"], true);
    assert!(out["stdout"].as_str().unwrap_or("").len() <= (1 << 20) + 64);
    assert!(out["stdout"].as_str().unwrap_or("").contains("...[omitted "));
}

#[test]
fn shell_syntax_is_denied_by_default_and_nothing_runs() {
    let (_d, ws) = temp_workspace();
    for script in ["touch pwned;id", "touch pwned | cat", "touch $HOME", "touch `id`", "touch pwned > out"] {
        let (code, out, stderr) = shell(&ws, json!({"shell_string": script}), json!({}));
        assert_eq!(failure(code, &out, &stderr), "LOCAL_EXECUTOR_POLICY_DENIED", "{script}");
        assert!(message(&out, &stderr).contains("allow_shell_string"));
    }
    assert!(!ws.join("pwned").exists());
    assert!(!ws.join("out").exists());
}

#[test]
fn a_simple_shell_string_runs_as_argv() {
    let (_d, ws) = temp_workspace();
    let (code, out, stderr) = shell(&ws, json!({"shell_string": "echo 'a;b' \"c d\""}), json!({}));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out["stdout"], "a;b c d\n");
}

#[test]
fn the_author_switch_enables_sh_but_only_from_config() {
    let (_d, ws) = temp_workspace();
    let (code, out, stderr) = shell(&ws, json!({"shell_string": "echo a | tr a b"}), json!({"allow_shell_string": true}));
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
    assert_eq!(out["stdout"].as_str().unwrap_or("").trim_end(), ws.to_str().unwrap_or(""));
}

#[test]
fn whitelist_bypass_attempts_are_denied() {
    let (_d, ws) = temp_workspace();
    let fake = ws.join("ls");
    std::fs::write(&fake, "#!/bin/sh\ntouch pwned\n").expect("write fake ls");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let config = json!({"command_whitelist": "ls\necho", "allow_shell_string": true});
    for input in [
        json!({"command": "/bin/ls"}),
        json!({"command": "./ls"}),
        json!({"command": "id"}),
        json!({"shell_string": "ls;id"}),
        json!({"shell_string": "ls | id"}),
        json!({"shell_string": "./ls"}),
        json!({"shell_string": "/bin/ls -la"}),
    ] {
        let (code, out, stderr) = shell(&ws, input.clone(), config.clone());
        assert_eq!(failure(code, &out, &stderr), "LOCAL_EXECUTOR_POLICY_DENIED", "{input}");
    }
    let (code, out, stderr) = shell(&ws, json!({"command": "ls"}), config.clone());
    assert_eq!(code, 0, "{stderr}");
    assert!(out["stdout"].as_str().unwrap_or("").contains("ls"));
    // Even a simple shell string naming a listed program is denied under a whitelist (seed 003).
    let (code, out, stderr) = shell(&ws, json!({"shell_string": "echo 'x;y'"}), config);
    assert_eq!(failure(code, &out, &stderr), "LOCAL_EXECUTOR_POLICY_DENIED");
    assert!(!ws.join("pwned").exists(), "the workspace's fake ls ran");
}

#[test]
fn cwd_escapes_are_refused() {
    let (_d, ws) = temp_workspace();
    let outside = tempfile::tempdir().expect("tempdir");
    std::os::unix::fs::symlink(outside.path(), ws.join("link")).expect("symlink");
    for cwd in ["..", "../..", "/etc", "link"] {
        let (code, out, stderr) = shell(&ws, json!({"command": "touch", "args": ["pwned"], "cwd": cwd}), json!({}));
        assert_eq!(failure(code, &out, &stderr), "LOCAL_EXECUTOR_PATH_OUTSIDE_WORKSPACE", "{cwd}");
    }
    assert!(!outside.path().join("pwned").exists());
}

#[test]
fn env_denylist_is_enforced() {
    let (_d, ws) = temp_workspace();
    // Every variable the policy lists (prefix rules by several members and spellings), each
    // with a value that would do harm if it reached the child.
    let hook = ws.join("hook.sh");
    std::fs::write(&hook, "touch pwned\n").expect("write hook");
    let hook = hook.to_str().expect("utf-8 path");
    for (name, value) in [
        ("PATH", "."),
        ("path", "."),
        ("LD_PRELOAD", "/tmp/evil.so"),
        ("LD_LIBRARY_PATH", "."),
        ("LD_AUDIT", "/tmp/evil.so"),
        ("ld_preload", "/tmp/evil.so"),
        ("DYLD_INSERT_LIBRARIES", "/tmp/evil.dylib"),
        ("DYLD_LIBRARY_PATH", "."),
        ("BASH_ENV", hook),
        ("ENV", hook),
        ("BASH_FUNC_echo%%", "() { touch pwned; }"),
        ("BASH_FUNC_true()", "() { touch pwned; }"),
        ("IFS", "/"),
        ("PS4", "$(touch pwned)"),
        ("SHELLOPTS", "xtrace"),
        ("NODE_OPTIONS", "--require ./pwn.js"),
        ("PYTHONSTARTUP", hook),
        ("PYTHONPATH", "."),
        ("PERL5OPT", "-Mpwn"),
        ("RUBYOPT", "-rpwn"),
        ("GIT_DIR", "/etc"),
        ("GIT_SSH_COMMAND", "touch pwned"),
        ("GIT_CONFIG_GLOBAL", hook),
        ("GIT_EXEC_PATH", "."),
    ] {
        let input = json!({"command": "bash", "args": ["-c", "echo ran"], "env": { name: value }});
        let (code, out, stderr) = shell(&ws, input, json!({}));
        assert_eq!(failure(code, &out, &stderr), "LOCAL_EXECUTOR_INVALID_INPUT", "{name}");
        let text = message(&out, &stderr);
        assert!(text.contains(name) && text.contains("may not be set"), "{name}: {text}");
        assert!(!text.contains("ran\n") && out.get("stdout").is_none_or(Value::is_null), "{name}: the command ran: {out}");
    }
    assert!(!ws.join("pwned").exists());
    for name in ["LD_PRELOAD", "PATH", "BASH_ENV", "GIT_DIR", "NODE_OPTIONS"] {
        let input = json!({"command": "true", "env": { name: "x" }});
        let (code, out, stderr) = shell(&ws, input, json!({}));
        assert_eq!(failure(code, &out, &stderr), "LOCAL_EXECUTOR_INVALID_INPUT", "{name}");
        assert!(message(&out, &stderr).contains(name));
    }
    let (code, out, _) = shell(&ws, json!({"command": "sh", "args": ["-c", "echo $LC_ALL"], "env": {"LC_ALL": "C"}}), json!({}));
    assert_eq!(code, 0);
    assert_eq!(out["stdout"], "C\n");
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
    cmd.args(["run", NODE, "--workspace", ws_arg, "--input", &input, "--approve"]);
    for (name, value) in secrets {
        cmd.env(name, value);
    }
    // A harmless host variable that is not on the allowlist does not pass either.
    cmd.env("CHENG_TEST_PLAIN", "plain-9").env("LC_TIME", "C");
    let out = cmd.output().expect("cheng runs");
    let value: Value = serde_json::from_slice(&out.stdout).expect("JSON output");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let env = value["stdout"].as_str().expect("stdout");
    for (name, secret) in secrets {
        assert!(!env.contains(secret), "{name} reached the command:\n{env}");
    }
    assert!(!env.contains("plain-9"), "a host variable outside the allowlist reached the command:\n{env}");
    assert!(env.lines().any(|l| l == "LC_TIME=C"), "the allowlisted LC_TIME is missing:\n{env}");
    assert!(env.lines().any(|l| l.starts_with("PATH=")), "{env}");
    // The caller's own env input is the one way to pass a credential, explicit and only for
    // names the operator allowed.
    let input = json!({"command": "env", "env": {"MY_API_KEY": "given"}});
    let (code, refused, stderr) = shell(&ws, input.clone(), json!({}));
    assert_eq!(failure(code, &refused, &stderr), "LOCAL_EXECUTOR_INVALID_INPUT");
    assert!(message(&refused, &stderr).contains("adding \"MY_API_KEY\" to env_allow"), "{refused}");
    let policy = ws.join("env-policy.toml");
    std::fs::write(&policy, "[nodes.\"tools/workspace_shell\"]\nenv_allow = [\"MY_API_KEY\"]\n").expect("policy");
    let (code, out, stderr) =
        run_node(NODE, &ws, &input, &["--approve", "--policy", policy.to_str().expect("utf-8")]);
    assert_eq!(code, 0, "{stderr}");
    assert!(out["stdout"].as_str().unwrap_or("").lines().any(|l| l == "MY_API_KEY=given"));
}
