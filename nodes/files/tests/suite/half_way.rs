//! A write that fails half-way leaves the old file intact: a full disk (a 64 KiB tmpfs) and a
//! read-only file system. Each first shows that a plain truncating write loses the old content.

use super::support::*;
use cheng_node::ScopeKind;
use cheng_nodes_files::{EditFile, WriteFile};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A small tmpfs mounted on a temporary directory; unmounted on drop.
struct Tmpfs {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Tmpfs {
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().ok()?;
        let path = dir.path().canonicalize().ok()?;
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&path)
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(Tmpfs { _dir: dir, path })
    }

    fn remount_read_only(&self) {
        let status = Command::new("mount")
            .args(["-o", "remount,ro"])
            .arg(&self.path)
            .status()
            .unwrap();
        assert!(status.success());
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.path).status();
    }
}

fn tmpfs() -> Option<Tmpfs> {
    let fs = Tmpfs::mount("64k");
    cheng_test_support::require_or_skip_that("mounting a tmpfs (root, mount)", fs.is_some())
        .then_some(())
        .and(fs)
}

fn text(kib: usize, fill: char) -> String {
    let line: String = std::iter::repeat_n(fill, 63).chain(['\n']).collect();
    line.repeat(kib * 16)
}

/// Fills the file system until only about `keep` bytes are left.
fn fill_up(dir: &Path, keep: u64) {
    use std::io::Write;
    let mut filler = std::fs::File::create(dir.join("filler")).unwrap();
    let chunk = vec![b'f'; 4096];
    loop {
        let out = Command::new("df")
            .args(["-B1", "--output=avail"])
            .arg(dir)
            .output()
            .unwrap();
        let avail: u64 = String::from_utf8_lossy(&out.stdout)
            .lines()
            .nth(1)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        if avail <= keep || filler.write_all(&chunk).is_err() {
            break;
        }
        filler.sync_all().unwrap();
    }
}

#[test]
fn a_full_disk_leaves_the_old_file_intact() {
    let Some(fs) = tmpfs() else { return };
    let ws = &fs.path;
    let old = text(16, 'o');
    std::fs::write(ws.join("data.txt"), &old).unwrap();
    std::fs::write(ws.join("plain.txt"), &old).unwrap();
    fill_up(ws, 8 * 1024);
    let new = text(32, 'n');
    // Without cheng: a truncating write loses the old content when the disk fills.
    assert!(
        std::fs::write(ws.join("plain.txt"), &new).is_err(),
        "the disk should be full"
    );
    let plain = std::fs::read_to_string(ws.join("plain.txt")).unwrap();
    assert_ne!(plain, old, "a plain write destroyed the old content");
    // write_file: fails, the old file is intact, no temporary file is left.
    let c = ctx(&WriteFile, ws, ScopeKind::Call);
    let err = fails(
        &WriteFile,
        &c,
        json!({"file_path": "data.txt", "content": new}),
        "LOCAL_EXECUTOR_WRITE_FAILED",
    );
    assert!(
        err.contains("data.txt") && err.contains("nothing was changed"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(ws.join("data.txt")).unwrap(), old);
    let mut names: Vec<String> = std::fs::read_dir(ws)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["data.txt", "filler", "plain.txt"],
        "no temporary file left behind"
    );
}

#[test]
fn a_read_only_file_system_leaves_the_old_file_intact() {
    let Some(fs) = tmpfs() else { return };
    let ws = &fs.path;
    std::fs::write(ws.join("data.txt"), "old\n").unwrap();
    fs.remount_read_only();
    let c = ctx(&WriteFile, ws, ScopeKind::Call);
    fails(
        &WriteFile,
        &c,
        json!({"file_path": "data.txt", "content": "new\n"}),
        "LOCAL_EXECUTOR_WRITE_FAILED",
    );
    fails(
        &EditFile,
        &c,
        json!({"file_path": "data.txt", "old": "old", "new": "new"}),
        "LOCAL_EXECUTOR_WRITE_FAILED",
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("data.txt")).unwrap(),
        "old\n"
    );
}
