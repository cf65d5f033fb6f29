//! What the runtime adds on top of the engine, measured in one run.
//!
//! - execute: a no-op tool called through tools/runtime, against running the same node
//!   directly with `Engine::run_node` (what `cheng run` does). The ratio is the runtime's cost:
//!   parsing the toolkit, validating the entry's config and the call, and a nested run.
//! - dry_run: the same call validated only.
//! - list_tools: a toolkit of the five workspace and document nodes (functions + schemas).
//!
//! `cargo bench -p cheng-nodes-runtime --bench runtime`
// A benchmark: `unwrap`/`expect` are allowed here (denied in library code, [workspace.lints]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use cheng_nodes_documents as _;
use cheng_nodes_workspace as _;

use cheng_engine::{Engine, RunOptions};
use cheng_node::{Registry, Values};
use cheng_nodes_runtime::ToolRuntime;
use cheng_test_support::Noop;
use serde_json::{json, Value};
use std::hint::black_box;
use std::time::{Duration, Instant};

fn object(value: Value) -> Values {
    value.as_object().cloned().unwrap_or_default()
}

/// Mean time per call of `f` over `iterations`, after a warm-up.
async fn time<F, Fut>(iterations: u32, mut f: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for _ in 0..iterations / 10 {
        f().await;
    }
    let start = Instant::now();
    for _ in 0..iterations {
        f().await;
    }
    start.elapsed() / iterations
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn main() {
    let Ok(rt) = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    else {
        eprintln!("cannot start a tokio runtime");
        return;
    };
    let Ok(dir) = tempfile::tempdir() else {
        eprintln!("cannot create a temporary workspace");
        return;
    };
    let Ok(options) = RunOptions::new(dir.path()) else {
        eprintln!("cannot use the temporary workspace");
        return;
    };
    let options = options.jobs(1);
    let direct = Engine::new(
        Registry::new().with(Noop),
        cheng_node::policy::Policy::builtin(),
    );
    let via = Engine::new(
        Registry::new().with(ToolRuntime::with_registry(Registry::new().with(Noop))),
        cheng_node::policy::Policy::builtin(),
    );
    let config = object(json!({"exposed_tools": [{"type": "bench/noop", "name": "noop"}]}));
    let call = object(
        json!({"action": "execute", "tool_call": {"name": "noop", "arguments": {"x": "hi"}}}),
    );
    let dry = object(
        json!({"action": "execute", "dry_run": true, "tool_call": {"name": "noop", "arguments": {"x": "hi"}}}),
    );
    let inventory = Engine::new(
        Registry::new().with(ToolRuntime::with_registry(Registry::from_inventory_with(
            |_| false,
        ))),
        cheng_node::policy::Policy::builtin(),
    );
    let toolkit = object(json!({"exposed_tools": [
        {"type": "tools/workspace_git"}, {"type": "tools/workspace_shell"}, {"type": "tools/workspace_tests"},
        {"type": "tools/workspace_markdown"}, {"type": "tools/workspace_preview"}]}));
    let list = object(json!({"action": "list_tools"}));
    const N: u32 = 20_000;

    rt.block_on(async {
        let base = time(N, || async {
            black_box(
                direct
                    .run_node(
                        "bench/noop",
                        Values::new(),
                        object(json!({"x": "hi"})),
                        options.clone(),
                    )
                    .await
                    .is_ok(),
            );
        })
        .await;
        let execute = time(N, || async {
            let out = via
                .run_node(
                    "tools/runtime",
                    config.clone(),
                    call.clone(),
                    options.clone(),
                )
                .await;
            black_box(out.map(|r| r.outputs["status"] == "ok").unwrap_or(false));
        })
        .await;
        let dry_run = time(N, || async {
            let out = via
                .run_node(
                    "tools/runtime",
                    config.clone(),
                    dry.clone(),
                    options.clone(),
                )
                .await;
            black_box(
                out.map(|r| r.outputs["status"] == "validated")
                    .unwrap_or(false),
            );
        })
        .await;
        let listing = time(N / 4, || async {
            let out = inventory
                .run_node(
                    "tools/runtime",
                    toolkit.clone(),
                    list.clone(),
                    options.clone(),
                )
                .await;
            black_box(out.map(|r| r.outputs["status"] == "ok").unwrap_or(false));
        })
        .await;
        println!(
            "direct run_node (no-op)         {:8.1} µs/call (baseline)",
            us(base)
        );
        println!(
            "execute via tools/runtime        {:8.1} µs/call  {:.2}× baseline",
            us(execute),
            us(execute) / us(base)
        );
        println!(
            "dry_run via tools/runtime        {:8.1} µs/call  {:.2}× baseline",
            us(dry_run),
            us(dry_run) / us(base)
        );
        println!(
            "list_tools, 5 real tools         {:8.1} µs/call  {:.2}× baseline",
            us(listing),
            us(listing) / us(base)
        );
    });
}
