//! Input assembly: defaults, config, inputs, edges, capped values and the injected sandbox_root.

use super::nodes::*;
use cheng_engine::NodeStatus;
use serde_json::json;

#[test]
fn sandbox_root_is_the_canonical_workspace_and_cannot_be_supplied() {
    let (dir, options) = workspace();
    let expected = dir.path().canonicalize().unwrap().display().to_string();
    let result = run(
        &engine(),
        json!({"version": 1, "nodes": [{"id": "e", "type": "test/echo"}]}),
        options,
    );
    let seen = &result.node("e").unwrap().outputs["seen"];
    assert_eq!(seen["sandbox_root"], expected);
    // Supplying it is a validation error (tests in validation.rs); here: the value a node sees is
    // never one a graph supplied, even when the workspace path itself is given non-canonically.
    let dotted = dir.path().join(".").join("sub").join("..");
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let options = cheng_engine::RunOptions::new(&dotted).unwrap();
    let result = run(
        &engine(),
        json!({"version": 1, "nodes": [{"id": "e", "type": "test/echo"}]}),
        options,
    );
    assert_eq!(
        result.node("e").unwrap().outputs["seen"]["sandbox_root"],
        expected
    );
    let errs = errors_of(
        &engine(),
        json!({"version": 1, "nodes": [{"id": "e", "type": "test/echo", "inputs": {"sandbox_root": "/etc"}}]}),
    );
    assert_eq!(errs[0].port.as_deref(), Some("sandbox_root"));
}

#[test]
fn defaults_then_config_then_inputs() {
    let (_dir, options) = workspace();
    let result = run(
        &shell_engine(),
        json!({"version": 1, "nodes": [{"id": "e", "type": "test/echo",
            "config": {"text": "from config", "mode": "b", "allow_shell_string": true},
            "inputs": {"text": "from inputs", "count": null}}]}),
        options,
    );
    let seen = &result.node("e").unwrap().outputs["seen"];
    assert_eq!(seen["text"], "from inputs");
    assert_eq!(seen["mode"], "b");
    assert_eq!(seen["allow_shell_string"], true);
    assert_eq!(seen["count"], json!(null));
    assert_eq!(seen["tags"], json!([]));
    assert_eq!(seen["memory_mb"], 256);
    // Every declared input is present.
    assert_eq!(seen.as_object().unwrap().len(), ECHO.inputs.len());
}

#[test]
fn capped_values_resolve_to_request_else_config_else_default() {
    let (_dir, options) = workspace();
    let result = run(
        &engine(),
        json!({"version": 1, "nodes": [
            {"id": "allowed", "type": "test/echo", "config": {"allow_network": true, "memory_mb": 1024}, "inputs": {"allow_network": true, "memory_mb": 512}},
            {"id": "config_only", "type": "test/echo", "config": {"allow_network": true, "memory_mb": 1024}},
            {"id": "declined", "type": "test/echo", "config": {"allow_network": true}, "inputs": {"allow_network": false}},
            {"id": "plain", "type": "test/echo"}]}),
        options,
    );
    let seen = |id: &str| result.node(id).unwrap().outputs["seen"].clone();
    assert_eq!(seen("allowed")["allow_network"], true);
    assert_eq!(seen("allowed")["memory_mb"], 512);
    assert_eq!(seen("config_only")["allow_network"], true);
    assert_eq!(seen("config_only")["memory_mb"], 1024);
    assert_eq!(seen("declined")["allow_network"], false);
    assert_eq!(seen("plain")["allow_network"], false);
    assert_eq!(seen("plain")["memory_mb"], 256);
}

#[test]
fn edge_values_feed_inputs_and_are_checked_at_run_time() {
    let (_dir, options) = workspace();
    let result = run(
        &engine(),
        json!({"version": 1, "nodes": [
            {"id": "a", "type": "test/echo", "inputs": {"text": "hello"}},
            {"id": "b", "type": "test/echo", "config": {"text": "overridden"}},
            {"id": "c", "type": "test/echo"},
            {"id": "d", "type": "test/echo", "config": {"memory_mb": 5}}],
            "edges": [{"from": "a.text", "to": "b.text"},
                      {"from": "a.value", "to": "c.text"},
                      {"from": "a.number", "to": "d.memory_mb"}]}),
        options,
    );
    assert_eq!(result.node("b").unwrap().outputs["seen"]["text"], "hello");
    // `value` is untyped (fine at validation); it carries an array, `text` takes a string.
    let c = result.node("c").unwrap();
    assert_eq!(c.status, NodeStatus::Failed);
    assert_eq!(c.outputs["error_kind"], "LOCAL_EXECUTOR_INVALID_INPUT");
    assert!(
        c.outputs["error"].as_str().unwrap().contains("a.value"),
        "{:?}",
        c.outputs
    );
    // 7 over an edge into a capped port capped at 5 by the author.
    let d = result.node("d").unwrap();
    assert_eq!(d.status, NodeStatus::Failed);
    assert_eq!(d.outputs["error_kind"], "LOCAL_EXECUTOR_POLICY_DENIED");
    assert!(d.outputs["error"]
        .as_str()
        .unwrap()
        .contains("author's limit 5"));
}

#[test]
fn every_declared_output_is_present() {
    let (_dir, options) = workspace();
    let result = run(
        &engine(),
        json!({"version": 1, "nodes": [{"id": "e", "type": "test/echo"}]}),
        options,
    );
    let outputs = &result.node("e").unwrap().outputs;
    assert_eq!(outputs["missing"], json!(null));
    for port in ECHO.outputs {
        assert!(outputs.contains_key(port.name), "{}", port.name);
    }
}
