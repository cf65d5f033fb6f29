//! Every tools/workspace_preview and tools/workspace_markdown operation on each pathological
//! nesting family of `support/families.rs`, at the nodes' size cap (16 MiB) by default.
//!
//! Run with `cargo bench -p cheng-nodes-documents --bench nesting`. `CHENG_BENCH_BYTES` sets the
//! input size, `CHENG_BENCH_FAMILY` / `CHENG_BENCH_OP` keep the families / operations whose
//! name contains the value (`CHENG_BENCH_FAMILY_EXACT` set: the family named exactly so),
//! `CHENG_BENCH_RUNS` (default 1) takes the best of N runs. Each line prints the family, a
//! baseline measured in the same run (`pulldown`: one bare pulldown-cmark pass over the same
//! bytes with the nodes' options and without the nodes' bounds on nesting and inline marks,
//! what a parse of everything would cost) and, per operation, the milliseconds of one whole node run (reading the file included); the
//! acceptance bound is 2000 ms for every node run. The process exits with status 1 when a node
//! run's best took more than 2000 ms both on the wall clock and in CPU time (all threads: the
//! CPU time is what a shared machine's wall time cannot show; the wall time can be the lower one
//! where an operation overlaps work on a second thread), so the benchmark can gate a release.
// A benchmark: `unwrap`/`expect` are allowed here (denied in library code, [workspace.lints]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

/// The `cheng` binary's allocator, so the figures are what users get.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "support/families.rs"]
mod families;

use cheng_node::{Decision, Node, RunContext, Values};
use cheng_nodes_documents::markdown::document::options;
use cheng_nodes_documents::{WorkspaceMarkdown, WorkspacePreview};
use serde_json::{json, Value};
use std::time::Instant;

fn main() {
    let bytes: usize = std::env::var("CHENG_BENCH_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16 * 1024 * 1024);
    let runs: usize = std::env::var("CHENG_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(1);
    let family_filter = std::env::var("CHENG_BENCH_FAMILY").unwrap_or_default();
    let op_filter = std::env::var("CHENG_BENCH_OP").unwrap_or_default();
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let ops: [(&dyn Node, &str); 7] = [
        (&WorkspacePreview, "markdown"),
        (&WorkspacePreview, "html"),
        (&WorkspacePreview, "artifact_summary"),
        (&WorkspaceMarkdown, "outline"),
        (&WorkspaceMarkdown, "diagnostics"),
        (&WorkspaceMarkdown, "format_suggestions"),
        (&WorkspaceMarkdown, "link_check_local"),
    ];
    println!("{bytes} bytes per input, best of {runs}; ms per whole node run (wall), then the CPU ms of the same runs");
    println!(
        "{:<22} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "family",
        "bytes",
        "pulldown",
        "markdown",
        "html",
        "artifact",
        "outline",
        "diagnose",
        "suggest",
        "links"
    );
    let mut worst = 0.0f64;
    let mut worst_cpu = 0.0f64;
    let mut over = Vec::new();
    for (name, generate) in families::FAMILIES {
        let exact = std::env::var_os("CHENG_BENCH_FAMILY_EXACT").is_some();
        if (exact && *name != family_filter) || !name.contains(family_filter.as_str()) {
            continue;
        }
        let text = generate(bytes);
        std::fs::write(root.join("f.md"), &text).expect("write");
        let mut row = format!("{name:<22} {:>9}", text.len());
        let mut cpu_row = format!("{:<22} {:>9}", "  cpu ms (all threads)", "");
        // Baseline: a bare pulldown-cmark pass over the same bytes with the nodes' options,
        // unbounded.
        let mut bare = f64::INFINITY;
        let mut bare_cpu = f64::INFINITY;
        for _ in 0..runs {
            let (start, cpu) = (Instant::now(), cpu_ms());
            let events = pulldown_cmark::Parser::new_ext(&text, options()).count();
            std::hint::black_box(events);
            bare = bare.min(start.elapsed().as_secs_f64() * 1000.0);
            bare_cpu = bare_cpu.min(cpu_ms() - cpu);
        }
        row.push_str(&format!(" {bare:>9.1}"));
        cpu_row.push_str(&format!(" {bare_cpu:>9.1}"));
        for (node, op) in ops {
            if !op.contains(op_filter.as_str()) {
                row.push_str(&format!(" {:>9}", "-"));
                cpu_row.push_str(&format!(" {:>9}", "-"));
                continue;
            }
            let mut best = f64::INFINITY;
            let mut best_cpu = f64::INFINITY;
            for _ in 0..runs {
                let ctx = RunContext::for_workspace(node.spec().id, root.clone(), Decision::Denied);
                let mut input = Values::new();
                input.insert("operation".into(), json!(op));
                input.insert("path".into(), json!("f.md"));
                input.insert("sandbox_root".into(), json!(root.display().to_string()));
                let (start, cpu) = (Instant::now(), cpu_ms());
                let out = runtime.block_on(node.run(&ctx, input));
                let took = start.elapsed().as_secs_f64() * 1000.0;
                best_cpu = best_cpu.min(cpu_ms() - cpu);
                if let Err(e) = &out {
                    eprintln!("{name} {op}: {}", e.message);
                }
                std::hint::black_box(
                    out.map(|v| v.get("summary").cloned().unwrap_or(Value::Null))
                        .ok(),
                );
                best = best.min(took);
            }
            worst = worst.max(best);
            worst_cpu = worst_cpu.max(best_cpu);
            // Under the bound on the wall clock, it finished in time; under it in CPU time (all
            // threads), it would have on an idle machine (where CPU-bound work takes at most its
            // CPU time), whatever else held the cores meanwhile.
            if best.min(best_cpu) > LIMIT_MS {
                over.push(format!(
                    "{name} / {op}: {best:.0} ms wall, {best_cpu:.0} ms CPU"
                ));
            }
            row.push_str(&format!(" {best:>9.1}"));
            cpu_row.push_str(&format!(" {best_cpu:>9.1}"));
        }
        println!("{row}");
        println!("{cpu_row}");
    }
    println!("slowest node run: {worst:.1} ms wall, {worst_cpu:.1} ms CPU (acceptance: every node run under {LIMIT_MS} ms, wall or CPU)");
    if !over.is_empty() {
        eprintln!("over the acceptance bound:\n  {}", over.join("\n  "));
        std::process::exit(1);
    }
}

/// The acceptance bound per node run, in ms.
const LIMIT_MS: f64 = 2000.0;

/// CPU time of this process so far (user + system, every thread), in ms: on a loaded machine
/// the wall time also counts the time other processes held the cores.
fn cpu_ms() -> f64 {
    // SAFETY: getrusage only writes the struct it is given, which is zero-initialised plain data.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let ms = |t: libc::timeval| t.tv_sec as f64 * 1000.0 + t.tv_usec as f64 / 1000.0;
    ms(usage.ru_utime) + ms(usage.ru_stime)
}
