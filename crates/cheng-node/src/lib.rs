//! The cheng node API.
//!
//! A node type is a `'static` [`NodeSpec`] (ports with types, defaults, ranges, audiences and
//! controls) plus an implementation of [`Node`]. Node crates register with
//! `inventory::submit!`; the engine validates input against the spec, injects engine-only ports,
//! asks for approval where the spec's [`Effects`] say so, and only then calls [`Node::run`].
//!
//! ```
//! use cheng_node::*;
//!
//! struct Echo;
//! static ECHO: NodeSpec = NodeSpec {
//!     id: "test/echo",
//!     title: "Echo",
//!     description: "Returns its text.",
//!     category: "test",
//!     inputs: &[PortSpec::input("text", PortType::String, "What to echo").default("\"\"")],
//!     outputs: &[PortSpec::output("text", PortType::String, "The same text")],
//!     gate: None,
//!     effects: Effects::ReadOnly,
//! };
//!
//! #[async_trait::async_trait]
//! impl Node for Echo {
//!     fn spec(&self) -> &'static NodeSpec { &ECHO }
//!     async fn run(&self, _ctx: &RunContext, input: Values) -> Result<Values, NodeError> {
//!         Ok(input)
//!     }
//! }
//!
//! let registry = Registry::new().with(Echo);
//! assert_eq!(registry.ids(), ["test/echo"]);
//! let schema = schema::input_schema(&ECHO);
//! assert_eq!(schema["properties"]["text"]["type"], "string");
//! ```

pub mod capability;
pub mod check;
pub mod display;
pub mod engine_ports;
mod error;
pub mod failure;
#[doc(hidden)]
pub mod fuzzing;
pub mod input;
mod node;
/// Live output handles (`cheng_io::output`, shared with the process layer).
pub use cheng_io::output;
pub mod paths;
pub mod policy;
mod registry;
pub mod schema;
pub mod scope;
mod spec;
pub mod text;
pub mod view;

pub use error::{ErrorKind, InvalidInput, NodeError};
pub use node::{
    ApprovalRequest, Approver, CapabilityRequest, Decision, FixedApprover, Node, PathIdentity,
    RunContext, Values,
};
pub use output::{Output, OutputSink, OutputStream};
pub use registry::{Lookup, NodeRegistration, Registry};
pub use scope::{Scope, ScopeKind};
pub use spec::{ApprovalRule, Audience, Control, Effects, Field, NodeSpec, PortSpec, PortType};

// Re-exported so node crates register without naming inventory or async-trait themselves.
pub use async_trait::async_trait;
pub use inventory;
pub use tokio_util::sync::CancellationToken;
