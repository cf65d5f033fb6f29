//! A one-node graph runs in the caller's task (no task spawned for its loop or its node): a node
//! that panics must still be a clean failure, and cancellation must still reach it.

use super::nodes::*;
use cheng_engine::{Engine, GraphStatus, NodeStatus};
use cheng_node::*;
use serde_json::json;
use std::time::Duration;

/// Panics in `run`: at once, or after it was pending once (`late`).
struct Panics;
static PANICS: NodeSpec = NodeSpec {
    id: "test/panics",
    title: "Panics",
    description: "A buggy node.",
    category: "test",
    inputs: &[PortSpec::input("late", PortType::Boolean, "Panic after a yield").default("false")],
    outputs: &[
        PortSpec::output("success", PortType::Boolean, "ok"),
        PortSpec::output("summary", PortType::String, "text"),
    ],
    gate: None,
    effects: Effects::ReadOnly,
};

#[async_trait]
impl Node for Panics {
    fn spec(&self) -> &'static NodeSpec {
        &PANICS
    }
    async fn run(&self, _ctx: &RunContext, input: Values) -> Result<Values, NodeError> {
        if input::boolean(&input, &PANICS.inputs[0])? {
            tokio::task::yield_now().await;
        }
        panic!("a bug in the node");
    }
}

fn engine() -> Engine {
    Engine::new(
        registry().with(Panics).with(Sleep::default()),
        cheng_node::policy::Policy::builtin(),
    )
}

/// The attack: a node panics while it runs in the caller's task (at its first poll and after
/// being pending). The caller gets a failed result naming the bug, not the panic.
#[test]
fn a_panicking_node_alone_in_its_graph_fails_cleanly() {
    for late in [false, true] {
        let (_dir, options) = workspace();
        let result = run(
            &engine(),
            json!({"version": 1, "nodes": [{"id": "p", "type": "test/panics", "inputs": {"late": late}}]}),
            options,
        );
        assert_eq!(result.status, GraphStatus::Failed, "late={late}");
        let node = result.node("p").expect("the node has a result");
        assert_eq!(node.status, NodeStatus::Failed);
        assert_eq!(node.outputs["success"], false);
        assert_eq!(node.outputs["error_kind"], "LOCAL_EXECUTOR_INTERNAL");
        let error = node.outputs["error"].as_str().unwrap_or_default();
        assert!(
            error.contains("node p panicked; this is a bug in test/panics"),
            "{error}"
        );
        assert!(
            node.outputs.contains_key("summary"),
            "every declared output is present"
        );
    }
}

/// The same node among others (run as tasks) fails the same way and the others still run.
#[test]
fn a_panicking_node_among_others_fails_the_same_way() {
    let (_dir, options) = workspace();
    let result = run(
        &engine(),
        json!({"version": 1, "nodes": [{"id": "p", "type": "test/panics"}, {"id": "e", "type": "test/echo", "inputs": {"text": "hi"}}]}),
        options,
    );
    let node = result.node("p").expect("the node has a result");
    assert_eq!(node.outputs["error_kind"], "LOCAL_EXECUTOR_INTERNAL");
    assert!(node.outputs["error"]
        .as_str()
        .unwrap_or_default()
        .contains("node p panicked; this is a bug in test/panics"));
    assert_eq!(
        result.node("e").expect("echo ran").status,
        NodeStatus::Succeeded
    );
}

/// Cancellation reaches a node running in the caller's task.
#[test]
fn a_lone_node_is_cancelled() {
    let cancel = CancellationToken::new();
    let (_dir, options) = workspace();
    let engine = engine();
    let validated = engine
        .validate(&graph(json!({"version": 1, "nodes": [{"id": "long", "type": "test/sleep", "inputs": {"ms": 60000}}]})))
        .expect("valid");
    let trigger = cancel.clone();
    let result = runtime().block_on(async {
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            trigger.cancel();
        });
        engine.run(&validated, options.cancel(cancel)).await
    });
    // No wall-clock bound: an uncancelled run ends after 60 s with `exited`, caught below.
    assert_eq!(result.status, GraphStatus::Cancelled);
    let long = result.node("long").expect("the node has a result");
    assert_eq!(long.status, NodeStatus::Cancelled);
    assert_eq!(long.outputs["termination"], "cancelled");
}
