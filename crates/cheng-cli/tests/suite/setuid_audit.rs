//! The setuid attack through the real `cheng` binary (with its sandbox init step), as
//! root: a writable run makes a setuid (or setgid) file in the workspace by chmod in code_shell
//! (creating one with the bits in code_python is `seccomp::code_python_cannot_create_a_setuid_file`).
//! Whatever stops it (the seccomp filter, or the audit after the run), nothing privileged is left
//! on the host, nobody who runs the file becomes root, and a bit that was set inside is named in
//! `warnings`.

use super::support::*;
use serde_json::json;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

/// bwrap and root are what this attack needs; in CI their absence is a failure, not a skip.
fn runs_here() -> bool {
    let root = is_root();
    let ok = root && bwrap_works();
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "the setuid attack tests need root and bubblewrap in CI"
        );
        eprintln!("skipped: needs root and a working bubblewrap");
    }
    ok
}

/// The host side: no setuid/setgid bit on `name`, and running it as nobody does not give euid 0.
fn assert_not_privileged(ws: &Path, name: &str, context: &str) {
    let path = ws.join(name);
    let mode = std::fs::metadata(&path)
        .unwrap_or_else(|e| panic!("{name} was not made ({e}): {context}"))
        .permissions()
        .mode();
    assert_eq!(
        mode & 0o6000,
        0,
        "{name} is setuid/setgid on the host (mode {mode:o}): {context}"
    );
    std::fs::set_permissions(ws, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(&path)
        .args(["-p", "-c", "id"])
        .output();
    if let Ok(out) = out {
        let id = String::from_utf8_lossy(&out.stdout);
        assert!(
            !id.contains("euid=0"),
            "nobody became root through {name}: {id}"
        );
    }
}

#[test]
fn code_shell_cannot_leave_a_setuid_root_shell() {
    if !runs_here() {
        return;
    }
    let (_d, ws) = temp_workspace();
    let script = "cp /bin/bash ./sh && chmod 4755 ./sh && echo CHMOD_OK";
    let (_code, out, stderr) = run_node(
        "tools/code_shell",
        &ws,
        &json!({"allow_filesystem": true, "script": script}),
        &["--config", r#"{"allow_filesystem":true}"#],
    );
    let context = format!("{out} {stderr}");
    assert_not_privileged(&ws, "sh", &context);
    if out["stdout"]
        .as_str()
        .is_some_and(|s| s.contains("CHMOD_OK"))
    {
        assert!(
            out["warnings"]
                .to_string()
                .contains("sh gained privileges during the run"),
            "{context}"
        );
    }
}
