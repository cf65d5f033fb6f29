//! Helpers: running tools/runtime through the engine, hand-made test nodes, a counting approver.
#![allow(dead_code)]

// Linked so that their inventory registrations (real nodes) are present.
use cheng_nodes_documents as _;
use cheng_nodes_workspace as _;

use cheng_engine::{Engine, NodeResult, RunOptions};
use cheng_node::{
    async_trait, ApprovalRequest, Approver, Audience, CancellationToken, Decision, Effects,
    ErrorKind, Node, NodeError, NodeSpec, PortSpec, PortType, Registry, RunContext, Values,
};
use cheng_nodes_runtime::ToolRuntime;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The gate of `test/gated` (never set in the environment: tests pass a predicate instead).
pub const TEST_GATE: &str = "CHENG_TEST_RUNTIME_GATE";

/// A node behind [`TEST_GATE`]; returns `{"ran": true}`.
pub struct Gated;
static GATED: NodeSpec = NodeSpec {
    id: "test/gated",
    title: "Gated",
    description: "A node behind a gate variable.",
    category: "test",
    inputs: &[],
    outputs: &[PortSpec::output("ran", PortType::Boolean, "Always true")],
    gate: Some(TEST_GATE),
    effects: Effects::ReadOnly,
};
#[async_trait]
impl Node for Gated {
    fn spec(&self) -> &'static NodeSpec {
        &GATED
    }
    async fn run(&self, _ctx: &RunContext, _input: Values) -> Result<Values, NodeError> {
        Ok(Values::from_iter([("ran".to_string(), json!(true))]))
    }
}
cheng_node::inventory::submit! { cheng_node::NodeRegistration::new(&Gated) }

/// Echoes what it received (`seen`): one port of each audience.
pub struct Echo;
pub static ECHO: NodeSpec = NodeSpec {
    id: "test/echo",
    title: "Echo",
    description: "Returns the input it received.",
    category: "test",
    inputs: &[
        PortSpec::input("text", PortType::String, "Any text").required(),
        PortSpec::input("mode", PortType::String, "Author-only mode")
            .default("\"plain\"")
            .audience(Audience::Author),
        PortSpec::input("limit", PortType::Integer, "Capped limit")
            .default("5")
            .audience(Audience::Capped),
        PortSpec::input("allow_net", PortType::Boolean, "Capped switch")
            .default("false")
            .audience(Audience::Capped)
            .capability(&cheng_node::capability::NETWORK),
        PortSpec::sandbox_root(),
    ],
    outputs: &[PortSpec::output(
        "seen",
        PortType::Object,
        "The input received",
    )],
    gate: None,
    effects: Effects::ReadOnly,
};
#[async_trait]
impl Node for Echo {
    fn spec(&self) -> &'static NodeSpec {
        &ECHO
    }
    async fn run(&self, _ctx: &RunContext, input: Values) -> Result<Values, NodeError> {
        Ok(Values::from_iter([(
            "seen".to_string(),
            Value::Object(input),
        )]))
    }
}
cheng_node::inventory::submit! { cheng_node::NodeRegistration::new(&Echo) }

/// Needs a path from its author and text from its caller.
pub struct Strict;
static STRICT: NodeSpec = NodeSpec {
    id: "test/strict",
    title: "Strict",
    description: "Has required ports for both audiences.",
    category: "test",
    inputs: &[
        PortSpec::input("text", PortType::String, "Required from the caller").required(),
        PortSpec::input("root", PortType::String, "Required from the author")
            .required()
            .audience(Audience::Author),
    ],
    outputs: &[],
    gate: None,
    effects: Effects::ReadOnly,
};
#[async_trait]
impl Node for Strict {
    fn spec(&self) -> &'static NodeSpec {
        &STRICT
    }
    async fn run(&self, _ctx: &RunContext, _input: Values) -> Result<Values, NodeError> {
        Ok(Values::new())
    }
}
cheng_node::inventory::submit! { cheng_node::NodeRegistration::new(&Strict) }

/// Waits until the run is cancelled, then reports it (proves `ctx.cancel` reaches the tool).
pub struct Wait;
static WAIT: NodeSpec = NodeSpec {
    id: "test/wait",
    title: "Wait",
    description: "Waits for cancellation.",
    category: "test",
    inputs: &[],
    outputs: &[PortSpec::output(
        "success",
        PortType::Boolean,
        "false once cancelled",
    )],
    gate: None,
    effects: Effects::ReadOnly,
};
#[async_trait]
impl Node for Wait {
    fn spec(&self) -> &'static NodeSpec {
        &WAIT
    }
    async fn run(&self, ctx: &RunContext, _input: Values) -> Result<Values, NodeError> {
        ctx.cancel.cancelled().await;
        Err(NodeError::new(
            ErrorKind::Cancelled,
            "cancelled while waiting",
        ))
    }
}
cheng_node::inventory::submit! { cheng_node::NodeRegistration::new(&Wait) }

/// Every linked node, with [`TEST_GATE`] open or shut (the process environment is never read).
pub fn tools(gate_open: bool) -> Registry {
    Registry::from_inventory_with(|var| gate_open && var == TEST_GATE)
}

/// An engine whose only node is a runtime over `tools` (what the CLI does, minus the env).
///
/// Its operator policy (which the runtime's inner engine inherits through the run's context)
/// lets authors turn on raw shell syntax, as a machine whose operator allowed it would.
pub fn engine(tools: Registry) -> Engine {
    let policy = match cheng_node::policy::Policy::from_toml_str(
        "[all]\nshell_syntax = true\n",
        "/test/policy.toml",
    ) {
        Ok(policy) => policy,
        Err(e) => panic!("{e}"),
    };
    Engine::new(
        Registry::new().with(ToolRuntime::with_registry(tools)),
        policy,
    )
}

/// Answers with a fixed decision and records every request.
pub struct Recorder {
    pub decision: Decision,
    pub asked: AtomicUsize,
    pub requests: Mutex<Vec<ApprovalRequest>>,
}

impl Recorder {
    pub fn new(decision: Decision) -> Arc<Self> {
        Arc::new(Recorder {
            decision,
            asked: AtomicUsize::new(0),
            requests: Mutex::new(Vec::new()),
        })
    }
    pub fn asked(&self) -> usize {
        self.asked.load(Ordering::SeqCst)
    }
    pub fn last(&self) -> Option<ApprovalRequest> {
        self.requests.lock().ok().and_then(|r| r.last().cloned())
    }
}

#[async_trait]
impl Approver for Recorder {
    async fn decide(&self, request: &ApprovalRequest) -> Decision {
        self.asked.fetch_add(1, Ordering::SeqCst);
        if let Ok(mut requests) = self.requests.lock() {
            requests.push(request.clone());
        }
        self.decision
    }
}

fn object(value: Value) -> Values {
    match value {
        Value::Object(map) => map,
        Value::Null => Values::new(),
        other => panic!("expected a JSON object, got {other}"),
    }
}

/// Runs tools/runtime as `cheng run` would: `config` (with exposed_tools) and `input`.
pub async fn run_with(
    engine: &Engine,
    ws: &Path,
    config: Value,
    input: Value,
    approver: Arc<dyn Approver>,
    cancel: CancellationToken,
) -> NodeResult {
    let options = RunOptions::new(ws)
        .expect("workspace")
        .approver(approver)
        .cancel(cancel);
    match engine
        .run_node("tools/runtime", object(config), object(input), options)
        .await
    {
        Ok(result) => result,
        Err(errors) => panic!("tools/runtime did not validate: {errors:?}"),
    }
}

/// `run_with` on the inventory registry (gate shut), recording approvals with `decision`.
pub async fn runtime(
    ws: &Path,
    exposed: Value,
    input: Value,
    decision: Decision,
) -> (Values, Arc<Recorder>) {
    let recorder = Recorder::new(decision);
    let result = run_with(
        &engine(tools(false)),
        ws,
        json!({"exposed_tools": exposed}),
        input,
        recorder.clone(),
        CancellationToken::new(),
    )
    .await;
    (result.outputs, recorder)
}

/// The outputs' `errors` joined by newlines (for `contains` checks with a readable failure).
pub fn errors(out: &Values) -> String {
    out["errors"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

pub fn warnings(out: &Values) -> String {
    out["warnings"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// Function names from `functions`.
pub fn names(out: &Values) -> Vec<String> {
    out["functions"]
        .as_array()
        .map(|fs| {
            fs.iter()
                .filter_map(|f| f["function"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

pub use cheng_test_support::{git, temp_workspace};

/// A repository with one committed file and one untracked file.
pub fn repo(dir: &Path) {
    git(dir, &["-c", "init.defaultBranch=main", "init", "-q", "."]);
    std::fs::write(dir.join("committed.txt"), "one\n").expect("write");
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "initial commit"]);
    std::fs::write(dir.join("untracked.txt"), "two\n").expect("write");
}
