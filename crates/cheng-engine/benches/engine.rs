//! Engine overhead per node: validation + scheduling of no-op test nodes, on a chain (every node
//! waits for the previous one) and a wide graph (no edges), at 1k, 10k and 100k nodes.
//!
//! Baseline, measured in the same run: spawning and joining one no-op tokio task per node (the
//! floor for any scheduler that runs nodes as tasks). Target: ≤ 20 µs per node at 10k, and µs per
//! node roughly flat from 1k to 100k (linear growth).
//!
//! `cargo bench -p cheng-engine --bench engine`
// A benchmark: `unwrap`/`expect` are allowed here (denied in library code, [workspace.lints]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use cheng_engine::{Engine, Graph, RunOptions};
use cheng_node::*;
use cheng_test_support::Noop;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn graph(n: usize, chain: bool) -> Graph {
    let nodes: Vec<Value> = (0..n)
        .map(|i| {
            if i == 0 {
                json!({"id": "n0", "type": "bench/noop", "inputs": {"x": 1}})
            } else {
                json!({"id": format!("n{i}"), "type": "bench/noop"})
            }
        })
        .collect();
    let edges: Vec<Value> = if chain {
        (1..n)
            .map(|i| json!({"from": format!("n{}.x", i - 1), "to": format!("n{i}.x")}))
            .collect()
    } else {
        Vec::new()
    };
    match Graph::from_value(&json!({"version": 1, "nodes": nodes, "edges": edges})) {
        Ok(g) => g,
        Err(e) => panic!("bench graph: {e:?}"),
    }
}

/// Best of `reps` (the least disturbed by the other work on the machine).
fn best(reps: usize, mut f: impl FnMut() -> Duration) -> Duration {
    (0..reps).map(|_| f()).min().unwrap_or_default()
}

fn per_node_us(d: Duration, n: usize) -> f64 {
    d.as_secs_f64() * 1e6 / n as f64
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let engine = Engine::new(
        Registry::new().with(Noop),
        cheng_node::policy::Policy::builtin(),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    println!(
        "engine overhead per node (best of 3; {} jobs)",
        cheng_engine::default_jobs()
    );
    println!(
        "{:>6} {:>7} {:>14} {:>14} {:>14} {:>14} {:>8}",
        "shape", "nodes", "validate µs/n", "run µs/n", "total µs/n", "baseline µs/n", "ratio"
    );
    let mut rows = Vec::new();
    for chain in [true, false] {
        for n in [1_000, 10_000, 100_000] {
            let g = graph(n, chain);
            let validate = best(3, || {
                let start = Instant::now();
                let v = engine.validate(&g);
                let elapsed = start.elapsed();
                assert!(v.is_ok());
                elapsed
            });
            let validated = match engine.validate(&g) {
                Ok(v) => v,
                Err(e) => panic!("{e:?}"),
            };
            let run = best(3, || {
                let options = RunOptions::new(dir.path()).expect("workspace");
                let start = Instant::now();
                let result = rt.block_on(engine.run(&validated, options));
                let elapsed = start.elapsed();
                assert_eq!(result.status, cheng_engine::GraphStatus::Succeeded);
                if chain {
                    assert_eq!(result.nodes[n - 1].outputs["x"], 1);
                }
                drop(result);
                elapsed
            });
            let baseline = best(3, || {
                let start = Instant::now();
                // Inside a task, like the engine's scheduling loop.
                let _ = rt.block_on(rt.spawn(async move {
                    if chain {
                        for _ in 0..n {
                            let _ = tokio::spawn(async { std::hint::black_box(1) }).await;
                        }
                    } else {
                        let mut set = tokio::task::JoinSet::new();
                        for _ in 0..n {
                            set.spawn(async { std::hint::black_box(1) });
                        }
                        while set.join_next().await.is_some() {}
                    }
                }));
                start.elapsed()
            });
            let total = per_node_us(validate + run, n);
            let base = per_node_us(baseline, n);
            let shape = if chain { "chain" } else { "wide" };
            println!(
                "{:>6} {:>7} {:>14.2} {:>14.2} {:>14.2} {:>14.2} {:>7.1}x",
                shape,
                n,
                per_node_us(validate, n),
                per_node_us(run, n),
                total,
                base,
                total / base
            );
            rows.push((shape, n, total));
        }
    }
    for shape in ["chain", "wide"] {
        let at = |n| {
            rows.iter()
                .find(|r| r.0 == shape && r.1 == n)
                .map(|r| r.2)
                .unwrap_or(f64::NAN)
        };
        println!(
            "{shape}: {:.2} µs/node at 10k (target ≤ 20); µs/node growth 1k→10k {:.2}x, 10k→100k {:.2}x \
             (linear = 1x; quadratic would be 10x per step)",
            at(10_000),
            at(10_000) / at(1_000),
            at(100_000) / at(10_000)
        );
    }
}
