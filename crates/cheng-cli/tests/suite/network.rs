//! code_shell's network through cheng's filtering proxy, through the real binary, against a
//! loopback server (web_fetch's `Server`) whose names `CHENG_TEST_RESOLVE` maps to 127.0.0.1.
//! Each refusal is checked on the server too (a refused connection never reaches it), and each
//! test has its positive control: the same server reached through the proxy in the same run.

use super::support::*;
use super::web_fetch::{Server, NAMES};
use serde_json::{json, Value};

/// `cheng run tools/code_shell --approve` with allow_network under `policy` (TOML; none: the
/// built-in one), the author's `config` merged in. Exit code, the JSON output, stderr.
fn shell(policy: Option<&str>, config: Value, script: &str) -> (i32, Value, String) {
    let input = json!({"script": script, "timeout_ms": 30000});
    shell_with(policy, config, input, &["--approve"])
}

/// As [`shell`], with the whole input and the approval flags given.
fn shell_with(
    policy: Option<&str>,
    config: Value,
    input: Value,
    flags: &[&str],
) -> (i32, Value, String) {
    let mut config = config;
    config["allow_network"] = json!(true);
    run_under("tools/code_shell", policy, &config, &input, flags)
}

/// `cheng run NODE` with the test names mapped to loopback, under `policy` (TOML; none: the
/// built-in one), with the author's `config`, `input` and `flags` (code_python enabled).
fn run_under(
    node: &str,
    policy: Option<&str>,
    config: &Value,
    input: &Value,
    flags: &[&str],
) -> (i32, Value, String) {
    let (_dir, ws) = temp_workspace();
    let mut cmd = cheng();
    cmd.env("CHENG_TEST_RESOLVE", NAMES)
        .env("CHENG_ENABLE_CODE_PYTHON", "1");
    if let Some(policy) = policy {
        let file = ws.join("policy.toml");
        std::fs::write(&file, policy).expect("policy");
        cmd.env("CHENG_POLICY", &file);
    }
    let out = cmd
        .args(["run", node, "--workspace"])
        .arg(&ws)
        .args(["--config", &config.to_string()])
        .args(["--input", &input.to_string()])
        .args(flags)
        .output()
        .expect("cheng runs");
    let value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), value, text(&out.stderr))
}

/// The operator allows the two test hosts the node tests tell apart.
const ALLOW_DOCS_AND_OTHER: &str = "[all]\nnetwork_allow = [\"docs.test\", \"other.test\"]\n";

fn ready() -> bool {
    bwrap_works() && require_or_skip("curl")
}

fn stdout(out: &Value) -> &str {
    out["stdout"].as_str().unwrap_or("")
}

/// The proxy's attempts as `via host outcome`.
fn attempts(out: &Value) -> Vec<String> {
    out["metrics"]["network"]["attempts"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|a| {
                    format!(
                        "{} {} {}",
                        a["via"].as_str().unwrap_or(""),
                        a["host"].as_str().unwrap_or(""),
                        a["outcome"].as_str().unwrap_or("")
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

const ALLOW_DOCS: &str = "[all]\nnetwork_allow = [\"docs.test\"]\n";

#[test]
fn an_allowed_host_is_reached_over_http_connect_and_socks5() {
    if !ready() {
        return;
    }
    let server = Server::start();
    let url = server.url("docs.test", "/data.json");
    // Plain HTTP through HTTP_PROXY, a CONNECT tunnel (what HTTPS and pip use), and raw TCP
    // through SOCKS5 by name (what ALL_PROXY=socks5h:// gives git, ssh and database clients).
    let script = format!(
        "curl -sS {url}; echo; curl -sS --proxytunnel {url}; echo; curl -sS --proxy \"$ALL_PROXY\" {url}"
    );
    let (code, out, stderr) = shell(Some(ALLOW_DOCS), json!({}), &script);
    assert_eq!(code, 0, "{out} {stderr}");
    assert_eq!(stdout(&out).matches("1.2.3").count(), 3, "{out}");
    let port = url
        .split(':')
        .nth(2)
        .and_then(|p| p.split('/').next())
        .unwrap_or("");
    assert_eq!(
        server.seen(),
        vec![format!("docs.test:{port} /data.json"); 3],
        "the server did not see three requests"
    );
    assert_eq!(
        attempts(&out),
        [
            "http docs.test connected",
            "connect docs.test connected",
            "socks5 docs.test connected"
        ],
        "{out}"
    );
    let first = &out["metrics"]["network"]["attempts"][0];
    assert!(
        first["bytes_received"].as_u64().unwrap_or(0) > 20,
        "{first}"
    );
    assert_eq!(first["address"], "127.0.0.1");
}

#[test]
fn a_deny_rule_wins_and_its_refusal_says_which_rule() {
    if !ready() {
        return;
    }
    let server = Server::start();
    let policy =
        "[all]\nnetwork_allow = [\"docs.test\", \"evil.test\"]\nnetwork_deny = [\"evil.test\"]\n";
    let evil = server.url("evil.test", "/page.html");
    let script = format!(
        "curl -s {evil}; echo \"http=$?\"; curl -sS --proxy \"$ALL_PROXY\" {evil}; echo \"socks=$?\"; curl -s {}",
        server.url("docs.test", "/data.json")
    );
    let input = json!({"script": script, "timeout_ms": 30000});
    let (code, out, stderr) = shell_with(
        Some(policy),
        json!({}),
        input,
        &["--approve", "--events", "-"],
    );
    assert_eq!(code, 0, "{out} {stderr}");
    // Each decision is a run event as it is made, for a canvas to show.
    let live: Vec<String> = stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == "network_connection")
        .map(|e| {
            format!(
                "{} {} {}",
                e["via"].as_str().unwrap_or(""),
                e["host"].as_str().unwrap_or(""),
                e["outcome"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert_eq!(
        live,
        [
            "http evil.test refused",
            "socks5 evil.test refused",
            "http docs.test connected"
        ],
        "{stderr}"
    );
    let shown = stdout(&out);
    // The 403's body is the refusal, for the script's author to read.
    assert!(
        shown.contains("the deny rule \"evil.test\" (a deny rule wins"),
        "{shown}"
    );
    // SOCKS5 reply 2, "connection not allowed by ruleset": curl's exit 97.
    assert!(shown.contains("socks=97"), "{shown}");
    assert!(
        shown.contains("1.2.3"),
        "the positive control failed: {out}"
    );
    assert!(
        server.seen().iter().all(|s| !s.starts_with("evil.test")),
        "a refused host was reached: {:?}",
        server.seen()
    );
    assert!(out["warnings"].to_string().contains("deny rule"), "{out}");
    assert_eq!(
        attempts(&out),
        [
            "http evil.test refused",
            "socks5 evil.test refused",
            "http docs.test connected"
        ]
    );
}

#[test]
fn loopback_is_reached_only_through_a_rule_naming_it() {
    if !ready() {
        return;
    }
    let server = Server::start();
    // A wildcard never leads to a non-public address, even when the name resolves to one.
    let wild = server.url("a.wild.test", "/data.json");
    let (code, out, stderr) = shell(
        Some("[all]\nnetwork_allow = [\"*.wild.test\"]\n"),
        json!({}),
        &format!("curl -s {wild}"),
    );
    assert_eq!(code, 0, "{out} {stderr}");
    assert!(stdout(&out).contains("a loopback address"), "{out}");
    // The built-in policy (every public host): the host's loopback by address is refused too.
    let port = wild
        .split(':')
        .nth(2)
        .and_then(|p| p.split('/').next())
        .unwrap_or("");
    let (_, out, _) = shell(
        None,
        json!({}),
        &format!("curl -s --noproxy '' --proxy \"$HTTP_PROXY\" http://127.0.0.1:{port}/data.json"),
    );
    assert!(stdout(&out).contains("a loopback address"), "{out}");
    assert!(server.seen().is_empty(), "{:?}", server.seen());
    // The control: a rule naming the host reaches the same server.
    let (_, out, _) = shell(
        Some(ALLOW_DOCS),
        json!({}),
        &format!("curl -s {}", server.url("docs.test", "/data.json")),
    );
    assert!(stdout(&out).contains("1.2.3"), "{out}");
}

#[test]
fn nothing_but_the_proxy_leads_out() {
    if !ready() {
        return;
    }
    let server = Server::start();
    let url = server.url("docs.test", "/data.json");
    let port = url
        .split(':')
        .nth(2)
        .and_then(|p| p.split('/').next())
        .unwrap_or("");
    // Straight to the host's loopback, around the proxy: the sandbox's loopback is its own, so
    // nothing listens there. Then the same server through the proxy (the control).
    let script = format!(
        "curl -s --noproxy '*' -m 3 http://127.0.0.1:{port}/data.json; echo \"direct=$?\"; curl -s {url}"
    );
    let (code, out, stderr) = shell(Some(ALLOW_DOCS), json!({}), &script);
    assert_eq!(code, 0, "{out} {stderr}");
    assert!(stdout(&out).contains("direct=7\n"), "{out}");
    assert!(stdout(&out).contains("1.2.3"), "{out}");
    assert_eq!(server.seen().len(), 1, "{:?}", server.seen());
    assert!(out["metrics"]["limits"]["network"]
        .as_str()
        .unwrap_or("")
        .starts_with("through cheng's filtering proxy"));
}

#[test]
fn the_authors_list_narrows_the_operators() {
    if !ready() {
        return;
    }
    let server = Server::start();
    let policy = ALLOW_DOCS_AND_OTHER;
    let script = format!(
        "curl -s {}; curl -s {}",
        server.url("other.test", "/data.json"),
        server.url("docs.test", "/data.json")
    );
    let (code, out, stderr) = shell(
        Some(policy),
        json!({"allowed_hosts": ["docs.test"]}),
        &script,
    );
    assert_eq!(code, 0, "{out} {stderr}");
    assert!(
        stdout(&out).contains("set by the node's author (allowed_hosts)"),
        "{out}"
    );
    assert!(stdout(&out).contains("1.2.3"), "{out}");
    assert!(server.seen().iter().all(|s| !s.starts_with("other.test")));
}

/// An agent's hosts beyond the author's list go on the run's one card; approved they are
/// reached for that run, declined nothing runs. A host the author's list covers is not asked.
#[test]
fn hosts_beyond_the_authors_list_are_asked_on_the_card() {
    if !ready() {
        return;
    }
    let server = Server::start();
    let policy = ALLOW_DOCS_AND_OTHER;
    let config = json!({"allowed_hosts": ["docs.test"]});
    let other = server.url("other.test", "/data.json");
    let input =
        json!({"script": format!("curl -s {other}"), "request_hosts": ["other.test", "docs.test"]});
    let (code, out, stderr) = shell_with(
        Some(policy),
        config.clone(),
        input.clone(),
        &["--approve", "--events", "-"],
    );
    assert_eq!(code, 0, "{out} {stderr}");
    assert!(stdout(&out).contains("1.2.3"), "{out}");
    let cards = approval_cards(&stderr);
    assert_eq!(cards.len(), 1, "one card for the run: {cards:?}");
    assert_eq!(
        cards[0]["requested_hosts"],
        json!(["other.test"]),
        "{cards:?}"
    );
    assert_eq!(server.seen().len(), 1);
    // Declined: the script never runs, the host is never reached.
    let (code, out, _) = shell_with(Some(policy), config, input, &["--deny"]);
    assert_ne!(code, 0);
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_APPROVAL_DENIED", "{out}");
    assert_eq!(server.seen().len(), 1, "{:?}", server.seen());
    // Without allow_network the port is refused, naming what it needs.
    let (_dir, ws) = temp_workspace();
    let (code, out, _) = run_node(
        "tools/code_shell",
        &ws,
        &json!({"script": "true", "request_hosts": ["other.test"]}),
        &["--approve"],
    );
    assert_ne!(code, 0);
    assert!(
        out["error"]
            .as_str()
            .unwrap_or("")
            .contains("request_hosts needs allow_network"),
        "{out}"
    );
}

#[test]
fn a_redirect_to_a_refused_host_stops_at_that_hop() {
    if !ready() {
        return;
    }
    let server = Server::start();
    let policy =
        "[all]\nnetwork_allow = [\"docs.test\", \"evil.test\"]\nnetwork_deny = [\"evil.test\"]\n";
    let script = format!(
        "curl -sL -o /dev/null -w '%{{http_code}}' {}",
        server.url("docs.test", "/to-evil")
    );
    let (code, out, stderr) = shell(Some(policy), json!({}), &script);
    assert_eq!(code, 0, "{out} {stderr}");
    assert_eq!(stdout(&out), "403", "{out}");
    let seen = server.seen();
    assert!(seen.iter().any(|s| s.ends_with("/to-evil")), "{seen:?}");
    assert!(seen.iter().all(|s| !s.starts_with("evil.test")), "{seen:?}");
}

#[test]
fn without_allow_network_there_is_no_proxy_and_no_way_out() {
    if !ready() {
        return;
    }
    let server = Server::start();
    let (_dir, ws) = temp_workspace();
    let script = format!(
        "env | grep -ci proxy; curl -s -m 3 {}; echo \"curl=$?\"",
        server.url("docs.test", "/data.json")
    );
    let (code, out, stderr) = run_node("tools/code_shell", &ws, &json!({"script": script}), &[]);
    assert_eq!(code, 0, "{out} {stderr}");
    // No proxy variable, and the name cannot even be looked up (curl's 6).
    assert!(stdout(&out).starts_with("0\n"), "{out}");
    assert!(stdout(&out).contains("curl=6"), "{out}");
    assert!(out["metrics"]["network"].is_null(), "{out}");
    assert!(server.seen().is_empty());
}

/// code_python has no network switch: its author's `allowed_hosts` is what opens the proxy, to
/// those hosts only; without it there is no network at all.
#[test]
fn code_python_reaches_exactly_its_authors_hosts() {
    if !bwrap_works() {
        return;
    }
    let server = Server::start();
    let script = format!(
        "import urllib.request\nresult = urllib.request.urlopen('{}').read().decode()\ntry:\n    urllib.request.urlopen('{}')\nexcept Exception as e:\n    result += ' other: ' + str(e)",
        server.url("docs.test", "/data.json"),
        server.url("other.test", "/data.json")
    );
    let python = |config: Value| {
        let input = json!({"script": script, "timeout_ms": 30000});
        run_under(
            "tools/code_python",
            Some(ALLOW_DOCS_AND_OTHER),
            &config,
            &input,
            &[],
        )
        .1
    };
    let out = python(json!({"allowed_hosts": ["docs.test"]}));
    let result = out["result"].as_str().unwrap_or("");
    assert!(
        result.contains("1.2.3") && result.contains("other: HTTP Error 403"),
        "{out}"
    );
    assert_eq!(
        attempts(&out),
        ["http docs.test connected", "http other.test refused"]
    );
    assert!(server.seen().iter().all(|s| !s.starts_with("other.test")));
    // Without the author's list: no proxy, no lookup, no network.
    let out = python(json!({}));
    assert!(
        out["error"]
            .as_str()
            .unwrap_or("")
            .contains("name resolution"),
        "{out}"
    );
    assert!(out["metrics"]["network"].is_null(), "{out}");
    assert_eq!(server.seen().len(), 1);
}

/// A sandboxed session (exec_command with `sandbox`) reaches its author's hosts through the
/// proxy, which serves it for as long as it lives; an unsandboxed one cannot be given hosts.
#[test]
fn a_sandboxed_session_reaches_only_its_authors_hosts() {
    if !ready() {
        return;
    }
    let server = Server::start();
    let session = |config: Value| {
        let script = format!(
            "curl -s {}; curl -s {}",
            server.url("docs.test", "/data.json"),
            server.url("other.test", "/data.json")
        );
        let input = json!({"command": "sh", "args": ["-c", script]});
        let flags = ["--approve"];
        run_under(
            "tools/exec_command",
            Some(ALLOW_DOCS_AND_OTHER),
            &config,
            &input,
            &flags,
        )
        .1
    };
    let out = session(json!({"sandbox": true, "allowed_hosts": ["docs.test"]}));
    let output = out["output"].as_str().unwrap_or("");
    assert!(
        output.contains("1.2.3") && output.contains("set by the node's author (allowed_hosts)"),
        "{out}"
    );
    assert!(server.seen().iter().all(|s| !s.starts_with("other.test")));
    let out = session(json!({"allowed_hosts": ["docs.test"]}));
    assert!(
        out["error"]
            .as_str()
            .unwrap_or("")
            .contains("applies to a sandboxed session"),
        "{out}"
    );
    assert_eq!(server.seen().len(), 1);
}

/// Over `cheng serve`, a sandboxed session keeps its proxy across calls: each write makes the
/// session fetch one URL, the author's host is reached and another refused, call after call;
/// when the server ends, the proxy's directory is gone.
#[test]
fn a_served_session_keeps_its_proxy_across_calls() {
    use std::io::{BufRead, BufReader, Write};
    if !ready() {
        return;
    }
    let server = Server::start();
    let (_dir, ws) = temp_workspace();
    let policy = ws.join("policy.toml");
    std::fs::write(&policy, ALLOW_DOCS_AND_OTHER).unwrap();
    let tools = ws.join("tools.json");
    let entry = json!([{"type": "tools/exec_command", "config": {"sandbox": true, "allowed_hosts": ["docs.test"]}}, {"type": "tools/write_stdin"}]);
    std::fs::write(&tools, entry.to_string()).unwrap();
    let mut child = cheng()
        .env("CHENG_TEST_RESOLVE", NAMES)
        .env("CHENG_POLICY", &policy)
        .args(["serve", "--stdio", "--approve", "--workspace"])
        .arg(&ws)
        .arg("--tools")
        .arg(&tools)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut call = |id: u64, method: &str, params: Value| -> Value {
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{line}").unwrap();
        loop {
            let answer: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
            if answer["id"] == id {
                return answer;
            }
        }
    };
    call(
        0,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    let started = call(
        1,
        "tools/call",
        json!({"name": "exec_command", "arguments": {"command": "sh", "args": ["-c", "while read u; do curl -s \"$u\"; echo; done"], "yield_time_ms": 250}}),
    );
    let session = started["result"]["structuredContent"]["session_id"].clone();
    assert!(session.is_u64(), "{started}");
    for (id, host, expected) in [
        (2, "docs.test", "1.2.3"),
        (3, "other.test", "is not an allowed host"),
        (4, "docs.test", "1.2.3"),
    ] {
        let url = format!("{}\n", server.url(host, "/data.json"));
        let got = call(
            id,
            "tools/call",
            json!({"name": "write_stdin", "arguments": {"session_id": session, "chars": url, "yield_time_ms": 3000}}),
        );
        let output = got["result"]["structuredContent"]["output"]
            .as_str()
            .unwrap_or("");
        assert!(output.contains(expected), "{host}: {got}");
    }
    assert_eq!(server.seen().len(), 2, "{:?}", server.seen());
    drop(stdin);
    let _ = child.wait();
    let left: Vec<String> = std::fs::read_dir(cheng_sandbox::io_parent())
        .map(|dir| {
            dir.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    let pid = child.id();
    assert!(
        !left
            .iter()
            .any(|name| name.starts_with(&format!("cheng-proxy-{pid}-"))),
        "{left:?}"
    );
}

/// The bridge is not the script's child: a script that waits for all its children (as an init
/// or a supervisor does) is not kept waiting by it, and the bridge still carries connections.
#[test]
fn the_bridge_is_not_the_scripts_child() {
    if !ready() {
        return;
    }
    let server = Server::start();
    let script = format!(
        "curl -s {}; echo; exec python3 -c 'import os\ntry:\n    os.wait()\n    print(\"waited\")\nexcept ChildProcessError:\n    print(\"no children\")'",
        server.url("docs.test", "/data.json")
    );
    let (code, out, stderr) = shell(Some(ALLOW_DOCS), json!({}), &script);
    assert_eq!(code, 0, "{out} {stderr}");
    assert_eq!(
        stdout(&out),
        "{\"version\": \"1.2.3\"}\nno children\n",
        "{out}"
    );
}
