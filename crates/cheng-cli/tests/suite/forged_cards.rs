//! Approval cards a model cannot forge, through the real `cheng` binary on a pseudo-terminal
//! whose screen a terminal emulator (vt100) reads. A purpose, a command's arguments,
//! write_stdin's characters, a file name and a file's content each carry text that would move the
//! cursor, erase the card's lines and draw a harmless-looking field; the screen shows that text
//! escaped and the real command, and after `n` nothing ran. Each case's positive control puts
//! the raw text back where the card showed its escaped form and lets the emulator draw it: the
//! forged card, proving the attack would have worked without the escaper. A value padded to the
//! screen's width cannot pose as a field either: the card is fitted to the terminal's width.

use super::support::*;
use super::tty::{cheng_line, Session};
use cheng_node::display;
use serde_json::{json, Value};
use std::path::Path;

const SHELL: &str = "tools/workspace_shell";

/// Columns of the terminal the attacks run on unless a test says otherwise: wide enough that no
/// line of theirs is broken into rows.
const WIDE: u16 = 250;

/// The rows a terminal `WIDE` columns wide shows after `output` (tall enough that nothing
/// scrolls off).
fn screen(output: &str) -> String {
    screen_of_width(output, WIDE)
}

fn screen_of_width(output: &str, cols: u16) -> String {
    let size = |n| std::num::NonZeroU16::new(n).expect("non-zero");
    let mut parser = vt100::Parser::new(size(200), size(cols), 0);
    parser.process(output.as_bytes());
    // Row by row, as a person sees them (`contents()` would join a wrapped line's rows).
    let rows: Vec<String> = parser.screen().rows(0, cols).collect();
    rows.join("\n")
}

/// The screen's lines that read as the card's command field.
fn command_fields(screen: &str) -> Vec<&str> {
    screen
        .lines()
        .filter(|l| l.starts_with("  command:"))
        .collect()
}

/// Runs `node` with `input` at a terminal `WIDE` columns wide and answers `n`: the exit status
/// and everything the terminal received; `None` (a skip, a failure under CI) without `script`.
fn denied_at_the_prompt(ws: &Path, node: &str, input: &Value) -> Option<(i32, String)> {
    denied_at_a_terminal_of_width(ws, node, input, WIDE)
}

fn denied_at_a_terminal_of_width(
    ws: &Path,
    node: &str,
    input: &Value,
    cols: u16,
) -> Option<(i32, String)> {
    let input = input.to_string();
    let cheng = cheng_line(&[
        "run",
        node,
        "--workspace",
        ws.to_str().expect("utf-8 workspace"),
        "--input",
        &input,
    ]);
    let mut tty = Session::start(&format!("stty cols {cols} rows 100 && {cheng}"))?;
    tty.wait_for("Approve?", 1);
    tty.type_keys("n\n");
    Some(tty.finish())
}

/// The forged card: the terminal's output with `shown` (what the card drew) replaced by `raw`
/// (the text it stands for), as an unescaped card would have drawn it.
fn without_the_escaper(output: &str, shown: &str, raw: &str) -> String {
    assert!(
        output.contains(shown),
        "{shown:?} is not on the card:\n{output}"
    );
    screen(&output.replace(shown, raw))
}

#[test]
fn a_purpose_cannot_redraw_the_command() {
    let (_d, ws) = temp_workspace();
    let purpose = "list the files\u{1b}[3A\r\u{1b}[2K  command:  ls -la\u{1b}[3B\r\u{1b}[2K  purpose:  list the files";
    let input = json!({"command": "sh", "args": ["-c", "touch PWNED"], "purpose": purpose});
    let Some((code, output)) = denied_at_the_prompt(&ws, SHELL, &input) else {
        return;
    };
    let shown = screen(&output);
    assert_eq!(
        command_fields(&shown),
        ["  command:  sh -c 'touch PWNED'"],
        "{shown}"
    );
    let escaped = display::line(purpose);
    assert!(shown.contains(&format!("  purpose:  {escaped}")), "{shown}");
    assert!(escaped.as_str().contains("\\u{1b}[3A\\u{d}"), "{escaped}");
    assert!(shown.contains("APPROVAL_DENIED"), "{shown}");
    assert_ne!(code, 0);
    assert!(!ws.join("PWNED").exists());

    // Positive control: drawn raw, the purpose rewrites the command line the person reads.
    let forged = without_the_escaper(&output, escaped.as_str(), purpose);
    assert_eq!(command_fields(&forged), ["  command:  ls -la"], "{forged}");
    assert!(!forged.contains("touch PWNED"), "{forged}");
}

#[test]
fn a_command_argument_is_quoted_so_that_what_shows_is_what_runs() {
    let (_d, ws) = temp_workspace();
    let arg = "touch PWNED #\u{1b}[2K\r  command:  ls -la #";
    let input = json!({"command": "sh", "args": ["-c", arg]});
    let Some((_, output)) = denied_at_the_prompt(&ws, SHELL, &input) else {
        return;
    };
    let shown = screen(&output);
    // ANSI-C quoted: pasted into bash, exactly the argument that would run.
    let quoted = cheng_node::text::shell_quote(arg);
    assert_eq!(quoted, "$'touch PWNED #\\x1b[2K\\r  command:  ls -la #'");
    assert_eq!(
        command_fields(&shown),
        [format!("  command:  sh -c {quoted}")],
        "{shown}"
    );
    assert!(!ws.join("PWNED").exists());

    // Positive control: the old quoting, '…' around the raw argument.
    let forged = without_the_escaper(&output, &quoted, &format!("'{arg}'"));
    assert_eq!(
        command_fields(&forged),
        ["  command:  ls -la #'"],
        "{forged}"
    );
    assert!(!forged.contains("touch PWNED"), "{forged}");
}

/// The first card of [`write_denied_at_the_prompt`]'s graph.
const CAT_SESSION: &str = "  command:  cat (as a session that may keep running up to 60 min 0 s)";

/// A graph that starts `cat` in a session and writes `chars` to it, run at a terminal
/// `WIDE` columns wide: the start is approved, the write denied. (A write to a session needs one
/// to exist: a single `cheng run` refuses it before the card.)
fn write_denied_at_the_prompt(ws: &Path, chars: &str) -> Option<(i32, String)> {
    let graph = json!({"version": 1, "nodes": [
        {"id": "cat", "type": "tools/exec_command", "inputs": {"command": "cat", "yield_time_ms": 250}},
        {"id": "write", "type": "tools/write_stdin", "inputs": {"chars": chars}}],
        "edges": [{"from": "cat.session_id", "to": "write.session_id"}]});
    let graph = write_graph(ws, &graph);
    let cheng = cheng_line(&[
        "graph",
        "run",
        &graph,
        "--workspace",
        ws.to_str().expect("utf-8 workspace"),
    ]);
    let mut tty = Session::start(&format!("stty cols {WIDE} rows 100 && {cheng}"))?;
    tty.wait_for("Approve?", 1);
    tty.type_keys("y\n");
    tty.wait_for("Approve?", 2);
    tty.type_keys("n\n");
    Some(tty.finish())
}

#[test]
fn write_stdin_chars_cannot_pose_as_another_write() {
    let (_d, ws) = temp_workspace();
    let chars = "touch PWNED\r\u{1b}[2K  command:  write ls to session 7\n";
    let Some((_, output)) = write_denied_at_the_prompt(&ws, chars) else {
        return;
    };
    let shown = screen(&output);
    let quoted = cheng_node::text::shell_quote(chars);
    assert_eq!(
        quoted,
        "$'touch PWNED\\r\\x1b[2K  command:  write ls to session 7\\n'"
    );
    assert_eq!(
        command_fields(&shown),
        [
            CAT_SESSION.to_string(),
            format!("  command:  write {quoted} to session 1 (cat)")
        ],
        "{shown}"
    );

    let forged = without_the_escaper(&output, &quoted, &format!("'{chars}'"));
    assert_eq!(
        command_fields(&forged),
        [CAT_SESSION, "  command:  write ls to session 7"],
        "{forged}"
    );
    assert!(!forged.contains("touch PWNED"), "{forged}");
}

/// A single `cheng run` keeps no sessions: a write is refused before anyone is asked, with the
/// error the run itself would give, and a session id that names no live session in a graph is
/// refused the same way.
#[test]
fn a_write_to_no_session_is_refused_before_the_card() {
    let (_d, ws) = temp_workspace();
    let out = cheng()
        .args([
            "run",
            "tools/write_stdin",
            "--workspace",
            ws.to_str().unwrap_or(""),
        ])
        .args(["--input", r#"{"session_id": 7, "chars": "ls\n"}"#])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("cheng runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let result: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert_eq!(
        result["error_kind"], "LOCAL_EXECUTOR_NOT_FOUND",
        "{result}\n{stderr}"
    );
    assert!(
        result["error"]
            .as_str()
            .unwrap_or("")
            .contains("a single `cheng run` keeps no sessions"),
        "{result}"
    );
    assert!(!stderr.contains("needs approval"), "asked anyway: {stderr}");

    let graph = json!({"version": 1, "nodes": [
        {"id": "cat", "type": "tools/exec_command", "inputs": {"command": "cat", "yield_time_ms": 250}},
        {"id": "write", "type": "tools/write_stdin", "inputs": {"session_id": 9, "chars": "ls\n"}}],
        "edges": [{"from": "cat.summary", "to": "write.purpose"}]});
    let graph = write_graph(&ws, &graph);
    let out = cheng()
        .args([
            "graph",
            "run",
            &graph,
            "--workspace",
            ws.to_str().unwrap_or(""),
        ])
        .arg("--approve")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("cheng runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let result: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let write = &result["nodes"]["write"]["outputs"];
    assert_eq!(
        write["error_kind"], "LOCAL_EXECUTOR_NOT_FOUND",
        "{result}\n{stderr}"
    );
    assert!(
        write["error"]
            .as_str()
            .unwrap_or("")
            .contains("session_id 9 is unknown"),
        "{result}"
    );
    assert!(
        stderr.contains("tools/exec_command"),
        "the start was not approved: {stderr}"
    );
    assert!(
        !stderr.contains("tools/write_stdin"),
        "asked anyway: {stderr}"
    );
}

#[test]
fn a_file_name_cannot_pose_as_another_file() {
    let (_d, ws) = temp_workspace();
    let name = "PWNED\r\u{1b}[2K  command:  write_file: create notes.txt";
    let input = json!({"file_path": name, "content": "data\n"});
    let Some((_, output)) = denied_at_the_prompt(&ws, "tools/write_file", &input) else {
        return;
    };
    let shown = screen(&output);
    let escaped = display::line(name);
    assert_eq!(
        command_fields(&shown),
        [format!("  command:  write_file: create {escaped} (5 B)")],
        "{shown}"
    );
    assert!(shown.contains(&format!("  | +++ b/{escaped}")), "{shown}");
    assert_eq!(
        std::fs::read_dir(&ws).expect("workspace").count(),
        0,
        "nothing may be written"
    );

    // Positive control: every line naming the file (the command, the details' headline and the
    // diff's header) turns into the forged command.
    let forged = without_the_escaper(&output, escaped.as_str(), name);
    let fields = command_fields(&forged);
    assert_eq!(fields[0], "  command:  write_file: create notes.txt (5 B)");
    assert!(fields.len() > 1, "{forged}");
    assert!(!forged.contains("PWNED"), "{forged}");
}

#[test]
fn a_file_content_in_the_diff_cannot_pose_as_a_field() {
    let (_d, ws) = temp_workspace();
    let forged_line = "\r\u{1b}[2K  command:  write_file: create notes.txt (3 B)";
    let content = format!("rm -rf ~\n{forged_line}\n");
    let input = json!({"file_path": "run.sh", "content": content});
    let Some((_, output)) = denied_at_the_prompt(&ws, "tools/write_file", &input) else {
        return;
    };
    let shown = screen(&output);
    let real = format!(
        "  command:  write_file: create run.sh ({} B)",
        content.len()
    );
    assert_eq!(command_fields(&shown), [real.as_str()], "{shown}");
    let escaped = display::line(forged_line);
    assert!(shown.contains(&format!("  | +{escaped}")), "{shown}");
    assert!(shown.contains("  | +rm -rf ~"), "{shown}");
    assert!(!ws.join("run.sh").exists());

    let forged = without_the_escaper(&output, escaped.as_str(), forged_line);
    assert_eq!(
        command_fields(&forged),
        [
            real.as_str(),
            "  command:  write_file: create notes.txt (3 B)"
        ],
        "{forged}"
    );
}

#[test]
fn a_value_padded_to_the_screen_width_cannot_wrap_into_a_field() {
    // No control character at all: the purpose fills the first row of an 80-column screen so
    // that the terminal would carry the rest on at column 0, where it reads as a field.
    let (_d, ws) = temp_workspace();
    let purpose = format!(
        "{}  command:  ls -la",
        "x".repeat(80 - "  purpose:  ".len())
    );
    let input = json!({"command": "sh", "args": ["-c", "touch PWNED"], "purpose": purpose});
    let Some((_, output)) = denied_at_a_terminal_of_width(&ws, SHELL, &input, 80) else {
        return;
    };
    let shown = screen_of_width(&output, 80);
    assert_eq!(
        command_fields(&shown),
        ["  command:  sh -c 'touch PWNED'"],
        "{shown}"
    );
    assert!(
        shown.contains("\n            |   command:  ls -la\n"),
        "{shown}"
    );
    assert!(!ws.join("PWNED").exists());

    // Positive control: the card as drawn for a wide screen, shown on the 80-column one, is
    // wrapped by the terminal into the forged field.
    let Some((_, unfitted)) = denied_at_the_prompt(&ws, SHELL, &input) else {
        return;
    };
    let forged = screen_of_width(&unfitted, 80);
    assert_eq!(
        command_fields(&forged),
        ["  command:  sh -c 'touch PWNED'", "  command:  ls -la"],
        "{forged}"
    );
}
