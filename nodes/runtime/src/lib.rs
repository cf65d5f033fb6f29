//! `tools/runtime`: a configurable toolkit. An agent connects once and sees a curated set of
//! policy-limited tools as LLM functions; its calls run through the same engine as `cheng run`.
//!
//! The node's author curates the toolkit in `exposed_tools` (an author-only port, so an agent
//! can never widen its own toolkit). Each entry names a node type, optionally a function name,
//! a description, the author's config for that node and `presets` (agent ports the author fixes
//! and hides from the model, e.g. `{"command": "cargo"}` so the model gives only `args`):
//!
//! ```json
//! [ { "type": "tools/workspace_git" },
//!   { "type": "tools/workspace_shell", "name": "shell", "config": { "command_whitelist": "cargo" } } ]
//! ```
//!
//! - `action: "list_tools"` returns one function per usable entry in `functions` — its
//!   `parameters` are exactly the node's agent-facing input schema — and every problem with the
//!   curation in `errors` (unknown or gated-out types, bad config, duplicate names, recursion).
//! - `action: "execute"` runs `tool_call` (`{"name", "arguments"}`) as a one-node graph through
//!   `cheng-engine`: the engine validates the arguments (author and engine ports refused, capped
//!   ports capped by the entry's config), asks the run's approver for gated tools, and passes
//!   the run's cancellation on. `result` is the tool's own output object.
//! - `dry_run: true` validates the call and reports what would run, including the approval card
//!   a person would see; nothing is dispatched.
//!
//! ```
//! use cheng_engine::{Engine, RunOptions};
//! use cheng_node::*;
//! use cheng_nodes_runtime::ToolRuntime;
//! use serde_json::json;
//!
//! struct Upper;
//! static UPPER: NodeSpec = NodeSpec {
//!     id: "test/upper",
//!     title: "Upper",
//!     description: "Upper-cases its text.",
//!     category: "test",
//!     inputs: &[PortSpec::input("text", PortType::String, "Text").default("\"\"")],
//!     outputs: &[PortSpec::output("text", PortType::String, "Upper-cased text")],
//!     gate: None,
//!     effects: Effects::ReadOnly,
//! };
//! #[async_trait]
//! impl Node for Upper {
//!     fn spec(&self) -> &'static NodeSpec { &UPPER }
//!     async fn run(&self, _ctx: &RunContext, input: Values) -> Result<Values, NodeError> {
//!         let text = input::opt_str(&input, "text").unwrap_or_default().to_uppercase();
//!         Ok(Values::from_iter([("text".to_string(), text.into())]))
//!     }
//! }
//!
//! let tools = Registry::new().with(Upper);
//! // The tool calls run under the engine's policy (here the built-in defaults).
//! let runtime = Registry::new().with(ToolRuntime::with_registry(tools));
//! let engine = Engine::new(runtime, policy::Policy::builtin());
//! let config = json!({"exposed_tools": [{"type": "test/upper", "name": "shout"}]});
//! let call = json!({"action": "execute", "tool_call": {"name": "shout", "arguments": {"text": "hi"}}});
//! let dir = tempfile::tempdir().unwrap();
//! let rt = tokio::runtime::Runtime::new().unwrap();
//! let result = rt.block_on(engine.run_node(
//!     "tools/runtime",
//!     config.as_object().unwrap().clone(),
//!     call.as_object().unwrap().clone(),
//!     RunOptions::new(dir.path()).unwrap(),
//! )).unwrap();
//! assert_eq!(result.outputs["status"], "ok");
//! assert_eq!(result.outputs["result"]["text"], "HI");
//! ```

mod call;
mod execute;
mod functions;
mod outcome;
mod toolkit;

pub use functions::{function, parameters, portable};
pub use outcome::Status;
pub use toolkit::{Entry, Tool, Toolkit};

use cheng_engine::Engine;
use cheng_node::{
    failure, input, Audience, Effects, Field, Node, NodeError, NodeSpec, PortSpec, PortType,
    Registry, RunContext, Values,
};
use outcome::Outcome;
use serde_json::Value;
use std::sync::Arc;

/// The node type id.
pub const ID: &str = "tools/runtime";

const ACTIONS: &[&str] = &["list_tools", "execute"];

/// The fields of `tool_call` in its first shape (the OpenAI tool-call object is accepted too).
static TOOL_CALL_FIELDS: &[Field] = &[
    Field::new(
        "name",
        PortType::String,
        "The function name, as `list_tools` gives it",
    ),
    Field::new(
        "arguments",
        PortType::Object,
        "The function's arguments (or their JSON text)",
    ),
];

const DRY_RUN: PortSpec = PortSpec::input(
    "dry_run",
    PortType::Boolean,
    "Validate only, do not dispatch",
)
.default("false");

pub static SPEC: NodeSpec = NodeSpec {
    id: ID,
    title: "Tool runtime",
    description: "A configurable toolkit: connect to an LLM/agent once and expose a curated set of policy-limited tools.",
    category: "runtime",
    inputs: &[
        PortSpec::input("action", PortType::Enum(ACTIONS), "Operation: list_tools | execute").default("\"list_tools\""),
        PortSpec::input("tool_call", PortType::Object, "Tool call when action=execute").fields(TOOL_CALL_FIELDS),
        PortSpec::input("exposed_tools", PortType::Array(&PortType::Object), "Curated toolkit")
            .default("[]")
            .audience(Audience::Author),
        DRY_RUN,
    ],
    outputs: &[
        PortSpec::output("status", PortType::String, "Runtime operation status"),
        PortSpec::output("functions", PortType::Array(&PortType::Any), "Expanded LLM functions"),
        PortSpec::output("result", PortType::Any, "Tool execution result"),
        PortSpec::output("errors", PortType::Array(&PortType::String), "Configuration errors"),
        PortSpec::output("warnings", PortType::Array(&PortType::String), "Configuration warnings"),
        failure::success("Whether status is ok or validated (added to the reference table: drives exit codes and graph scheduling)"),
        failure::ERROR_KIND,
        failure::TERMINAL,
        failure::ERROR,
    ],
    gate: None,
    // The runtime itself changes nothing; each tool it runs is gated by its own effects.
    effects: Effects::ReadOnly,
};

/// The `tools/runtime` node.
///
/// Registered from the inventory it looks tools up in the process's own registry (gates read
/// from the environment at each call); embedders and tests can hand it a registry instead.
pub struct ToolRuntime {
    registry: Option<Registry>,
}

impl ToolRuntime {
    /// Tools come from `Registry::from_inventory()`, built at each call.
    pub const fn from_inventory() -> Self {
        ToolRuntime { registry: None }
    }

    /// Tools come from `registry` (which decides what is gated out).
    pub fn with_registry(registry: Registry) -> Self {
        ToolRuntime {
            registry: Some(registry),
        }
    }

    fn registry(&self) -> Registry {
        match &self.registry {
            Some(registry) => registry.clone(),
            None => Registry::from_inventory(),
        }
    }
}

static RUNTIME: ToolRuntime = ToolRuntime::from_inventory();

cheng_node::inventory::submit! { cheng_node::NodeRegistration::new(&RUNTIME) }

#[cheng_node::async_trait]
impl Node for ToolRuntime {
    fn spec(&self) -> &'static NodeSpec {
        &SPEC
    }

    async fn run(&self, ctx: &RunContext, input: Values) -> Result<Values, NodeError> {
        // The tool calls run under this run's policy: the one its own engine was built with.
        let engine = Engine::new(self.registry(), Arc::clone(&ctx.policy));
        let entries: &[Value] = match input.get("exposed_tools") {
            Some(Value::Array(entries)) => entries,
            _ => &[],
        };
        let toolkit = Toolkit::parse(&engine, entries);
        let dry_run = input::boolean(&input, &DRY_RUN)?;
        let tool_call = input.get("tool_call").filter(|v| !v.is_null());
        let outcome = match input::opt_str(&input, "action").unwrap_or("list_tools") {
            "execute" => execute::execute(&engine, &toolkit, ctx, tool_call, dry_run).await,
            _ => {
                let mut outcome = functions::list_tools(&toolkit, ctx.policy());
                if tool_call.is_some() {
                    outcome.warnings.push(
                        "tool_call is ignored when action=list_tools; use action=execute to run it"
                            .into(),
                    );
                }
                if dry_run {
                    outcome.warnings.push(
                        "dry_run has no effect on list_tools, which never runs a tool".into(),
                    );
                }
                outcome
            }
        };
        Ok(Outcome::into_outputs(outcome))
    }
}
