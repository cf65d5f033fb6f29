//! The worker jail (`cheng_sandbox::jail`): each attack performed from inside it by the
//! `jail_probe` example, with the same attack outside it as the positive control.

use std::path::PathBuf;
use std::process::Command;

/// The probe cargo builds beside this test binary (target/<profile>/examples/jail_probe).
fn probe() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let path = exe
        .parent()
        .and_then(|deps| deps.parent())
        .map(|profile| profile.join("examples").join("jail_probe"))
        .expect("the target directory");
    assert!(
        path.is_file(),
        "{} is missing: build it with `cargo build -p cheng-exec --example jail_probe` (cargo test builds it)",
        path.display()
    );
    path
}

/// The probe's last line for `args`, with `without` as the jail's test switch.
fn attack(args: &[&str], without: &str) -> String {
    let out = Command::new(probe())
        .args(args)
        .env(cheng_sandbox::jail::WITHOUT_ENV, without)
        .output()
        .expect("the probe runs");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    stdout.lines().last().unwrap_or_default().to_string()
}

#[test]
fn every_attack_is_refused_inside_the_jail_and_works_outside_it() {
    for what in ["open", "list", "socket", "fork", "exec"] {
        assert_eq!(
            attack(&["--without-jail", what], ""),
            "allowed",
            "{what}: the positive control"
        );
        for without in ["", "namespaces"] {
            let answer = attack(&[what], without);
            assert!(
                answer.starts_with("refused:"),
                "{what} (without {without:?}): {answer}"
            );
        }
    }
}

#[test]
fn a_write_from_the_jail_never_reaches_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("planted");
    let path = target.to_str().unwrap();
    for without in ["", "namespaces"] {
        assert!(attack(&["write", path], without).starts_with("refused:"));
        assert!(
            attack(&["--filesystem-only", "write", path], without).starts_with("refused:"),
            "the filesystem layer alone (without {without:?})"
        );
        assert!(
            !target.exists(),
            "the host has the file (without {without:?})"
        );
    }
    assert_eq!(attack(&["--without-jail", "write", path], ""), "allowed");
    assert!(target.exists(), "the positive control wrote the file");
}

/// Each filesystem layer holds without the system call filter: the empty root shows no host
/// file, Landlock refuses every access.
#[test]
fn each_filesystem_layer_hides_the_host_on_its_own() {
    let root = Command::new(probe())
        .args(["--filesystem-only", "open"])
        .output()
        .unwrap();
    let root = String::from_utf8_lossy(&root.stdout).to_string();
    assert!(root.contains("an empty read-only root"), "{root}");
    assert!(root.contains("refused: No such file"), "{root}");
    let landlock = attack(&["--filesystem-only", "open"], "namespaces");
    assert!(
        landlock.contains("refused: Permission denied"),
        "{landlock}"
    );
    assert_eq!(
        attack(&["--filesystem-only", "list"], ""),
        "refused: / is empty"
    );
}

#[test]
fn without_namespaces_and_landlock_the_jail_fails_closed() {
    let out = Command::new(probe())
        .arg("open")
        .env(cheng_sandbox::jail::WITHOUT_ENV, "namespaces,landlock")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(3), "{stdout}");
    assert!(
        stdout.contains("user namespaces")
            && stdout.contains("Landlock")
            && stdout.contains("Enable"),
        "{stdout}"
    );
    assert!(!stdout.contains("allowed"), "{stdout}");
}
