//! The failure outputs every node declares: `success`, `error_kind`, `terminal`, `error`.
//!
//! One declaration of the four ports (descriptions verbatim from the reference tables; `success` and
//! `error` are worded per node there, so those two take the node's own sentence) and one
//! function, [`fill`], that sets them from a `Result<_, NodeError>`. The values are the same on
//! every node:
//!
//! | outcome | `success` | `error_kind`            | `terminal`               | `error`   |
//! |---------|-----------|-------------------------|--------------------------|-----------|
//! | `Ok`    | `true`    | `null`                  | `false`                  | `null`    |
//! | `Err`   | `false`   | `LOCAL_EXECUTOR_*` code | the error's `terminal`   | message   |
//!
//! `terminal` is `false` on success: the reference pages type it `boolean` ("True when the error is
//! terminal and must not be retried"), and with no error there is nothing that must not be
//! retried.

use crate::{NodeError, PortSpec, PortType, Values};
use serde_json::{json, Value};

/// The names of the failure outputs, in the order nodes declare them.
pub const NAMES: [&str; 4] = ["success", "error_kind", "terminal", "error"];

/// `success`, worded for the node (e.g. "Whether the command succeeded (exit code 0)").
pub const fn success(description: &'static str) -> PortSpec {
    PortSpec::output("success", PortType::Boolean, description)
}

/// `error_kind`, the same on every node.
pub const ERROR_KIND: PortSpec = PortSpec::output(
    "error_kind",
    PortType::String,
    "Stable machine code on failure (LOCAL_EXECUTOR_* vocabulary)",
);

/// `terminal`, the same on every node.
pub const TERMINAL: PortSpec = PortSpec::output(
    "terminal",
    PortType::Boolean,
    "True when the error is terminal and must not be retried",
);

/// `error`, worded for the node; [`ERROR`] is the reference pages' usual wording.
pub const fn error(description: &'static str) -> PortSpec {
    PortSpec::output("error", PortType::String, description)
}

/// `error` with the reference pages' usual wording.
pub const ERROR: PortSpec = error("Error message when the operation failed");

/// Sets the four failure outputs on `out` from the node's outcome (see the module table).
pub fn fill<T>(out: &mut Values, result: &Result<T, NodeError>) {
    match result {
        Ok(_) => {
            out.insert("success".into(), json!(true));
            out.insert("error_kind".into(), Value::Null);
            out.insert("terminal".into(), json!(false));
            out.insert("error".into(), Value::Null);
        }
        Err(e) => {
            out.insert("success".into(), json!(false));
            out.insert("error_kind".into(), json!(e.kind.code()));
            out.insert("terminal".into(), json!(e.terminal));
            out.insert("error".into(), json!(e.message));
        }
    }
}

/// `out` with the failure outputs of `result` filled in.
pub fn with<T>(mut out: Values, result: &Result<T, NodeError>) -> Values {
    fill(&mut out, result);
    out
}

/// Whether `port` is the declaration of failure output `name` (type and, for the fixed two,
/// description). Used by [`crate::NodeSpec::problems`].
pub(crate) fn declared_as(port: &PortSpec) -> Result<(), String> {
    let expected = match port.name {
        "success" => success(""),
        "error_kind" => ERROR_KIND,
        "terminal" => TERMINAL,
        "error" => ERROR,
        _ => return Ok(()),
    };
    if port.ty != expected.ty {
        return Err(format!(
            "output `{}` must be {}, not {}",
            port.name,
            expected.ty.display(),
            port.ty.display()
        ));
    }
    if matches!(port.name, "error_kind" | "terminal") && port.description != expected.description {
        return Err(format!(
            "output `{}` must use cheng_node::failure's declaration",
            port.name
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn success_and_failure_fill_the_same_four_ports() {
        let ok: Result<(), NodeError> = Ok(());
        let out = with(Values::new(), &ok);
        assert_eq!(out.keys().collect::<Vec<_>>(), NAMES);
        assert_eq!(
            (
                &out["success"],
                &out["error_kind"],
                &out["terminal"],
                &out["error"]
            ),
            (&json!(true), &Value::Null, &json!(false), &Value::Null)
        );
        let err: Result<(), NodeError> = Err(NodeError::new(ErrorKind::PolicyDenied, "no"));
        let out = with(Values::new(), &err);
        assert_eq!(out.keys().collect::<Vec<_>>(), NAMES);
        assert_eq!(out["success"], false);
        assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_POLICY_DENIED");
        assert_eq!(out["terminal"], true);
        assert_eq!(out["error"], "no");
    }
}
