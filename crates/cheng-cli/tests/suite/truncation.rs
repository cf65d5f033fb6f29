//! Every node that truncates output, end to end through the real binary: a known, exact number of
//! bytes is written, and the `...[omitted N bytes]...` marker must account for exactly the bytes
//! dropped (kept + N == written), the kept head and tail must be the written stream's own start
//! and end, and any reported byte count must equal what was written.
#![allow(unused_imports)]
use super::support::*;

use serde_json::{json, Value};
use std::path::Path;

/// Filler making each numbered line 100 bytes (few lines: the test runners' parsers work per line).
const PAD: &str =
    "...........................................................................................";

/// `lines` numbered 100-byte lines (`00000001.....\n` ...) then `end`: every position is
/// recognisable, so a head or tail taken from the wrong place cannot match.
fn numbered(lines: usize) -> String {
    let mut text: String = (1..=lines).map(|i| format!("{i:08}{PAD}\n")).collect();
    text.push_str("end");
    text
}

/// The shell command writing [`numbered`]`(lines)` to stdout.
fn numbered_sh(lines: usize) -> String {
    format!("seq -f '%08g{PAD}' 1 {lines}; printf end")
}

/// Checks `shown` (a node's text output) against the `written` stream: one marker, whose N is the
/// number of bytes missing between the kept head and tail, and a head and tail that together are
/// exactly `cap` bytes (the node's documented limit, written here, not read from the node: a node
/// keeping more or less than its limit fails). Returns N.
fn assert_accounted(what: &str, shown: &str, written: &str, cap: usize) -> u64 {
    let (head, tail) = cheng_test_support::assert_cut_to(what, shown, written.len() as u64, cap);
    assert!(
        written.starts_with(head),
        "{what}: the kept head is not the start of what was written"
    );
    assert!(
        written.ends_with(tail),
        "{what}: the kept tail is not the end of what was written"
    );
    assert!(
        !head.is_empty() && !tail.is_empty(),
        "{what}: head {} bytes, tail {} bytes",
        head.len(),
        tail.len()
    );
    // The helper checked the marker's N against this.
    (written.len() - cap) as u64
}

#[test]
fn the_marker_check_itself_catches_a_miscount() {
    let written = numbered(100);
    let shown = format!(
        "{}\n...[omitted {} bytes]...\n{}",
        &written[..50],
        written.len() - 100,
        &written[written.len() - 50..]
    );
    assert_eq!(
        assert_accounted("exact", &shown, &written, 100),
        written.len() as u64 - 100
    );
    let off_by_one = format!(
        "{}\n...[omitted {} bytes]...\n{}",
        &written[..50],
        written.len() - 99,
        &written[written.len() - 50..]
    );
    assert!(std::panic::catch_unwind(|| assert_accounted(
        "miscounted",
        &off_by_one,
        &written,
        100
    ))
    .is_err());
}

#[test]
fn workspace_shell_accounts_for_every_dropped_byte() {
    let (_d, ws) = temp_workspace();
    // stdout cap 1 MiB, stderr cap 256 KiB: 3 MB and 1 MB written.
    let (out_lines, err_lines) = (30_000, 10_000);
    let script = format!(
        "{}; {{ {}; }} >&2",
        numbered_sh(out_lines),
        numbered_sh(err_lines)
    );
    let input = json!({"command": "sh", "args": ["-c", script]});
    let (code, out, stderr) = run_node("tools/workspace_shell", &ws, &input, &["--approve"]);
    assert_eq!(code, 0, "{out} {stderr}");
    assert_eq!(
        (
            out["stdout_truncated"].clone(),
            out["stderr_truncated"].clone()
        ),
        (json!(true), json!(true)),
        "{}",
        out["summary"]
    );
    assert_accounted(
        "workspace_shell stdout",
        out["stdout"].as_str().unwrap_or_default(),
        &numbered(out_lines),
        1 << 20,
    );
    assert_accounted(
        "workspace_shell stderr",
        out["stderr"].as_str().unwrap_or_default(),
        &numbered(err_lines),
        256 << 10,
    );
}

#[test]
fn workspace_tests_run_accounts_for_every_dropped_byte() {
    let (_d, ws) = temp_workspace();
    // Returned at 256 KiB out of a 4 MiB capture: once below the capture cap (one cut), once
    // just above it (cut at capture, then again for the output).
    for lines in [11_111, 42_300] {
        let input =
            json!({"operation": "run", "command": "sh", "args": ["-c", numbered_sh(lines)]});
        let (code, out, stderr) = run_node("tools/workspace_tests", &ws, &input, &["--approve"]);
        assert_eq!(code, 0, "{lines} lines: {out} {stderr}");
        assert_eq!(out["stdout_truncated"], true, "{lines} lines");
        assert_accounted(
            &format!("workspace_tests stdout, {lines} lines"),
            out["stdout"].as_str().unwrap_or_default(),
            &numbered(lines),
            256 << 10,
        );
    }
}

#[test]
fn code_shell_accounts_for_every_dropped_byte() {
    if !bwrap_works() {
        return;
    }
    let (_d, ws) = temp_workspace();
    let (out_lines, err_lines) = (30_000, 10_000);
    let script = format!(
        "{}; {{ {}; }} >&2",
        numbered_sh(out_lines),
        numbered_sh(err_lines)
    );
    let (code, out, stderr) = run_node("tools/code_shell", &ws, &json!({"script": script}), &[]);
    assert_eq!(code, 0, "{out} {stderr}");
    let (written_out, written_err) = (numbered(out_lines), numbered(err_lines));
    let metrics = &out["metrics"];
    assert_eq!(metrics["stdout_bytes"], written_out.len(), "{metrics}");
    assert_eq!(metrics["stderr_bytes"], written_err.len(), "{metrics}");
    assert_eq!(
        (
            metrics["stdout_truncated"].clone(),
            metrics["stderr_truncated"].clone()
        ),
        (json!(true), json!(true)),
        "{metrics}"
    );
    assert_accounted(
        "code_shell stdout",
        out["stdout"].as_str().unwrap_or_default(),
        &written_out,
        1 << 20,
    );
    assert_accounted(
        "code_shell stderr",
        out["stderr"].as_str().unwrap_or_default(),
        &written_err,
        256 << 10,
    );
}

#[test]
fn code_python_accounts_for_every_dropped_byte() {
    if !bwrap_works() {
        return;
    }
    let (_d, ws) = temp_workspace();
    let (out_lines, err_lines) = (30_000, 10_000);
    let script = format!(
        "import sys\ndef numbered(n):\n    return ''.join('%08d{PAD}\\n' % i for i in range(1, n + 1)) + 'end'\n\
         sys.stdout.write(numbered({out_lines}))\nsys.stderr.write(numbered({err_lines}))\nresult = 'written'"
    );
    let input = json!({"script": script}).to_string();
    let output = cheng()
        .env("CHENG_ENABLE_CODE_PYTHON", "1")
        .args([
            "run",
            "tools/code_python",
            "--workspace",
            ws.to_str().unwrap_or_default(),
            "--input",
            &input,
        ])
        .output()
        .expect("cheng runs");
    let out: Value = serde_json::from_slice(&output.stdout).unwrap_or_default();
    assert_eq!(
        out["result"],
        "written",
        "{out} {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let (written_out, written_err) = (numbered(out_lines), numbered(err_lines));
    let metrics = &out["metrics"];
    assert_eq!(metrics["stdout_bytes"], written_out.len(), "{metrics}");
    assert_eq!(metrics["stderr_bytes"], written_err.len(), "{metrics}");
    assert_accounted(
        "code_python stdout",
        out["stdout"].as_str().unwrap_or_default(),
        &written_out,
        1 << 20,
    );
    assert_accounted(
        "code_python stderr",
        out["stderr"].as_str().unwrap_or_default(),
        &written_err,
        256 << 10,
    );
}

/// git diff and git show: the patch cut to a small max_bytes is checked against the same patch
/// read whole (max_bytes 16 MiB), and diff's summary names the whole patch's size.
#[test]
fn workspace_git_diff_and_show_account_for_every_dropped_byte() {
    if !require_or_skip("git") {
        return;
    }
    let (_d, ws) = temp_workspace();
    git(&ws, &["-c", "init.defaultBranch=main", "init", "-q", "."]);
    std::fs::write(ws.join("big.txt"), numbered(2_000)).expect("write");
    git(&ws, &["add", "big.txt"]);
    git(&ws, &["commit", "-qm", "numbered lines"]);
    std::fs::write(ws.join("big.txt"), numbered(2_000).replace('0', "o")).expect("write");
    let git_node = |operation: &str, max_bytes: u64| {
        let input = json!({"operation": operation, "max_bytes": max_bytes});
        let (code, out, stderr) = run_node("tools/workspace_git", &ws, &input, &[]);
        assert_eq!(code, 0, "{operation} max_bytes {max_bytes}: {out} {stderr}");
        out
    };
    for operation in ["diff", "show"] {
        let whole = git_node(operation, 16 << 20);
        assert_eq!(
            whole["stdout_truncated"], false,
            "{operation}: {}",
            whole["summary"]
        );
        let written = whole["stdout"].as_str().unwrap_or_default().to_string();
        assert!(
            written.len() > 100_000,
            "{operation}: the patch is only {} bytes",
            written.len()
        );
        let cut = git_node(operation, 10_000);
        assert_eq!(
            cut["stdout_truncated"], true,
            "{operation}: {}",
            cut["summary"]
        );
        assert_accounted(
            &format!("workspace_git {operation}"),
            cut["stdout"].as_str().unwrap_or_default(),
            &written,
            10_000,
        );
        if operation == "diff" {
            let size = format!("patch is {} bytes", written.len());
            assert!(
                cut["summary"].as_str().unwrap_or_default().contains(&size),
                "{operation}: {} (expected {size})",
                cut["summary"]
            );
        }
    }
}

/// Output that is not UTF-8: each 0xff byte is shown as one U+FFFD (three bytes of text), so the
/// marker's N must be counted in the bytes written, not in the bytes of the text shown.
fn assert_accounted_ff(what: &str, shown: &str, written: usize, cap: usize) {
    const OPEN: &str = "\n...[omitted ";
    const CLOSE: &str = " bytes]...\n";
    let start = shown
        .find(OPEN)
        .unwrap_or_else(|| panic!("{what}: no omission marker"));
    let rest = &shown[start + OPEN.len()..];
    let close = rest
        .find(CLOSE)
        .unwrap_or_else(|| panic!("{what}: unterminated marker"));
    let omitted: usize = rest[..close]
        .parse()
        .unwrap_or_else(|e| panic!("{what}: marker count {:?}: {e}", &rest[..close]));
    let (head, tail) = (&shown[..start], &rest[close + CLOSE.len()..]);
    assert!(
        head.chars().chain(tail.chars()).all(|c| c == '\u{FFFD}'),
        "{what}: kept text is not the written bytes"
    );
    let kept = head.chars().count() + tail.chars().count();
    assert_eq!(kept, cap, "{what}: kept {kept} bytes, not the cap of {cap}");
    assert_eq!(
        kept + omitted,
        written,
        "{what}: kept {kept} bytes + omitted {omitted} != written {written}"
    );
}

#[test]
fn bytes_that_are_not_utf8_are_counted_as_written() {
    let (_d, ws) = temp_workspace();
    let written = 300_000;
    let script = format!("head -c {written} /dev/zero | tr '\\000' '\\377'");
    let input = json!({"operation": "run", "command": "sh", "args": ["-c", &script]});
    let (code, out, stderr) = run_node("tools/workspace_tests", &ws, &input, &["--approve"]);
    assert_eq!(code, 0, "{out} {stderr}");
    assert_accounted_ff(
        "workspace_tests stdout",
        out["stdout"].as_str().unwrap_or_default(),
        written,
        256 << 10,
    );
    let input =
        json!({"command": "sh", "args": ["-c", format!("{script}; {script}; {script}; {script}")]});
    let (code, out, stderr) = run_node("tools/workspace_shell", &ws, &input, &["--approve"]);
    assert_eq!(code, 0, "{out} {stderr}");
    assert_accounted_ff(
        "workspace_shell stdout",
        out["stdout"].as_str().unwrap_or_default(),
        4 * written,
        1 << 20,
    );
}
