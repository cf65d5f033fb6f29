//! `cheng serve --stdio` writes answers straight to a stdout pipe; what the pipe cannot take
//! (the client is not reading) waits in a queue. The attack: a client that stops reading while
//! answers far larger than the pipe's buffer pile up, then reads everything: every answer must
//! arrive whole, one per line, none lost, none interleaved with another.

use super::support::cheng;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::Duration;

#[test]
fn answers_a_client_does_not_read_yet_arrive_whole_and_in_lines() {
    let ws = tempfile::tempdir().expect("tempdir");
    let mut child = cheng()
        .args(["serve", "--stdio", "--workspace"])
        .arg(ws.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("cheng serve starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut send = |message: Value| {
        writeln!(stdin, "{message}").expect("write to the server");
        stdin.flush().expect("flush");
    };
    send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}),
    );
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    // Each tools/list answer is tens of KiB: together many times a pipe's 64 KiB buffer.
    const LISTS: i64 = 150;
    for id in 1..=LISTS {
        send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}));
        if id % 50 == 0 {
            // Some answers fill the pipe now, the rest queue behind them.
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    send(json!({"jsonrpc": "2.0", "id": LISTS + 1, "method": "ping"}));
    // Requests are answered as they finish (the ping may overtake listings): read until every
    // id has come, on a thread, so a lost answer fails the test instead of hanging it.
    let (lines, received) = std::sync::mpsc::channel();
    std::thread::spawn(move || loop {
        let mut line = String::new();
        match stdout.read_line(&mut line) {
            Ok(n) if n > 0 => {
                if lines.send(line).is_err() {
                    return;
                }
            }
            _ => return,
        }
    });
    let mut seen = BTreeSet::new();
    let mut sizes = BTreeSet::new();
    let mut total = 0usize;
    while seen.len() < (LISTS + 2) as usize {
        let line = received
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|e| {
                panic!(
                    "no further answer ({e}) after {} of {}: {seen:?}",
                    seen.len(),
                    LISTS + 2
                )
            });
        total += line.len();
        let message: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
            panic!(
                "a line is not one whole message ({e}): {}…",
                &line[..line.len().min(200)]
            )
        });
        let id = message["id"]
            .as_i64()
            .unwrap_or_else(|| panic!("an answer without an id: {message}"));
        assert!(seen.insert(id), "request {id} was answered twice");
        if (1..=LISTS).contains(&id) {
            let tools = message["result"]["tools"]
                .as_array()
                .unwrap_or_else(|| panic!("{message}"));
            sizes.insert(tools.len());
        }
    }
    assert_eq!(
        seen,
        (0..=LISTS + 1).collect::<BTreeSet<_>>(),
        "every request answered once"
    );
    assert_eq!(sizes.len(), 1, "every listing complete: {sizes:?}");
    assert!(
        total > 16 * 64 * 1024,
        "the answers were many times the pipe's buffer ({total} bytes)"
    );
    drop(stdin);
    let status = child.wait().expect("wait");
    assert!(status.success(), "{status}");
}
