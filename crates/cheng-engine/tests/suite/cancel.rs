//! Cancellation: running nodes see the token, pending nodes are marked cancelled.

use super::nodes::*;
use cheng_engine::{Engine, GraphStatus, NodeStatus};
use cheng_node::{CancellationToken, Registry};
use serde_json::json;
use std::sync::atomic::Ordering;
use std::time::Duration;

#[test]
fn cancelling_stops_running_nodes_and_marks_pending_ones() {
    let sleep = Sleep::default();
    let engine = Engine::new(
        Registry::new().with(sleep.clone()).with(Echo),
        cheng_node::policy::Policy::builtin(),
    );
    let cancel = CancellationToken::new();
    let (_dir, options) = workspace();
    let graph = graph(json!({"version": 1, "nodes": [
        {"id": "long", "type": "test/sleep", "inputs": {"ms": 60000}},
        {"id": "after", "type": "test/echo"},
        {"id": "queued", "type": "test/sleep", "inputs": {"ms": 60000}}],
        "edges": [{"from": "long.termination", "to": "after.text"}]}));
    let validated = engine.validate(&graph).unwrap();
    let rt = runtime();
    let trigger = cancel.clone();
    let result = rt.block_on(async {
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            trigger.cancel();
        });
        engine.run(&validated, options.jobs(1).cancel(cancel)).await
    });
    // No wall-clock bound: a run cancellation did not stop would end 60 s later with `long`
    // finished, not cancelled, which the status checks below catch.
    assert_eq!(result.status, GraphStatus::Cancelled);
    let long = result.node("long").unwrap();
    assert_eq!(long.status, NodeStatus::Cancelled);
    assert_eq!(long.outputs["termination"], "cancelled");
    assert_eq!(long.outputs["error_kind"], "LOCAL_EXECUTOR_CANCELLED");
    for id in ["after", "queued"] {
        let node = result.node(id).unwrap();
        assert_eq!(node.status, NodeStatus::Cancelled, "{id}");
        assert_eq!(node.outputs["error_kind"], "LOCAL_EXECUTOR_CANCELLED");
    }
    // jobs=1: `queued` never started.
    assert_eq!(sleep.started.load(Ordering::SeqCst), 1);
}

#[test]
fn cancelling_while_waiting_for_approval_runs_nothing() {
    struct Never;
    #[cheng_node::async_trait]
    impl cheng_node::Approver for Never {
        async fn decide(&self, _request: &cheng_node::ApprovalRequest) -> cheng_node::Decision {
            std::future::pending().await
        }
    }
    let node = Gated::default();
    let runs = node.runs.clone();
    let engine = Engine::new(
        Registry::new().with(node),
        cheng_node::policy::Policy::builtin(),
    );
    let cancel = CancellationToken::new();
    let (_dir, options) = workspace();
    let validated = engine
        .validate(&graph(
            json!({"version": 1, "nodes": [{"id": "g", "type": "test/gated"}]}),
        ))
        .unwrap();
    let trigger = cancel.clone();
    let result = runtime().block_on(async {
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            trigger.cancel();
        });
        engine
            .run(
                &validated,
                options.approver(std::sync::Arc::new(Never)).cancel(cancel),
            )
            .await
    });
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let g = result.node("g").unwrap();
    assert_eq!(g.status, NodeStatus::Cancelled);
    assert_eq!(g.outputs["error_kind"], "LOCAL_EXECUTOR_CANCELLED");
}
