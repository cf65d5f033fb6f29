//! tools/code_js through the real `cheng` binary: results, limits and the capped ports (the gate's
//! absence is in cli.rs, gated_nodes_are_absent_until_their_variable_is_set).
use super::support::*;

use serde_json::{json, Value};
use std::process::Output;

const JS: &str = "tools/code_js";
const GATE: &str = "CHENG_ENABLE_CODE_JS";

/// `cheng <args>` with the gate variable set.
fn cheng_gated(args: &[&str]) -> Output {
    cheng()
        .env(GATE, "1")
        .args(args)
        .output()
        .expect("cheng binary runs")
}

/// `cheng run tools/code_js` with the gate set: (exit code, output object, stderr).
fn run_js(input: &Value, extra: &[&str]) -> (i32, Value, String) {
    let (_d, ws) = temp_workspace();
    let input = input.to_string();
    let mut args = vec![
        "run",
        JS,
        "--workspace",
        ws.to_str().expect("utf-8 path"),
        "--input",
        &input,
    ];
    args.extend_from_slice(extra);
    let out = cheng_gated(&args);
    let value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), value, text(&out.stderr))
}

#[test]
fn runs_with_its_variable_set() {
    let (code, out, stderr) = run_js(
        &json!({"script": "console.log('summing'); input.values.reduce((a, b) => a + b, 0)", "input": {"values": [1, 2, 3]}}),
        &[],
    );
    assert_eq!(code, 0, "{stderr} {out:#}");
    assert_eq!(out["result"], 6);
    assert_eq!(out["success"], true);
    assert_eq!(out["isolation_level"], "quickjs");
    assert_eq!(out["stdout"], "summing\n");
    assert!(
        out["metrics"]["memory_used_bytes"]
            .as_u64()
            .is_some_and(|b| b > 0),
        "{out:#}"
    );
}

#[test]
fn script_failures_exit_1_with_the_error_code() {
    let (code, out, _) = run_js(
        &json!({"script": "while (true) {}", "timeout_ms": 300}),
        &[],
    );
    assert_eq!(code, 1, "{out:#}");
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_TIMED_OUT");
    let (code, out, _) = run_js(
        &json!({"script": "const a = []; for (;;) a.push('x'.repeat(4096));", "memory_mb": 16}),
        &[],
    );
    assert_eq!(code, 1, "{out:#}");
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_MEMORY_LIMIT");
    let (code, out, _) = run_js(
        &json!({"script": "require('child_process').execSync('id')"}),
        &[],
    );
    assert_eq!(code, 1, "{out:#}");
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_SCRIPT_ERROR");
    assert!(
        out["error"]
            .as_str()
            .unwrap_or_default()
            .contains("require is not defined"),
        "{out:#}"
    );
}

#[test]
fn limits_above_the_authors_cap_are_refused() {
    // Without the author's config the ceiling is the node's maximum, not the default.
    let (code, _, stderr) = run_js(&json!({"script": "1", "timeout_ms": 400000}), &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("timeout_ms") && stderr.contains("maximum 300000"),
        "{stderr}"
    );
    let (code, _, stderr) = run_js(
        &json!({"script": "1", "timeout_ms": 60000}),
        &["--config", r#"{"timeout_ms": 30000}"#],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("timeout_ms 60000 is above the author's limit 30000"),
        "{stderr}"
    );
    let config = json!({"timeout_ms": 60000, "memory_mb": 512}).to_string();
    let (code, out, stderr) = run_js(
        &json!({"script": "1", "timeout_ms": 60000, "memory_mb": 512}),
        &["--config", &config],
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out["metrics"]["timeout_ms"], 60000);
    assert_eq!(out["metrics"]["memory_limit_bytes"], 512 * 1024 * 1024);
}

#[test]
fn results_flow_along_graph_edges() {
    let (_d, ws) = temp_workspace();
    let graph = ws.join("graph.json");
    let doc = json!({"version": 1, "nodes": [
        {"id": "make", "type": JS, "inputs": {"script": "({items: [3, 1, 2]})"}},
        {"id": "sort", "type": JS, "inputs": {"script": "input.items.slice().sort()"}}],
        "edges": [{"from": "make.result", "to": "sort.input"}]});
    std::fs::write(&graph, doc.to_string()).expect("write graph");
    let out = cheng_gated(&[
        "graph",
        "run",
        graph.to_str().expect("utf-8"),
        "--workspace",
        ws.to_str().expect("utf-8"),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let result: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(
        result["nodes"]["sort"]["outputs"]["result"],
        json!([1, 2, 3]),
        "{result:#}"
    );
}
