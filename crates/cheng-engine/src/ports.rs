//! Port rules the engine applies: the value and capped-port checks (one implementation, in
//! `cheng_node::check`, shared with the nodes' typed reads) and edge type compatibility.
//!
//! Values are checked twice: at validation for literal `config`/`inputs`, and at run time for
//! values arriving over edges (an upstream node's output is only known then).

pub(crate) use cheng_node::check::check_value;
use cheng_node::PortType;

/// Whether an output port of type `from` may feed an input port of type `to`. Values are checked
/// again at run time, so this only rejects what can never fit.
pub(crate) fn edge_compatible(from: &PortType, to: &PortType) -> bool {
    match (from, to) {
        (PortType::Any, _) | (_, PortType::Any) => true,
        (PortType::String | PortType::Enum(_), PortType::String | PortType::Enum(_)) => true,
        (PortType::Array(a), PortType::Array(b)) => edge_compatible(a, b),
        (a, b) => std::mem::discriminant(a) == std::mem::discriminant(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edge_types() {
        assert!(edge_compatible(&PortType::String, &PortType::Enum(&["a"])));
        assert!(edge_compatible(&PortType::Any, &PortType::Integer));
        assert!(!edge_compatible(&PortType::Integer, &PortType::String));
        assert!(!edge_compatible(
            &PortType::Array(&PortType::Integer),
            &PortType::Array(&PortType::String)
        ));
    }
}
