//! workspace_shell overhead: an in-process node run of `true` against a raw
//! `std::process::Command::new("true").status()`, N iterations each, in the same run.
//!
//! `cargo bench -p cheng-nodes-workspace --bench shell` (CHENG_BENCH_ITERS to change N).
// A benchmark: `unwrap`/`expect` are allowed here (denied in library code, [workspace.lints]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use cheng_node::{Decision, Registry, RunContext, Values};
// Linked for its `inventory` registrations.
use cheng_nodes_workspace as _;
use serde_json::json;
use std::time::{Duration, Instant};

fn main() {
    let iters: u32 = std::env::var("CHENG_BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical workspace");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let registry = Registry::from_inventory();
    let node = registry
        .get("tools/workspace_shell")
        .expect("workspace_shell is registered");
    let ctx = RunContext::for_workspace(node.spec().id, root.clone(), Decision::Approved);
    let mut input = Values::new();
    input.insert("command".into(), json!("true"));
    input.insert(
        "sandbox_root".into(),
        json!(root.to_str().expect("utf-8 temp path")),
    );

    let node_run = || {
        let out = rt
            .block_on(node.run(&ctx, input.clone()))
            .expect("node runs");
        assert_eq!(out["success"], true);
    };
    let raw = || {
        let status = std::process::Command::new("true")
            .current_dir(&root)
            .status()
            .expect("spawn true");
        assert!(status.success());
    };

    // Warm up both paths (page cache, allocator, runtime threads).
    for _ in 0..20 {
        node_run();
        raw();
    }
    // Many short interleaved rounds, so load from other processes hits both sides alike; the
    // reported figures are medians over rounds.
    let rounds = 20u32;
    let per_round = (iters / rounds).max(1);
    let mut node_us = Vec::new();
    let mut raw_us = Vec::new();
    for _ in 0..rounds {
        node_us.push(time(per_round, &node_run).as_secs_f64() * 1e6 / per_round as f64);
        raw_us.push(time(per_round, &raw).as_secs_f64() * 1e6 / per_round as f64);
    }
    let ratios: Vec<f64> = node_us.iter().zip(&raw_us).map(|(n, r)| n / r).collect();
    println!(
        "workspace_shell `true`, {rounds} interleaved rounds of {per_round} runs each (medians):"
    );
    println!(
        "  node run (in process):            {:>8.1} µs/run",
        median(node_us)
    );
    println!(
        "  raw std::process::Command status: {:>8.1} µs/run",
        median(raw_us)
    );
    println!("  ratio node/raw: {:.2}x (target <= 1.20x)", median(ratios));
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn time(iters: u32, f: &impl Fn()) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        f();
    }
    start.elapsed()
}
