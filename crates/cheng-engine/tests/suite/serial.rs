//! `Effects::Serial`: two file-changing nodes never run at once on one workspace, within a graph
//! or across concurrent runs (what separate server calls are). Each test node waits for a
//! partner to overlap with, so without the engine's lock the overlap happens and is counted.
//! The lock is taken only once the approval card is decided: a person's slow answer holds
//! nobody else, and `run` gets the card that was approved.

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
    /// Runs that ended.
    finished: Arc<AtomicUsize>,
    /// The approved cards' command lines that runs were given.
    approved: Arc<std::sync::Mutex<Vec<String>>>,
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
    fn approval_request(
        &self,
        ctx: &RunContext,
        _input: &Values,
    ) -> Result<ApprovalRequest, NodeError> {
        let mut card = ApprovalRequest::new(ctx, format!("write for {}", ctx.node_id));
        card.basis = Some(format!("{} basis", ctx.node_id));
        Ok(card)
    }
    async fn run(&self, ctx: &RunContext, _input: Values) -> Result<Values, NodeError> {
        if let Some(card) = &ctx.approved_card {
            let seen = format!("{} / {:?}", card.command_display, card.basis);
            self.approved.lock().unwrap().push(seen);
        }
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
        self.finished.fetch_add(1, Ordering::SeqCst);
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
    let engine = Engine::new(
        Registry::new().with(writer.clone()),
        cheng_node::policy::Policy::builtin(),
    );
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
    let engine = Engine::new(
        Registry::new().with(writer.clone()),
        cheng_node::policy::Policy::builtin(),
    );
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

/// Approves once `writer` finished a run (polled), or denies after 30 s.
struct Patient {
    writer: Writer,
    gave_up: std::sync::atomic::AtomicBool,
}

#[async_trait]
impl Approver for Patient {
    async fn decide(&self, _request: &ApprovalRequest) -> Decision {
        let limit = std::time::Instant::now() + Duration::from_secs(30);
        while self.writer.finished.load(Ordering::SeqCst) == 0 {
            if std::time::Instant::now() > limit {
                self.gave_up.store(true, Ordering::SeqCst);
                return Decision::Denied;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Decision::Approved
    }
}

#[test]
fn the_lock_is_not_held_while_a_person_decides() {
    let writer = Writer::default();
    let engine = Engine::new(
        Registry::new().with(writer.clone()),
        cheng_node::policy::Policy::builtin(),
    );
    let slow = engine
        .validate(&graph(
            json!({"version": 1, "nodes": [{"id": "slow", "type": "test/writer"}]}),
        ))
        .unwrap();
    let quick = engine
        .validate(&graph(
            json!({"version": 1, "nodes": [{"id": "quick", "type": "test/writer"}]}),
        ))
        .unwrap();
    let (_dir, options) = workspace();
    // The person asked about `slow` answers only once another write on the workspace ended.
    let person = Arc::new(Patient {
        writer: writer.clone(),
        gave_up: Default::default(),
    });
    let (a, b) = runtime().block_on(async {
        tokio::join!(
            engine.run(&slow, options.clone().approver(person.clone())),
            engine.run(&quick, approving(options.clone()))
        )
    });
    assert!(
        !person.gave_up.load(Ordering::SeqCst),
        "no other write ran while a card waited for its answer"
    );
    assert_eq!(
        (a.status, b.status),
        (GraphStatus::Succeeded, GraphStatus::Succeeded)
    );
    assert_eq!(writer.peak.load(Ordering::SeqCst), 1, "the runs overlapped");
    // Each run was handed the card approved for it.
    let mut approved = writer.approved.lock().unwrap().clone();
    approved.sort();
    assert_eq!(
        approved,
        [
            "write for quick / Some(\"quick basis\")",
            "write for slow / Some(\"slow basis\")"
        ]
    );
}
