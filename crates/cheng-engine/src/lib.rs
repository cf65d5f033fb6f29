//! cheng graphs: load, validate, inject, approve, schedule, cancel, emit events.
//!
//! A graph (version 1 JSON, see [`graph`]) names node instances and the edges between their
//! ports. [`Engine::validate`] checks it against the registry's specs — every problem, each
//! naming its node and port — and [`Engine::run`] executes it: dependency order, independent
//! nodes concurrently (at most `jobs` at once), `sandbox_root` injected, approval asked before
//! anything gated runs, cancellation passed to every running node, events emitted as it goes.
//!
//! The engine depends on the node API only, never on a node crate.
//!
//! ```
//! use cheng_engine::{Engine, Graph, NodeStatus, RunOptions};
//! use cheng_node::*;
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
//! let engine = Engine::new(Registry::new().with(Upper), policy::Policy::builtin());
//! let graph = Graph::from_json(r#"{"version": 1,
//!     "nodes": [{"id": "a", "type": "test/upper", "inputs": {"text": "hi"}},
//!               {"id": "b", "type": "test/upper"}],
//!     "edges": [{"from": "a.text", "to": "b.text"}]}"#).unwrap();
//! let validated = engine.validate(&graph).unwrap();
//! let dir = tempfile::tempdir().unwrap();
//! let rt = tokio::runtime::Runtime::new().unwrap();
//! let result = rt.block_on(engine.run(&validated, RunOptions::new(dir.path()).unwrap()));
//! assert_eq!(result.node("b").unwrap().status, NodeStatus::Succeeded);
//! assert_eq!(result.node("b").unwrap().outputs["text"], "HI");
//! ```

mod approval;
pub mod catalog;
mod error;
pub mod events;
#[doc(hidden)]
pub mod fuzzing;
pub mod graph;
pub mod lint;
pub mod live;
mod ports;
mod run;
mod validate;

pub use error::{ValidationError, ValidationErrorKind};
pub use events::{Event, EventSink, JsonlSink, MemorySink, NullSink};
pub use graph::{Edge, Endpoint, Graph, GraphNode, GRAPH_VERSION};
pub use run::{default_jobs, GraphResult, GraphStatus, NodeResult, NodeStatus, RunOptions};
pub use validate::ValidatedGraph;

use cheng_node::policy::Policy;
use cheng_node::{Registry, Values};
use std::sync::Arc;

/// Validates and runs graphs over one registry of node types.
#[derive(Clone)]
pub struct Engine {
    registry: Registry,
    policy: Arc<Policy>,
}

impl Engine {
    /// An engine over `registry` under the operator's effective `policy` (what the CLI or server
    /// loaded; [`Policy::builtin`] for the built-in defaults). Every graph it validates and every
    /// node it runs sees this policy and no other: it is handed to each node in its
    /// `RunContext`, so engines under different policies can share a process.
    pub fn new(registry: Registry, policy: impl Into<Arc<Policy>>) -> Self {
        Engine {
            registry,
            policy: policy.into(),
        }
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The policy, shared (for an engine a node builds for its own calls, and for schemas).
    pub fn policy_arc(&self) -> Arc<Policy> {
        Arc::clone(&self.policy)
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Checks `graph` against the node specs; every problem found is returned.
    pub fn validate(&self, graph: &Graph) -> Result<ValidatedGraph, Vec<ValidationError>> {
        validate::validate(&self.registry, &self.policy, graph)
    }

    /// Runs a validated graph to the end (or until `options.cancel` fires).
    pub async fn run(&self, graph: &ValidatedGraph, options: RunOptions) -> GraphResult {
        run::run_graph(graph, options).await
    }

    /// Validates and runs one node (what `cheng run` does). The node's id is its type.
    pub async fn run_node(
        &self,
        node_type: &str,
        config: Values,
        inputs: Values,
        options: RunOptions,
    ) -> Result<NodeResult, Vec<ValidationError>> {
        let graph = Graph::single(node_type, config, inputs);
        let validated = self.validate(&graph)?;
        let result = self.run(&validated, options).await;
        result.nodes.into_iter().next().ok_or_else(|| {
            vec![ValidationError::graph(
                ValidationErrorKind::Malformed,
                "the run produced no result",
            )]
        })
    }
}
