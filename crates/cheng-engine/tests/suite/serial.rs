//! `Effects::Serial`: two file-changing nodes never run at once on one workspace, within a graph
//! or across concurrent runs (what separate server calls are). Each test node waits for a
//! partner to overlap with, so without the engine's lock the overlap happens and is counted.

use super::nodes::*;
use cheng_engine::{Engine, GraphStatus, RunOptions};
use cheng_node::*;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(Default, Clone)]
struct Writer {
    current: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
}

static WRITER: NodeSpec = NodeSpec {
    id: "test/writer",
    title: "Writer",
    description: "Pretends to change a file; waits for a concurrent partner.",
    category: "test",
    inputs: &[],
    outputs: &[PortSpec::output("success", PortType::Boolean, "ok")],
    gate: None,
    effects: Effects::Serial(ApprovalRule::Always),
};

#[async_trait]
impl Node for Writer {
    fn spec(&self) -> &'static NodeSpec {
        &WRITER
    }
    async fn run(&self, _ctx: &RunContext, _input: Values) -> Result<Values, NodeError> {
        let now = self.current.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        // Give a concurrent instance every chance to start (up to 300 ms), then leave.
        for _ in 0..30 {
            if self.peak.load(Ordering::SeqCst) > 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.current.fetch_sub(1, Ordering::SeqCst);
        Ok(obj(json!({ "success": true })))
    }
}

fn graph_of(n: usize) -> Value {
    let nodes: Vec<Value> = (0..n)
        .map(|i| json!({"id": format!("w{i}"), "type": "test/writer"}))
        .collect();
    json!({"version": 1, "nodes": nodes})
}

fn approving(options: RunOptions) -> RunOptions {
    options
        .jobs(4)
        .approver(Arc::new(FixedApprover(Decision::Approved)))
}

#[test]
fn serial_nodes_of_one_graph_never_overlap() {
    let writer = Writer::default();
    let engine = Engine::new(Registry::new().with(writer.clone()));
    let (_dir, options) = workspace();
    let result = run(&engine, graph_of(3), approving(options));
    assert_eq!(result.status, GraphStatus::Succeeded);
    assert_eq!(
        writer.peak.load(Ordering::SeqCst),
        1,
        "two serial nodes ran at once in one graph"
    );
}

#[test]
fn concurrent_runs_on_one_workspace_never_overlap_and_other_workspaces_do() {
    let writer = Writer::default();
    let engine = Engine::new(Registry::new().with(writer.clone()));
    let validated = engine.validate(&graph(graph_of(1))).unwrap();
    let (_dir, options) = workspace();
    let (_other_dir, other) = workspace();
    let rt = runtime();
    rt.block_on(async {
        let a = engine.run(&validated, approving(options.clone()));
        let b = engine.run(&validated, approving(options.clone()));
        let (a, b) = tokio::join!(a, b);
        assert_eq!(
            (a.status, b.status),
            (GraphStatus::Succeeded, GraphStatus::Succeeded)
        );
    });
    assert_eq!(
        writer.peak.load(Ordering::SeqCst),
        1,
        "two runs changed one workspace at once"
    );
    // The lock is per workspace: different workspaces proceed together.
    rt.block_on(async {
        let a = engine.run(&validated, approving(options));
        let b = engine.run(&validated, approving(other));
        tokio::join!(a, b);
    });
    assert_eq!(
        writer.peak.load(Ordering::SeqCst),
        2,
        "runs on different workspaces were serialised"
    );
}
