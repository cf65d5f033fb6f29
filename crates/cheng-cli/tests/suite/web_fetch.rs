//! tools/web_fetch through the real binary, against pages served on loopback. The names the
//! tests fetch (`docs.test`, …) are mapped to 127.0.0.1 by the test switch
//! `CHENG_TEST_RESOLVE`; nothing leaves the machine. Each refusal is checked on the server too:
//! a refused hop must never reach it.

use super::support::*;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// A loopback HTTP server answering a fixed set of paths; it records every request line.
pub(super) struct Server {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Server {
    pub(super) fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let log = Arc::clone(&log);
                std::thread::spawn(move || answer(stream, port, &log));
            }
        });
        Server { port, seen }
    }

    pub(super) fn url(&self, host: &str, path: &str) -> String {
        format!("http://{host}:{}{path}", self.port)
    }

    /// The request lines received, as `HOST PATH`.
    pub(super) fn seen(&self) -> Vec<String> {
        self.seen.lock().expect("log").clone()
    }
}

const PAGE: &str = "<!doctype html><html><head><title>Install guide</title><script>var tracking = 'SCRIPT-BODY';</script><style>p{color:red}</style></head><body><h1>Install</h1><p>Run <code>pip install cheng</code> first.</p><a href=\"/next\">Next step</a></body></html>";

fn answer(mut stream: TcpStream, port: u16, log: &Mutex<Vec<String>>) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut request = String::new();
    let mut host = String::new();
    let _ = reader.read_line(&mut request);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some(value) = line.to_ascii_lowercase().strip_prefix("host:") {
            host = value.trim().to_string();
        }
    }
    let path = request.split_whitespace().nth(1).unwrap_or("").to_string();
    log.lock().expect("log").push(format!("{host} {path}"));
    if path == "/stall" {
        // An answer that comes too late for any test's timeout.
        std::thread::sleep(std::time::Duration::from_secs(10));
    }
    let redirect = |to: String| {
        format!("HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            .into_bytes()
    };
    let ok = |kind: &str, body: &[u8], length: Option<usize>| {
        let mut head = format!("HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nConnection: close\r\n");
        if let Some(length) = length {
            head.push_str(&format!("Content-Length: {length}\r\n"));
        }
        head.push_str("\r\n");
        [head.as_bytes(), body].concat()
    };
    let big = vec![b'a'; 6 * 1024 * 1024];
    // Asked as a proxy (a request in absolute form): say so.
    if path.starts_with("http://") {
        let body = format!("via proxy: {path}");
        let _ = stream.write_all(&ok("text/plain", body.as_bytes(), Some(body.len())));
        return;
    }
    let reply = match path.as_str() {
        "/page.html" => ok("text/html; charset=utf-8", PAGE.as_bytes(), Some(PAGE.len())),
        "/data.json" => ok("application/json", b"{\"version\": \"1.2.3\"}", Some(20)),
        "/logo.png" => ok("image/png", &[0x89, b'P', b'N', b'G', 0, 1, 2, 3], Some(8)),
        "/missing" => b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 9\r\nConnection: close\r\n\r\nno page\r\n".to_vec(),
        "/moved" => redirect(format!("http://docs.test:{port}/page.html")),
        "/to-evil" => redirect(format!("http://evil.test:{port}/page.html")),
        "/to-loopback" => redirect(format!("http://127.0.0.1:{port}/page.html")),
        "/loop" => redirect("/loop".to_string()),
        // No Content-Length: the body runs to the end of the connection, past the 5 MiB cap.
        "/big" => ok("text/plain", &big, None),
        // A Content-Length far larger than what is sent: the body breaks off.
        "/short" => ok("text/plain", b"only this", Some(100_000_000)),
        _ => b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec(),
    };
    let _ = stream.write_all(&reply);
}

/// The names the tests fetch, all on loopback (`CHENG_TEST_RESOLVE`).
pub(super) const NAMES: &str =
    "docs.test=127.0.0.1,evil.test=127.0.0.1,other.test=127.0.0.1,a.wild.test=127.0.0.1";

/// `cheng run tools/web_fetch` under `policy` (TOML, none: built-in), with `config` and `input`;
/// `--approve` unless `approve` is false. Exit code and the JSON output.
fn fetch(policy: Option<&str>, config: Value, input: Value, approve: bool) -> (i32, Value, String) {
    let (_dir, ws) = temp_workspace();
    let policy_file = ws.join("policy.toml");
    let mut cmd = cheng();
    cmd.env("CHENG_TEST_RESOLVE", NAMES);
    if let Some(policy) = policy {
        std::fs::write(&policy_file, policy).expect("policy");
        cmd.env("CHENG_POLICY", &policy_file);
    }
    cmd.args(["run", "tools/web_fetch", "--workspace", path(&ws)])
        .args([
            "--config",
            &config.to_string(),
            "--input",
            &input.to_string(),
        ]);
    if approve {
        cmd.arg("--approve");
    }
    let out = cmd.output().expect("cheng runs");
    let value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), value, text(&out.stderr))
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8")
}

/// The operator names the test hosts (they resolve to loopback, which only a rule naming the
/// host reaches).
const ALLOW_TEST_HOSTS: &str = "[all]\nnetwork_allow = [\"docs.test\", \"other.test\", \"evil.test\"]\nnetwork_deny = [\"evil.test\"]\n";

#[test]
fn a_page_comes_back_as_readable_text_and_json_as_it_is() {
    let server = Server::start();
    let (code, out, err) = fetch(
        Some(ALLOW_TEST_HOSTS),
        json!({}),
        json!({"url": server.url("docs.test", "/page.html")}),
        true,
    );
    assert_eq!(code, 0, "{out} {err}");
    assert_eq!(out["status"], 200, "{out}");
    let content = out["content"].as_str().expect("content");
    assert!(content.contains("Title: Install guide"), "{content}");
    assert!(content.contains("# Install"), "{content}");
    assert!(
        content.contains("Run pip install cheng first."),
        "{content}"
    );
    assert!(content.contains("Next step </next>"), "{content}");
    assert!(
        !content.contains("SCRIPT-BODY") && !content.contains("color:red"),
        "{content}"
    );
    assert_eq!(out["content_type"], "text/html; charset=utf-8");
    assert_eq!(out["bytes"], PAGE.len());

    let (code, out, _) = fetch(
        Some(ALLOW_TEST_HOSTS),
        json!({}),
        json!({"url": server.url("docs.test", "/data.json")}),
        true,
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["content"], "{\"version\": \"1.2.3\"}");

    let (_, out, _) = fetch(
        Some(ALLOW_TEST_HOSTS),
        json!({}),
        json!({"url": server.url("docs.test", "/logo.png")}),
        true,
    );
    let content = out["content"].as_str().expect("content");
    assert!(
        content.starts_with("(8 bytes of image/png not shown"),
        "{content}"
    );

    // An HTTP error is still a response: the model reads the status and the body.
    let (code, out, _) = fetch(
        Some(ALLOW_TEST_HOSTS),
        json!({}),
        json!({"url": server.url("docs.test", "/missing")}),
        true,
    );
    assert_eq!(
        (code, &out["status"], &out["success"]),
        (0, &json!(404), &json!(true)),
        "{out}"
    );
    assert!(
        out["summary"]
            .as_str()
            .is_some_and(|s| s.starts_with("HTTP 404 Not Found")),
        "{out}"
    );
}

#[test]
fn text_is_cut_to_max_chars_and_the_body_to_five_mebibytes() {
    let server = Server::start();
    let (code, out, _) = fetch(
        Some(ALLOW_TEST_HOSTS),
        json!({}),
        json!({"url": server.url("docs.test", "/big"), "max_chars": 1000}),
        true,
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out["bytes"],
        5 * 1024 * 1024,
        "the cap counts the bytes read"
    );
    assert_eq!(out["body_truncated"], true);
    assert_eq!(out["truncated"], true);
    assert_eq!(out["chars_total"], 5 * 1024 * 1024);
    let content = out["content"].as_str().expect("content");
    assert!(content.starts_with(&"a".repeat(1000)), "{}", &content[..50]);
    assert!(
        content.contains("…[cut: 1000 of 5242880 characters shown"),
        "{}",
        &content[990..]
    );

    // A Content-Length the server does not keep: the fetch fails, it does not hang or invent.
    let (code, out, _) = fetch(
        Some(ALLOW_TEST_HOSTS),
        json!({}),
        json!({"url": server.url("docs.test", "/short")}),
        true,
    );
    assert_ne!(code, 0);
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_NETWORK_FAILED", "{out}");

    // timeout_ms bounds the whole fetch.
    let started = std::time::Instant::now();
    let (code, out, _) = fetch(
        Some(ALLOW_TEST_HOSTS),
        json!({}),
        json!({"url": server.url("docs.test", "/stall"), "timeout_ms": 500}),
        true,
    );
    assert_ne!(code, 0);
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_TIMED_OUT", "{out}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );

    let (code, _, err) = fetch(
        Some(ALLOW_TEST_HOSTS),
        json!({}),
        json!({"url": server.url("docs.test", "/big"), "max_chars": 200_001}),
        true,
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("max_chars") && err.contains("200000"), "{err}");
}

#[test]
fn redirects_are_followed_by_hand_and_each_hop_is_checked() {
    let server = Server::start();
    let (code, out, _) = fetch(
        Some(ALLOW_TEST_HOSTS),
        json!({}),
        json!({"url": server.url("other.test", "/moved")}),
        true,
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out["redirects"],
        json!([server.url("docs.test", "/page.html")])
    );
    assert_eq!(out["url"], server.url("docs.test", "/page.html"));

    // A hop to a denied host stops there: the denied host is never asked.
    let (code, out, _) = fetch(
        Some(ALLOW_TEST_HOSTS),
        json!({}),
        json!({"url": server.url("docs.test", "/to-evil")}),
        true,
    );
    assert_ne!(code, 0);
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_POLICY_DENIED", "{out}");
    assert!(
        out["error"]
            .as_str()
            .is_some_and(|e| e.contains("deny rule \"evil.test\"")),
        "{out}"
    );
    // A hop to an address no rule names stops there too.
    let (_, out, _) = fetch(
        Some(ALLOW_TEST_HOSTS),
        json!({}),
        json!({"url": server.url("docs.test", "/to-loopback")}),
        true,
    );
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_POLICY_DENIED", "{out}");
    let error = out["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("127.0.0.1") && error.contains("is not an allowed host"),
        "{out}"
    );

    let (_, out, _) = fetch(
        Some(ALLOW_TEST_HOSTS),
        json!({}),
        json!({"url": server.url("docs.test", "/loop")}),
        true,
    );
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_NETWORK_FAILED", "{out}");
    assert!(
        out["error"]
            .as_str()
            .is_some_and(|e| e.contains("more than 5 redirects")),
        "{out}"
    );

    let seen = server.seen();
    assert!(
        !seen
            .iter()
            .any(|r| r.starts_with("evil.test") || r.starts_with("127.0.0.1")),
        "{seen:?}"
    );
    assert_eq!(
        seen.iter().filter(|r| r.ends_with("/loop")).count(),
        6,
        "{seen:?}"
    );
}

#[test]
fn host_rules_refuse_before_anybody_is_asked_and_nothing_is_sent() {
    let server = Server::start();
    // By name: refused before the card (no --approve and no terminal: a card would be denied).
    for (policy, host, says) in [
        (ALLOW_TEST_HOSTS, "evil.test", "deny rule \"evil.test\""),
        (
            "[all]\nnetwork_allow = [\"docs.test\"]\n",
            "other.test",
            "is not an allowed host",
        ),
    ] {
        let url = server.url(host, "/page.html");
        let (code, out, err) = fetch(Some(policy), json!({}), json!({"url": url}), false);
        assert_ne!(code, 0, "{host}");
        let kind = &out["error_kind"];
        assert_eq!(kind, "LOCAL_EXECUTOR_POLICY_DENIED", "{host}: {out} {err}");
        let error = out["error"].as_str().unwrap_or_default();
        assert!(error.contains(says), "{host}: {out}");
    }
    // By address: a name that resolves to loopback is not reached without a rule naming it, with
    // every public host allowed (no operator list) or under a wildcard. Only the lookup tells,
    // and a lookup already sends the name out, so this is found after the card, before a request.
    for (policy, host) in [
        (None, "docs.test"),
        (
            Some("[all]\nnetwork_allow = [\"*.wild.test\"]\n"),
            "a.wild.test",
        ),
        (None, "127.0.0.1"),
    ] {
        let url = server.url(host, "/page.html");
        let (_, out, _) = fetch(policy, json!({}), json!({"url": url}), true);
        assert_eq!(
            out["error_kind"], "LOCAL_EXECUTOR_POLICY_DENIED",
            "{host}: {out}"
        );
        let error = out["error"].as_str().unwrap_or_default();
        assert!(
            error.contains("a loopback address")
                && error.contains("never through a wildcard or every public host"),
            "{host}: {out}"
        );
    }
    // The author's list narrows the operator's.
    let config = json!({"allowed_hosts": ["docs.test"]});
    let (_, out, _) = fetch(
        Some(ALLOW_TEST_HOSTS),
        config.clone(),
        json!({"url": server.url("other.test", "/page.html")}),
        true,
    );
    assert!(
        out["error"]
            .as_str()
            .is_some_and(|e| e.contains("set by the node's author (allowed_hosts)")),
        "{out}"
    );
    let (code, _, _) = fetch(
        Some(ALLOW_TEST_HOSTS),
        config,
        json!({"url": server.url("docs.test", "/page.html")}),
        true,
    );
    assert_eq!(code, 0);
    assert_eq!(server.seen().len(), 1, "{:?}", server.seen());
}

#[test]
fn every_fetch_is_approved_unless_the_author_turns_that_off() {
    let server = Server::start();
    let url = server.url("docs.test", "/page.html");
    // No --approve, no terminal: denied, and the server never hears of it.
    let (code, out, _) = fetch(
        Some(ALLOW_TEST_HOSTS),
        json!({}),
        json!({"url": url}),
        false,
    );
    assert_ne!(code, 0);
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_APPROVAL_DENIED", "{out}");
    assert!(server.seen().is_empty(), "{:?}", server.seen());
    // The author's switch: no card.
    let (code, out, _) = fetch(
        Some(ALLOW_TEST_HOSTS),
        json!({"sensitive": false}),
        json!({"url": url}),
        false,
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(server.seen().len(), 1);
    // Bad URLs are refused before anything.
    for (bad, says) in [
        ("file:///etc/passwd", "http and https URLs only"),
        ("http://user:secret@docs.test/", "sends no credentials"),
        ("not a url", "is not a URL"),
    ] {
        let (code, out, _) = fetch(
            Some(ALLOW_TEST_HOSTS),
            json!({}),
            json!({"url": bad}),
            false,
        );
        assert_ne!(code, 0);
        assert_eq!(
            out["error_kind"], "LOCAL_EXECUTOR_INVALID_INPUT",
            "{bad}: {out}"
        );
        assert!(
            out["error"].as_str().is_some_and(|e| e.contains(says)),
            "{bad}: {out}"
        );
        assert!(
            !out["error"].as_str().unwrap_or("").contains("secret"),
            "{out}"
        );
    }
}

/// The environment's proxy (`http_proxy`) is used only when the operator's `env_proxy` says so,
/// and then not for a host `no_proxy` names; the host rules apply either way.
#[test]
fn the_environments_proxy_is_used_only_when_the_operator_turns_it_on() {
    let server = Server::start();
    let url = server.url("docs.test", "/data.json");
    let proxy = format!("http://127.0.0.1:{}", server.port);
    let run = |env_proxy: bool, no_proxy: &str| {
        let (_dir, ws) = temp_workspace();
        let policy = ws.join("policy.toml");
        let text = format!("[nodes.\"tools/web_fetch\"]\nnetwork_allow = [\"docs.test\"]\nenv_proxy = {env_proxy}\n");
        std::fs::write(&policy, text).expect("policy");
        let out = cheng()
            .env("CHENG_TEST_RESOLVE", NAMES)
            .env("CHENG_POLICY", &policy)
            .env("http_proxy", &proxy)
            .env("no_proxy", no_proxy)
            .args(["run", "tools/web_fetch", "--workspace", path(&ws)])
            .args(["--config", r#"{"sensitive": false}"#])
            .args(["--input", &json!({"url": url}).to_string()])
            .output()
            .expect("cheng runs");
        serde_json::from_slice::<Value>(&out.stdout).unwrap_or(Value::Null)
    };
    let direct = run(false, "");
    assert_eq!(direct["content"], "{\"version\": \"1.2.3\"}", "{direct}");
    let proxied = run(true, "");
    assert_eq!(proxied["content"], format!("via proxy: {url}"), "{proxied}");
    let excepted = run(true, "docs.test");
    assert_eq!(
        excepted["content"], "{\"version\": \"1.2.3\"}",
        "{excepted}"
    );
    // The rules come first: a host they refuse is never asked of the proxy either.
    let (_dir, ws) = temp_workspace();
    let policy = ws.join("policy.toml");
    std::fs::write(
        &policy,
        "[nodes.\"tools/web_fetch\"]\nnetwork_allow = [\"docs.test\"]\nenv_proxy = true\n",
    )
    .expect("policy");
    let out = cheng()
        .env("CHENG_TEST_RESOLVE", NAMES)
        .env("CHENG_POLICY", &policy)
        .env("http_proxy", &proxy)
        .args(["run", "tools/web_fetch", "--workspace", path(&ws)])
        .args(["--config", r#"{"sensitive": false}"#])
        .args([
            "--input",
            &json!({"url": server.url("other.test", "/data.json")}).to_string(),
        ])
        .output()
        .expect("cheng runs");
    let refused: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert_eq!(
        refused["error_kind"], "LOCAL_EXECUTOR_POLICY_DENIED",
        "{refused}"
    );
    assert_eq!(server.seen().len(), 3, "{:?}", server.seen());
}
