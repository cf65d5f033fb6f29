//! The sandbox's seccomp filter through the real `cheng` binary (whose init step runs under it):
//! the setuid-root attack from the security report, as root and as an unprivileged caller.

use super::code_shell_unprivileged::{nobody_dir, run_unprivileged, unprivileged_sandbox_works};
use super::support::*;
use serde_json::json;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// bubblewrap works here; when it does not, the test is skipped, except under CI where it fails.
fn sandbox_or_skip() -> bool {
    if bwrap_works() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "bubblewrap cannot create namespaces and CI is set: the seccomp tests must run"
    );
    eprintln!("skipped: bubblewrap cannot create namespaces here");
    false
}

fn setid_bits(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o6000
}

#[test]
fn code_shell_cannot_plant_a_setuid_root_shell() {
    if !sandbox_or_skip() {
        return;
    }
    let (_d, ws) = temp_workspace();
    let input = json!({"allow_filesystem": true, "script": "cp /bin/bash ./sh && chmod 4755 ./sh; echo status=$?"});
    let (_, out, stderr) = run_node(
        "tools/code_shell",
        &ws,
        &input,
        &["--config", r#"{"allow_filesystem":true}"#],
    );
    assert!(
        out["stdout"].as_str().unwrap_or("").contains("status=1"),
        "{out} {stderr}"
    );
    assert!(
        out["stderr"]
            .as_str()
            .unwrap_or("")
            .contains("Operation not permitted"),
        "{out}"
    );
    assert_eq!(
        setid_bits(&ws.join("sh")),
        0,
        "a setuid shell reached the host: {out}"
    );
    let seccomp = out["metrics"]["limits"]["seccomp"].as_str().unwrap_or("");
    assert!(
        seccomp.starts_with("enforced") && seccomp.contains("setuid/setgid"),
        "{out}"
    );
    // The init step itself ran under the filter and still did its work.
    assert!(
        out["metrics"]["limits"]["landlock"]
            .as_str()
            .unwrap_or("")
            .starts_with("enforced"),
        "{out}"
    );
}

#[test]
fn code_python_cannot_create_a_setuid_file() {
    if !sandbox_or_skip() {
        return;
    }
    let (_d, ws) = temp_workspace();
    let script = "import os\ntry:\n    os.close(os.open('t2', os.O_CREAT | os.O_WRONLY, 0o4755))\n    result = 'created'\nexcept PermissionError:\n    result = 'refused'";
    let input = json!({"allow_filesystem": true, "script": script}).to_string();
    let out = cheng()
        .env("CHENG_ENABLE_CODE_PYTHON", "1")
        .args([
            "run",
            "tools/code_python",
            "--workspace",
            ws.to_str().unwrap(),
            "--input",
            &input,
        ])
        .args(["--config", r#"{"allow_filesystem":true}"#])
        .output()
        .unwrap();
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    assert_eq!(
        value["result"],
        "refused",
        "{value} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!ws.join("t2").exists(), "{value}");
}

#[test]
fn unprivileged_code_shell_cannot_make_setuid_files_or_user_namespaces() {
    if !unprivileged_sandbox_works() {
        return;
    }
    let (_d, ws) = nobody_dir("/tmp");
    let script = "cp /bin/bash ./sh && chmod 4755 ./sh; echo chmod=$?; unshare --user true; echo unshare=$?; \
                  chmod 755 ./sh && mkdir d && echo controls-ok";
    let (_, out, _, stderr) = run_unprivileged(
        "tools/code_shell",
        &ws,
        &json!({"script": script}),
        Some(&json!({"allow_filesystem": true})),
        &[],
    );
    let text = out["stdout"].as_str().unwrap_or("");
    assert!(text.contains("controls-ok"), "{out} {stderr}");
    assert!(
        text.contains("chmod=1") && text.contains("unshare=1"),
        "{out}"
    );
    assert_eq!(setid_bits(&ws.join("sh")), 0, "{out}");
    assert!(
        out["metrics"]["limits"]["seccomp"]
            .as_str()
            .unwrap_or("")
            .starts_with("enforced"),
        "{out}"
    );
}

/// Through the real binary (its init step runs under the filter too): vsock and netlink sockets
/// fail with EAFNOSUPPORT inside; AF_UNIX works, AF_INET only with `allow_network`. The control:
/// the same probe on the host makes AF_NETLINK and AF_INET sockets.
#[test]
fn code_shell_creates_only_allowlisted_socket_families() {
    if !sandbox_or_skip() {
        return;
    }
    let (_d, ws) = temp_workspace();
    let probe = "import ctypes, os\n\
                 libc = ctypes.CDLL(None, use_errno=True)\n\
                 def sock(family, kind):\n    \
                     ctypes.set_errno(0)\n    \
                     fd = libc.socket(family, kind, 0)\n    \
                     e = ctypes.get_errno()\n    \
                     fd >= 0 and os.close(fd)\n    \
                     return 0 if fd >= 0 else e\n\
                 print(*(sock(f, t) for f, t in [(1, 1), (2, 1), (16, 3), (40, 1)]))";
    let host = std::process::Command::new("python3")
        .args(["-I", "-c", probe])
        .output()
        .expect("python3 on the host");
    let host = String::from_utf8_lossy(&host.stdout).trim().to_string();
    // unix, inet and netlink are made on the host (vsock depends on the machine).
    assert!(host.starts_with("0 0 0 "), "control: {host}");
    let script = format!("python3 -I -c '{probe}'");
    for (network, expected) in [(false, "0 97 97 97"), (true, "0 0 97 97")] {
        let input = json!({"script": script, "allow_network": network});
        let (_, out, stderr) = run_node("tools/code_shell", &ws, &input, &["--approve"]);
        assert_eq!(
            out["stdout"].as_str().unwrap_or("").trim(),
            expected,
            "network {network}: {out} {stderr} (host: {host})"
        );
        let sockets = out["metrics"]["limits"]["sockets"].as_str().unwrap_or("");
        assert!(sockets.contains("EAFNOSUPPORT"), "{out}");
    }
}
