//! The sandboxed command starts with default signal dispositions. The init step is a Rust
//! program, whose runtime ignores SIGPIPE, and an ignored signal stays ignored across exec: the
//! script ran with SIGPIPE ignored (`SigIgn: 0000000000001000`), so a writer into a closed pipe
//! got EPIPE errors instead of ending as in any shell.

use super::support::*;
use serde_json::json;

/// The SigIgn mask of the command, as the sandbox runs it (through the `cheng` binary under test,
/// which uses the `cheng-sandbox-init` helper next to it).
#[test]
fn the_sandboxed_command_does_not_inherit_an_ignored_sigpipe() {
    if !bwrap_works() {
        return;
    }
    let (_d, ws) = temp_workspace();
    let script = "grep SigIgn /proc/self/status; yes | head -c 2 >/dev/null";
    let input = json!({ "script": script }).to_string();
    let out = run_cheng(&[
        "run",
        "tools/code_shell",
        "--workspace",
        ws.to_str().expect("utf-8"),
        "--input",
        &input,
    ]);
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    assert_eq!(
        value["success"],
        true,
        "{value} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = value["stdout"]
        .as_str()
        .or(value["result"].as_str())
        .unwrap_or("");
    let mask = stdout
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:"))
        .map(str::trim)
        .unwrap_or("missing");
    let mask =
        u64::from_str_radix(mask, 16).unwrap_or_else(|_| panic!("no SigIgn line in {value}"));
    assert_eq!(
        mask & (1 << (libc_sigpipe() - 1)),
        0,
        "SIGPIPE is ignored inside the sandbox: {stdout}"
    );
    // `yes` ends by the signal instead of complaining about a broken pipe.
    assert!(
        !value["stderr"]
            .as_str()
            .unwrap_or("")
            .contains("Broken pipe"),
        "{value}"
    );
}

/// SIGPIPE's number on Linux.
fn libc_sigpipe() -> u32 {
    13
}
