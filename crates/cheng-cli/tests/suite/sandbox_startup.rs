//! The sandbox's start-up path as the real `cheng` builds it: the init step is handed to
//! bubblewrap on a descriptor and executed from there (not mounted into the view), /run is part
//! of the read-only root, and code_shell's small I/O directory is copied in. Each test attacks
//! what that could open up: the init step's descriptor reaching the script, or the executable
//! behind it being writable from inside.

use super::code_shell_unprivileged::{run_unprivileged, unprivileged_sandbox_works};
use super::support::*;
use serde_json::json;
use std::path::Path;

/// Lists the script's descriptors, every other process's descriptors it can write through, and
/// what of the init step and /run it can see or change.
const PROBE: &str = "ls /proc/self/fd | tr '\\n' ' '; echo; \
    for f in /proc/[0-9]*/fd/*; do case $f in /proc/$$/*|/proc/self/*) continue;; esac; \
        (echo x >> \"$f\") 2>/dev/null && echo \"wrote $f\"; done; \
    grep -c 'cheng-sandbox-init\\| /run/cheng-init ' /proc/self/mountinfo; \
    ls -A /run | tr '\\n' ' '; echo; \
    (echo x > /run/new) 2>/dev/null && echo 'wrote /run/new'; \
    (echo x >> \"$INPUT_FILE\") 2>/dev/null && echo 'wrote the input'; \
    (mkdir /run/cheng-io/d) 2>/dev/null && echo 'made /run/cheng-io/d'; \
    cat \"$INPUT_FILE\"";

/// What [`PROBE`] must print: descriptors 0-2 and the one `ls` opens; nothing written; no
/// mount of the init step; /run holding only the I/O directory; the input intact.
const EXPECTED: &str = "0 1 2 3 \n0\ncheng-io \n{\"k\":\"v\"}";

fn mtime(path: &Path) -> std::time::SystemTime {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .expect("stat the init executable")
}

#[test]
fn the_init_steps_descriptor_never_reaches_the_script_as_root() {
    if !bwrap_works() {
        return;
    }
    let helper = Path::new(env!("CARGO_BIN_EXE_cheng-sandbox-init"));
    let before = mtime(helper);
    let (_d, ws) = temp_workspace();
    let (code, out, stderr) = run_node(
        "tools/code_shell",
        &ws,
        &json!({"script": PROBE, "input": {"k": "v"}}),
        &[],
    );
    assert_eq!(code, 0, "{out} {stderr}");
    assert_eq!(
        out["stdout"].as_str().unwrap_or_default().trim_end(),
        EXPECTED,
        "{out}"
    );
    // The init step ran (Landlock is applied by it) and its executable is untouched.
    assert!(
        out["metrics"]["limits"]["landlock"]
            .as_str()
            .unwrap_or("")
            .starts_with("enforced"),
        "{out}"
    );
    assert_eq!(mtime(helper), before);
}

#[test]
fn the_init_steps_descriptor_never_reaches_the_script_unprivileged() {
    if !unprivileged_sandbox_works() {
        return;
    }
    // uid 65534 owns the workspace; in its user namespace the script runs as that same uid, the
    // owner of nothing cheng runs from, and must not reach the init step's descriptor either.
    let (_d, ws) = super::code_shell_unprivileged::nobody_dir("/tmp");
    let (code, out, stdout, stderr) = run_unprivileged(
        "tools/code_shell",
        &ws,
        &json!({"script": PROBE, "input": {"k": "v"}}),
        None,
        &[],
    );
    assert_eq!(code, 0, "{stdout} {stderr}");
    assert_eq!(
        out["stdout"].as_str().unwrap_or_default().trim_end(),
        EXPECTED,
        "{stdout}"
    );
    assert!(
        out["metrics"]["limits"]["landlock"]
            .as_str()
            .unwrap_or("")
            .starts_with("enforced"),
        "{stdout}"
    );
}
