//! `tools/workspace_git` status on a generated 10 000-file repository against plain
//! `git status --porcelain=v2` in the same run (target: at most 1.2x).
//!
//! Run: `cargo bench -p cheng-nodes-workspace --bench git`
// A benchmark: `unwrap`/`expect` are allowed here (denied in library code, [workspace.lints]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use cheng_node::{Decision, Node, RunContext};
use cheng_nodes_workspace::WorkspaceGit;
use cheng_test_support::git;
use std::process::Command;
use std::time::{Duration, Instant};

const FILES: usize = 10_000;
const ROUNDS: usize = 25;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    for i in 0..FILES {
        let sub = root.join(format!("d{:03}", i / 100));
        std::fs::create_dir_all(&sub).expect("mkdir");
        std::fs::write(sub.join(format!("f{i}.txt")), format!("file {i}\n")).expect("write");
    }
    git(&root, &["-c", "init.defaultBranch=main", "init", "-q", "."]);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "bench"]);
    // A few changes so status has something to report.
    for i in 0..20 {
        std::fs::write(root.join(format!("d000/f{i}.txt")), "changed\n").expect("write");
        std::fs::write(root.join(format!("new{i}.txt")), "new\n").expect("write");
    }
    git(&root, &["status", "--porcelain=v2"]); // settle the index

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let ctx = RunContext::for_workspace("tools/workspace_git", root.clone(), Decision::Approved);
    let input: cheng_node::Values =
        serde_json::from_str(r#"{"operation": "status"}"#).expect("json");

    let plain = || {
        let t = Instant::now();
        let out = Command::new("git")
            .args(["status", "--porcelain=v2"])
            .current_dir(&root)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .expect("git status");
        assert!(out.status.success());
        t.elapsed()
    };
    let node = || {
        let t = Instant::now();
        let out = rt
            .block_on(WorkspaceGit.run(&ctx, input.clone()))
            .expect("status");
        assert_eq!(out["success"], true, "{out:?}");
        t.elapsed()
    };
    for _ in 0..3 {
        plain();
        node();
    }
    let (mut base, mut ours) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        base.push(plain());
        ours.push(node());
    }
    let (base, ours) = (median(base), median(ours));
    let ratio = ours.as_secs_f64() / base.as_secs_f64();
    println!("git status, {FILES}-file repository, median of {ROUNDS}:");
    println!(
        "  plain git status --porcelain=v2   {:>8.2} ms",
        base.as_secs_f64() * 1e3
    );
    println!(
        "  tools/workspace_git status        {:>8.2} ms",
        ours.as_secs_f64() * 1e3
    );
    println!("  ratio                             {ratio:>8.2}x (target <= 1.20x)");
}
