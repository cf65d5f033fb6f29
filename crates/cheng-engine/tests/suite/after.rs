//! Ordering-only dependencies (`"after": ["id"]`): sequencing without wiring a port.

use super::nodes::*;
use cheng_engine::{Engine, GraphStatus, NodeStatus, ValidationErrorKind};
use cheng_node::Registry;
use serde_json::json;
use std::sync::atomic::Ordering;

#[test]
fn after_runs_a_node_only_once_the_named_one_finished() {
    for (after, peak) in [(json!(null), 2), (json!(["a"]), 1)] {
        let sleep = Sleep::default();
        let engine = Engine::new(
            Registry::new().with(sleep.clone()),
            cheng_node::policy::Policy::builtin(),
        );
        let (_dir, options) = workspace();
        let result = run(
            &engine,
            json!({"version": 1, "nodes": [
                {"id": "a", "type": "test/sleep", "inputs": {"ms": 100}},
                {"id": "b", "type": "test/sleep", "inputs": {"ms": 10}, "after": after}]}),
            options.jobs(2),
        );
        assert_eq!(result.status, GraphStatus::Succeeded);
        // Two free jobs: without `after` both run at once; with it, one after the other.
        assert_eq!(sleep.peak.load(Ordering::SeqCst), peak, "after {after}");
    }
}

#[test]
fn a_failure_skips_what_runs_after_it() {
    let (_dir, options) = workspace();
    let result = run(
        &engine(),
        json!({"version": 1, "nodes": [
            {"id": "bad", "type": "test/fail"},
            {"id": "next", "type": "test/echo", "after": ["bad"]}]}),
        options,
    );
    assert_eq!(result.status, GraphStatus::Failed);
    let next = result.node("next").unwrap();
    assert_eq!(next.status, NodeStatus::Skipped);
    assert_eq!(
        next.reason.as_deref(),
        Some("skipped because node `bad` failed")
    );
}

#[test]
fn after_names_existing_other_nodes_without_cycles() {
    let errors = errors_of(
        &engine(),
        json!({"version": 1, "nodes": [
        {"id": "build", "type": "test/echo"},
        {"id": "test", "type": "test/echo", "after": ["biuld"]}]}),
    );
    let e = only(&errors, ValidationErrorKind::DanglingEdge);
    assert!(
        e.message.contains("`biuld`") && e.message.contains("build"),
        "{}",
        e.message
    );

    let errors = errors_of(
        &engine(),
        json!({"version": 1, "nodes": [{"id": "a", "type": "test/echo", "after": ["a"]}]}),
    );
    assert!(only(&errors, ValidationErrorKind::Cycle)
        .message
        .contains("itself"));

    let errors = errors_of(
        &engine(),
        json!({"version": 1, "nodes": [
        {"id": "a", "type": "test/echo", "after": ["b"]},
        {"id": "b", "type": "test/echo", "after": ["a"]}]}),
    );
    only(&errors, ValidationErrorKind::Cycle);

    let errors = cheng_engine::Graph::from_value(
        &json!({"version": 1, "nodes": [{"id": "a", "type": "test/echo", "after": "b"}]}),
    )
    .unwrap_err();
    assert!(
        errors
            .iter()
            .any(|e| e.message.contains("`after` must be an array")),
        "{errors:?}"
    );
}

#[test]
fn after_survives_a_round_trip() {
    let g = graph(json!({"version": 1, "nodes": [
        {"id": "a", "type": "test/echo"},
        {"id": "b", "type": "test/echo", "after": ["a"]}]}));
    assert_eq!(g.nodes[1].after, ["a"]);
    let again = cheng_engine::Graph::from_value(&g.to_value()).unwrap();
    assert_eq!(again, g);
}
