//! `cheng serve --stdio`: round trips through the MCP server against their baselines, measured in
//! the same run, and a soak of many calls in one server process.
//!
//! `cargo bench -p cheng-cli --bench serve`. `CHENG_BENCH_ITERS` (default 200) sets the samples
//! per measurement; `CHENG_SOAK_READS` (10000) and `CHENG_SOAK_SHELLS` (1000) the soak's calls;
//! `CHENG_BENCH_SERVER` a `cheng` binary to serve instead of this build's.

// A benchmark: `unwrap`/`expect` are allowed here (denied in library code, [workspace.lints]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

// Linked so that the in-process baseline finds the real nodes.
use cheng_nodes_documents as _;

use cheng_engine::{Engine, RunOptions};
use cheng_node::Registry;
use cheng_test_support::footprint;

mod common;
use common::{env_count, iters, median, soak_report, time, us, Conn};
use serde_json::json;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn bwrap_works() -> bool {
    Command::new("bwrap")
        .args([
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--unshare-pid",
            "--unshare-net",
            "true",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().canonicalize().expect("canonical");
    let doc = "# Title\n\n## Part\n\ntext with a [link](#part)\n".repeat(20);
    std::fs::write(ws.join("doc.md"), doc).expect("write");
    let n = iters();
    let mut conn = Conn::start(&ws, &[]);
    let targets = &mut Vec::<String>::new();

    // tools/list.
    for _ in 0..20 {
        conn.rpc("tools/list", json!({}));
    }
    let list = median(
        (0..n)
            .map(|_| time(|| drop(conn.rpc("tools/list", json!({})))))
            .collect(),
    );
    println!(
        "tools/list round trip ({} tools): {:.0} µs (median of {n})",
        conn.rpc("tools/list", json!({}))["tools"]
            .as_array()
            .map_or(0, Vec::len),
        us(list)
    );
    targets.push(format!(
        "tools/list < 5 ms: {}",
        if list < Duration::from_millis(5) {
            "met"
        } else {
            "MISSED"
        }
    ));

    // A read-only call through the server against the same node run in process by the engine.
    let input = json!({"operation": "outline", "path": "doc.md"});
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let engine = Engine::new(
        Registry::from_inventory(),
        cheng_node::policy::Policy::builtin(),
    );
    let in_process = || {
        let options = RunOptions::new(&ws).expect("options");
        let inputs = input.as_object().cloned().unwrap_or_default();
        let result = runtime
            .block_on(engine.run_node(
                "tools/workspace_markdown",
                Default::default(),
                inputs,
                options,
            ))
            .expect("valid");
        assert_eq!(result.outputs["success"], true);
    };
    let (mut served, mut direct) = (Vec::new(), Vec::new());
    for _ in 0..20 {
        conn.call("workspace_markdown", input.clone());
        in_process();
    }
    for _ in 0..n {
        served.push(time(|| {
            drop(conn.call("workspace_markdown", input.clone()))
        }));
        direct.push(time(in_process));
    }
    let (served, direct) = (median(served), median(direct));
    let ratio = us(served) / us(direct);
    println!(
        "workspace_markdown outline: server {:.0} µs, in process {:.0} µs, ratio {ratio:.2}×",
        us(served),
        us(direct)
    );
    targets.push(format!(
        "read-only round trip ≤ 1.2× in process: {} ({ratio:.2}×)",
        if ratio <= 1.2 { "met" } else { "MISSED" }
    ));

    // code_shell `true` through the server against the bare bubblewrap line.
    if bwrap_works() {
        let bare = || {
            let ok = Command::new("bwrap")
                .args([
                    "--ro-bind",
                    "/",
                    "/",
                    "--dev",
                    "/dev",
                    "--proc",
                    "/proc",
                    "--unshare-pid",
                    "--unshare-net",
                    "--unshare-ipc",
                    "--unshare-uts",
                    "--new-session",
                    "--die-with-parent",
                    "true",
                ])
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "bare bwrap failed");
        };
        let (mut served, mut raw) = (Vec::new(), Vec::new());
        let rounds = (n / 4).max(10);
        for _ in 0..3 {
            conn.call("code_shell", json!({"script": "true"}));
        }
        for _ in 0..rounds {
            served.push(time(|| {
                drop(conn.call("code_shell", json!({"script": "true"})))
            }));
            raw.push(time(bare));
        }
        let (served, raw) = (median(served), median(raw));
        let ratio = us(served) / us(raw);
        println!(
            "code_shell true: server {:.0} µs, bare bwrap {:.0} µs, ratio {ratio:.2}×",
            us(served),
            us(raw)
        );
        targets.push(format!(
            "code_shell true ≤ 1.6× bare bwrap: {} ({ratio:.2}×)",
            if ratio <= 1.6 { "met" } else { "MISSED" }
        ));
    } else {
        println!("code_shell: skipped (bubblewrap cannot create namespaces here)");
    }

    // code_js through the server against `node -e` on the same script.
    let node = Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if node {
        let mut js = Conn::start(&ws, &[("CHENG_ENABLE_CODE_JS", "1")]);
        // The smallest script: what is measured is the call's path (a pipe hop to a jailed
        // worker process and back), not QuickJS.
        let script = "1 + 1";
        for _ in 0..5 {
            js.call("code_js", json!({"script": script}));
        }
        let (mut served, mut raw) = (Vec::new(), Vec::new());
        for _ in 0..(n / 4).max(10) {
            served.push(time(|| drop(js.call("code_js", json!({"script": script})))));
            raw.push(time(|| {
                let ok = Command::new("node")
                    .args(["-e", &format!("console.log({script})")])
                    .stdout(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success());
                assert!(ok);
            }));
        }
        let (served, raw) = (median(served), median(raw));
        let ratio = us(raw) / us(served);
        println!(
            "code_js: server {:.0} µs, node -e {:.0} µs, server {ratio:.0}× faster",
            us(served),
            us(raw)
        );
        // For reading the figure: the same interleaving with the cheapest request there is.
        let mut pings = Vec::new();
        for _ in 0..(n / 8).max(10) {
            let ok = Command::new("node")
                .args(["-e", &format!("console.log({script})")])
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok);
            pings.push(time(|| drop(js.rpc("ping", json!({})))));
        }
        println!("  (ping right after a node -e run, the floor of any request in this interleaving: {:.0} µs)", us(median(pings)));
        targets.push(format!(
            "code_js ≥ 100× faster than node -e: {} ({ratio:.0}×)",
            if ratio >= 100.0 { "met" } else { "MISSED" }
        ));
        // `CHENG_BENCH_COMPARE`: other `cheng` binaries, `:`-separated, whose code_js calls alternate
        // with this server's in one loop (each after a `node -e` run), for a paired before/after
        // comparison on a machine whose load moves between runs.
        if let Ok(others) = std::env::var("CHENG_BENCH_COMPARE") {
            let mut servers = vec![("this server".to_string(), js)];
            for other in others.split(':').filter(|o| !o.is_empty()) {
                let mut conn = Conn::start_binary(other, &ws, &[("CHENG_ENABLE_CODE_JS", "1")]);
                for _ in 0..5 {
                    conn.call("code_js", json!({"script": script}));
                }
                servers.push((other.to_string(), conn));
            }
            let mut samples = vec![Vec::new(); servers.len()];
            for _ in 0..(n / 2).max(10) {
                for (k, (_, conn)) in servers.iter_mut().enumerate() {
                    let ok = Command::new("node")
                        .args(["-e", &format!("console.log({script})")])
                        .stdout(Stdio::null())
                        .status()
                        .is_ok_and(|s| s.success());
                    assert!(ok);
                    samples[k].push(time(|| {
                        drop(conn.call("code_js", json!({"script": script})))
                    }));
                }
            }
            for ((name, _), samples) in servers.iter().zip(samples) {
                let mut sorted = samples.clone();
                sorted.sort();
                println!(
                    "  compared: code_js {name}: median {:.0} µs, quartiles {:.0}–{:.0} µs",
                    us(median(samples)),
                    us(sorted[sorted.len() / 4]),
                    us(sorted[sorted.len() * 3 / 4])
                );
            }
        }
    } else {
        println!("code_js: skipped (node is not installed)");
    }

    // Soak: many calls in one process; descriptors, children and memory return to the warm-up's.
    let reads = env_count("CHENG_SOAK_READS", 10_000);
    let shells = env_count("CHENG_SOAK_SHELLS", 1_000);
    let mut soak = Conn::start(&ws, &[]);
    for _ in 0..200 {
        soak.call("workspace_markdown", input.clone());
    }
    for _ in 0..20 {
        soak.call("workspace_shell", json!({"command": "true"}));
    }
    let before = footprint(soak.pid());
    let started = Instant::now();
    for i in 0..reads.max(shells) {
        if i < reads {
            soak.call("workspace_markdown", input.clone());
        }
        if i < shells {
            soak.call("workspace_shell", json!({"command": "true"}));
        }
    }
    let took = started.elapsed();
    std::thread::sleep(Duration::from_millis(200));
    let after = footprint(soak.pid());
    let steady = soak_report(
        &format!(
            "{reads} workspace_markdown + {shells} workspace_shell true in {:.1} s",
            took.as_secs_f64()
        ),
        &before,
        &after,
    );
    targets.push(format!(
        "soak: fds and children back to warm-up, RSS within +8 MiB: {}",
        if steady { "met" } else { "MISSED" }
    ));

    println!("\ntargets:");
    for t in targets.iter() {
        println!("  {t}");
    }
}
