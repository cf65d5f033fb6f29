//! tools/code_js's worker processes through `cheng serve`: a crash, an overrun, a memory bomb
//! or a kill from outside ends one call, the worker is replaced, and the server goes on; the
//! jail is reported in `metrics.worker`, and without a filesystem layer nothing runs. (The jail
//! itself is attacked in cheng-sandbox's suite, jail.rs.)

use super::mcp_pipe::McpPipe;
use super::support::temp_workspace;
use cheng_test_support::eventually;
use serde_json::{json, Value};
use std::time::Duration;

fn start(env: &[(&str, &str)]) -> (tempfile::TempDir, McpPipe) {
    let (dir, ws) = temp_workspace();
    let mut env = env.to_vec();
    env.push(("CHENG_ENABLE_CODE_JS", "1"));
    let mut server = McpPipe::start_with_env(&ws, &[], &env);
    server.initialize();
    (dir, server)
}

fn js(server: &mut McpPipe, id: i64, arguments: Value) -> Value {
    server.call(id, "code_js", arguments)
}

/// The JavaScript workers of process `parent`: (pid, state letter from /proc/PID/stat).
fn workers_of(parent: u32) -> Vec<(u32, char)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // "pid (comm) S ppid ...": the fields after the last ')'.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r.to_string()) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if fields.get(1).and_then(|p| p.parse::<u32>().ok()) == Some(parent)
            && String::from_utf8_lossy(&cmdline).contains("__js-worker")
        {
            found.push((pid, fields[0].chars().next().unwrap_or('?')));
        }
    }
    found
}

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn a_worker_killed_from_outside_mid_call_fails_that_call_only() {
    let (_dir, mut server) = start(&[]);
    let first = js(&mut server, 1, json!({"script": "1 + 1"}));
    assert_eq!(first["result"], 2, "{first}");
    let layers = first["metrics"]["worker"]["layers"].to_string();
    assert!(layers.contains("seccomp"), "{first}");

    server.send(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "code_js", "arguments": {"script": "for (;;) {}", "timeout_ms": 120000}}}),
    );
    let parent = server.child.id();
    let mut busy = None;
    assert!(
        eventually(Duration::from_secs(20), || {
            busy = workers_of(parent)
                .into_iter()
                .find(|(_, state)| *state == 'R')
                .map(|(pid, _)| pid);
            busy.is_some()
        }),
        "a worker runs the endless script: {:?}",
        workers_of(parent)
    );
    let busy = busy.expect("found above");
    assert!(super::support::send_signal(busy, "KILL"));
    let answer = server.answer(2)["result"]["structuredContent"].clone();
    assert_eq!(answer["error_kind"], "LOCAL_EXECUTOR_SIGNALLED", "{answer}");
    let error = answer["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("killed") && error.contains("next call"),
        "{error}"
    );
    assert_eq!(answer["metrics"]["worker"]["pid"], busy, "{answer}");
    assert!(
        eventually(Duration::from_secs(10), || !alive(busy)),
        "the killed worker is reaped"
    );

    let after = js(&mut server, 3, json!({"script": "'still ' + 'here'"}));
    assert_eq!(after["result"], "still here", "{after}");
    assert_ne!(after["metrics"]["worker"]["pid"], busy, "{after}");
}

#[test]
fn overruns_and_memory_bombs_end_one_call_and_the_next_call_works() {
    let (_dir, mut server) = start(&[]);
    let spin = js(
        &mut server,
        1,
        json!({"script": "for (;;) {}", "timeout_ms": 200}),
    );
    assert_eq!(spin["error_kind"], "LOCAL_EXECUTOR_TIMED_OUT", "{spin}");
    assert_eq!(js(&mut server, 2, json!({"script": "1 + 1"}))["result"], 2);

    // A built-in that never reaches the interrupt check: its worker is killed at the deadline.
    let native = js(
        &mut server,
        3,
        json!({"script": "Array.prototype.reverse.call({length: 2 ** 40})", "timeout_ms": 200}),
    );
    assert_eq!(native["error_kind"], "LOCAL_EXECUTOR_TIMED_OUT", "{native}");
    assert!(
        native["error"]
            .as_str()
            .unwrap_or_default()
            .contains("killed"),
        "{native}"
    );
    let stuck = native["metrics"]["worker"]["pid"].as_u64().expect("a pid") as u32;
    assert!(
        eventually(Duration::from_secs(10), || !alive(stuck)),
        "the stuck worker was killed and reaped"
    );
    assert_eq!(js(&mut server, 4, json!({"script": "2 + 2"}))["result"], 4);

    let bomb = js(
        &mut server,
        5,
        json!({"script": "const a = []; for (;;) a.push('x'.repeat(1 << 20) + a.length);", "memory_mb": 16}),
    );
    assert_eq!(bomb["error_kind"], "LOCAL_EXECUTOR_MEMORY_LIMIT", "{bomb}");
    assert_eq!(js(&mut server, 6, json!({"script": "3 + 3"}))["result"], 6);

    // Nothing of theirs is left running.
    let parent = server.child.id();
    assert!(
        eventually(Duration::from_secs(10), || workers_of(parent)
            .iter()
            .all(|(_, state)| *state != 'R')),
        "{:?}",
        workers_of(parent)
    );
}

#[test]
fn the_jail_falls_back_to_landlock_and_fails_closed_without_either_layer() {
    let (_dir, mut server) = start(&[("CHENG_TEST_JAIL_WITHOUT", "namespaces")]);
    let out = js(&mut server, 1, json!({"script": "1 + 1"}));
    assert_eq!(out["result"], 2, "{out}");
    assert!(
        out["metrics"]["worker"]["layers"]
            .to_string()
            .contains("Landlock"),
        "{out}"
    );
    drop(server);

    let (_dir, mut server) = start(&[("CHENG_TEST_JAIL_WITHOUT", "namespaces,landlock")]);
    let out = js(&mut server, 1, json!({"script": "1 + 1"}));
    assert_eq!(out["success"], false, "{out}");
    assert_eq!(
        out["error_kind"], "LOCAL_EXECUTOR_SANDBOX_UNAVAILABLE",
        "{out}"
    );
    let error = out["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("user namespaces") && error.contains("Landlock") && error.contains("Enable"),
        "{error}"
    );
    assert_eq!(out["result"], Value::Null);
}
