//! `cheng serve --http`'s guard and canvas API, driven over real sockets against the real binary:
//! who may call it (token, Host, Origin), what a canvas reads (palette, checks), and runs with
//! their event streams, approvals, cancellation and bounds. The host is checked afterwards.

use super::served::{Served, Sse, TOKEN};
use super::support::{cheng, eventually, pgrep, temp_workspace};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn graph(nodes: Value) -> String {
    json!({"version": 1, "nodes": nodes}).to_string()
}

fn start_run(server: &Served, graph: &str) -> String {
    let started = server.json("POST", "/api/runs", Some(graph), 202);
    started["run_id"].as_str().expect("run_id").to_string()
}

/// Waits for the run to finish and returns `GET /api/runs/{id}`.
fn finished(server: &Served, run_id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let detail = server.json("GET", &format!("/api/runs/{run_id}"), None, 200);
        if detail.get("result").is_some() {
            return detail;
        }
        assert!(
            Instant::now() < deadline,
            "run {run_id} never finished: {detail}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn names(events: &[Sse]) -> Vec<&str> {
    events.iter().map(|e| e.event.as_str()).collect()
}

fn answer(
    server: &Served,
    run_id: &str,
    approval_id: &str,
    decision: &str,
) -> super::served::Response {
    server.call(
        "POST",
        &format!("/api/runs/{run_id}/approvals/{approval_id}"),
        Some(&json!({"decision": decision}).to_string()),
    )
}

#[test]
fn every_route_wants_the_token_the_servers_own_host_and_no_foreign_origin() {
    let (_dir, ws) = temp_workspace();
    let server = Served::start(&ws, &[]);
    let host = server.addr.clone();
    let bearer = format!("Bearer {TOKEN}");
    for (method, path) in [
        ("GET", "/api/nodes"),
        ("GET", "/api/runs"),
        ("GET", "/"),
        ("GET", "/canvas.js"),
        ("POST", "/mcp"),
    ] {
        let body = (method == "POST").then_some("{}");
        // Positive control: the right token and Host get through the guard.
        let through = server.raw(
            method,
            path,
            &[("Host", &host), ("Authorization", &bearer)],
            body,
        );
        assert!(
            !matches!(through.status, 401 | 403),
            "{method} {path} with the token: {} {}",
            through.status,
            through.body
        );
        let missing = server.raw(method, path, &[("Host", &host)], body);
        assert_eq!(missing.status, 401, "{method} {path} without a token");
        assert_eq!(missing.header("www-authenticate"), Some("Bearer"));
        let wrong = server.raw(
            method,
            path,
            &[
                ("Host", &host),
                ("Authorization", "Bearer test-token-0123456788"),
            ],
            body,
        );
        assert_eq!(wrong.status, 401, "{method} {path} with a wrong token");
        // DNS rebinding: a page served as evil.example that resolved to 127.0.0.1.
        let rebound = server.raw(
            method,
            path,
            &[("Host", "evil.example"), ("Authorization", &bearer)],
            body,
        );
        assert_eq!(rebound.status, 403, "{method} {path} under another Host");
        assert!(rebound.body.contains("FORBIDDEN_HOST"), "{}", rebound.body);
        let foreign = server.raw(
            method,
            path,
            &[
                ("Host", &host),
                ("Authorization", &bearer),
                ("Origin", "http://evil.example"),
            ],
            body,
        );
        assert_eq!(foreign.status, 403, "{method} {path} from a foreign origin");
        assert!(
            foreign.body.contains("FORBIDDEN_ORIGIN"),
            "{}",
            foreign.body
        );
    }
    // The server's own origin is a browser on its own page.
    let own = format!("http://{host}");
    let same_origin = server.raw(
        "GET",
        "/api/nodes",
        &[
            ("Host", &host),
            ("Authorization", &bearer),
            ("Origin", &own),
        ],
        None,
    );
    assert_eq!(same_origin.status, 200);
    // No CORS without --allow-origin.
    assert_eq!(same_origin.header("access-control-allow-origin"), None);
}

#[test]
fn the_printed_url_trades_its_token_for_a_cookie() {
    let (_dir, ws) = temp_workspace();
    let server = Served::start(&ws, &[]);
    let host = server.addr.clone();
    let opened = server.raw("GET", &format!("/?token={TOKEN}"), &[("Host", &host)], None);
    assert_eq!(opened.status, 303, "{}", opened.body);
    assert_eq!(opened.header("location"), Some("/"));
    let cookie = opened.header("set-cookie").expect("a cookie").to_string();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().unwrap_or_default().to_string();
    let page = server.raw("GET", "/", &[("Host", &host), ("Cookie", &pair)], None);
    assert_eq!(page.status, 200);
    assert!(page
        .header("content-security-policy")
        .is_some_and(|c| c.contains("default-src 'self'")));
    assert!(page.body.contains("canvas.js"), "{}", page.body);
    let api = server.raw(
        "GET",
        "/api/runs",
        &[("Host", &host), ("Cookie", &pair)],
        None,
    );
    assert_eq!(api.status, 200);
    let wrong = server.raw(
        "GET",
        "/api/runs",
        &[
            ("Host", &host),
            ("Cookie", "cheng_token=test-token-0123456788"),
        ],
        None,
    );
    assert_eq!(wrong.status, 401);
}

#[test]
fn allowed_origins_get_cors_and_others_do_not() {
    let (_dir, ws) = temp_workspace();
    let server = Served::start(&ws, &["--allow-origin", "https://canvas.example"]);
    let host = server.addr.clone();
    let bearer = format!("Bearer {TOKEN}");
    let preflight = server.raw(
        "OPTIONS",
        "/api/runs",
        &[
            ("Host", &host),
            ("Origin", "https://canvas.example"),
            ("Access-Control-Request-Method", "POST"),
            (
                "Access-Control-Request-Headers",
                "authorization,content-type",
            ),
        ],
        None,
    );
    assert_eq!(
        preflight.header("access-control-allow-origin"),
        Some("https://canvas.example")
    );
    let allowed = server.raw(
        "GET",
        "/api/runs",
        &[
            ("Host", &host),
            ("Authorization", &bearer),
            ("Origin", "https://canvas.example"),
        ],
        None,
    );
    assert_eq!(allowed.status, 200);
    let other = server.raw(
        "GET",
        "/api/runs",
        &[
            ("Host", &host),
            ("Authorization", &bearer),
            ("Origin", "https://other.example"),
        ],
        None,
    );
    assert_eq!(other.status, 403);
    assert_eq!(other.header("access-control-allow-origin"), None);
}

#[test]
fn a_public_address_needs_public_and_a_chosen_token_must_be_strong() {
    let (_dir, ws) = temp_workspace();
    let out = cheng()
        .args(["serve", "--http", "0.0.0.0:0", "--workspace"])
        .arg(&ws)
        .output()
        .expect("cheng serve");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--public") && stderr.contains("TLS"),
        "{stderr}"
    );
    let out = cheng()
        .args(["serve", "--http", "127.0.0.1:0", "--workspace"])
        .arg(&ws)
        .env("CHENG_TOKEN", "short")
        .output()
        .expect("cheng serve");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("at least 16 characters"), "{stderr}");
    let out = cheng()
        .args(["serve", "--workspace"])
        .arg(&ws)
        .output()
        .expect("cheng serve");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--stdio"));
}

#[test]
fn the_palette_gives_widgets_fields_and_greys_out_gated_and_disabled_nodes() {
    let (dir, ws) = temp_workspace();
    let policy = dir.path().join("policy.toml");
    std::fs::write(&policy, "[nodes.\"tools/web_fetch\"]\ndisabled = true\n").expect("policy");
    let mut cmd = cheng();
    cmd.env("CHENG_POLICY", &policy);
    let server = Served::start_with(cmd, &ws, &[]);
    let palette = server.json("GET", "/api/nodes", None, 200);
    let nodes = palette.as_array().expect("an array");
    let node = |id: &str| {
        nodes
            .iter()
            .find(|n| n["id"] == id)
            .unwrap_or_else(|| panic!("{id} not in the palette"))
    };
    assert_eq!(node("tools/read_file")["available"], true);
    let gated = node("tools/code_python");
    assert_eq!(gated["available"], false);
    assert!(gated["unavailable_reason"]
        .as_str()
        .is_some_and(|r| r.contains("CHENG_ENABLE_CODE_PYTHON=1")));
    let disabled = node("tools/web_fetch");
    assert_eq!(disabled["available"], false);
    assert!(disabled["unavailable_reason"]
        .as_str()
        .is_some_and(|r| r.contains("disabled by the operator")));
    for n in nodes {
        for input in n["inputs"].as_array().expect("inputs") {
            assert!(input["widget"].is_string(), "{} {}", n["id"], input["name"]);
        }
    }
    let indentation = node("tools/read_file")["inputs"]
        .as_array()
        .and_then(|inputs| inputs.iter().find(|i| i["name"] == "indentation"))
        .expect("read_file's indentation port")
        .clone();
    assert!(
        indentation["fields"]
            .as_array()
            .is_some_and(|f| !f.is_empty()),
        "{indentation}"
    );
}

#[test]
fn a_malformed_graph_gets_errors_per_node_and_port() {
    let (_dir, ws) = temp_workspace();
    let server = Served::start(&ws, &[]);
    let bad = graph(json!([
        {"id": "a", "type": "tools/nope"},
        {"id": "b", "type": "tools/read_file", "inputs": {"file_path": 7}},
    ]));
    let checked = server.json("POST", "/api/graphs/check", Some(&bad), 200);
    assert_eq!(checked["ok"], false);
    assert_eq!(
        checked["node_errors"]["a"]["errors"][0]["kind"],
        "unknown_type"
    );
    let b = &checked["node_errors"]["b"]["errors"][0];
    assert_eq!(b["port"], "file_path");
    assert_eq!(b["code"], "LOCAL_EXECUTOR_INVALID_INPUT");
    let refused = server.json("POST", "/api/runs", Some(&bad), 400);
    assert_eq!(refused["node_errors"], checked["node_errors"]);
    // Nothing was started.
    assert_eq!(
        server.json("GET", "/api/runs", None, 200)["runs"],
        json!([])
    );
    let not_json = server.call("POST", "/api/graphs/check", Some("{nodes"));
    assert_eq!(not_json.status, 400, "{}", not_json.body);
    assert!(not_json.body.contains("must be JSON"), "{}", not_json.body);
    let huge = format!("{{\"pad\": \"{}\"}}", "x".repeat(5 * 1024 * 1024));
    assert_eq!(
        server.call("POST", "/api/graphs/check", Some(&huge)).status,
        413
    );
    let ok = server.json(
        "POST",
        "/api/graphs/check",
        Some(&graph(
            json!([{"id": "r", "type": "tools/read_file", "inputs": {"file_path": "a"}}]),
        )),
        200,
    );
    assert_eq!(ok, json!({"ok": true, "warnings": []}));
}

/// A graph whose one node writes `name` in the workspace (approval-gated).
fn write(name: &str) -> String {
    graph(
        json!([{"id": "w", "type": "tools/write_file", "inputs": {"file_path": name, "content": "written\n"}}]),
    )
}

#[test]
fn approval_cards_are_answered_on_the_api_once_and_a_denial_runs_nothing() {
    let (_dir, ws) = temp_workspace();
    let server = Served::start(&ws, &[]);

    let approved = start_run(&server, &write("approved.txt"));
    let mut events = server.events(&approved, None);
    let asked = events.until("approval_requested");
    let card = asked.last().expect("the card");
    let approval_id = card.data["approval_id"]
        .as_str()
        .expect("approval_id")
        .to_string();
    assert!(card.data["card_text"]
        .as_str()
        .is_some_and(|t| t.contains("approved.txt")));
    let pending = server.json("GET", &format!("/api/runs/{approved}"), None, 200);
    assert_eq!(
        pending["pending_approvals"][0]["approval_id"],
        approval_id.as_str()
    );
    assert!(
        !ws.join("approved.txt").exists(),
        "written before the answer"
    );
    assert_eq!(
        answer(&server, &approved, &approval_id, "approve").status,
        200
    );
    let again = answer(&server, &approved, &approval_id, "approve");
    assert_eq!(again.status, 409, "{}", again.body);
    let rest = events.rest();
    assert_eq!(
        names(&rest),
        ["approval_decided", "node_finished", "graph_finished"],
        "{rest:#?}"
    );
    assert_eq!(
        rest[0].data["approval_id"],
        approval_id.as_str(),
        "{rest:#?}"
    );
    assert_eq!(rest[0].data["decision"], "approved", "{rest:#?}");
    assert_eq!(finished(&server, &approved)["status"], "succeeded");
    assert_eq!(
        std::fs::read_to_string(ws.join("approved.txt"))
            .ok()
            .as_deref(),
        Some("written\n")
    );
    // An answer to a finished run's card, and to a card that never was.
    assert_eq!(answer(&server, &approved, &approval_id, "deny").status, 409);
    assert_eq!(answer(&server, &approved, "a99", "approve").status, 404);
    let bad = server.call(
        "POST",
        &format!("/api/runs/{approved}/approvals/a99"),
        Some(r#"{"decision": "yes"}"#),
    );
    assert_eq!(bad.status, 400);

    let denied = start_run(&server, &write("denied.txt"));
    let mut events = server.events(&denied, None);
    let card = events.until("approval_requested").pop().expect("the card");
    let approval_id = card.data["approval_id"].as_str().expect("approval_id");
    assert_eq!(answer(&server, &denied, approval_id, "deny").status, 200);
    let rest = events.rest();
    assert_eq!(
        rest.last().map(|e| e.event.as_str()),
        Some("graph_finished")
    );
    let detail = finished(&server, &denied);
    assert_eq!(
        detail["result"]["nodes"]["w"]["outputs"]["error_kind"], "LOCAL_EXECUTOR_APPROVAL_DENIED",
        "{detail}"
    );
    assert!(!ws.join("denied.txt").exists(), "a denied write landed");
}

/// A graph whose one node runs `sleep DURATION` (in a shell that waits for it), and the pgrep
/// pattern that finds it.
fn sleeper(duration: &str) -> (String, Vec<String>) {
    let graph = graph(json!([{
        "id": "s",
        "type": "tools/workspace_shell",
        "config": {"command_whitelist": "sh"},
        "inputs": {"command": "sh", "args": ["-c", format!("sleep {duration} & wait")]},
    }]));
    let pattern = vec![
        "-f".to_string(),
        format!("^sleep {}$", duration.replace('.', "\\.")),
    ];
    (graph, pattern)
}

/// Starts `graph` and approves its one card; returns the run and its event stream.
fn approved_run(server: &Served, graph: &str) -> (String, super::served::EventStream) {
    let run = start_run(server, graph);
    let mut events = server.events(&run, None);
    let card = events.until("approval_requested").pop().expect("the card");
    let approval_id = card.data["approval_id"].as_str().expect("approval_id");
    assert_eq!(answer(server, &run, approval_id, "approve").status, 200);
    (run, events)
}

fn running(pattern: &[String]) -> Vec<u32> {
    let args: Vec<&str> = pattern.iter().map(String::as_str).collect();
    pgrep(&args)
}

#[test]
fn cancelling_a_run_kills_its_process_group() {
    let (_dir, ws) = temp_workspace();
    let server = Served::start(&ws, &[]);
    // A duration no other process on the machine uses, to find this one.
    let (graph, pattern) = sleeper(&format!("1234.{}", std::process::id()));
    let (run, mut events) = approved_run(&server, &graph);
    assert!(
        eventually(Duration::from_secs(10), || !running(&pattern).is_empty()),
        "the command never started"
    );
    let cancelled = Instant::now();
    server.json("DELETE", &format!("/api/runs/{run}"), None, 202);
    let rest = events.rest();
    assert_eq!(
        rest.last().map(|e| e.event.as_str()),
        Some("graph_finished")
    );
    assert_eq!(finished(&server, &run)["status"], "cancelled");
    assert!(
        eventually(Duration::from_secs(5), || running(&pattern).is_empty()),
        "the sleep outlived the cancel: {:?}",
        running(&pattern)
    );
    assert!(cancelled.elapsed() < Duration::from_secs(10));
}

#[test]
fn stopping_the_server_cancels_its_runs() {
    let (_dir, ws) = temp_workspace();
    let mut server = Served::start(&ws, &[]);
    let (graph, pattern) = sleeper(&format!("1235.{}", std::process::id()));
    let _run = approved_run(&server, &graph);
    assert!(
        eventually(Duration::from_secs(10), || !running(&pattern).is_empty()),
        "the command never started"
    );
    assert!(super::support::send_signal(server.pid(), "TERM"));
    let status = server.exited_within(Duration::from_secs(10));
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(0),
        "{}",
        server.stderr()
    );
    assert!(
        eventually(Duration::from_secs(5), || running(&pattern).is_empty()),
        "the sleep outlived the server: {:?}",
        running(&pattern)
    );
}

#[test]
fn a_stream_resumes_after_a_drop_with_last_event_id() {
    let (_dir, ws) = temp_workspace();
    std::fs::write(ws.join("a.txt"), "alpha\n").expect("fixture");
    let server = Served::start(&ws, &[]);
    let nodes: Vec<Value> = (0..5)
        .map(|i| json!({"id": format!("r{i}"), "type": "tools/read_file", "inputs": {"file_path": "a.txt"}}))
        .collect();
    let run = start_run(&server, &graph(Value::Array(nodes)));
    finished(&server, &run);
    let whole = server.events(&run, None).rest();
    assert!(whole.len() >= 11, "{whole:#?}");
    let ids: Vec<u64> = whole.iter().map(|e| e.id.expect("an id")).collect();
    assert_eq!(ids, (1..=whole.len() as u64).collect::<Vec<_>>());
    // A reader that dropped after three events picks up where it left off.
    let mut first = server.events(&run, None);
    let head: Vec<Sse> = (0..3).filter_map(|_| first.next()).collect();
    drop(first);
    let tail = server.events(&run, head.last().and_then(|e| e.id)).rest();
    assert_eq!([head, tail].concat(), whole);
    let bad = server.raw(
        "GET",
        &format!("/api/runs/{run}/events"),
        &[
            ("Host", &server.addr),
            ("Authorization", &format!("Bearer {TOKEN}")),
            ("Last-Event-ID", "yesterday"),
        ],
        None,
    );
    assert_eq!(bad.status, 400);
}

#[test]
fn a_hundred_concurrent_runs_of_a_read_only_node_lose_nothing() {
    let (_dir, ws) = temp_workspace();
    std::fs::write(ws.join("a.txt"), "alpha\n").expect("fixture");
    let server = Served::start(&ws, &[]);
    let one =
        graph(json!([{"id": "r", "type": "tools/read_file", "inputs": {"file_path": "a.txt"}}]));
    let runs: Vec<(String, Vec<Sse>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..100)
            .map(|_| {
                scope.spawn(|| {
                    let run = start_run(&server, &one);
                    let events = server.events(&run, None).rest();
                    (run, events)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a client"))
            .collect()
    });
    let mut ids: Vec<&str> = runs.iter().map(|(id, _)| id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 100, "run ids are unique");
    for (run, events) in &runs {
        assert_eq!(
            names(events),
            ["node_started", "node_finished", "graph_finished"],
            "{run}"
        );
        let detail = finished(&server, run);
        assert_eq!(detail["status"], "succeeded", "{detail}");
        assert!(detail["result"]["nodes"]["r"]["outputs"]["content"]
            .as_str()
            .is_some_and(|c| c.contains("alpha")));
    }
    let listed = server.json("GET", "/api/runs", None, 200);
    assert_eq!(listed["runs"].as_array().map(Vec::len), Some(100));
}

#[test]
fn a_reader_that_stops_reading_never_holds_the_run_back() {
    let (_dir, ws) = temp_workspace();
    let server = Served::start(&ws, &[]);
    // Far more event data than the sockets between server and reader buffer (a run streams the
    // first 8 MiB of its nodes' output as events).
    let nodes: Vec<Value> = (0..4)
        .map(|i| {
            json!({
                "id": format!("loud{i}"),
                "type": "tools/workspace_shell",
                "config": {"command_whitelist": "sh"},
                "inputs": {"command": "sh", "args": ["-c", "yes 0123456789abcdef | head -c 30000000"]},
            })
        })
        .collect();
    let run = start_run(&server, &graph(Value::Array(nodes)));
    let mut stalled = server.events(&run, None);
    // Another reader answers the cards as they come (at most --jobs nodes ask at once) and
    // reads everything; `stalled` is not read until the run has finished.
    let mut driver = server.events(&run, None);
    while let Some(event) = driver.next() {
        if event.event == "approval_requested" {
            let approval_id = event.data["approval_id"].as_str().expect("approval_id");
            assert_eq!(answer(&server, &run, approval_id, "approve").status, 200);
        }
    }
    let detail = finished(&server, &run);
    assert_eq!(detail["status"], "succeeded", "{detail}");
    // Read late, it still gets every event, in order, to the end.
    let rest = stalled.rest();
    assert_eq!(
        rest.last().map(|e| e.event.as_str()),
        Some("graph_finished")
    );
    let ids: Vec<u64> = rest.iter().filter_map(|e| e.id).collect();
    assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "a gap: {ids:?}");
    // Loopback sockets hold a few MiB for a reader that does not read: more than that waited.
    let streamed: u64 = rest.iter().filter_map(|e| e.data["bytes"].as_u64()).sum();
    assert!(
        streamed > 8_000_000,
        "only {streamed} bytes streamed: too few to fill a socket"
    );
}

#[test]
fn every_route_the_openapi_document_names_is_served() {
    let (_dir, ws) = temp_workspace();
    let server = Served::start(&ws, &[]);
    let text =
        std::fs::read_to_string(super::support::repo_root().join("schemas/http-api.openapi.json"))
            .expect("schemas/http-api.openapi.json (cheng schemas --write)");
    let document: Value = serde_json::from_str(&text).expect("JSON");
    let paths = document["paths"].as_object().expect("paths");
    assert_eq!(paths.len(), 6);
    for (path, item) in paths {
        let concrete = path.replace("{id}", "r404").replace("{approval_id}", "a1");
        for method in ["get", "post", "delete"] {
            if item.get(method).is_none() {
                continue;
            }
            let method = method.to_ascii_uppercase();
            let body = (method == "POST").then_some("{}");
            let response = server.call(&method, &concrete, body);
            // An unrouted path or method gets an empty 404 or a 405 from the router; a route
            // answers JSON, even when the run does not exist.
            assert_ne!(response.status, 405, "{method} {path}");
            assert!(
                response.status != 404 || response.body.contains("NOT_FOUND"),
                "{method} {path}: {} {}",
                response.status,
                response.body
            );
        }
    }
    // The control: a path the document does not name is not served.
    let unrouted = server.call("GET", "/api/nope", None);
    assert_eq!(unrouted.status, 404);
    assert!(!unrouted.body.contains("NOT_FOUND"));
}

/// `/mcp` through a client written elsewhere: the official MCP Python SDK over Streamable HTTP,
/// in each connection mode (tools listed, a read, a write approved and one declined, the
/// workspace checked after each).
#[test]
fn the_official_python_client_works_over_streamable_http() {
    if !super::support::mcp_sdk_available() {
        return;
    }
    let script = super::support::repo_root().join("crates/cheng-cli/tests/mcp/over_http.py");
    let (_dir, ws) = temp_workspace();
    std::fs::write(ws.join("hello.txt"), "hello over http\n").expect("fixture");
    let server = Served::start(&ws, &[]);
    let url = format!("http://{}/mcp?token={TOKEN}", server.addr);
    for mode in ["legacy", "2026-07-28", "auto"] {
        let out = super::support::run_sdk_script(
            std::process::Command::new("python3")
                .arg(&script)
                .arg(&url)
                .arg(&ws)
                .arg(mode),
            Duration::from_secs(120),
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains(&format!("ok {mode}")),
            "mode {mode}:\n{stdout}\n{}\nserver stderr:\n{}",
            String::from_utf8_lossy(&out.stderr),
            server.stderr()
        );
    }
}
