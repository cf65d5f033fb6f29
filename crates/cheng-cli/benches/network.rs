//! code_shell's network through cheng's filtering proxy against the same download without it,
//! measured in the same run: an HTTPS file from a loopback server (python3's `http.server`
//! under TLS, a certificate made by `openssl` for the run), fetched by curl on the host (the
//! baseline) and by curl inside code_shell through the proxy (a CONNECT tunnel, the way pip and
//! cargo download), alternated round by round. Budget: the proxied throughput at least 0.8× the
//! direct one.
//!
//! `cargo bench -p cheng-cli --bench network` with `bwrap`, `curl`, `openssl` and `python3` on
//! PATH. `CHENG_BENCH_ROUNDS` (default 5) rounds, `CHENG_BENCH_MB` (default 200) the file's size.

// A benchmark: `unwrap`/`expect` are allowed here (denied in library code, [workspace.lints]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const SERVER: &str = r#"
import http.server, os, ssl, sys
os.chdir(sys.argv[1])
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[2], sys.argv[3])
httpd = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[4])), http.server.SimpleHTTPRequestHandler)
httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
httpd.serve_forever()
"#;

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// curl's `%{speed_download}` lines (bytes per second) in `text`.
fn speeds(text: &str) -> Vec<f64> {
    text.lines().filter_map(|l| l.trim().parse().ok()).collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let rounds = env_or("CHENG_BENCH_ROUNDS", 5);
    let megabytes = env_or("CHENG_BENCH_MB", 200);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ws = root.join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("big.bin"), vec![7u8; megabytes << 20]).unwrap();
    let made = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
        ])
        .arg("-keyout")
        .arg(root.join("key.pem"))
        .arg("-out")
        .arg(root.join("cert.pem"))
        .stderr(Stdio::null())
        .status()
        .expect("openssl runs");
    assert!(made.success(), "openssl could not make a certificate");
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let _server = Killed(
        Command::new("python3")
            .args(["-c", SERVER])
            .arg(&ws)
            .arg(root.join("cert.pem"))
            .arg(root.join("key.pem"))
            .arg(port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 runs"),
    );
    std::thread::sleep(Duration::from_millis(500));
    let url = format!("https://127.0.0.1:{port}/big.bin");
    let policy = root.join("policy.toml");
    // Loopback is reached only through a rule naming it; a real index would be named the same way.
    std::fs::write(&policy, "[all]\nnetwork_allow = [\"127.0.0.1\"]\n").unwrap();
    let mib = |b: f64| b / (1 << 20) as f64;
    println!("HTTPS download of {megabytes} MiB on loopback, medians of {rounds} rounds:");
    // Unlimited: both ends and the proxy share the machine's cores, so this measures the
    // proxy's CPU cost. At 100 MiB/s (curl's --limit-rate, a fast network link): whether the
    // proxy keeps up with a link rather than with memory.
    for limit in ["", "--limit-rate 100M "] {
        let curl =
            format!("curl -sk --noproxy '' {limit}-o /dev/null -w '%{{speed_download}}\\n' {url}");
        let (mut direct, mut proxied) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            let out = Command::new("sh").args(["-c", &curl]).output().unwrap();
            direct.extend(speeds(&String::from_utf8_lossy(&out.stdout)));
            proxied.extend(through_proxy(&ws, &policy, &curl));
        }
        assert_eq!(direct.len(), rounds, "the direct downloads failed");
        assert_eq!(proxied.len(), rounds, "the proxied downloads failed");
        let (direct, proxied) = (median(direct), median(proxied));
        let label = if limit.is_empty() {
            "unlimited"
        } else {
            "at 100 MiB/s"
        };
        println!(
            "  {label:13} direct {:6.0} MiB/s, through the proxy {:6.0} MiB/s: {:.2}x (budget >= 0.8x)",
            mib(direct),
            mib(proxied),
            proxied / direct
        );
    }
}

/// One download inside code_shell through the proxy; its speed, when it worked.
fn through_proxy(ws: &Path, policy: &Path, curl: &str) -> Vec<f64> {
    let out = Command::new(env!("CARGO_BIN_EXE_cheng"))
        .args(["run", "tools/code_shell", "--workspace"])
        .arg(ws)
        .args([
            "--set",
            &format!("script={curl}"),
            "--set",
            "timeout_ms=300000",
        ])
        .args(["--config-set", "allow_network:=true", "--approve", "--json"])
        .env("CHENG_POLICY", policy)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    speeds(value["stdout"].as_str().unwrap_or(""))
}
