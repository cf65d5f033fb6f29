//! The cost of protecting a writable workspace ([`cheng_sandbox::mounts::protect`]): the
//! top-level names plus the bounded walk for nested repositories, on workspaces of 10 000 and
//! 100 000 files (warm page cache, 100 files per directory, a nested repository every 1 000 files).
//!
//! Baselines measured in the same run: `protect` on an empty workspace (the top-level names only),
//! a plain recursive `std::fs::read_dir` walk of the same tree (the least any walk costs), and a
//! bare `bwrap ... true` start (what one sandboxed run costs at least).
//!
//! The audit after a writable run ([`cheng_sandbox::audit::audit`]) on the same trees,
//! twice: after a run that changed nothing (each regular file is stat'ed, nothing else), and
//! after one that wrote every file (each is also asked for its `security.capability` attribute).
//!
//! `cargo bench -p cheng-exec --bench protect` (`-- 10000` for one size only)
// A benchmark: `unwrap`/`expect` are allowed here (denied in library code, [workspace.lints]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use cheng_sandbox::audit::{audit, Since};
use cheng_sandbox::mounts::protect;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ROUNDS: usize = 15;

fn workspace(files: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for i in 0..files {
        let sub = dir.path().join(format!("d{:04}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir(&sub).expect("mkdir");
        }
        if i % 1000 == 0 {
            std::fs::create_dir_all(sub.join(".git/hooks")).expect("nested repo");
        }
        std::fs::write(sub.join(format!("f{i}")), "x").expect("write");
    }
    dir
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn time_protect(root: &Path) -> (Duration, usize) {
    let mut protections = 0;
    let samples = (0..ROUNDS)
        .map(|_| {
            let started = Instant::now();
            let guard = protect(root, &mut Vec::new()).expect("protect");
            protections = guard.list().len();
            drop(guard);
            started.elapsed()
        })
        .collect();
    (median(samples), protections)
}

fn bare_bwrap() -> Option<Duration> {
    let run = || {
        let started = Instant::now();
        let ok = Command::new("bwrap")
            .args([
                "--unshare-pid",
                "--unshare-net",
                "--die-with-parent",
                "--ro-bind",
                "/",
                "/",
                "--dev",
                "/dev",
                "--proc",
                "/proc",
                "true",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| started.elapsed())
    };
    run()?;
    Some(median((0..ROUNDS).filter_map(|_| run()).collect()))
}

fn main() {
    let empty = tempfile::tempdir().expect("tempdir");
    let empty_root = empty.path().canonicalize().expect("canonical");
    let (base, _) = time_protect(&empty_root);
    println!(
        "protect, empty workspace (top-level names only): {:.3} ms",
        base.as_secs_f64() * 1e3
    );
    let bwrap = bare_bwrap();
    match bwrap {
        Some(b) => println!("bare bwrap true: {:.3} ms", b.as_secs_f64() * 1e3),
        None => println!("bare bwrap true: not available here"),
    }
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![10_000, 100_000]
    } else {
        sizes
    };
    for files in sizes {
        let before_writes = Since::now();
        let ws = workspace(files);
        let root = ws.path().canonicalize().expect("canonical");
        let _ = protect(&root, &mut Vec::new()); // warm the cache
        let (took, n) = time_protect(&root);
        let protect_took = took;
        let plain = median(
            (0..ROUNDS)
                .map(|_| {
                    let started = Instant::now();
                    let mut entries = 0;
                    plain_walk(&root, &mut entries);
                    started.elapsed()
                })
                .collect(),
        );
        print!(
            "protect, {files} files ({} dirs, {} nested repos; {n} protections): {:.3} ms, {:.1}x the empty workspace, \
             {:.2}x a plain read_dir walk ({:.3} ms)",
            files / 100,
            files / 1000,
            took.as_secs_f64() * 1e3,
            took.as_secs_f64() / base.as_secs_f64(),
            took.as_secs_f64() / plain.as_secs_f64(),
            plain.as_secs_f64() * 1e3
        );
        match bwrap {
            Some(b) => println!(
                ", {:.2}x a bare bwrap start",
                took.as_secs_f64() / b.as_secs_f64()
            ),
            None => println!(),
        }
        let known = protect(&root, &mut Vec::new())
            .expect("protect")
            .repositories()
            .to_vec();
        let time_audit = |since: Since| {
            median(
                (0..ROUNDS)
                    .map(|_| {
                        let started = Instant::now();
                        let report = audit(&root, since, &known).expect("audit");
                        assert!(report.warnings.is_empty(), "{:?}", report.warnings);
                        started.elapsed()
                    })
                    .collect(),
            )
        };
        let written = time_audit(before_writes);
        // Inode times older than the run's start by more than the clock slack (2 s).
        std::thread::sleep(Duration::from_millis(2100));
        let unchanged = time_audit(Since::now());
        for (what, took) in [
            ("nothing changed by the run", unchanged),
            ("every file written by the run", written),
        ] {
            println!(
                "audit after the run, {files} files, {what}: {:.3} ms, {:.2}x a plain read_dir walk, {:.2}x protect",
                took.as_secs_f64() * 1e3,
                took.as_secs_f64() / plain.as_secs_f64(),
                took.as_secs_f64() / protect_took.as_secs_f64()
            );
        }
    }
}

/// The least a walk costs: recursive `read_dir`, file types from the directory entries, not
/// entering `.git`.
fn plain_walk(dir: &Path, entries: &mut usize) {
    let Ok(list) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in list.flatten() {
        *entries += 1;
        if entry.file_type().is_ok_and(|t| t.is_dir()) && entry.file_name() != ".git" {
            plain_walk(&entry.path(), entries);
        }
    }
}
