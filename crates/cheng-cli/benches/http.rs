//! `cheng serve --http` against `cheng serve --stdio`, measured in the same run: the palette, a
//! one-node read-only run through `POST /api/runs` and its event stream, MCP `tools/call` over
//! Streamable HTTP, and a soak of many runs in one server process.
//!
//! `cargo bench -p cheng-cli --bench http`. `CHENG_BENCH_ITERS` (default 200) sets the samples
//! per measurement; `CHENG_SOAK_RUNS` (1000) the soak's runs. HTTP requests go over one kept-alive
//! connection per client, as browsers and MCP clients send them.

// A benchmark: `unwrap`/`expect` are allowed here (denied in library code, [workspace.lints]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "../tests/suite/served.rs"]
mod served;

/// What `served` takes from the test suite's support module.
mod support {
    pub fn cheng() -> std::process::Command {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_cheng"));
        cmd.env_remove("CHENG_ENABLE_CODE_JS")
            .env_remove("CHENG_ENABLE_CODE_PYTHON")
            .stdin(std::process::Stdio::null());
        cmd
    }
}

use cheng_test_support::footprint;
use common::{env_count, iters, median, soak_report, time, us, Conn};
use serde_json::{json, Value};
use served::{KeepAlive, Response, Served, TOKEN};
use std::time::{Duration, Instant};

/// A canvas's connection to the API.
struct Canvas {
    connection: KeepAlive,
    host: String,
}

impl Canvas {
    fn open(server: &Served) -> Canvas {
        Canvas {
            connection: server.keep_alive(),
            host: server.addr.clone(),
        }
    }

    fn call(&mut self, method: &str, path: &str, body: Option<&str>) -> Response {
        let auth = format!("Bearer {TOKEN}");
        let headers = [
            ("Host", self.host.as_str()),
            ("Authorization", auth.as_str()),
        ];
        self.connection.request(method, path, &headers, body)
    }

    /// One run of `graph`, to its `graph_finished` (the event stream ends there).
    fn run(&mut self, graph: &str) {
        let started = self.call("POST", "/api/runs", Some(graph));
        assert_eq!(started.status, 202, "{}", started.body);
        let started: Value = serde_json::from_str(&started.body).expect("JSON");
        let id = started["run_id"].as_str().expect("run_id");
        let events = self.call("GET", &format!("/api/runs/{id}/events"), None);
        assert!(
            events.body.contains("event: graph_finished"),
            "{}",
            events.body
        );
    }
}

/// An MCP client over Streamable HTTP: a handshake-era session (`Mcp-Session-Id`), or, with
/// `stateless`, the 2026-07-28 generation (no session; each request carries its version).
struct McpHttp {
    connection: KeepAlive,
    host: String,
    session: String,
    stateless: bool,
    next: u64,
}

impl McpHttp {
    fn stateless(server: &Served) -> McpHttp {
        McpHttp {
            connection: server.keep_alive(),
            host: server.addr.clone(),
            session: String::new(),
            stateless: true,
            next: 1,
        }
    }

    fn open(server: &Served) -> McpHttp {
        let mut mcp = McpHttp {
            connection: server.keep_alive(),
            host: server.addr.clone(),
            session: String::new(),
            stateless: false,
            next: 1,
        };
        let (response, session) = mcp.post(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}));
        assert!(response.get("result").is_some(), "{response}");
        mcp.session = session.expect("Mcp-Session-Id");
        mcp.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        mcp
    }

    /// The JSON-RPC message the response carries (JSON or one SSE `data:` line), and the session.
    fn post(&mut self, message: &Value) -> (Value, Option<String>) {
        let auth = format!("Bearer {TOKEN}");
        let mut headers = vec![
            ("Host", self.host.as_str()),
            ("Authorization", auth.as_str()),
            ("Accept", "application/json, text/event-stream"),
            (
                "MCP-Protocol-Version",
                if self.stateless {
                    "2026-07-28"
                } else {
                    "2025-11-25"
                },
            ),
        ];
        if self.stateless {
            headers.push(("Mcp-Method", message["method"].as_str().unwrap_or_default()));
            if let Some(name) = message["params"]["name"].as_str() {
                headers.push(("Mcp-Name", name));
            }
        }
        if !self.session.is_empty() {
            headers.push(("Mcp-Session-Id", &self.session));
        }
        let response =
            self.connection
                .request("POST", "/mcp", &headers, Some(&message.to_string()));
        let session = response.header("mcp-session-id").map(str::to_string);
        let body = response
            .body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .find(|d| d.starts_with('{'))
            .unwrap_or(response.body.as_str());
        (serde_json::from_str(body).unwrap_or(Value::Null), session)
    }

    fn call(&mut self, name: &str, arguments: Value) -> Value {
        self.next += 1;
        let mut params = json!({"name": name, "arguments": arguments});
        if self.stateless {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            });
        }
        let (response, _) = self.post(
            &json!({"jsonrpc": "2.0", "id": self.next, "method": "tools/call", "params": params}),
        );
        assert_eq!(response["result"]["isError"], false, "{response}");
        response
    }
}

fn verdict(met: bool) -> &'static str {
    if met {
        "met"
    } else {
        "MISSED"
    }
}

fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().canonicalize().expect("canonical");
    std::fs::write(ws.join("a.txt"), "alpha\nbeta\n").expect("write");
    let n = iters();
    let server = Served::start(&ws, &["--approve"]);
    let mut stdio = Conn::start(&ws, &[]);
    let mut targets = Vec::new();

    // The palette.
    let mut canvas = Canvas::open(&server);
    for _ in 0..20 {
        canvas.call("GET", "/api/nodes", None);
    }
    let palette = median(
        (0..n)
            .map(|_| time(|| assert_eq!(canvas.call("GET", "/api/nodes", None).status, 200)))
            .collect(),
    );
    println!("GET /api/nodes: {:.0} µs (median of {n})", us(palette));
    targets.push(format!(
        "GET /api/nodes < 5 ms: {}",
        verdict(palette < Duration::from_millis(5))
    ));

    // A one-node read-only run through the canvas API against the same node through stdio,
    // interleaved.
    let arguments = json!({"file_path": "a.txt"});
    let graph = json!({"version": 1, "nodes": [{"id": "r", "type": "tools/read_file", "inputs": arguments}]}).to_string();
    for _ in 0..20 {
        canvas.run(&graph);
        stdio.call("read_file", arguments.clone());
    }
    let (mut over_api, mut over_stdio) = (Vec::new(), Vec::new());
    for _ in 0..n {
        over_api.push(time(|| canvas.run(&graph)));
        over_stdio.push(time(|| drop(stdio.call("read_file", arguments.clone()))));
    }
    let (api, base) = (median(over_api), median(over_stdio));
    let ratio = api.as_secs_f64() / base.as_secs_f64();
    println!(
        "read_file: POST /api/runs + events to graph_finished {:.0} µs / stdio tools/call {:.0} µs = {ratio:.2}×",
        us(api),
        us(base)
    );
    targets.push(format!(
        "a run through the canvas API ≤ 1.5× stdio: {}",
        verdict(ratio <= 1.5)
    ));

    // MCP tools/call over Streamable HTTP, in each generation, against stdio, interleaved.
    for (era, mut mcp) in [
        ("a handshake-era session", McpHttp::open(&server)),
        ("stateless 2026-07-28", McpHttp::stateless(&server)),
    ] {
        for _ in 0..20 {
            mcp.call("read_file", arguments.clone());
        }
        let (mut over_http, mut over_stdio) = (Vec::new(), Vec::new());
        for _ in 0..n {
            over_http.push(time(|| drop(mcp.call("read_file", arguments.clone()))));
            over_stdio.push(time(|| drop(stdio.call("read_file", arguments.clone()))));
        }
        let (http, base) = (median(over_http), median(over_stdio));
        let ratio = http.as_secs_f64() / base.as_secs_f64();
        println!(
            "read_file: MCP tools/call over HTTP ({era}) {:.0} µs / over stdio {:.0} µs = {ratio:.2}×",
            us(http),
            us(base)
        );
        targets.push(format!(
            "MCP tools/call over HTTP ({era}) ≤ 1.5× stdio: {}",
            verdict(ratio <= 1.5)
        ));
    }

    // Soak: many runs in one server; descriptors, threads and memory return to the warm-up's
    // (the history keeps the last 100 finished runs, so the warm-up fills it first).
    let runs = env_count("CHENG_SOAK_RUNS", 1_000);
    for _ in 0..200 {
        canvas.run(&graph);
    }
    std::thread::sleep(Duration::from_millis(200));
    let before = footprint(server.pid());
    let threads_before = threads(server.pid());
    let started = Instant::now();
    for _ in 0..runs {
        canvas.run(&graph);
    }
    let took = started.elapsed();
    std::thread::sleep(Duration::from_millis(200));
    let after = footprint(server.pid());
    // tokio keeps an idle blocking-pool thread for 10 s: one the soak's last runs woke may still
    // be parked. A leaked thread stays; a parked one is gone within the keep-alive.
    let settle = Instant::now() + Duration::from_secs(12);
    let mut threads_after = threads(server.pid());
    while threads_after > threads_before && Instant::now() < settle {
        std::thread::sleep(Duration::from_millis(200));
        threads_after = threads(server.pid());
    }
    let steady = soak_report(
        &format!(
            "{runs} runs in {:.1} s, threads {threads_before} -> {threads_after}",
            took.as_secs_f64()
        ),
        &before,
        &after,
    ) && threads_after <= threads_before;
    targets.push(format!(
        "soak: fds, threads and children back to warm-up, RSS within +8 MiB: {}",
        verdict(steady)
    ));

    println!("\ntargets:");
    for t in &targets {
        println!("  {t}");
    }
}

/// The process's threads (tokio's workers and blocking pool), from /proc.
fn threads(pid: u32) -> usize {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0)
}
