//! Typed reads from a validated input map.
//!
//! Ports with a type, default or range are read through their [`PortSpec`] ([`int`],
//! [`opt_int`], [`boolean`]): an unset (`null` or absent) value falls back to the spec's default,
//! and the value is checked with the engine's own [`check_value`], so a node can neither apply a
//! default the spec does not show nor accept a value validation would refuse. Nodes never repeat
//! a range check the spec declares.

use crate::check::check_value;
use crate::{NodeError, NodeSpec, PortSpec, Values};
use serde_json::Value;

/// A string field; `None` when unset (`null`) or absent.
pub fn opt_str<'a>(input: &'a Values, field: &str) -> Option<&'a str> {
    input.get(field).and_then(Value::as_str)
}

/// A string field that is unset, null or empty reads as `None`.
pub fn non_empty_str<'a>(input: &'a Values, field: &str) -> Option<&'a str> {
    opt_str(input, field).filter(|s| !s.is_empty())
}

/// The input port `name` of `spec`; a missing one is a bug in the node (it reads a port its own
/// spec does not declare).
pub fn port(spec: &'static NodeSpec, name: &str) -> Result<&'static PortSpec, NodeError> {
    spec.input(name).ok_or_else(|| {
        NodeError::internal(format!(
            "{} reads input `{name}`, which its spec does not declare; this is a bug in the node",
            spec.id
        ))
    })
}

/// The port's value, else its spec default; `None` when both are unset. Checked against the spec.
pub fn value(input: &Values, port: &PortSpec) -> Result<Option<Value>, NodeError> {
    let value = match input.get(port.name) {
        Some(v) if !v.is_null() => v.clone(),
        _ => match port.default_value() {
            Some(v) if !v.is_null() => v,
            _ => return Ok(None),
        },
    };
    check_value(port, &value)
        .map_err(|message| NodeError::invalid_input(port_message(port, &message)))?;
    Ok(Some(value))
}

/// An integer port that may be unset (its spec default is `null`).
pub fn opt_int(input: &Values, port: &PortSpec) -> Result<Option<i64>, NodeError> {
    match value(input, port)? {
        None => Ok(None),
        Some(v) => v.as_i64().map(Some).ok_or_else(|| {
            NodeError::invalid_input(port_message(port, &format!("expected an integer, got {v}")))
        }),
    }
}

/// An integer port with a spec default.
pub fn int(input: &Values, port: &PortSpec) -> Result<i64, NodeError> {
    opt_int(input, port)?.ok_or_else(|| unset(port))
}

/// A boolean port with a spec default.
pub fn boolean(input: &Values, port: &PortSpec) -> Result<bool, NodeError> {
    match value(input, port)? {
        Some(Value::Bool(b)) => Ok(b),
        Some(v) => Err(NodeError::invalid_input(port_message(
            port,
            &format!("expected a boolean, got {v}"),
        ))),
        None => Err(unset(port)),
    }
}

/// `name: message`, plus the allowed range when the spec declares both ends.
fn port_message(port: &PortSpec, message: &str) -> String {
    match (port.min, port.max) {
        (Some(min), Some(max)) => format!(
            "{}: {message} ({} takes {min} to {max})",
            port.name, port.name
        ),
        _ => format!("{}: {message}", port.name),
    }
}

fn unset(port: &PortSpec) -> NodeError {
    NodeError::internal(format!(
        "{} has no value and its spec declares no default; this is a bug in the node's spec",
        port.name
    ))
}

/// An `array<string>` field (empty when unset).
pub fn string_list(input: &Values, field: &str) -> Result<Vec<String>, NodeError> {
    match input.get(field) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_str().map(str::to_string).ok_or_else(|| {
                    NodeError::invalid_input(format!("{field}[{i}] must be a string"))
                })
            })
            .collect(),
        Some(_) => Err(NodeError::invalid_input(format!(
            "{field} must be an array of strings"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ErrorKind, PortType};
    use serde_json::json;

    const TIMEOUT: PortSpec = PortSpec::input("timeout_ms", PortType::Integer, "")
        .default("60000")
        .min(1)
        .max(600000);
    const OPTIONAL: PortSpec = PortSpec::input("max_count", PortType::Integer, "")
        .default("null")
        .min(1)
        .max(100);
    const SWITCH: PortSpec =
        PortSpec::input("allow_network", PortType::Boolean, "").default("false");

    fn values(v: serde_json::Value) -> Values {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn unset_reads_the_spec_default() {
        assert_eq!(int(&values(json!({})), &TIMEOUT).unwrap(), 60000);
        assert_eq!(
            int(&values(json!({"timeout_ms": null})), &TIMEOUT).unwrap(),
            60000
        );
        assert_eq!(int(&values(json!({"timeout_ms": 5})), &TIMEOUT).unwrap(), 5);
        assert_eq!(opt_int(&values(json!({})), &OPTIONAL).unwrap(), None);
        assert!(!boolean(&values(json!({})), &SWITCH).unwrap());
        assert!(boolean(&values(json!({"allow_network": true})), &SWITCH).unwrap());
    }

    #[test]
    fn values_validation_refuses_are_refused_with_the_range() {
        // The same values the engine refuses (a direct call has not been through the engine).
        for bad in [json!(0), json!(600001), json!(-5), json!(1.5), json!("5")] {
            let err = int(&values(json!({"timeout_ms": bad})), &TIMEOUT).unwrap_err();
            assert_eq!(err.kind, ErrorKind::InvalidInput, "{bad}");
            assert!(err.message.starts_with("timeout_ms: "), "{}", err.message);
            assert!(err.message.contains("1 to 600000"), "{}", err.message);
        }
        assert!(boolean(&values(json!({"allow_network": 1})), &SWITCH).is_err());
    }

    #[test]
    fn a_spec_without_a_default_is_a_bug_not_a_guess() {
        const NO_DEFAULT: PortSpec = PortSpec::input("n", PortType::Integer, "");
        assert_eq!(
            int(&values(json!({})), &NO_DEFAULT).unwrap_err().kind,
            ErrorKind::Internal
        );
    }
}
