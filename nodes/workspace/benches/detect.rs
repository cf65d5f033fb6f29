//! `tools/workspace_tests` detect on a generated 10 000-file tree against a bare `ignore` walk
//! of the same tree in the same run (targets: under 50 ms and at most 2x).
//!
//! Run: `cargo bench -p cheng-nodes-workspace --bench detect`
// A benchmark: `unwrap`/`expect` are allowed here (denied in library code, [workspace.lints]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use cheng_node::{Decision, Node, RunContext};
use cheng_nodes_workspace::WorkspaceTests;
use std::path::Path;
use std::time::{Duration, Instant};

const FILES: usize = 10_000;
const ROUNDS: usize = 25;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn write(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(path, text).expect("write");
}

fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    // 100 packages of 100 files; every tenth package is a project of some kind.
    for i in 0..FILES {
        let pkg = i / 100;
        write(&root.join(format!("pkg{pkg:03}/src/f{i}.txt")), "x\n");
    }
    for pkg in (0..100).step_by(10) {
        let base = root.join(format!("pkg{pkg:03}"));
        match pkg % 30 {
            0 => write(&base.join("Cargo.toml"), "[package]\nname = \"p\"\n"),
            10 => write(
                &base.join("package.json"),
                r#"{"scripts": {"test": "vitest run"}}"#,
            ),
            _ => write(&base.join("pyproject.toml"), "[tool.pytest.ini_options]\n"),
        }
    }
    write(&root.join("package-lock.json"), "{}");

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let ctx = RunContext::for_workspace("tools/workspace_tests", root.clone(), Decision::Approved);
    let input: cheng_node::Values =
        serde_json::from_str(r#"{"operation": "detect"}"#).expect("json");

    let bare = || {
        let t = Instant::now();
        let count = ignore::WalkBuilder::new(&root)
            .build()
            .filter_map(Result::ok)
            .count();
        assert!(count > FILES);
        t.elapsed()
    };
    let node = || {
        let t = Instant::now();
        let out = rt
            .block_on(WorkspaceTests.run(&ctx, input.clone()))
            .expect("detect");
        assert_eq!(
            out["detected_project"]["projects"].as_array().map(Vec::len),
            Some(10),
            "{out:?}"
        );
        t.elapsed()
    };
    for _ in 0..3 {
        bare();
        node();
    }
    let (mut base, mut ours) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        base.push(bare());
        ours.push(node());
    }
    let (base, ours) = (median(base), median(ours));
    let ratio = ours.as_secs_f64() / base.as_secs_f64();
    println!("detect, {FILES}-file tree, median of {ROUNDS}:");
    println!(
        "  bare ignore walk                  {:>8.2} ms",
        base.as_secs_f64() * 1e3
    );
    println!(
        "  tools/workspace_tests detect      {:>8.2} ms (target < 50 ms)",
        ours.as_secs_f64() * 1e3
    );
    println!("  ratio                             {ratio:>8.2}x (target <= 2.00x)");
}
