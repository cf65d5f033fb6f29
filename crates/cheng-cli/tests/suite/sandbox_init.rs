//! Which init step the sandbox runs: the dedicated `cheng-sandbox-init` next to `cheng` when it
//! is there, else `cheng` itself, with the same guarantees either way.

use super::support::*;
use serde_json::json;
use std::path::{Path, PathBuf};

/// A directory holding a hard link to the `cheng` under test (and, when asked, `helper` as
/// `cheng-sandbox-init`), inside cargo's target directory so that hard links work.
fn install(helper: Option<&Path>) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir");
    let cheng = dir.path().join("cheng");
    std::fs::hard_link(env!("CARGO_BIN_EXE_cheng"), &cheng).expect("link cheng");
    if let Some(helper) = helper {
        std::fs::hard_link(helper, dir.path().join("cheng-sandbox-init")).expect("link helper");
    }
    (dir, cheng)
}

fn run_shell(cheng: &Path, ws: &Path, script: &str) -> (i32, serde_json::Value, String) {
    let input = json!({"script": script}).to_string();
    let out = std::process::Command::new(cheng)
        .args([
            "run",
            "tools/code_shell",
            "--workspace",
            ws.to_str().expect("utf-8"),
            "--input",
            &input,
        ])
        .args(["--config", r#"{"allow_filesystem": true}"#])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("cheng runs");
    let value = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (
        out.status.code().unwrap_or(-1),
        value,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_helper_next_to_cheng_is_the_init_step() {
    if !bwrap_works() {
        return;
    }
    let (_ws_dir, ws) = temp_workspace();
    // A stand-in that is plainly not the real step: when it runs, the sandbox used the helper.
    let fake_dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir");
    let fake = fake_dir.path().join("fake-init");
    std::fs::write(&fake, "#!/bin/sh\necho 'fake init step ran' >&2\nexit 3\n").expect("write");
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let (_dir, cheng) = install(Some(&fake));
    let (_, out, stderr) = run_shell(&cheng, &ws, "echo real");
    assert_eq!(out["success"], false, "{out} {stderr}");
    assert!(
        out["stderr"]
            .as_str()
            .unwrap_or_default()
            .contains("fake init step ran"),
        "{out} {stderr}"
    );

    // The real helper, built with cheng: Landlock and the uid drop as from cheng itself.
    let helper = Path::new(env!("CARGO_BIN_EXE_cheng-sandbox-init"));
    let (_dir, cheng) = install(Some(helper));
    let (code, out, stderr) = run_shell(
        &cheng,
        &ws,
        "echo x > inside.txt; (echo x > /etc/passwd) 2>/dev/null || echo refused",
    );
    assert_eq!(code, 0, "{out} {stderr}");
    assert_eq!(out["result"], "refused");
    assert!(
        out["metrics"]["limits"]["landlock"]
            .as_str()
            .unwrap_or("")
            .starts_with("enforced"),
        "{out}"
    );
}

#[test]
fn without_the_helper_cheng_is_its_own_init_step() {
    if !bwrap_works() {
        return;
    }
    let (_ws_dir, ws) = temp_workspace();
    let (_dir, cheng) = install(None);
    let (code, out, stderr) = run_shell(&cheng, &ws, "echo x > inside.txt; echo done");
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
fn the_helper_alone_refuses_to_run_without_its_protocol() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cheng-sandbox-init"))
        .arg("/bin/true")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(126));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("sandbox init step"),
        "{out:?}"
    );
}
