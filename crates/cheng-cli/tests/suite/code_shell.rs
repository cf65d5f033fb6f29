//! tools/code_shell through the real binary: the sandbox and Landlock, capabilities a person
//! approves, failing closed without bubblewrap, full-disk read-only, nested repositories, read
//! paths sharing the capabilities' card, and Ctrl-C.
#![allow(unused_imports)]
use super::support::*;
use serde_json::{json, Value};
use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn code_shell_runs_in_the_sandbox_with_landlock() {
    if !bwrap_works() {
        return;
    }
    let (_d, ws) = temp_workspace();
    let (code, out, stderr) = run_node(
        "tools/code_shell",
        &ws,
        &json!({"script": "echo hi > inside.txt; echo done"}),
        &["--config", r#"{"allow_filesystem": true}"#],
    );
    assert_eq!(code, 0, "{out} {stderr}");
    assert_eq!(out["result"], "done");
    assert!(
        out["metrics"]["limits"]["landlock"]
            .as_str()
            .unwrap_or("")
            .starts_with("enforced"),
        "{out}"
    );
    assert!(ws.join("inside.txt").exists());
}

#[test]
fn an_agent_cannot_turn_on_the_network_without_a_person() {
    // The request goes to a person; with no terminal and no --approve nobody can say yes.
    let (_d, ws) = temp_workspace();
    let (code, out, stderr) = run_node(
        "tools/code_shell",
        &ws,
        &json!({"script": "true", "allow_network": true}),
        &[],
    );
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_APPROVAL_DENIED", "{out}");
    assert!(stderr.contains("allow_network"), "{stderr}");
}

#[test]
fn a_missing_bwrap_fails_closed() {
    let (_d, ws) = temp_workspace();
    let input = json!({"script": "echo should-not-run"}).to_string();
    let out = cheng()
        .env("CHENG_BWRAP", "/nonexistent/bwrap")
        .args([
            "run",
            "tools/code_shell",
            "--workspace",
            ws.to_str().unwrap(),
            "--input",
            &input,
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        stdout.contains("LOCAL_EXECUTOR_SANDBOX_UNAVAILABLE"),
        "{stdout}"
    );
    assert!(!stdout.contains("should-not-run"));
}

/// A private (0700) workspace is usable with allow_filesystem, files land owned by its owner,
/// and no capability of bwrap's survives into the script.
#[test]
fn a_private_workspace_is_writable_and_no_capability_survives() {
    if !bwrap_works() {
        return;
    }
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let (_d, ws) = temp_workspace();
    std::fs::set_permissions(&ws, std::fs::Permissions::from_mode(0o700)).unwrap();
    let script = "echo x > made.txt; grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)' /proc/self/status";
    let (code, out, stderr) = run_node(
        "tools/code_shell",
        &ws,
        &json!({"script": script}),
        &["--config", r#"{"allow_filesystem": true}"#],
    );
    assert_eq!(code, 0, "{out} {stderr}");
    let stdout = out["stdout"].as_str().unwrap_or("");
    assert_eq!(stdout.lines().count(), 5, "{stdout}");
    for line in stdout.lines() {
        assert!(
            line.ends_with("0000000000000000"),
            "a capability survived: {line}"
        );
    }
    let (file, dir) = (
        std::fs::metadata(ws.join("made.txt")).unwrap(),
        std::fs::metadata(&ws).unwrap(),
    );
    assert_eq!((file.uid(), file.gid()), (dir.uid(), dir.gid()));
}

// ---------------------------------------------------------------------------------------------
// allow_full_disk_readonly and nested repositories through the real binary (init step, Landlock).
// ---------------------------------------------------------------------------------------------

/// Host files outside the workspace and outside /tmp (which is private inside the sandbox):
/// `secret.txt` (0644, as a host file usually is) and `open.txt` (0666) in a 0777 directory,
/// so that only the read-only view, not the permissions, stops the writes.
pub struct HostFiles {
    _dir: tempfile::TempDir,
    pub dir: PathBuf,
    pub secret: PathBuf,
    pub open: PathBuf,
}

pub const SECRET: &str = "host secret outside the workspace\n";

pub fn host_files() -> HostFiles {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir_in("/var/tmp").expect("tempdir in /var/tmp");
    let dir = tmp.path().canonicalize().expect("canonical");
    let (secret, open) = (dir.join("secret.txt"), dir.join("open.txt"));
    std::fs::write(&secret, SECRET).expect("write");
    std::fs::write(&open, SECRET).expect("write");
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o666)).expect("chmod");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    HostFiles {
        _dir: tmp,
        dir,
        secret,
        open,
    }
}

impl HostFiles {
    /// The host side is exactly as created.
    pub fn assert_unchanged(&self, context: &str) {
        assert_eq!(
            std::fs::read_to_string(&self.secret).unwrap_or_default(),
            SECRET,
            "{context}: secret.txt changed"
        );
        assert_eq!(
            std::fs::read_to_string(&self.open).unwrap_or_default(),
            SECRET,
            "{context}: open.txt changed"
        );
        let mut names: Vec<String> = std::fs::read_dir(&self.dir)
            .expect("list")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["open.txt", "secret.txt"],
            "{context}: a file was created or removed"
        );
    }
}

#[test]
fn full_disk_readonly_shows_host_files_and_never_lets_them_be_written() {
    if !bwrap_works() {
        return;
    }
    let host = host_files();
    let (_d, ws) = temp_workspace();
    let (secret, open, dir) = (
        host.secret.display(),
        host.open.display(),
        host.dir.display(),
    );
    let script = format!(
        "cat '{secret}'; echo evil >> '{secret}'; echo evil >> '{open}'; echo evil > '{dir}/new.txt'; \
         rm -f '{secret}' '{open}'; mv '{open}' '{dir}/moved'; echo attempted"
    );
    // Control: without the switch the file is not there at all.
    let (_, out, stderr) = run_node("tools/code_shell", &ws, &json!({"script": &script}), &[]);
    assert!(
        !out["stdout"].as_str().unwrap_or("").contains("host secret"),
        "readable without the switch: {out} {stderr}"
    );
    assert!(
        out["stdout"].as_str().unwrap_or("").contains("attempted"),
        "{out} {stderr}"
    );
    host.assert_unchanged("without allow_full_disk_readonly");
    for config in [
        r#"{"allow_full_disk_readonly": true}"#,
        r#"{"allow_full_disk_readonly": true, "allow_filesystem": true}"#,
    ] {
        let input = json!({"script": &script, "allow_full_disk_readonly": true});
        let (_, out, stderr) = run_node("tools/code_shell", &ws, &input, &["--config", config]);
        let stdout = out["stdout"].as_str().unwrap_or("");
        assert!(
            stdout.starts_with(SECRET),
            "{config}: the host file is not readable: {out} {stderr}"
        );
        assert!(stdout.contains("attempted"), "{config}: {out}");
        assert!(
            out["stderr"]
                .as_str()
                .unwrap_or("")
                .contains("Read-only file system"),
            "{config}: {out}"
        );
        host.assert_unchanged(config);
    }
}

/// The attack on nested repositories through the real binary: `sub/.git` (hooks and
/// config) and `sub2/.git` naming `sub2-gitdir/` stay as they were with allow_filesystem.
#[test]
fn nested_repositories_cannot_be_written_with_allow_filesystem() {
    if !bwrap_works() {
        return;
    }
    let (_d, ws) = temp_workspace();
    std::fs::create_dir_all(ws.join("sub/.git/hooks")).unwrap();
    std::fs::write(ws.join("sub/.git/config"), "[core]\n").unwrap();
    std::fs::create_dir_all(ws.join("sub2")).unwrap();
    std::fs::create_dir_all(ws.join("sub2-gitdir/hooks")).unwrap();
    std::fs::write(ws.join("sub2-gitdir/config"), "[core]\n").unwrap();
    std::fs::write(ws.join("sub2/.git"), "gitdir: ../sub2-gitdir\n").unwrap();
    let script = "echo evil >> sub/.git/config; echo evil > sub/.git/hooks/post-checkout; \
                  echo evil >> sub2-gitdir/config; echo evil > sub2-gitdir/hooks/pre-commit; echo 'gitdir: /tmp' > sub2/.git; \
                  echo ok > sub/normal.txt";
    let (_, out, stderr) = run_node(
        "tools/code_shell",
        &ws,
        &json!({"script": script, "allow_filesystem": true}),
        &["--config", r#"{"allow_filesystem": true}"#],
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("sub/normal.txt")).unwrap_or_default(),
        "ok\n",
        "the attempt did not run: {out} {stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("sub/.git/config")).unwrap(),
        "[core]\n",
        "{out}"
    );
    assert!(!ws.join("sub/.git/hooks/post-checkout").exists(), "{out}");
    assert_eq!(
        std::fs::read_to_string(ws.join("sub2-gitdir/config")).unwrap(),
        "[core]\n",
        "{out}"
    );
    assert!(!ws.join("sub2-gitdir/hooks/pre-commit").exists(), "{out}");
    assert_eq!(
        std::fs::read_to_string(ws.join("sub2/.git")).unwrap(),
        "gitdir: ../sub2-gitdir\n",
        "{out}"
    );
}

// ---------------------------------------------------------------------------------------------
// Approval denial and cancellation through the real binary.
// ---------------------------------------------------------------------------------------------

/// `--deny` refuses a request_read_paths entry: the script, which would leave a marker with
/// writes allowed, never starts; approved (`--approve`), the same run leaves it.
#[test]
fn a_denied_read_path_runs_nothing() {
    if !bwrap_works() {
        return;
    }
    let (_d, ws) = temp_workspace();
    let outside = tempfile::tempdir_in("/var/tmp").expect("tempdir");
    std::fs::write(outside.path().join("notes.txt"), "approved content").expect("write");
    let dir = outside.path().to_str().expect("utf-8");
    let input = json!({"script": format!("echo ran > marker.txt; cat '{dir}/notes.txt'"), "request_read_paths": [dir], "allow_filesystem": true});
    let config = r#"{"allow_filesystem": true}"#;
    let (code, out, stderr) = run_node(
        "tools/code_shell",
        &ws,
        &input,
        &["--deny", "--config", config],
    );
    assert_eq!(code, 1, "{out} {stderr}");
    assert_eq!(
        out["error_kind"], "LOCAL_EXECUTOR_APPROVAL_DENIED",
        "{out} {stderr}"
    );
    assert!(
        !ws.join("marker.txt").exists(),
        "the script ran although its read path was denied: {out}"
    );
    let (code, out, stderr) = run_node(
        "tools/code_shell",
        &ws,
        &input,
        &["--approve", "--config", config],
    );
    assert_eq!(code, 0, "{out} {stderr}");
    assert_eq!(out["result"], "approved content", "{out}");
    assert_eq!(
        std::fs::read_to_string(ws.join("marker.txt")).unwrap_or_default(),
        "ran\n"
    );
}

/// Ctrl-C (SIGINT to cheng) in the middle of a code_shell run: exit 130, and the script's
/// children and grandchildren (one of them in its own session) are gone from the host.
#[test]
fn ctrl_c_mid_run_kills_the_scripts_grandchildren() {
    if !bwrap_works() || !require_or_skip("pgrep") {
        return;
    }
    let (_d, ws) = temp_workspace();
    // Durations unique to this test process, so that pgrep -f finds only these sleeps.
    let tag = format!("98.6{}", std::process::id());
    let script = format!("sh -c 'sleep {tag}1' & (setsid sleep {tag}2 &); sleep {tag}3");
    let input = json!({"script": script, "timeout_ms": 60000}).to_string();
    let child = cheng()
        .args([
            "run",
            "tools/code_shell",
            "--workspace",
            ws.to_str().expect("utf-8"),
            "--input",
            &input,
        ])
        .args(["--config", r#"{"timeout_ms": 60000}"#])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn cheng");
    let pattern = format!("sleep {tag}");
    // Cleans up, by pid, whatever cheng failed to.
    let _guard = KillOnDrop::new(&["-f", &pattern]);
    // The three sleeps themselves running (not merely a shell naming them).
    let sleeps = format!("^{pattern}[123]$");
    let started = eventually(Duration::from_secs(20), || {
        pgrep(&["-f", &sleeps]).len() == 3
    });
    send_signal(child.id(), "INT");
    let out = child.wait_with_output().expect("cheng exits");
    let gone = none_left(&["-f", &pattern]);
    let survivors = pgrep(&["-f", &pattern]);
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    assert!(
        started,
        "the script's processes never all started: {value} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        out.status.code(),
        Some(130),
        "{value} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(value["error_kind"], "LOCAL_EXECUTOR_CANCELLED", "{value}");
    assert!(gone, "left behind after Ctrl-C: {survivors:?}");
}

/// One card per run: the host paths a script asks to read and the capabilities it requests that
/// are left on "ask" are approved together, before anything starts; the node does not ask again.
#[test]
fn read_paths_and_capabilities_share_one_approval_card() {
    if !bwrap_works() {
        return;
    }
    let (_d, ws) = temp_workspace();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("notes.txt"), "shared card").unwrap();
    let dir = outside.path().canonicalize().unwrap().display().to_string();
    let input = json!({"script": format!("cat '{dir}/notes.txt'"), "request_read_paths": [dir], "allow_network": true});
    let (code, out, stderr) = run_node(
        "tools/code_shell",
        &ws,
        &input,
        &["--approve", "--events", "-"],
    );
    assert_eq!(code, 0, "{out} {stderr}");
    assert_eq!(out["result"], "shared card", "{out}");
    let cards = approval_cards(&stderr);
    assert_eq!(cards.len(), 1, "one card for the run: {cards:?}");
    let card = &cards[0];
    assert_eq!(card["requested_paths"], json!([dir]), "{card}");
    assert_eq!(card["capabilities"][0]["name"], "allow_network", "{card}");
    // Denied, the script never starts (it would leave a marker).
    let marking = json!({"script": "echo ran > marker.txt", "request_read_paths": [dir], "allow_filesystem": true});
    let (code, out, _) = run_node("tools/code_shell", &ws, &marking, &["--deny"]);
    assert_ne!(code, 0);
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_APPROVAL_DENIED", "{out}");
    assert!(
        !ws.join("marker.txt").exists(),
        "the script ran although its card was denied"
    );
}
