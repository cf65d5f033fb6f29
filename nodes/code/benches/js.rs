//! tools/code_js: a small script per call through the node (a jailed worker process per call's
//! script), against `node -e` on the same script.
//!
//! Targets: ≤ 1 ms per call, and ≥ 80× faster than `node -e`. Run with
//! `cargo build --release -p cheng-cli --bin cheng-sandbox-init` (the worker) and then
//! `cargo bench -p cheng-nodes-code --bench js`. The baseline needs Node.js on PATH
//! (`apt-get install -y nodejs`); without it only the in-process figure is printed.
// A benchmark: `unwrap`/`expect` are allowed here (denied in library code, [workspace.lints]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

// Links the node crate so its inventory registration is present.
use cheng_nodes_code as _;

use cheng_node::{Decision, Registry, RunContext};
use serde_json::{json, Value};

const SCRIPT: &str =
    "input.values.map((x) => x * 2).filter((x) => x % 3 !== 0).reduce((a, b) => a + b, 0)";
const CALLS: u32 = 2000;
const NODE_RUNS: u32 = 20;

fn main() {
    let input = json!({"values": (1..=50).collect::<Vec<i64>>()});
    let expected = expected(&input);
    let (per_call, cpu_per_call) = in_process(&input, &expected);
    println!(
        "code_js (worker): {:.3} ms/call wall, {:.3} ms/call CPU (cheng's side: the worker's is not counted), over {CALLS} calls",
        ms(per_call),
        ms(cpu_per_call)
    );
    println!(
        "  target ≤ 1 ms/call (wall): {}",
        verdict(per_call <= Duration::from_millis(1))
    );
    match node_baseline(&input, &expected) {
        Some((node, node_cpu)) => {
            let ratio = node.as_secs_f64() / per_call.as_secs_f64();
            let cpu_ratio = node_cpu.as_secs_f64() / cpu_per_call.as_secs_f64().max(1e-9);
            println!("node -e baseline:   {:.3} ms/run wall, {:.3} ms/run CPU, over {NODE_RUNS} runs", ms(node), ms(node_cpu));
            println!("ratio (wall): code_js is {ratio:.0}× faster than node -e (target ≥ 80×): {}", verdict(ratio >= 80.0));
            println!("ratio (CPU):  code_js uses {cpu_ratio:.0}× less CPU than node -e");
        }
        None => println!(
            "node -e baseline: skipped — `node` is not on PATH (install it with `apt-get install -y nodejs` to measure the ratio)"
        ),
    }
}

/// (wall, CPU) time per call.
fn in_process(input: &Value, expected: &Value) -> (Duration, Duration) {
    // The worker is the helper in this profile's target directory.
    let helper = std::env::current_exe()
        .expect("the bench's path")
        .parent()
        .and_then(|deps| deps.parent())
        .map(|dir| dir.join("cheng-sandbox-init"))
        .expect("the target directory");
    assert!(
        helper.is_file(),
        "{} is missing: `cargo build --release -p cheng-cli --bin cheng-sandbox-init`",
        helper.display()
    );
    cheng_nodes_code::js::use_executable(helper);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let registry = Registry::from_inventory_with(|_| true);
    let node = registry
        .get("tools/code_js")
        .expect("tools/code_js is linked")
        .clone();
    let ctx = RunContext::for_workspace("tools/code_js", std::env::temp_dir(), Decision::Denied);
    let request = json!({"script": SCRIPT, "input": input});
    let request = request.as_object().expect("object").clone();
    runtime.block_on(async {
        // Warm up, and check the answer once.
        let out = node.run(&ctx, request.clone()).await.expect("code_js runs");
        assert_eq!(&out["result"], expected, "{out:?}");
        for _ in 0..100 {
            let _ = node.run(&ctx, request.clone()).await;
        }
        let cpu = cpu_times();
        let started = Instant::now();
        for _ in 0..CALLS {
            let out = node.run(&ctx, request.clone()).await.expect("code_js runs");
            std::hint::black_box(out);
        }
        (started.elapsed() / CALLS, (cpu_times().0 - cpu.0) / CALLS)
    })
}

/// Mean (wall, CPU) time of `node -e` printing the same script's value, or `None` without node.
fn node_baseline(input: &Value, expected: &Value) -> Option<(Duration, Duration)> {
    let program = format!("const input = {input}; process.stdout.write(JSON.stringify({SCRIPT}));");
    let run = || {
        Command::new("node")
            .arg("-e")
            .arg(&program)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
    };
    let first = run().ok().filter(|o| o.status.success())?;
    let printed: Value = serde_json::from_slice(&first.stdout).ok()?;
    assert_eq!(&printed, expected, "node computed a different answer");
    let cpu = cpu_times();
    let started = Instant::now();
    for _ in 0..NODE_RUNS {
        let out = run().ok()?;
        std::hint::black_box(out);
    }
    Some((
        started.elapsed() / NODE_RUNS,
        (cpu_times().1 - cpu.1) / NODE_RUNS,
    ))
}

/// (this process, its waited-for children) user+system CPU time, from /proc/self/stat.
/// The machines this runs on share cores, so CPU time is the steadier figure.
fn cpu_times() -> (Duration, Duration) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the parenthesised command name; utime is field 14 of the whole line.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<u64> = rest
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    let tick = |i: usize| fields.get(i).copied().unwrap_or(0);
    // rest starts at field 3 (state): utime=14, stime=15, cutime=16, cstime=17.
    let own = tick(14 - 3) + tick(15 - 3);
    let children = tick(16 - 3) + tick(17 - 3);
    let hz = 100; // USER_HZ on Linux
    (
        Duration::from_millis(own * 1000 / hz),
        Duration::from_millis(children * 1000 / hz),
    )
}

fn expected(input: &Value) -> Value {
    let sum: i64 = input["values"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_i64)
        .map(|x| x * 2)
        .filter(|x| x % 3 != 0)
        .sum();
    json!(sum)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn verdict(met: bool) -> &'static str {
    if met {
        "met"
    } else {
        "MISSED"
    }
}
