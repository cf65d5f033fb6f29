//! What the server benchmarks share: a `cheng serve --stdio` connection as MCP clients drive it,
//! and the sample arithmetic.
#![allow(dead_code)]

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Conn {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: i64,
}

impl Conn {
    pub fn start(workspace: &Path, env: &[(&str, &str)]) -> Conn {
        // `CHENG_BENCH_SERVER` runs another build of the server (e.g. to compare before and after).
        let server = std::env::var("CHENG_BENCH_SERVER")
            .unwrap_or_else(|_| env!("CARGO_BIN_EXE_cheng").to_string());
        Conn::start_binary(&server, workspace, env)
    }

    pub fn start_binary(server: &str, workspace: &Path, env: &[(&str, &str)]) -> Conn {
        let mut cmd = Command::new(server);
        cmd.args(["serve", "--stdio", "--approve", "--workspace"])
            .arg(workspace);
        cmd.env_remove("CHENG_ENABLE_CODE_JS")
            .env_remove("CHENG_ENABLE_CODE_PYTHON");
        for (k, v) in env {
            cmd.env(k, v);
        }
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
        conn.notify("notifications/initialized");
        conn
    }

    /// One message, one `write`, as MCP clients send them. (`writeln!` straight into the pipe
    /// wrote every JSON token with a write of its own — some fifty per request, each waking the
    /// server for a piece of a line — which the round trips then measured.)
    pub fn send(&mut self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).expect("write");
        self.stdin.flush().expect("flush");
    }

    pub fn notify(&mut self, method: &str) {
        self.send(&json!({"jsonrpc": "2.0", "method": method}));
    }

    pub fn rpc(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
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

    pub fn call(&mut self, name: &str, arguments: Value) -> Value {
        let result = self.rpc("tools/call", json!({"name": name, "arguments": arguments}));
        assert_eq!(result["isError"], false, "{name}: {result}");
        result
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn iters() -> usize {
    std::env::var("CHENG_BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

pub fn env_count(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

pub fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

pub fn time(mut f: impl FnMut()) -> Duration {
    let start = Instant::now();
    f();
    start.elapsed()
}

pub fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Prints a soak's footprint before and after (`what`: what ran, and how long it took) and
/// returns whether descriptors and children are back to the warm-up's and RSS within 8 MiB.
pub fn soak_report(
    what: &str,
    before: &cheng_test_support::Footprint,
    after: &cheng_test_support::Footprint,
) -> bool {
    println!(
        "soak: {what}; fds {} -> {}, children {} -> {}, RSS {} -> {} KiB ({:+} KiB)",
        before.fds,
        after.fds,
        before.children,
        after.children,
        before.rss_kib,
        after.rss_kib,
        after.rss_kib as i64 - before.rss_kib as i64
    );
    after.fds <= before.fds
        && after.children <= before.children
        && after.rss_kib <= before.rss_kib + 8 * 1024
}
