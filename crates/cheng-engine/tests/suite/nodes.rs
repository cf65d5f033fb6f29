//! Test node types and helpers.
#![allow(dead_code)]

use cheng_engine::{Engine, Graph, GraphResult, RunOptions, ValidationError, ValidationErrorKind};
use cheng_node::*;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Echoes its whole input back as `seen`, plus `text`.
pub struct Echo;
pub static ECHO: NodeSpec = NodeSpec {
    id: "test/echo",
    title: "Echo",
    description: "Returns what it received.",
    category: "test",
    inputs: &[
        PortSpec::input("text", PortType::String, "Text").default("\"\""),
        PortSpec::input("count", PortType::Integer, "A bounded integer")
            .default("null")
            .min(1)
            .max(100),
        PortSpec::input("mode", PortType::String, "A choice")
            .default("\"a\"")
            .choices(&["a", "b"]),
        PortSpec::input("tags", PortType::Array(&PortType::String), "Tags").default("[]"),
        PortSpec::sandbox_root(),
        PortSpec::input("allow_shell_string", PortType::Boolean, "Author switch")
            .default("false")
            .audience(Audience::Author)
            .control(Control::Switch)
            .capability(&capability::SHELL_SYNTAX),
        PortSpec::input("allow_network", PortType::Boolean, "Capped switch")
            .default("false")
            .audience(Audience::Capped)
            .capability(&capability::NETWORK),
        PortSpec::input("memory_mb", PortType::Integer, "Capped integer")
            .default("256")
            .max(4096)
            .audience(Audience::Capped),
    ],
    outputs: &[
        PortSpec::output("success", PortType::Boolean, "ok"),
        PortSpec::output("text", PortType::String, "The text"),
        PortSpec::output("number", PortType::Integer, "A number"),
        PortSpec::output("seen", PortType::Object, "The input as received"),
        PortSpec::output("value", PortType::Any, "The `tags` input, untyped"),
        PortSpec::output("missing", PortType::String, "Never set by the node"),
    ],
    gate: None,
    effects: Effects::ReadOnly,
};

#[async_trait]
impl Node for Echo {
    fn spec(&self) -> &'static NodeSpec {
        &ECHO
    }
    async fn run(&self, _ctx: &RunContext, input: Values) -> Result<Values, NodeError> {
        let text = input.get("text").cloned().unwrap_or(Value::Null);
        let value = input.get("tags").cloned().unwrap_or(Value::Null);
        Ok(obj(
            json!({ "success": true, "text": text, "number": 7, "seen": input, "value": value }),
        ))
    }
}

/// Has a required port.
pub struct Needs;
pub static NEEDS: NodeSpec = NodeSpec {
    id: "test/needs",
    title: "Needs",
    description: "Requires `name`.",
    category: "test",
    inputs: &[PortSpec::input("name", PortType::String, "Required").required()],
    outputs: &[PortSpec::output("success", PortType::Boolean, "ok")],
    gate: None,
    effects: Effects::ReadOnly,
};

#[async_trait]
impl Node for Needs {
    fn spec(&self) -> &'static NodeSpec {
        &NEEDS
    }
    async fn run(&self, _ctx: &RunContext, _input: Values) -> Result<Values, NodeError> {
        Ok(obj(json!({ "success": true })))
    }
}

/// Fails: `success:false` normally, `Err` when `err` is true.
pub struct Fail;
pub static FAIL: NodeSpec = NodeSpec {
    id: "test/fail",
    title: "Fail",
    description: "Always fails.",
    category: "test",
    inputs: &[PortSpec::input("err", PortType::Boolean, "Return Err").default("false")],
    outputs: &[
        PortSpec::output("success", PortType::Boolean, "ok"),
        PortSpec::output("summary", PortType::String, "text"),
        PortSpec::output("error_kind", PortType::String, "code"),
    ],
    gate: None,
    effects: Effects::ReadOnly,
};

#[async_trait]
impl Node for Fail {
    fn spec(&self) -> &'static NodeSpec {
        &FAIL
    }
    async fn run(&self, _ctx: &RunContext, input: Values) -> Result<Values, NodeError> {
        if input::boolean(&input, &FAIL.inputs[0])? {
            return Err(NodeError::new(ErrorKind::NotFound, "no such thing"));
        }
        Ok(obj(
            json!({ "success": false, "summary": "failed on purpose", "error_kind": "LOCAL_EXECUTOR_NON_ZERO_EXIT" }),
        ))
    }
}

/// Approval-gated on every run; counts how often `run` is actually called.
#[derive(Default, Clone)]
pub struct Gated {
    pub runs: Arc<AtomicUsize>,
    /// When set, asks for a second approval itself (`ctx.require_approval`).
    pub extra_path: Option<&'static str>,
}
pub static GATED: NodeSpec = NodeSpec {
    id: "test/gated",
    title: "Gated",
    description: "Needs approval.",
    category: "test",
    inputs: &[
        PortSpec::input("purpose", PortType::String, "Why").default("null"),
        PortSpec::input("operation", PortType::String, "run or look").default("\"run\""),
    ],
    outputs: &[
        PortSpec::output("success", PortType::Boolean, "ok"),
        PortSpec::output("summary", PortType::String, "text"),
    ],
    gate: None,
    effects: Effects::Approval(ApprovalRule::Operations(&["run"])),
};

#[async_trait]
impl Node for Gated {
    fn spec(&self) -> &'static NodeSpec {
        &GATED
    }
    fn approval_request(
        &self,
        ctx: &RunContext,
        input: &Values,
    ) -> Result<ApprovalRequest, NodeError> {
        let mut request = ApprovalRequest::new(ctx, "gated thing".to_string());
        request.purpose = input::opt_str(input, "purpose").map(str::to_string);
        Ok(request)
    }
    async fn run(&self, ctx: &RunContext, _input: Values) -> Result<Values, NodeError> {
        if let Some(path) = self.extra_path {
            let mut request = ApprovalRequest::new(ctx, format!("read {path}"));
            request.requested_paths.push(path.to_string());
            ctx.require_approval(&request, &format!("reading {path}"))
                .await?;
        }
        self.runs.fetch_add(1, Ordering::SeqCst);
        Ok(obj(json!({ "success": true, "summary": "ran" })))
    }
}

/// Sleeps `ms` (or until cancelled) and tracks how many instances run at once.
#[derive(Default, Clone)]
pub struct Sleep {
    pub current: Arc<AtomicUsize>,
    pub peak: Arc<AtomicUsize>,
    pub started: Arc<AtomicUsize>,
}
pub static SLEEP: NodeSpec = NodeSpec {
    id: "test/sleep",
    title: "Sleep",
    description: "Sleeps.",
    category: "test",
    inputs: &[
        PortSpec::input("ms", PortType::Integer, "How long").default("10"),
        PortSpec::input("after", PortType::Any, "Ordering only").default("null"),
    ],
    outputs: &[
        PortSpec::output("success", PortType::Boolean, "ok"),
        PortSpec::output("termination", PortType::String, "exited or cancelled"),
        PortSpec::output("error_kind", PortType::String, "code"),
    ],
    gate: None,
    effects: Effects::ReadOnly,
};

#[async_trait]
impl Node for Sleep {
    fn spec(&self) -> &'static NodeSpec {
        &SLEEP
    }
    async fn run(&self, ctx: &RunContext, input: Values) -> Result<Values, NodeError> {
        self.started.fetch_add(1, Ordering::SeqCst);
        let now = self.current.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        let ms = input::int(&input, &SLEEP.inputs[0])?.unsigned_abs();
        let cancelled = tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(ms)) => false,
            () = ctx.cancel.cancelled() => true,
        };
        self.current.fetch_sub(1, Ordering::SeqCst);
        if cancelled {
            return Ok(obj(json!({
                "success": false, "termination": "cancelled", "error_kind": ErrorKind::Cancelled.code(),
            })));
        }
        Ok(obj(json!({ "success": true, "termination": "exited" })))
    }
}

/// Behind a gate variable; registered through inventory to test `Lookup::Gated`.
pub struct GateVar;
pub static GATE_VAR: NodeSpec = NodeSpec {
    id: "test/gate_var",
    title: "Gate var",
    description: "Registered only with CHENG_ENABLE_TEST_GATE.",
    category: "test",
    inputs: &[],
    outputs: &[PortSpec::output("success", PortType::Boolean, "ok")],
    gate: Some("CHENG_ENABLE_TEST_GATE"),
    effects: Effects::ReadOnly,
};

#[async_trait]
impl Node for GateVar {
    fn spec(&self) -> &'static NodeSpec {
        &GATE_VAR
    }
    async fn run(&self, _ctx: &RunContext, _input: Values) -> Result<Values, NodeError> {
        Ok(obj(json!({ "success": true })))
    }
}

inventory::submit! { NodeRegistration::new(&GateVar) }

pub fn obj(value: Value) -> Values {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

/// Echo, Needs and Fail, plus whatever else the test adds.
pub fn registry() -> Registry {
    Registry::new().with(Echo).with(Needs).with(Fail)
}

pub fn engine() -> Engine {
    Engine::new(registry(), cheng_node::policy::Policy::builtin())
}

/// An engine whose operator policy lets authors turn on raw shell syntax (`allow_shell_string`).
pub fn shell_engine() -> Engine {
    let policy = cheng_node::policy::Policy::from_toml_str(
        "[all]\nshell_syntax = true\n",
        "/test/policy.toml",
    );
    match policy {
        Ok(policy) => Engine::new(registry(), policy),
        Err(e) => panic!("{e}"),
    }
}

pub fn graph(value: Value) -> Graph {
    match Graph::from_value(&value) {
        Ok(graph) => graph,
        Err(errors) => panic!("graph does not parse: {errors:?}"),
    }
}

/// Validation errors of `value` against `engine` (panics when it validates).
pub fn errors_of(engine: &Engine, value: Value) -> Vec<ValidationError> {
    match engine.validate(&graph(value)) {
        Ok(_) => panic!("graph unexpectedly validated"),
        Err(errors) => errors,
    }
}

/// The one error of `kind`, panicking with all errors otherwise.
pub fn only(errors: &[ValidationError], kind: ValidationErrorKind) -> &ValidationError {
    let found: Vec<_> = errors.iter().filter(|e| e.kind == kind).collect();
    assert_eq!(found.len(), 1, "expected one {kind:?} in {errors:#?}");
    found[0]
}

pub fn workspace() -> (tempfile::TempDir, RunOptions) {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = RunOptions::new(dir.path()).expect("workspace");
    (dir, options)
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// Validates and runs `value`.
pub fn run(engine: &Engine, value: Value, options: RunOptions) -> GraphResult {
    let validated = match engine.validate(&graph(value)) {
        Ok(v) => v,
        Err(errors) => panic!("validation failed: {errors:#?}"),
    };
    runtime().block_on(engine.run(&validated, options))
}

/// An approver that records every request and answers with a fixed decision.
pub struct Recording {
    pub decision: Decision,
    pub requests: Mutex<Vec<ApprovalRequest>>,
}

impl Recording {
    pub fn new(decision: Decision) -> Arc<Self> {
        Arc::new(Recording {
            decision,
            requests: Mutex::new(Vec::new()),
        })
    }
    pub fn requests(&self) -> Vec<ApprovalRequest> {
        self.requests.lock().unwrap().clone()
    }
}

#[async_trait]
impl Approver for Recording {
    async fn decide(&self, request: &ApprovalRequest) -> Decision {
        self.requests.lock().unwrap().push(request.clone());
        self.decision
    }
}
