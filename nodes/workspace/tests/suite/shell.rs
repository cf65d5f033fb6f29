//! tools/workspace_shell through its public face (spec, approval request, run), including every
//! test that starts a process; the splitter's and the program rules' unit tests are in src/.

use cheng_node::{
    ApprovalRule, Audience, Control, Decision, Effects, ErrorKind, Node, NodeError, NodeSpec,
    PortType, RunContext, Values,
};
use cheng_nodes_workspace::{WorkspaceShell, STDERR_CAP, STDOUT_CAP};
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn spec() -> &'static NodeSpec {
    WorkspaceShell.spec()
}

struct Ws {
    _dir: tempfile::TempDir,
    root: PathBuf,
    ctx: RunContext,
}

fn workspace() -> Ws {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("sub/deeper")).unwrap();
    let ctx = RunContext::for_workspace(spec().id, root.clone(), Decision::Approved);
    Ws {
        _dir: dir,
        root,
        ctx,
    }
}

/// The engine's view of an input: spec defaults, then `given`, then the injected root.
fn input(ws: &Ws, given: Value) -> Values {
    let mut values = Values::new();
    for port in spec().inputs {
        values.insert(
            port.name.into(),
            port.default_value().unwrap_or(Value::Null),
        );
    }
    if let Value::Object(given) = given {
        values.extend(given);
    }
    values.insert("sandbox_root".into(), json!(ws.root.to_str().unwrap()));
    values
}

async fn run(ws: &Ws, given: Value) -> Result<Values, NodeError> {
    WorkspaceShell.run(&ws.ctx, input(ws, given)).await
}

async fn ok(ws: &Ws, given: Value) -> Values {
    match run(ws, given.clone()).await {
        Ok(out) => out,
        Err(e) => panic!("{given} failed validation: {e}"),
    }
}

async fn err(ws: &Ws, given: Value) -> NodeError {
    match run(ws, given.clone()).await {
        Ok(out) => panic!("{given} was accepted: {out:?}"),
        Err(e) => e,
    }
}

fn executable(path: &Path, script: &str) {
    std::fs::write(path, script).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[tokio::test]
async fn runs_command_with_args_and_reports_every_output() {
    let ws = workspace();
    let out = ok(&ws, json!({"command": "echo", "args": ["hello", "a b"]})).await;
    assert_eq!(out["success"], true);
    assert_eq!(out["stdout"], "hello a b\n");
    assert_eq!(out["exit_code"], 0);
    assert_eq!(out["termination"], "exited");
    assert_eq!(out["command_display"], "echo hello 'a b'");
    assert_eq!(out["cwd"], ".");
    assert_eq!(out["error_kind"], Value::Null);
    assert_eq!(out["error"], Value::Null);
    assert_eq!(out["terminal"], false);
    assert_eq!(out["stdout_truncated"], false);
    assert!(out["duration_ms"].is_u64());
    let summary = out["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("echo hello 'a b' exited 0 after "),
        "{summary}"
    );
    assert!(summary.ends_with("; stdout 10 B"), "{summary}");
    for port in spec().outputs {
        assert!(out.contains_key(port.name), "missing output {}", port.name);
    }
}

#[tokio::test]
async fn non_zero_exit_keeps_output_and_is_not_terminal() {
    let ws = workspace();
    let out = ok(
        &ws,
        json!({"command": "sh", "args": ["-c", "echo out; echo err >&2; exit 3"]}),
    )
    .await;
    assert_eq!(out["success"], false);
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_NON_ZERO_EXIT");
    assert_eq!(out["terminal"], false);
    assert_eq!(out["exit_code"], 3);
    assert_eq!(out["stdout"], "out\n");
    assert_eq!(out["stderr"], "err\n");
    assert!(out["error"]
        .as_str()
        .unwrap()
        .contains("exited with status 3"));
    let summary = out["summary"].as_str().unwrap();
    assert!(summary.contains("exited 3 after"), "{summary}");
    assert!(summary.contains("stderr 4 B"), "{summary}");
}

#[tokio::test]
async fn timeout_kills_and_reports_timed_out() {
    // That the whole process group dies (grandchildren, escapes) is cheng-exec's kill and
    // descendants suites; here, what the node reports.
    let ws = workspace();
    let out = ok(
        &ws,
        json!({"command": "sleep", "args": ["1000"], "timeout_ms": 300}),
    )
    .await;
    assert_eq!(out["success"], false);
    assert_eq!(out["termination"], "timed_out");
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_TIMED_OUT");
    assert_eq!(out["terminal"], false);
    assert_eq!(out["exit_code"], Value::Null);
    assert!(
        out["error"].as_str().unwrap().contains("timeout_ms 300"),
        "{}",
        out["error"]
    );
}

#[tokio::test]
async fn cancellation_reports_cancelled_and_is_terminal() {
    let ws = workspace();
    let cancel = ws.ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        cancel.cancel();
    });
    let out = ok(&ws, json!({"command": "sleep", "args": ["1000"]})).await;
    assert_eq!(out["termination"], "cancelled");
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_CANCELLED");
    assert_eq!(out["terminal"], true);
    assert_eq!(out["success"], false);
}

#[tokio::test]
async fn a_missing_program_is_spawn_failed() {
    let ws = workspace();
    let out = ok(&ws, json!({"command": "no-such-program-cheng"})).await;
    assert_eq!(out["termination"], "spawn_failed");
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_SPAWN_FAILED");
    assert!(out["error"]
        .as_str()
        .unwrap()
        .contains("\"no-such-program-cheng\" was not found on PATH"));
    assert!(out["summary"].as_str().unwrap().contains("could not start"));
}

#[tokio::test]
async fn output_floods_are_bounded_and_stderr_floods_do_not_deadlock() {
    let ws = workspace();
    let out = ok(
        &ws,
        json!({"command": "head", "args": ["-c", "20000000", "/dev/zero"]}),
    )
    .await;
    assert_eq!(out["success"], true);
    assert_eq!(out["stdout_truncated"], true);
    assert!(out["stdout"].as_str().unwrap().len() <= STDOUT_CAP + 64);
    assert!(
        out["summary"]
            .as_str()
            .unwrap()
            .contains("stdout 19.1 MiB (truncated)"),
        "{}",
        out["summary"]
    );

    let script = "head -c 20000000 /dev/zero >&2; echo done";
    let out = ok(
        &ws,
        json!({"command": "sh", "args": ["-c", script], "timeout_ms": 120000}),
    )
    .await;
    assert_eq!(out["termination"], "exited");
    assert_eq!(out["stdout"], "done\n");
    assert_eq!(out["stderr_truncated"], true);
    assert!(out["stderr"].as_str().unwrap().len() <= STDERR_CAP + 64);
}

#[tokio::test]
async fn a_simple_shell_string_runs_as_argv_without_a_shell() {
    let ws = workspace();
    let out = ok(&ws, json!({"shell_string": r#"echo 'a;b|c' "d * e" f\ g"#})).await;
    assert_eq!(out["stdout"], "a;b|c d * e f g\n");
    assert_eq!(out["command_display"], "echo 'a;b|c' 'd * e' 'f g'");
    let e = err(&ws, json!({"shell_string": r#"echo "d $ e""#})).await;
    assert_eq!(
        e.kind,
        ErrorKind::PolicyDenied,
        "$ in double quotes expands in sh"
    );
}

#[tokio::test]
async fn with_the_switch_on_shell_strings_run_under_sh() {
    let ws = workspace();
    let out = ok(
        &ws,
        json!({"shell_string": "echo a | tr a b; echo $((1+2))", "allow_shell_string": true}),
    )
    .await;
    assert_eq!(out["stdout"], "b\n3\n");
    assert_eq!(
        out["command_display"],
        "sh -c 'echo a | tr a b; echo $((1+2))'"
    );
}

fn whitelisted(extra: Value) -> Value {
    let mut given = json!({"command_whitelist": "# build tools\n\n  echo  \nls\n"});
    if let (Value::Object(base), Value::Object(extra)) = (&mut given, extra) {
        base.extend(extra);
    }
    given
}

#[tokio::test]
async fn whitelisted_programs_run_and_others_are_denied() {
    let ws = workspace();
    let out = ok(
        &ws,
        whitelisted(json!({"command": "echo", "args": ["; id"]})),
    )
    .await;
    assert_eq!(out["stdout"], "; id\n");
    let e = err(&ws, whitelisted(json!({"command": "id"}))).await;
    assert_eq!(e.kind, ErrorKind::PolicyDenied);
    assert!(e.message.contains("echo, ls"), "{}", e.message);
    let e = err(&ws, whitelisted(json!({"command": "LS"}))).await;
    assert_eq!(e.kind, ErrorKind::PolicyDenied);
}

#[tokio::test]
async fn whitelist_bypass_through_paths_is_denied() {
    let ws = workspace();
    // A workspace file named like a whitelisted program.
    executable(&ws.root.join("ls"), "#!/bin/sh\ntouch pwned\n");
    for command in ["/bin/ls", "./ls", "sub/../ls", "/usr/bin/echo"] {
        let e = err(&ws, whitelisted(json!({"command": command}))).await;
        assert_eq!(e.kind, ErrorKind::PolicyDenied, "{command}");
        assert!(e.message.contains("path"), "{}", e.message);
    }
    // The bare name runs the system program, never the workspace file.
    let out = ok(&ws, whitelisted(json!({"command": "ls"}))).await;
    assert_eq!(out["success"], true);
    assert!(!ws.root.join("pwned").exists());
}

#[tokio::test]
async fn whitelist_denies_shell_syntax_even_with_the_switch_on() {
    let ws = workspace();
    for script in ["ls;id", "ls | id", "echo $(id)", "ls && touch pwned"] {
        let e = err(
            &ws,
            whitelisted(json!({"shell_string": script, "allow_shell_string": true})),
        )
        .await;
        assert_eq!(e.kind, ErrorKind::PolicyDenied, "{script}");
        assert!(e.message.contains("command_whitelist"), "{}", e.message);
    }
    for script in ["/bin/ls", "./ls", "id", "'/bin/ls' -la"] {
        let e = err(
            &ws,
            whitelisted(json!({"shell_string": script, "allow_shell_string": true})),
        )
        .await;
        assert_eq!(e.kind, ErrorKind::PolicyDenied, "{script}");
    }
    // The reference page: with a whitelist, shell strings are denied, even a simple one naming a listed
    // program (with or without the author's switch); command and args are the way.
    for switch in [true, false] {
        let e = err(
            &ws,
            whitelisted(json!({"shell_string": "echo 'x y'", "allow_shell_string": switch})),
        )
        .await;
        assert_eq!(e.kind, ErrorKind::PolicyDenied);
        assert!(
            e.message
                .contains("shell_string is denied because this node has a command_whitelist"),
            "{}",
            e.message
        );
    }
    let out = ok(
        &ws,
        whitelisted(json!({"command": "echo", "args": ["x y"]})),
    )
    .await;
    assert_eq!(out["stdout"], "x y\n");
    assert!(!ws.root.join("pwned").exists());
}

#[tokio::test]
async fn cwd_is_resolved_inside_the_workspace() {
    let ws = workspace();
    let out = ok(&ws, json!({"command": "pwd", "cwd": "sub/deeper"})).await;
    assert_eq!(
        out["stdout"].as_str().unwrap().trim_end(),
        ws.root.join("sub/deeper").to_str().unwrap()
    );
    assert_eq!(out["cwd"], "sub/deeper");
}

#[tokio::test]
async fn env_adds_variables_and_refuses_hooks() {
    let ws = workspace();
    let out = ok(
        &ws,
        json!({"command": "sh", "args": ["-c", "echo $TZ"], "env": {"TZ": "UTC"}}),
    )
    .await;
    assert_eq!(out["stdout"], "UTC\n");
    // A name outside the baseline needs the operator's env_allow.
    let e = err(&ws, json!({"command": "true", "env": {"GREETING": "hi"}})).await;
    assert_eq!(e.kind, ErrorKind::InvalidInput);
    assert!(
        e.message
            .contains("env.GREETING is not an allowed variable name")
            && e.message.contains("env_allow"),
        "{}",
        e.message
    );
    let hook = ws.root.join("hook.sh");
    executable(&hook, "touch pwned\n");
    for (name, value) in [
        ("LD_PRELOAD", "/tmp/x.so"),
        ("BASH_ENV", hook.to_str().unwrap()),
        ("PATH", "."),
    ] {
        let e = err(
            &ws,
            json!({"command": "bash", "args": ["-c", "true"], "env": { name: value }}),
        )
        .await;
        assert_eq!(e.kind, ErrorKind::InvalidInput, "{name}");
        assert!(e.message.contains(name), "{}", e.message);
    }
    assert!(!ws.root.join("pwned").exists());
    let e = err(&ws, json!({"command": "true", "env": {"PORT": 80}})).await;
    assert!(
        e.message.contains("env.PORT must be a string"),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn a_sandbox_root_in_the_input_cannot_move_the_workspace() {
    // A direct call (no engine) that puts "/" in sandbox_root: the root is the run's context,
    // so `cwd: "etc"` names <workspace>/etc, which does not exist, never the host's /etc.
    let ws = workspace();
    let mut given = input(&ws, json!({"command": "true", "cwd": "etc"}));
    given.insert("sandbox_root".into(), json!("/"));
    let e = WorkspaceShell
        .run(&ws.ctx, given)
        .await
        .expect_err("host /etc");
    assert_eq!(e.kind, ErrorKind::NotFound, "{}", e.message);
    std::fs::create_dir(ws.root.join("etc")).unwrap();
    let mut given = input(&ws, json!({"command": "pwd", "cwd": "etc"}));
    given.insert("sandbox_root".into(), json!("/"));
    let out = WorkspaceShell.run(&ws.ctx, given).await.unwrap();
    assert_eq!(
        out["stdout"].as_str().unwrap().trim(),
        ws.root.join("etc").to_str().unwrap()
    );
}

// ---- requests refused before anything runs ------------------------------------------------

#[test]
fn ports_match_the_reference_table() {
    let inputs: Vec<_> = spec()
        .inputs
        .iter()
        .map(|p| (p.name, p.ty.display(), p.default.unwrap_or("-")))
        .collect();
    assert_eq!(
        inputs,
        [
            ("command", "string".to_string(), "\"\""),
            ("args", "array<string>".to_string(), "[]"),
            ("shell_string", "string".to_string(), "null"),
            ("cwd", "string".to_string(), "null"),
            ("env", "object".to_string(), "{}"),
            ("timeout_ms", "integer".to_string(), "60000"),
            ("purpose", "string".to_string(), "null"),
            ("sandbox_root", "string".to_string(), "null"),
            ("allow_shell_string", "boolean".to_string(), "false"),
            ("command_whitelist", "string".to_string(), "\"\""),
        ]
    );
    let timeout = spec().input("timeout_ms").unwrap();
    assert_eq!((timeout.min, timeout.max), (Some(1), Some(600_000)));
    assert_eq!(
        spec().input("sandbox_root").unwrap().audience,
        Audience::Engine
    );
    let switch = spec().input("allow_shell_string").unwrap();
    assert_eq!(
        (switch.audience, switch.control),
        (Audience::Author, Some(Control::Switch))
    );
    let list = spec().input("command_whitelist").unwrap();
    assert_eq!(
        (list.audience, list.control),
        (Audience::Author, Some(Control::Textarea))
    );
    for name in [
        "command",
        "args",
        "shell_string",
        "cwd",
        "env",
        "timeout_ms",
        "purpose",
    ] {
        assert_eq!(
            spec().input(name).unwrap().audience,
            Audience::Llm,
            "{name}"
        );
        assert!(!spec().input(name).unwrap().required, "{name}");
    }
    let outputs: Vec<_> = spec().outputs.iter().map(|p| p.name).collect();
    assert_eq!(
        outputs,
        [
            "success",
            "summary",
            "command_display",
            "cwd",
            "exit_code",
            "termination",
            "duration_ms",
            "stdout",
            "stdout_truncated",
            "stderr",
            "stderr_truncated",
            "error_kind",
            "terminal",
            "error"
        ]
    );
    assert!(matches!(
        spec().output("exit_code").unwrap().ty,
        PortType::Integer
    ));
    assert_eq!(spec().effects, Effects::Approval(ApprovalRule::Always));
    assert_eq!(spec().category, "workspace");
}

#[tokio::test]
async fn exactly_one_of_command_or_shell_string() {
    let ws = workspace();
    for given in [
        json!({}),
        json!({"command": "", "shell_string": "  "}),
        json!({"command": "ls", "shell_string": "ls"}),
    ] {
        let e = err(&ws, given.clone()).await;
        assert_eq!(e.kind, ErrorKind::InvalidInput, "{given}");
        assert!(
            e.message.contains("command") && e.message.contains("shell_string"),
            "{}",
            e.message
        );
    }
    let e = err(&ws, json!({"shell_string": "ls", "args": ["-la"]})).await;
    assert_eq!(e.kind, ErrorKind::InvalidInput);
    assert!(e.message.contains("args"));
}

#[tokio::test]
async fn a_command_line_in_command_is_rejected_with_a_hint() {
    let ws = workspace();
    let e = err(&ws, json!({"command": "ls -la"})).await;
    assert_eq!(e.kind, ErrorKind::InvalidInput);
    assert!(
        e.message.contains("command=\"ls\", args=[\"-la\"]"),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn shell_syntax_is_denied_when_the_switch_is_off_and_nothing_runs() {
    let ws = workspace();
    for script in [
        "touch pwned;id",
        "touch pwned | cat",
        "touch pwned && id",
        "touch pwned & id",
        "touch $HOME",
        "touch `id`",
        "touch $(id)",
        "cat < /etc/passwd",
        "touch pwned > out",
        "touch *",
        "touch pw?ned",
        "touch {a,b}",
        "touch ~",
        "touch pwned\nid",
        "(touch pwned)",
        "A=1 touch pwned",
        "touch # comment",
    ] {
        let e = err(&ws, json!({"shell_string": script})).await;
        assert_eq!(e.kind, ErrorKind::PolicyDenied, "{script:?}: {}", e.message);
        assert!(e.terminal);
        assert!(e.message.contains("allow_shell_string"), "{}", e.message);
        assert!(e.message.contains("command and args"), "{}", e.message);
    }
    assert!(!ws.root.join("pwned").exists());
    assert!(!ws.root.join("out").exists());
}

#[tokio::test]
async fn unterminated_quotes_are_invalid_input() {
    let ws = workspace();
    let e = err(&ws, json!({"shell_string": "echo 'abc"})).await;
    assert_eq!(e.kind, ErrorKind::InvalidInput);
    assert!(
        e.message.contains("unterminated single quote"),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn malformed_whitelist_lines_name_the_line() {
    let ws = workspace();
    for list in ["ls\n/usr/bin/ls", "ls\ncargo test"] {
        let e = err(&ws, json!({"command": "ls", "command_whitelist": list})).await;
        assert_eq!(e.kind, ErrorKind::InvalidInput);
        assert!(
            e.message.contains("command_whitelist line 2"),
            "{}",
            e.message
        );
    }
}

#[tokio::test]
async fn cwd_escapes_are_refused() {
    let ws = workspace();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.root.join("link")).unwrap();
    for cwd in [
        "..",
        "sub/../..",
        "/etc",
        "/",
        "link",
        "link/.",
        ws.root.parent().unwrap().to_str().unwrap(),
    ] {
        let e = err(
            &ws,
            json!({"command": "touch", "args": ["pwned"], "cwd": cwd}),
        )
        .await;
        assert_eq!(
            e.kind,
            ErrorKind::PathOutsideWorkspace,
            "{cwd}: {}",
            e.message
        );
        assert!(e.message.contains("cwd"));
    }
    assert!(!outside.path().join("pwned").exists());
    let e = err(&ws, json!({"command": "ls", "cwd": "missing"})).await;
    assert_eq!(e.kind, ErrorKind::NotFound);
    std::fs::write(ws.root.join("file.txt"), "x").unwrap();
    let e = err(&ws, json!({"command": "ls", "cwd": "file.txt"})).await;
    assert_eq!(e.kind, ErrorKind::InvalidInput);
}

#[tokio::test]
async fn timeout_ms_out_of_range_names_the_limit() {
    let ws = workspace();
    for ms in [0, 700_000, -5] {
        let e = err(&ws, json!({"command": "true", "timeout_ms": ms})).await;
        assert_eq!(e.kind, ErrorKind::InvalidInput);
        assert!(e.message.contains("600000"), "{}", e.message);
    }
}

#[test]
fn approval_request_shows_command_cwd_and_purpose() {
    let ws = workspace();
    let given = json!({"command": "cargo", "args": ["test", "--no-fail-fast"], "cwd": "sub", "purpose": "Check the fix"});
    let request = WorkspaceShell
        .approval_request(&ws.ctx, &input(&ws, given))
        .unwrap();
    assert_eq!(request.command_display, "cargo test --no-fail-fast");
    assert_eq!(request.cwd, "sub");
    assert_eq!(request.purpose.as_deref(), Some("Check the fix"));
    assert_eq!(request.node_type, "tools/workspace_shell");
}

#[test]
fn approval_is_never_asked_for_a_request_that_would_be_refused() {
    let ws = workspace();
    let e = WorkspaceShell
        .approval_request(&ws.ctx, &input(&ws, json!({"shell_string": "ls;id"})))
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::PolicyDenied);
    let e = WorkspaceShell
        .approval_request(&ws.ctx, &input(&ws, json!({"command": "ls", "cwd": ".."})))
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::PathOutsideWorkspace);
}
