//! The read-only system view with its small /etc files copied in (`--file`) rather than bound:
//! the script sees the host's contents, and can change neither them nor the root they sit in.

use super::sandbox_support::*;
use cheng_nodes_code::shell::CodeShell;
use serde_json::json;

#[tokio::test]
async fn copied_etc_files_show_the_host_contents() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    // /etc/resolv.conf is often a symlink to a file under /run, which the view replaces: the
    // copy follows it, as a bind would.
    for file in [
        "/etc/passwd",
        "/etc/group",
        "/etc/hosts",
        "/etc/resolv.conf",
        "/etc/ld.so.cache",
    ] {
        let Ok(host) = std::fs::read(file) else {
            continue;
        };
        let out = run(
            &CodeShell,
            &ws,
            json!({"script": format!("base64 -w0 {file}")}),
        )
        .await;
        assert_eq!(out["success"], true, "{file}: {out:?}");
        let seen = out["stdout"]
            .as_str()
            .unwrap_or_default()
            .trim()
            .to_string();
        let expected = std::process::Command::new("base64")
            .args(["-w0", file])
            .output()
            .expect("base64")
            .stdout;
        assert_eq!(
            seen,
            String::from_utf8_lossy(&expected),
            "{file} differs inside the sandbox ({} bytes on the host)",
            host.len()
        );
    }
}

#[tokio::test]
async fn the_view_root_and_the_copies_are_read_only() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    let script = "for t in /etc/passwd /etc/new-file /new-file /usr/new-file; do \
                      if (echo x >> $t) 2>/dev/null; then echo \"wrote $t\"; fi; \
                  done; \
                  mkdir /new-dir 2>/dev/null && echo 'made /new-dir'; \
                  awk '$5 == \"/\" { print $6 }' /proc/self/mountinfo";
    let out = run(&CodeShell, &ws, json!({"script": script})).await;
    assert_eq!(out["success"], true, "{out:?}");
    let stdout = out["stdout"].as_str().unwrap_or_default();
    assert!(
        !stdout.contains("wrote") && !stdout.contains("made"),
        "{stdout}"
    );
    // The root of the view is mounted read-only (not only out of the sandbox uid's reach).
    let root_options = stdout.lines().last().unwrap_or_default();
    assert!(
        root_options.split(',').any(|o| o == "ro"),
        "the root of the view is not read-only: {root_options:?}"
    );
}
