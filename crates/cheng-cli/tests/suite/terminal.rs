//! `cheng run` as a person at a terminal uses it: output that shows while the command runs, the
//! command after `--`, array ports from `--set`, and `cheng serve` in the current directory.

use super::mcp_pipe::McpPipe;
use super::support::{cheng, text};
use super::tty::{cheng_line, Session};
use serde_json::{json, Value};

/// The command prints a line, then waits for a file only the test creates once that line is on
/// the screen: if cheng held the output until the command exited, the line would never show
/// and the wait would fail.
#[test]
fn a_commands_output_shows_while_it_runs_then_the_summary() {
    let ws = tempfile::tempdir().expect("workspace");
    let go = ws.path().join("go");
    // printf spells the lines so that the command line (in the summary) does not contain them.
    let script =
        "printf 'first%sline\\n' -; while [ ! -e go ]; do sleep 0.05; done; printf 'second%sline\\n' - >&2";
    let ws_arg = ws.path().to_str().expect("utf-8 path");
    let line = cheng_line(&[
        "run",
        "workspace_shell",
        "-w",
        ws_arg,
        "--approve",
        "-q",
        "--",
        "sh",
        "-c",
        script,
    ]);
    let Some(mut session) = Session::start(&line) else {
        return;
    };
    session.wait_for("first-line", 1);
    assert!(
        !session.screen().contains("exited 0"),
        "the summary came before the command ended:\n{}",
        session.screen()
    );
    std::fs::write(&go, "").expect("create the go file");
    let (code, screen) = session.finish();
    assert_eq!(code, 0, "{screen}");
    assert_eq!(
        screen.matches("first-line").count(),
        1,
        "printed again after the run:\n{screen}"
    );
    assert_eq!(screen.matches("second-line").count(), 1, "{screen}");
    let second = screen.find("second-line").expect("second line");
    let summary = screen.find("exited 0").expect("the summary line");
    assert!(
        second < summary,
        "the summary comes after the output:\n{screen}"
    );
}

/// Not on a terminal (a pipe), the text is printed once, after the run, as before.
#[test]
fn piped_text_is_printed_once_after_the_run() {
    let ws = tempfile::tempdir().expect("workspace");
    let out = cheng()
        .args([
            "run",
            "workspace_shell",
            "--format",
            "text",
            "--approve",
            "-q",
            "-w",
        ])
        .arg(ws.path())
        .args(["--", "echo", "only-once"])
        .output()
        .expect("cheng runs");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "only-once\n");
}

fn json_run(ws: &std::path::Path, args: &[&str]) -> (i32, Value, String) {
    let out = cheng()
        .args(["run", "workspace_shell", "--json", "--approve", "-q", "-w"])
        .arg(ws)
        .args(args)
        .output()
        .expect("cheng runs");
    let stdout = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), stdout, text(&out.stderr))
}

#[test]
fn the_words_after_double_dash_are_the_command_and_its_args() {
    let ws = tempfile::tempdir().expect("workspace");
    let (code, out, err) = json_run(ws.path(), &["--", "echo", "a b", "--flag"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out["stdout"], "a b --flag\n");
    assert_eq!(out["command_display"], "echo 'a b' --flag", "{out}");

    // Given twice, it is refused rather than one of them silently winning.
    let (code, _, err) = json_run(ws.path(), &["--set", "command=ls", "--", "echo", "x"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("command is given both after `--` and with --set"),
        "{err}"
    );

    // A node without command and args ports says how to give its inputs.
    let out = cheng()
        .args(["run", "read_file", "-w"])
        .arg(ws.path())
        .args(["--", "echo", "x"])
        .output()
        .expect("cheng runs");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("tools/read_file has no command and args ports"),
        "{err}"
    );
}

#[test]
fn array_ports_take_appends_and_a_string_gets_a_hint() {
    let ws = tempfile::tempdir().expect("workspace");
    let (code, out, err) = json_run(
        ws.path(),
        &[
            "--set",
            "command=echo",
            "--set",
            "args+=a",
            "--set",
            "args+=b c",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out["stdout"], "a b c\n", "{out}");

    let (code, _, err) = json_run(
        ws.path(),
        &["--set", "command=echo", "--set", "args=test now"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("args"), "{err}");
    assert!(
        err.contains(r#"hint: args is an array of strings: --set 'args:=["test","now"]' (or --set args+=test --set args+=now)"#),
        "{err}"
    );

    let (code, _, err) = json_run(
        ws.path(),
        &[
            "--set",
            "command=echo",
            "--set",
            "args:=[]",
            "--set",
            "args+=x",
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("both set and appended to"), "{err}");
}

/// Without --workspace the server serves the directory it was started in, as `cheng run` does.
#[test]
fn serve_takes_the_current_directory() {
    let ws = tempfile::tempdir().expect("workspace");
    std::fs::write(
        ws.path().join("here.txt"),
        "served from the current directory\n",
    )
    .expect("write");
    let mut server = McpPipe::start_in(ws.path());
    server.initialize();
    let out = server.call(1, "read_file", json!({"file_path": "here.txt"}));
    assert!(
        out["content"]
            .as_str()
            .is_some_and(|c| c.contains("served from the current directory")),
        "{out}"
    );
}

/// A single run's exec_command shows the session's output as it comes, says that it waits, and
/// Ctrl-C ends it with everything it started.
#[test]
fn exec_command_streams_at_a_terminal_and_ctrl_c_ends_it() {
    let ws = tempfile::tempdir().expect("workspace");
    let ws_arg = ws.path().to_str().expect("utf-8 path");
    // A sleep nothing else on the machine runs, to look for afterwards.
    let script = "printf 'banner%sup\\n' -; exec sleep 31.25";
    let line = cheng_line(&[
        "run",
        "exec_command",
        "-w",
        ws_arg,
        "--approve",
        "-q",
        "--",
        "sh",
        "-c",
        script,
    ]);
    let Some(mut session) = Session::start(&line) else {
        return;
    };
    session.wait_for("waits for the command to exit (Ctrl-C ends it)", 1);
    session.wait_for("banner-up", 1);
    session.type_keys("\u{3}");
    let (code, screen) = session.finish();
    assert_eq!(code, 130, "{screen}");
    let left = std::process::Command::new("pgrep")
        .args(["-f", "sleep 31.25"])
        .output()
        .expect("pgrep runs");
    assert!(
        left.stdout.is_empty(),
        "left running: {}",
        text(&left.stdout)
    );
}

/// What bash offers after sourcing `cheng completions bash`, for the words typed so far (the
/// last one is the word being completed).
fn bash_completes(words: &[&str]) -> Vec<String> {
    let bin_dir = std::path::Path::new(env!("CARGO_BIN_EXE_cheng"))
        .parent()
        .expect("bin dir")
        .to_path_buf();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let quoted: Vec<String> = words.iter().map(|w| super::tty::quote(w)).collect();
    let script = format!(
        "source <(cheng completions bash) || exit 3\n\
         COMP_WORDS=({words}); COMP_CWORD={last}; COMP_TYPE=9\n\
         _clap_complete_cheng cheng {current} {previous}\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        words = quoted.join(" "),
        last = words.len() - 1,
        current = quoted[words.len() - 1],
        previous = quoted[words.len().saturating_sub(2)],
    );
    let out = std::process::Command::new("bash")
        .args(["-c", &script])
        .env("PATH", path)
        .env_remove("CHENG_COMPLETE")
        .output()
        .expect("bash runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout).lines().map(str::to_string).collect()
}

#[test]
fn bash_completes_node_ids_and_ports_and_keeps_maintainer_commands_out() {
    assert_eq!(
        bash_completes(&["cheng", "run", "workspace_g"]),
        ["workspace_git"]
    );
    assert_eq!(
        bash_completes(&["cheng", "describe", "tools/workspace_sh"]),
        ["tools/workspace_shell"]
    );
    assert_eq!(
        bash_completes(&["cheng", "run", "workspace_git", "--set", "op"]),
        ["operation="]
    );
    assert!(
        bash_completes(&["cheng", "run", "workspace_git", "--set", "operation="])
            .contains(&"operation=diff".to_string())
    );
    let ports = bash_completes(&["cheng", "run", "workspace_shell", "--set", ""]);
    assert!(ports.contains(&"command=".to_string()), "{ports:?}");
    assert!(
        !ports.iter().any(|p| p.starts_with("command_whitelist")),
        "author-only port offered to --set: {ports:?}"
    );
    assert_eq!(
        bash_completes(&["cheng", "s"]),
        ["serve"],
        "schemas is a maintainer command"
    );
    assert!(bash_completes(&["cheng", ""])
        .iter()
        .all(|c| c != "docs" && c != "schemas"));
}

/// `cheng policy show` lists every node type; one gated off here says so and how to offer it.
#[test]
fn policy_show_marks_node_types_gated_off() {
    let show = |gate: Option<&str>| {
        let mut cmd = cheng();
        cmd.args(["policy", "show"]);
        if let Some(var) = gate {
            cmd.env(var, "1");
        }
        let out = cmd.output().expect("cheng runs");
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let mark = "[nodes.\"tools/code_python\"]\n  # not offered here: CHENG_ENABLE_CODE_PYTHON is unset (set CHENG_ENABLE_CODE_PYTHON=1 to register it)";
    let without = show(None);
    assert!(without.contains(mark), "{without}");
    assert!(
        !without.contains("[nodes.\"tools/workspace_shell\"]\n  # not offered"),
        "{without}"
    );
    let with = show(Some("CHENG_ENABLE_CODE_PYTHON"));
    assert!(
        with.contains("[nodes.\"tools/code_python\"]\n  disabled"),
        "{with}"
    );
}
