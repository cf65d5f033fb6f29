//! As root, a process's later sandboxes show /etc as one read-only bind of a directory of
//! current copies (`cheng_exec`'s `etc_copies`) instead of copying each file: the script must
//! see the same contents, a read-only /etc, and nothing of the host beyond it.

use super::sandbox_support::*;
use cheng_nodes_code::shell::CodeShell;
use serde_json::json;
use std::os::unix::fs::MetadataExt;

#[tokio::test]
async fn later_sandboxes_bind_current_copies_at_etc_read_only() {
    if !sandbox_available() {
        return;
    }
    if std::fs::metadata("/proc/self")
        .map(|m| m.uid())
        .unwrap_or(1)
        != 0
    {
        return; // the copies are made only when cheng runs as root
    }
    let (_d, ws) = workspace();
    // This process's first sandbox copies file by file; later ones use the directory.
    for _ in 0..2 {
        let out = run(&CodeShell, &ws, json!({"script": "true"})).await;
        assert_eq!(out["success"], true, "{out:?}");
    }
    let script = "awk '$5 == \"/etc\" { print $4, $6 }' /proc/self/mountinfo; \
                  echo ---; base64 -w0 /etc/passwd; echo; echo ---; \
                  (echo x >> /etc/passwd) 2>/dev/null && echo wrote; \
                  touch /etc/new-file 2>/dev/null && echo made; \
                  chmod 666 /etc/passwd 2>/dev/null && echo chmodded; \
                  ls -a /etc";
    let out = run(&CodeShell, &ws, json!({"script": script})).await;
    assert_eq!(out["success"], true, "{out:?}");
    let stdout = out["stdout"].as_str().unwrap_or_default();
    let mut parts = stdout.split("---\n");
    let mount = parts.next().unwrap_or_default().trim();
    // The directory of this process, bound read-only.
    let (root, options) = mount.split_once(' ').unwrap_or_default();
    assert!(
        root.contains(&format!("/etc-{}-", std::process::id())),
        "/etc is not the copies' bind: {mount:?}"
    );
    assert!(
        options.split(',').any(|o| o == "ro"),
        "/etc is not read-only: {mount:?}"
    );
    let passwd = parts.next().unwrap_or_default().trim();
    let expected = std::process::Command::new("base64")
        .args(["-w0", "/etc/passwd"])
        .output()
        .expect("base64")
        .stdout;
    assert_eq!(
        passwd,
        String::from_utf8_lossy(&expected),
        "/etc/passwd differs inside the sandbox"
    );
    let rest = parts.next().unwrap_or_default();
    for verb in ["wrote", "made", "chmodded"] {
        assert!(!rest.lines().any(|l| l == verb), "{verb} in /etc: {rest}");
    }
    // Only the view's entries (and the copies' own names): not the host's whole /etc.
    let names: Vec<&str> = rest.lines().filter(|l| !l.starts_with('.')).collect();
    assert!(
        names.contains(&"passwd") && !names.contains(&"shadow") && !names.contains(&"fstab"),
        "{names:?}"
    );
}
