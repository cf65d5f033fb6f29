#![allow(unused_imports)]
use super::support::*;
use serde_json::json;

#[test]
fn code_python_is_absent_without_its_env_var() {
    let out = run_cheng(&["nodes"]);
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(listing.contains("tools/code_shell"), "{listing}");
    assert!(!listing.contains("tools/code_python"), "{listing}");
    let (_d, ws) = temp_workspace();
    let (code, _out, stderr) = run_node("tools/code_python", &ws, &json!({"script": "result = 1"}), &[]);
    assert_eq!(code, 2);
    assert!(stderr.contains("CHENG_ENABLE_CODE_PYTHON"), "{stderr}");
}

#[test]
fn code_python_returns_its_result_when_enabled() {
    if !bwrap_works() {
        eprintln!("skipped: bubblewrap cannot create namespaces here");
        return;
    }
    let (_d, ws) = temp_workspace();
    let input = json!({"script": "print('hi')\nresult = sum(input['values'])", "input": {"values": [1, 2, 3]}}).to_string();
    let out = cheng()
        .env("CHENG_ENABLE_CODE_PYTHON", "1")
        .args(["run", "tools/code_python", "--workspace", ws.to_str().unwrap(), "--input", &input])
        .output()
        .unwrap();
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    assert_eq!(value["result"], 6, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(value["stdout"], "hi\n");
}

#[test]
fn a_missing_python_fails_closed() {
    if !bwrap_works() {
        return;
    }
    let (_d, ws) = temp_workspace();
    let input = json!({"script": "result = 1"}).to_string();
    let out = cheng()
        .env("CHENG_ENABLE_CODE_PYTHON", "1")
        .env("CHENG_PYTHON", "/nonexistent/python3")
        .args(["run", "tools/code_python", "--workspace", ws.to_str().unwrap(), "--input", &input])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("LOCAL_EXECUTOR_SANDBOX_UNAVAILABLE"));
}
