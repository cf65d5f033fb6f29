//! Typed reads from a validated input map. The engine has already checked types and ranges, so
//! these only interpret `null` as "unset" and fall back to a default.

use crate::{NodeError, Values};
use serde_json::Value;

/// A string field; `None` when unset (`null`) or absent.
pub fn opt_str<'a>(input: &'a Values, field: &str) -> Option<&'a str> {
    input.get(field).and_then(Value::as_str)
}

/// A string field that is unset, null or empty reads as `None`.
pub fn non_empty_str<'a>(input: &'a Values, field: &str) -> Option<&'a str> {
    opt_str(input, field).filter(|s| !s.is_empty())
}

pub fn bool_or(input: &Values, field: &str, default: bool) -> bool {
    input.get(field).and_then(Value::as_bool).unwrap_or(default)
}

pub fn i64_or(input: &Values, field: &str, default: i64) -> i64 {
    input.get(field).and_then(Value::as_i64).unwrap_or(default)
}

/// An `array<string>` field (empty when unset).
pub fn string_list(input: &Values, field: &str) -> Result<Vec<String>, NodeError> {
    match input.get(field) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| NodeError::invalid_input(format!("{field}[{i}] must be a string")))
            })
            .collect(),
        Some(_) => Err(NodeError::invalid_input(format!("{field} must be an array of strings"))),
    }
}
