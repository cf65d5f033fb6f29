//! Link-time node registration (`inventory`) and the registry the engine looks nodes up in.

use crate::{Node, NodeSpec};
use std::collections::BTreeMap;
use std::sync::Arc;

/// One `inventory::submit!` entry per node type.
pub struct NodeRegistration {
    pub node: &'static dyn Node,
}

impl NodeRegistration {
    pub const fn new(node: &'static dyn Node) -> Self {
        NodeRegistration { node }
    }
}

inventory::collect!(NodeRegistration);

/// The result of looking a node type up.
pub enum Lookup<'a> {
    Found(&'a Arc<dyn Node>),
    /// Compiled in, but its gate variable is unset.
    Gated(&'static str),
    Unknown,
}

/// Node types by id, sorted. Gated-out nodes are remembered only to explain why they are absent.
#[derive(Default, Clone)]
pub struct Registry {
    nodes: BTreeMap<&'static str, Arc<dyn Node>>,
    gated: BTreeMap<&'static str, &'static str>,
}

impl Registry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a node by hand (tests, benchmarks, embedders), ignoring its gate.
    pub fn with(mut self, node: impl Node) -> Self {
        let node: Arc<dyn Node> = Arc::new(node);
        self.nodes.insert(node.spec().id, node);
        self
    }

    /// Every linked node whose gate variable (if any) is set in the process environment.
    pub fn from_inventory() -> Self {
        Self::from_inventory_with(|var| std::env::var_os(var).is_some_and(|v| !v.is_empty()))
    }

    /// Every linked node whose gate `is_set` accepts.
    pub fn from_inventory_with(is_set: impl Fn(&str) -> bool) -> Self {
        let mut registry = Registry::new();
        for registration in inventory::iter::<NodeRegistration> {
            let spec = registration.node.spec();
            match spec.gate {
                Some(var) if !is_set(var) => {
                    registry.gated.insert(spec.id, var);
                }
                _ => {
                    registry
                        .nodes
                        .insert(spec.id, Arc::new(StaticNode(registration.node)));
                }
            }
        }
        registry
    }

    pub fn lookup(&self, id: &str) -> Lookup<'_> {
        if let Some(node) = self.nodes.get(id) {
            Lookup::Found(node)
        } else if let Some(var) = self.gated.get(id) {
            Lookup::Gated(var)
        } else {
            Lookup::Unknown
        }
    }

    /// The linked nodes left out because their gate variable is unset, with that variable,
    /// sorted by id.
    pub fn gated_off(&self) -> Vec<(&'static NodeSpec, &'static str)> {
        let mut gated: Vec<_> = inventory::iter::<NodeRegistration>
            .into_iter()
            .map(|r| r.node.spec())
            .filter_map(|spec| self.gated.get(spec.id).map(|var| (spec, *var)))
            .collect();
        gated.sort_by_key(|(spec, _)| spec.id);
        gated
    }

    pub fn get(&self, id: &str) -> Option<&Arc<dyn Node>> {
        self.nodes.get(id)
    }

    /// Registered specs sorted by id.
    pub fn specs(&self) -> impl Iterator<Item = &'static NodeSpec> + '_ {
        self.nodes.values().map(|n| n.spec())
    }

    pub fn ids(&self) -> Vec<&'static str> {
        self.nodes.keys().copied().collect()
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

/// Adapts a `&'static dyn Node` from inventory to the registry's `Arc<dyn Node>`. Forwards every
/// method of [`Node`]: one with a default left out here would drop the node's own silently.
struct StaticNode(&'static dyn Node);

#[async_trait::async_trait]
impl Node for StaticNode {
    fn spec(&self) -> &'static NodeSpec {
        self.0.spec()
    }
    fn description_for(&self, config: &crate::Values) -> String {
        self.0.description_for(config)
    }
    fn approval_request(
        &self,
        ctx: &crate::RunContext,
        input: &crate::Values,
    ) -> Result<crate::ApprovalRequest, crate::NodeError> {
        self.0.approval_request(ctx, input)
    }
    async fn run(
        &self,
        ctx: &crate::RunContext,
        input: crate::Values,
    ) -> Result<crate::Values, crate::NodeError> {
        self.0.run(ctx, input).await
    }
}
