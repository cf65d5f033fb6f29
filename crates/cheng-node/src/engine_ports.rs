//! Ports only the engine fills (`Audience::Engine`), rendered from the [`RunContext`].
//!
//! The context is the truth: nodes read [`RunContext::workspace`]; the injected port is that
//! same value rendered for nodes and tools that look at their input. A spec that declares an
//! engine port not listed here is a spec bug: [`inject`] refuses it (the node never runs with it
//! silently unfilled) and [`crate::NodeSpec::problems`] reports it for registration tests.

use crate::{Audience, NodeError, NodeSpec, RunContext, Values};
use serde_json::Value;
use std::path::Path;

/// The engine ports there are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnginePort {
    /// `sandbox_root`: the canonical workspace root ([`RunContext::workspace`]).
    SandboxRoot,
}

impl EnginePort {
    pub const ALL: &'static [EnginePort] = &[EnginePort::SandboxRoot];

    pub fn name(&self) -> &'static str {
        match self {
            EnginePort::SandboxRoot => "sandbox_root",
        }
    }

    pub fn from_name(name: &str) -> Option<EnginePort> {
        Self::ALL.iter().copied().find(|p| p.name() == name)
    }

    /// The port's value for a run in `workspace` (the canonical root).
    pub fn render(&self, workspace: &Path) -> Value {
        match self {
            EnginePort::SandboxRoot => Value::String(workspace.display().to_string()),
        }
    }
}

/// Sets every engine port `spec` declares, from the run's canonical `workspace`
/// ([`RunContext::workspace`]). Injected last, so nothing else can set them.
pub fn inject(spec: &NodeSpec, input: &mut Values, workspace: &Path) -> Result<(), NodeError> {
    for port in spec
        .inputs
        .iter()
        .filter(|p| p.audience == Audience::Engine)
    {
        let known = EnginePort::from_name(port.name).ok_or_else(|| {
            NodeError::internal(format!(
                "{} declares engine port `{}`, which the engine does not fill; this is a bug in the node's spec",
                spec.id, port.name
            ))
        })?;
        input.insert(port.name.to_string(), known.render(workspace));
    }
    Ok(())
}

impl RunContext {
    /// [`inject`] with this context's workspace.
    pub fn inject_engine_ports(
        &self,
        spec: &NodeSpec,
        input: &mut Values,
    ) -> Result<(), NodeError> {
        inject(spec, input, &self.workspace)
    }
}
