//! tools/code_python against the real sandbox.

use super::sandbox_support::*;
use cheng_node::Registry;
use cheng_nodes_code::python::CodePython;
use serde_json::json;
use std::net::TcpListener;
use std::time::Duration;

#[tokio::test]
async fn result_comes_back_through_the_private_channel() {
    if !sandbox_available() { return; }
    let (_d, ws) = workspace();
    let script = "print('from the script')\nresult = sum(input['values'])";
    let out = run(&CodePython, &ws, json!({"script": script, "input": {"values": [1, 2, 3]}})).await;
    assert_eq!(out["success"], true, "{out:?}");
    assert_eq!(out["result"], 6);
    assert_eq!(out["stdout"], "from the script\n");
    assert_eq!(out["isolation_level"], "bubblewrap");
    assert!(out["warnings"].to_string().contains("cgroup v2"), "{}", out["warnings"]);
    let out = run(&CodePython, &ws, json!({"script": "x = 1"})).await;
    assert_eq!((out["success"].clone(), out["result"].clone()), (json!(true), json!(null)));
}

#[tokio::test]
async fn syntax_errors_name_the_line() {
    if !sandbox_available() { return; }
    let (_d, ws) = workspace();
    let out = run(&CodePython, &ws, json!({"script": "a = 1\nb = (\nresult = a"})).await;
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_SCRIPT_ERROR", "{out:?}");
    assert!(out["error"].as_str().unwrap().contains("line 2"), "{}", out["error"]);
    let out = run(&CodePython, &ws, json!({"script": "a = 1\nraise ValueError('bad value')"})).await;
    assert!(out["error"].as_str().unwrap().contains("ValueError: bad value at line 2"), "{}", out["error"]);
    assert!(out["stderr"].as_str().unwrap().contains("Traceback"));
}

#[tokio::test]
async fn unserialisable_results_name_their_type() {
    if !sandbox_available() { return; }
    let (_d, ws) = workspace();
    let out = run(&CodePython, &ws, json!({"script": "result = {1, 2}"})).await;
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_SCRIPT_ERROR");
    assert!(out["error"].as_str().unwrap().contains("type set"), "{}", out["error"]);
}

#[tokio::test]
async fn a_memory_hog_fails_with_memory_limit() {
    if !sandbox_available() { return; }
    let (_d, ws) = workspace();
    let out = run(&CodePython, &ws, json!({"script": "x = bytearray(400 * 1024 * 1024)\nresult = len(x)", "memory_mb": 128})).await;
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_MEMORY_LIMIT", "{out:?}");
}

#[tokio::test]
async fn an_endless_loop_times_out() {
    if !sandbox_available() { return; }
    let (_d, ws) = workspace();
    let out = run(&CodePython, &ws, json!({"script": "while True:\n    pass", "timeout_ms": 700})).await;
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_TIMED_OUT", "{out:?}");
}

#[tokio::test]
async fn the_network_is_always_off() {
    if !sandbox_available() { return; }
    let (_d, ws) = workspace();
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let port = l.local_addr().unwrap().port();
    let script = format!(
        "import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n    result = 'connected'\nexcept OSError as e:\n    result = 'blocked: ' + type(e).__name__"
    );
    let out = run(&CodePython, &ws, json!({"script": script})).await;
    assert!(out["result"].as_str().unwrap_or("").starts_with("blocked"), "{out:?}");
    std::thread::sleep(Duration::from_millis(100));
    assert!(l.accept().is_err(), "the listener saw a connection");
}

#[tokio::test]
async fn writes_follow_allow_filesystem() {
    if !sandbox_available() { return; }
    let (_d, ws) = workspace();
    let outside = tempfile::tempdir_in("/var/tmp").unwrap();
    let escape = outside.path().join("escape.txt");
    let script = format!(
        "import os\nfor p in ['inside.txt', '.git/config', {:?}]:\n    try:\n        open(p, 'w').write('x')\n    except OSError:\n        pass\nresult = os.getuid()",
        escape.to_str().unwrap()
    );
    std::fs::create_dir(ws.join(".git")).unwrap();
    let out = run(&CodePython, &ws, json!({"script": script.clone()})).await;
    assert_eq!(out["success"], true, "{out:?}");
    assert!(!ws.join("inside.txt").exists() && !escape.exists());
    let out = run(&CodePython, &ws, json!({"script": script, "allow_filesystem": true})).await;
    assert!(ws.join("inside.txt").exists(), "{out:?}");
    assert!(!ws.join(".git/config").exists() && !escape.exists(), "{out:?}");
}

#[test]
fn code_python_is_absent_without_its_env_var() {
    let registry = Registry::from_inventory_with(|_| false);
    assert!(!registry.ids().contains(&"tools/code_python"));
    assert!(registry.ids().contains(&"tools/code_shell"));
    match registry.lookup("tools/code_python") {
        cheng_node::Lookup::Gated(var) => assert_eq!(var, "CHENG_ENABLE_CODE_PYTHON"),
        _ => panic!("code_python should be gated"),
    }
    let registry = Registry::from_inventory_with(|v| v == "CHENG_ENABLE_CODE_PYTHON");
    assert!(registry.ids().contains(&"tools/code_python"));
}
