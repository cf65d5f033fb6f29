//! Approval: asked before gated runs, with events; nothing runs on a denial.

use super::nodes::*;
use cheng_engine::{Engine, Event, MemorySink, NodeStatus};
use cheng_node::{Decision, Registry};
use serde_json::json;
use std::sync::atomic::Ordering;
use std::sync::Arc;

fn gated_engine(node: Gated) -> Engine {
    Engine::new(
        Registry::new().with(node).with(Echo),
        cheng_node::policy::Policy::builtin(),
    )
}

#[test]
fn denial_never_calls_run_and_is_terminal() {
    let node = Gated::default();
    let runs = Arc::clone(&node.runs);
    let approver = Recording::new(Decision::Denied);
    let (_dir, options) = workspace();
    let result = run(
        &gated_engine(node),
        json!({"version": 1, "nodes": [{"id": "g", "type": "test/gated", "inputs": {"purpose": "check things"}},
                                       {"id": "after", "type": "test/echo"}],
               "edges": [{"from": "g.summary", "to": "after.text"}]}),
        options.approver(approver.clone()),
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "run was called after a denial"
    );
    let g = result.node("g").unwrap();
    assert_eq!(g.status, NodeStatus::Failed);
    assert_eq!(g.outputs["error_kind"], "LOCAL_EXECUTOR_APPROVAL_DENIED");
    assert_eq!(g.outputs["terminal"], true);
    assert_eq!(result.node("after").unwrap().status, NodeStatus::Skipped);
    let requests = approver.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].node_id, "g");
    assert_eq!(requests[0].node_type, "test/gated");
    assert_eq!(requests[0].purpose.as_deref(), Some("check things"));
    assert_eq!(requests[0].command_display, "gated thing");
}

#[test]
fn approval_runs_the_node_and_emits_events() {
    let node = Gated::default();
    let runs = Arc::clone(&node.runs);
    let events = Arc::new(MemorySink::default());
    let (_dir, options) = workspace();
    let result = run(
        &gated_engine(node),
        json!({"version": 1, "nodes": [{"id": "g", "type": "test/gated"}]}),
        options
            .approver(Recording::new(Decision::Approved))
            .events(events.clone()),
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(result.node("g").unwrap().status, NodeStatus::Succeeded);
    let names: Vec<&str> = events
        .events()
        .iter()
        .map(|e| e.name())
        .collect::<Vec<_>>()
        .into_iter()
        .collect();
    assert_eq!(
        names,
        [
            "node_started",
            "approval_requested",
            "approval_decided",
            "node_finished",
            "graph_finished"
        ]
    );
    let decided = events
        .events()
        .into_iter()
        .find(|e| e.name() == "approval_decided")
        .unwrap();
    assert!(matches!(
        decided,
        Event::ApprovalDecided {
            decision: Decision::Approved,
            ..
        }
    ));
}

#[test]
fn ungated_operations_ask_nobody() {
    let node = Gated::default();
    let runs = Arc::clone(&node.runs);
    let approver = Recording::new(Decision::Denied);
    let (_dir, options) = workspace();
    let result = run(
        &gated_engine(node),
        json!({"version": 1, "nodes": [{"id": "g", "type": "test/gated", "inputs": {"operation": "look"}}]}),
        options.approver(approver.clone()),
    );
    assert!(approver.requests().is_empty());
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(result.node("g").unwrap().status, NodeStatus::Succeeded);
}

#[test]
fn node_internal_approvals_go_through_the_same_approver() {
    let node = Gated {
        extra_path: Some("/etc/hosts"),
        ..Gated::default()
    };
    let runs = Arc::clone(&node.runs);
    let approver = Recording::new(Decision::Approved);
    let events = Arc::new(MemorySink::default());
    let (_dir, options) = workspace();
    run(
        &gated_engine(node),
        json!({"version": 1, "nodes": [{"id": "g", "type": "test/gated"}]}),
        options.approver(approver.clone()).events(events.clone()),
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let requests = approver.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].requested_paths, ["/etc/hosts"]);
    let asked = events
        .events()
        .iter()
        .filter(|e| e.name() == "approval_requested")
        .count();
    assert_eq!(asked, 2);
}

#[test]
fn the_default_approver_denies() {
    let node = Gated::default();
    let runs = Arc::clone(&node.runs);
    let (_dir, options) = workspace();
    let result = run(
        &gated_engine(node),
        json!({"version": 1, "nodes": [{"id": "g", "type": "test/gated"}]}),
        options,
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(
        result.node("g").unwrap().outputs["error_kind"],
        "LOCAL_EXECUTOR_APPROVAL_DENIED"
    );
}
