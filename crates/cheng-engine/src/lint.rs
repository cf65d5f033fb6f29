//! Warnings about a graph that validates but may still fail when it runs.

use crate::graph::Graph;
use cheng_node::{PortType, Registry};

/// Edges from an output declared `any` into an input of a definite type: validation lets them
/// through (the value is unknown until the upstream node runs), so the mismatch, if any, shows
/// only at run time. Graphs that fail validation get no warnings (their errors come first).
pub fn edge_warnings(registry: &Registry, graph: &Graph) -> Vec<String> {
    let node_type = |id: &str| {
        graph
            .nodes
            .iter()
            .find(|n| n.id == id)
            .map(|n| n.node_type.as_str())
    };
    let spec = |id: &str| {
        node_type(id)
            .and_then(|t| registry.get(t))
            .map(|node| node.spec())
    };
    let mut warnings = Vec::new();
    for edge in &graph.edges {
        let (Some(from), Some(to)) = (spec(&edge.from.node), spec(&edge.to.node)) else {
            continue;
        };
        let (Some(out), Some(inp)) = (from.output(&edge.from.port), to.input(&edge.to.port)) else {
            continue;
        };
        if matches!(out.ty, PortType::Any) && !matches!(inp.ty, PortType::Any) {
            warnings.push(format!(
                "edge {} → {}: output `{}` may carry any value but input `{}` takes {}; a value of another type fails the run at `{}`",
                edge.from,
                edge.to,
                out.name,
                inp.name,
                inp.ty.display(),
                edge.to.node
            ));
        }
    }
    warnings
}
