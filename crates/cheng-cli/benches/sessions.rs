//! Process sessions through `cheng serve --stdio`: exec_command of `true` against
//! workspace_shell's `true` in the same server (interleaved, same run), and how closely a wait on
//! an idle session keeps to its yield time.
//!
//! `cargo bench -p cheng-cli --bench sessions`. `CHENG_BENCH_ITERS` (default 200) sets the samples
//! of the `true` comparison; `CHENG_BENCH_POLLS` (default 5) the number of 5 s idle polls.

// A benchmark: `unwrap`/`expect` are allowed here (denied in library code, [workspace.lints]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

struct Conn {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: i64,
}

impl Conn {
    fn start(workspace: &Path) -> Conn {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_cheng"));
        cmd.args(["serve", "--stdio", "--approve", "--workspace"])
            .arg(workspace);
        cmd.env_remove("CHENG_ENABLE_CODE_JS")
            .env_remove("CHENG_ENABLE_CODE_PYTHON");
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("cheng serve starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut conn = Conn {
            child,
            stdin,
            stdout,
            next: 1,
        };
        conn.rpc("initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}));
        writeln!(
            conn.stdin,
            "{}",
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
        )
        .expect("write");
        conn
    }

    fn rpc(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        writeln!(
            self.stdin,
            "{}",
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        )
        .expect("write");
        self.stdin.flush().expect("flush");
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).expect("read") > 0,
                "the server closed stdout"
            );
            let message: Value = serde_json::from_str(&line).expect("JSON");
            if message["id"] == json!(id) {
                assert!(message.get("error").is_none(), "{method}: {message}");
                return message["result"].clone();
            }
        }
    }

    fn call(&mut self, name: &str, arguments: Value) -> Value {
        let result = self.rpc("tools/call", json!({"name": name, "arguments": arguments}));
        assert_eq!(result["isError"], false, "{name}: {result}");
        result["structuredContent"].clone()
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn env_count(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn time(f: impl FnOnce()) -> Duration {
    let start = Instant::now();
    f();
    start.elapsed()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().canonicalize().expect("canonical");
    let n = env_count("CHENG_BENCH_ITERS", 200);
    let mut conn = Conn::start(&ws);
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
            );
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
    );
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
