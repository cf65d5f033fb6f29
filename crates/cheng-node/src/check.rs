//! Checking one port value against its spec, and the capped-port rule.
//!
//! The one implementation of both: the engine uses it to validate literal `config`/`inputs` and,
//! at run time, values arriving over edges; nodes use it through [`crate::input`], so what a node
//! reads can never disagree with what the engine accepted.

use crate::text::json_kind as kind_of;
use crate::{Audience, PortSpec, PortType};
use serde_json::Value;

/// Checks a non-null value against the port's type, range and choices. The message says what was
/// expected and, for ranges, the limit.
pub fn check_value(port: &PortSpec, value: &Value) -> Result<(), String> {
    if !port.ty.accepts(value) {
        return Err(type_message(&port.ty, value));
    }
    if let Some(n) = value.as_i64() {
        if let Some(max) = port.max.filter(|max| n > *max) {
            return Err(format!("{n} is above the maximum {max}; values are never clamped, use at most {max}"));
        }
        if let Some(min) = port.min.filter(|min| n < *min) {
            return Err(format!("{n} is below the minimum {min}; use at least {min}"));
        }
    } else if value.is_u64() {
        // Larger than i64::MAX: above any maximum a spec can state.
        if let Some(max) = port.max {
            return Err(format!("{value} is above the maximum {max}"));
        }
    }
    if let (Some(choices), Some(s)) = (port.choices, value.as_str()) {
        if !choices.contains(&s) {
            return Err(format!("\"{s}\" is not one of: {}", choices.join(", ")));
        }
    }
    Ok(())
}

fn type_message(ty: &PortType, value: &Value) -> String {
    match (ty, value) {
        (PortType::Enum(values), Value::String(s)) => format!("\"{s}\" is not one of: {}", values.join(", ")),
        (PortType::Array(elem), Value::Array(items)) => {
            let bad = items.iter().position(|v| !elem.accepts(v)).unwrap_or(0);
            let shown = items.get(bad).map_or("nothing", kind_of);
            format!("expected {}, but element {bad} is {shown}", ty.display())
        }
        (PortType::Integer, Value::Number(_)) => format!("expected an integer, got {value}"),
        _ => format!("expected {}, got {}", ty.display(), kind_of(value)),
    }
}

/// The capped-port rule: an agent may request a value, honoured only up to the author's ceiling.
///
/// The ceiling is the value the node's config sets, else the spec default. A boolean may be
/// requested `true` only when the ceiling is `true`; an integer may not exceed the ceiling.
/// Returns the effective value (request, else config, else default).
pub fn resolve_capped(port: &PortSpec, config: Option<&Value>, requested: &Value) -> Result<Value, String> {
    debug_assert_eq!(port.audience, Audience::Capped);
    let ceiling = config.filter(|v| !v.is_null()).cloned().or_else(|| port.default_value());
    let name = port.name;
    match (requested, ceiling.as_ref()) {
        (Value::Bool(true), ceiling) if ceiling != Some(&Value::Bool(true)) => Err(format!(
            "{name}=true was requested, but the node's author has not enabled it; the node's author must set \"{name}\": true in the node's config"
        )),
        (Value::Number(n), Some(Value::Number(cap))) => match (n.as_i64(), cap.as_i64()) {
            (Some(n), Some(cap)) if n > cap => Err(format!(
                "{name}={n} was requested, above the author's cap of {cap} set in the node's config; ask for at most {cap}, or ask the node's author to raise it"
            )),
            _ => Ok(requested.clone()),
        },
        _ => Ok(requested.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const TIMEOUT: PortSpec = PortSpec::input("timeout_ms", PortType::Integer, "").default("null").min(1).max(600000);
    const NET: PortSpec = PortSpec::input("allow_network", PortType::Boolean, "").default("false").audience(Audience::Capped);
    const LIMIT: PortSpec = PortSpec::input("memory_mb", PortType::Integer, "").default("256").audience(Audience::Capped);

    #[test]
    fn range_errors_cite_the_limit() {
        let err = check_value(&TIMEOUT, &json!(700000)).unwrap_err();
        assert!(err.contains("maximum 600000"), "{err}");
        assert!(check_value(&TIMEOUT, &json!(0)).unwrap_err().contains("minimum 1"));
        assert!(check_value(&TIMEOUT, &json!(1.5)).unwrap_err().contains("integer"));
        assert!(check_value(&TIMEOUT, &json!(u64::MAX)).unwrap_err().contains("maximum"));
        assert!(check_value(&TIMEOUT, &json!(600000)).is_ok());
    }

    #[test]
    fn capped_booleans_need_the_author_switch() {
        assert!(resolve_capped(&NET, None, &json!(true)).unwrap_err().contains("node's config"));
        assert!(resolve_capped(&NET, Some(&json!(false)), &json!(true)).is_err());
        assert_eq!(resolve_capped(&NET, Some(&json!(true)), &json!(true)).unwrap(), json!(true));
        assert_eq!(resolve_capped(&NET, Some(&json!(true)), &json!(false)).unwrap(), json!(false));
    }

    #[test]
    fn capped_integers_stay_under_the_ceiling() {
        let err = resolve_capped(&LIMIT, Some(&json!(512)), &json!(1024)).unwrap_err();
        assert!(err.contains("cap of 512"), "{err}");
        assert_eq!(resolve_capped(&LIMIT, Some(&json!(512)), &json!(100)).unwrap(), json!(100));
        assert!(resolve_capped(&LIMIT, None, &json!(300)).unwrap_err().contains("cap of 256"));
    }
}
