//! Properties the fuzzer checks on the graph loader and validator (fuzz/fuzz_targets/graph.rs);
//! the ordinary tests run the checked-in seeds through the same function.

use crate::{validate::validate, Graph};
use cheng_node::policy::Policy;
use cheng_node::Registry;
use std::sync::Arc;

/// Input: graph JSON. A graph that loads survives its own JSON unchanged; the validator
/// (against every node type linked into the program) either accepts it whole, with every node
/// and edge, or reports a bounded list of problems, each with a message.
pub fn graph(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let graph = match Graph::from_json(text) {
        Ok(graph) => graph,
        Err(errors) => {
            assert!(!errors.is_empty(), "refused without a reason");
            return;
        }
    };
    let again = match Graph::from_value(&graph.to_value()) {
        Ok(again) => again,
        Err(errors) => panic!("a loaded graph's own JSON does not load: {errors:?}"),
    };
    assert_eq!(again, graph, "a graph changed through its own JSON");
    let registry = Registry::from_inventory();
    let policy = Arc::new(Policy::builtin());
    match validate(&registry, &policy, &graph) {
        Ok(valid) => {
            assert_eq!(valid.len(), graph.nodes.len());
            assert_eq!(valid.edge_count(), graph.edges.len());
        }
        Err(errors) => {
            assert!(!errors.is_empty(), "refused without a reason");
            let bound = 8 * (graph.nodes.len() + graph.edges.len() + 1) * 16;
            assert!(
                errors.len() <= bound,
                "{} errors for {} nodes",
                errors.len(),
                graph.nodes.len()
            );
            for e in &errors {
                assert!(!e.to_string().is_empty(), "an error without a message");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_graph_seeds_hold_the_properties() {
        cheng_test_support::check_fuzz_seeds(&[("graph", super::graph)]);
    }
}
