//! Process sessions through `cheng serve --stdio`: exec_command of `true` against
//! workspace_shell's `true` in the same server (interleaved, same run), and how closely a wait on
//! an idle session keeps to its yield time.
//!
//! `cargo bench -p cheng-cli --bench sessions`. `CHENG_BENCH_ITERS` (default 200) sets the samples
//! of the `true` comparison; `CHENG_BENCH_POLLS` (default 5) the number of 5 s idle polls.

// A benchmark: `unwrap`/`expect` are allowed here (denied in library code, [workspace.lints]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::{env_count, median, time, Conn};
use serde_json::json;
use std::time::Duration;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().canonicalize().expect("canonical");
    let n = env_count("CHENG_BENCH_ITERS", 200);
    let mut conn = Conn::start(&ws, &[]);
    let mut targets = Vec::new();

    // exec_command `true` (returns at the exit, well before its 250 ms yield) against
    // workspace_shell `true`, interleaved so both see the same machine.
    for _ in 0..20 {
        conn.call("workspace_shell", json!({"command": "true"}));
        conn.call(
            "exec_command",
            json!({"command": "true", "yield_time_ms": 250}),
        );
    }
    let (mut shell, mut exec) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        shell.push(time(|| {
            drop(conn.call("workspace_shell", json!({"command": "true"})))
        }));
        exec.push(time(|| {
            let out = conn.call(
                "exec_command",
                json!({"command": "true", "yield_time_ms": 250}),
            )["structuredContent"]
                .clone();
            assert_eq!(out["running"], false, "{out}");
        }));
    }
    let (shell, exec) = (median(shell), median(exec));
    let ratio = exec.as_secs_f64() / shell.as_secs_f64();
    println!("workspace_shell true: {:.2} ms, exec_command true: {:.2} ms, ratio {ratio:.2} (median of {n})", ms(shell), ms(exec));
    targets.push(format!(
        "exec_command true <= 1.2x workspace_shell true: {}",
        if ratio <= 1.2 { "met" } else { "MISSED" }
    ));

    // Waits on an idle session: a write its process never answers (yield 250 ms), and an empty
    // poll (the 5000 ms floor). The overshoot is the call's round trip plus the timer's lateness.
    let out = conn.call(
        "exec_command",
        json!({"command": "sleep", "args": ["1000"], "yield_time_ms": 250}),
    )["structuredContent"]
        .clone();
    let sid = out["session_id"].clone();
    let writes: Vec<Duration> = (0..20)
        .map(|_| {
            time(|| {
                drop(conn.call(
                    "write_stdin",
                    json!({"session_id": sid, "chars": "x\n", "yield_time_ms": 250}),
                ))
            })
        })
        .collect();
    let write = median(writes.clone());
    let worst_write = writes.iter().max().copied().unwrap_or_default();
    println!(
        "idle write, yield 250 ms: median {:.2} ms, worst {:.2} ms (20 samples)",
        ms(write),
        ms(worst_write)
    );
    let polls = env_count("CHENG_BENCH_POLLS", 5);
    let polls: Vec<Duration> = (0..polls)
        .map(|_| {
            time(|| {
                drop(conn.call(
                    "write_stdin",
                    json!({"session_id": sid, "chars": "", "yield_time_ms": 250}),
                ))
            })
        })
        .collect();
    let worst_poll = polls.iter().max().copied().unwrap_or_default();
    let poll = median(polls.clone());
    println!(
        "idle poll (5000 ms floor): median {:.2} ms, worst {:.2} ms ({} samples)",
        ms(poll),
        ms(worst_poll),
        polls.len()
    );
    // Judged on the medians (a shared machine delays single samples); the worst are shown.
    let within = write <= Duration::from_millis(255) && poll <= Duration::from_millis(5005);
    targets.push(format!(
        "idle session returns within yield + 5 ms: {}",
        if within { "met" } else { "MISSED" }
    ));
    for target in targets {
        println!("target {target}");
    }
}
