//! Checking one port value against its spec, and the capped-port rule.
//!
//! The one implementation of both: the engine uses it to validate literal `config`/`inputs` and,
//! at run time, values arriving over edges; nodes use it through [`crate::input`], so what a node
//! reads can never disagree with what the engine accepted.

use crate::capability::{Capability, Kind, Setting};
use crate::policy::{Policy, Source};
use crate::text::json_kind as kind_of;
use crate::{Audience, NodeSpec, PortSpec, PortType};
use serde_json::Value;

/// Checks a non-null value against the port's type, range and choices. The message says what was
/// expected and, for ranges, the limit.
pub fn check_value(port: &PortSpec, value: &Value) -> Result<(), String> {
    if !port.ty.accepts(value) {
        return Err(type_message(&port.ty, value));
    }
    if let Some(n) = value.as_i64() {
        if let Some(max) = port.max.filter(|max| n > *max) {
            return Err(format!(
                "{n} is above the maximum {max}; values are never clamped, use at most {max}"
            ));
        }
        if let Some(min) = port.min.filter(|min| n < *min) {
            return Err(format!(
                "{n} is below the minimum {min}; use at least {min}"
            ));
        }
    } else if value.is_u64() {
        // Larger than i64::MAX: above any maximum a spec can state.
        if let Some(max) = port.max {
            return Err(format!("{value} is above the maximum {max}"));
        }
    }
    if let (Some(choices), Some(s)) = (port.choices, value.as_str()) {
        if !choices.contains(&s) {
            return Err(not_one_of(s, choices));
        }
    }
    Ok(())
}

/// `"lg" is not one of: status, diff, log, …; did you mean "log"?`
fn not_one_of(given: &str, choices: &[&str]) -> String {
    let mut message = format!("\"{given}\" is not one of: {}", choices.join(", "));
    let closest = choices
        .iter()
        .map(|c| (strsim::levenshtein(given, c), *c))
        .filter(|(d, _)| *d <= 2)
        .min();
    if let Some((_, choice)) = closest {
        message.push_str(&format!("; did you mean \"{choice}\"?"));
    }
    message
}

fn type_message(ty: &PortType, value: &Value) -> String {
    match (ty, value) {
        (PortType::Enum(values), Value::String(s)) => not_one_of(s, values),
        (PortType::Array(elem), Value::Array(items)) => {
            let bad = items.iter().position(|v| !elem.accepts(v)).unwrap_or(0);
            let shown = items.get(bad).map_or("nothing", kind_of);
            format!("expected {}, but element {bad} is {shown}", ty.display())
        }
        (PortType::Integer, Value::Number(_)) => format!("expected an integer, got {value}"),
        _ => format!("expected {}, got {}", ty.display(), kind_of(value)),
    }
}

/// Where a value is set: the author's `config` or the agent's `inputs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    Config,
    Inputs,
}

/// Whether a port is a capability switch an agent may request (a capped boolean declaring a
/// [`Kind::Request`] capability, which the author sets to `true`, `"ask"` or `false`).
pub fn is_capability(port: &PortSpec) -> bool {
    port.capability.is_some_and(|c| c.kind == Kind::Request)
        && port.audience == Audience::Capped
        && port.ty == crate::PortType::Boolean
}

/// The operator's file to edit, for messages: the machine policy when there is one.
fn policy_file(policy: &Policy) -> String {
    policy.path().map_or_else(
        || {
            format!(
                "{} (the machine policy; a file named by --policy or ${} can only tighten it)",
                crate::policy::SYSTEM_PATH,
                crate::policy::ENV_VAR
            )
        },
        |p| p.display().to_string(),
    )
}

/// The refusal of a capability the operator's policy does not name at all.
fn unknown_capability(policy: &Policy, node_type: &str, what: &str, cap: &Capability) -> String {
    let settings = match cap.kind {
        Kind::Request => "true or \"ask\"",
        Kind::Switch => "true",
    };
    format!(
        "{what}: it needs the capability `{}` ({}), which the operator's policy does not name, so it is refused; \
         the machine's operator can allow it with `{} = {settings}` under [nodes.\"{node_type}\"] in {}",
        cap.key,
        cap.name,
        cap.key,
        policy_file(policy)
    )
}

/// Whether the operator's policy allows `cap` outright (`true`) for this node type; else a
/// message that starts with `what` and names the key that would allow it. The one check for a
/// capability an author switches on, and for a node that checks one itself
/// ([`crate::RunContext::require_capability`]).
pub fn check_capability(
    policy: &Policy,
    node_type: &str,
    what: &str,
    cap: &Capability,
) -> Result<(), String> {
    match policy.setting(node_type, cap.key) {
        (Setting::Grant, _) => Ok(()),
        (_, Source::Unknown) => Err(unknown_capability(policy, node_type, what, cap)),
        (_, source) => Err(format!(
            "{what}, but the operator's policy does not allow {} ({source}); \
             the machine's operator can add `{} = true` under [nodes.\"{node_type}\"] in {}",
            cap.name,
            cap.key,
            policy_file(policy)
        )),
    }
}

/// The effective ceiling of an integer port before any author config: the lower of the spec's
/// maximum and the operator's, with the layer that set it (`None` when neither sets one).
pub fn ceiling(policy: &Policy, node_type: &str, port: &PortSpec) -> Option<(i64, String)> {
    let operator = policy.max(node_type, port.name);
    match (port.max, operator) {
        (Some(spec), Some((op, _))) if spec <= op => Some((spec, "the node's maximum".into())),
        (_, Some((op, source))) => Some((op, format!("the operator's limit ({source})"))),
        (Some(spec), None) => Some((spec, "the node's maximum".into())),
        (None, None) => None,
    }
}

/// The operator's bounds on a value already accepted by [`check_value`]: an integer above the
/// operator's ceiling, a capability switch above the operator's setting, raw shell syntax the
/// operator has not allowed. The message names the operator's file and the section to edit.
pub fn check_operator(
    policy: &Policy,
    node_type: &str,
    port: &PortSpec,
    value: &Value,
    place: Place,
) -> Result<(), String> {
    let name = port.name;
    let where_ = if place == Place::Config {
        " in the node's config"
    } else {
        ""
    };
    if let Some(n) = value.as_i64() {
        if let Some((max, source)) = policy.max(node_type, name).filter(|(max, _)| n > *max) {
            return Err(format!("{name} {n}{where_} is above the operator's limit {max} ({source}); use at most {max}"));
        }
    }
    let Some(cap) = port.capability else {
        return Ok(());
    };
    let (operator, source) = policy.setting(node_type, cap.key);
    if is_capability(port) {
        if let Some(asked) = Setting::from_json(value).filter(|c| *c > operator) {
            if source == Source::Unknown {
                let what = format!(
                    "{name} {}{where_}",
                    if place == Place::Inputs {
                        "true"
                    } else {
                        asked.as_str()
                    }
                );
                return Err(unknown_capability(policy, node_type, &what, cap));
            }
            let asked = if place == Place::Inputs {
                Setting::Ask
            } else {
                asked
            };
            if place == Place::Config || operator == Setting::Deny {
                return Err(format!(
                    "{name} {}{where_} is above the operator's limit {} ({source}); the machine's operator does not allow it{}",
                    if place == Place::Inputs { "true".to_string() } else { asked.as_str().to_string() },
                    operator.as_str(),
                    if operator == Setting::Ask { ", set \"ask\" so that a person approves each run" } else { "" },
                ));
            }
        }
    } else if cap.used_by(value) {
        // An author's switch: only the operator's `true` allows it.
        let is = if value.is_boolean() {
            "is on"
        } else {
            "is set"
        };
        check_capability(policy, node_type, &format!("{name} {is}{where_}"), cap)?;
    }
    Ok(())
}

/// The effective setting of a capability switch for one node: the lower of the author's config
/// (default `"ask"`) and the operator's setting, with the layer that set it.
pub fn capability_setting(
    policy: &Policy,
    node_type: &str,
    port: &PortSpec,
    config: Option<&Value>,
) -> (Setting, String) {
    let author = config.and_then(Setting::from_json);
    let key = port.capability.map_or(port.name, |c| c.key);
    let (operator, source) = policy.setting(node_type, key);
    match author {
        Some(a) if a <= operator => (a, "the node's author (the node's config)".into()),
        None if operator >= Setting::Ask => (Setting::Ask, "the default (\"ask\")".into()),
        _ => (operator, format!("the operator's policy ({source})")),
    }
}

/// The capped-port rule: an agent may request a value, honoured only up to the layers above.
///
/// An integer may not exceed the author's config value, else the effective [`ceiling`] (both
/// already checked by [`check_value`] and [`check_operator`]). A capability switch may be
/// requested `true` unless its effective setting is `false`; when it is `"ask"` the run asks a
/// person ([`asked_capabilities`]). Returns the effective value.
pub fn resolve_request(
    policy: &Policy,
    node_type: &str,
    port: &PortSpec,
    config: Option<&Value>,
    requested: &Value,
) -> Result<Value, String> {
    debug_assert_eq!(port.audience, Audience::Capped);
    check_operator(policy, node_type, port, requested, Place::Inputs)?;
    let name = port.name;
    match requested {
        Value::Bool(true) if is_capability(port) => {
            let (setting, layer) = capability_setting(policy, node_type, port, config);
            if setting == Setting::Deny {
                return Err(format!(
                    "{name}=true was requested, but {layer} sets {name} to false, so it is refused without asking; \
                     the node's author can set \"{name}\": \"ask\" (a person approves each run) or true in the node's config"
                ));
            }
            Ok(requested.clone())
        }
        Value::Number(n) => match (n.as_i64(), config.and_then(Value::as_i64)) {
            (Some(n), Some(cap)) if n > cap => Err(format!(
                "{name} {n} is above the author's limit {cap} (set in the node's config); ask for at most {cap}, or ask the node's author to raise it"
            )),
            _ => Ok(requested.clone()),
        },
        _ => Ok(requested.clone()),
    }
}

/// The capability switches this (validated, assembled) input turns on that a person must
/// approve: requested `true` while their effective setting is `"ask"`. The ports are returned:
/// each names its capability, which says how it shows on the card.
pub fn asked_capabilities(
    policy: &Policy,
    spec: &NodeSpec,
    config: &crate::Values,
    input: &crate::Values,
) -> Vec<&'static PortSpec> {
    spec.inputs
        .iter()
        .filter(|p| is_capability(p) && input.get(p.name) == Some(&Value::Bool(true)))
        .filter(|p| capability_setting(policy, spec.id, p, config.get(p.name)).0 == Setting::Ask)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const TIMEOUT: PortSpec = PortSpec::input("timeout_ms", PortType::Integer, "")
        .default("null")
        .min(1)
        .max(600000);
    const NET: PortSpec = PortSpec::input("allow_network", PortType::Boolean, "")
        .default("false")
        .audience(Audience::Capped)
        .capability(&crate::capability::NETWORK);
    const LIMIT: PortSpec = PortSpec::input("memory_mb", PortType::Integer, "")
        .default("256")
        .audience(Audience::Capped);

    #[test]
    fn a_near_miss_names_the_closest_choice() {
        assert_eq!(
            not_one_of("lg", &["status", "log"]),
            "\"lg\" is not one of: status, log; did you mean \"log\"?"
        );
        assert_eq!(
            not_one_of("zzzzzz", &["status", "log"]),
            "\"zzzzzz\" is not one of: status, log"
        );
    }

    #[test]
    fn range_errors_cite_the_limit() {
        let err = check_value(&TIMEOUT, &json!(700000)).unwrap_err();
        assert!(err.contains("maximum 600000"), "{err}");
        assert!(check_value(&TIMEOUT, &json!(0))
            .unwrap_err()
            .contains("minimum 1"));
        assert!(check_value(&TIMEOUT, &json!(1.5))
            .unwrap_err()
            .contains("integer"));
        assert!(check_value(&TIMEOUT, &json!(u64::MAX))
            .unwrap_err()
            .contains("maximum"));
        assert!(check_value(&TIMEOUT, &json!(600000)).is_ok());
    }

    fn builtin() -> Policy {
        Policy::builtin()
    }

    #[test]
    fn capability_switches_ask_by_default_and_obey_both_layers() {
        let p = builtin();
        // Default "ask": requested true is accepted, then asked.
        assert_eq!(
            resolve_request(&p, "n", &NET, None, &json!(true)).unwrap(),
            json!(true)
        );
        let err = resolve_request(&p, "n", &NET, Some(&json!(false)), &json!(true)).unwrap_err();
        assert!(
            err.contains("node's author") && err.contains("\"ask\""),
            "{err}"
        );
        assert_eq!(
            resolve_request(&p, "n", &NET, Some(&json!(true)), &json!(true)).unwrap(),
            json!(true)
        );
        let op = Policy::from_toml_str("[all]\nallow_network = false\n", "/p.toml").unwrap();
        let err = resolve_request(&op, "n", &NET, Some(&json!(true)), &json!(true)).unwrap_err();
        assert!(
            err.contains("operator's limit false") && err.contains("/p.toml"),
            "{err}"
        );
        // The author may not go above the operator either.
        let err = check_operator(&op, "n", &NET, &json!(true), Place::Config).unwrap_err();
        assert!(
            err.contains("in the node's config is above the operator's limit"),
            "{err}"
        );
    }

    #[test]
    fn read_roots_obey_the_operator() {
        const ROOTS: PortSpec =
            PortSpec::input("read_roots", PortType::Array(&PortType::String), "")
                .default("[]")
                .audience(Audience::Author)
                .capability(&crate::capability::READ_ROOTS);
        let op = Policy::from_toml_str("[all]\nread_roots = false\n", "/p.toml").unwrap();
        let err = check_operator(
            &op,
            "tools/read_file",
            &ROOTS,
            &json!(["/opt/docs"]),
            Place::Config,
        )
        .unwrap_err();
        assert!(
            err.contains("operator's policy does not allow read-only roots")
                && err.contains("/p.toml"),
            "{err}"
        );
        assert!(check_operator(&op, "tools/read_file", &ROOTS, &json!([]), Place::Config).is_ok());
        assert!(check_operator(
            &builtin(),
            "tools/read_file",
            &ROOTS,
            &json!(["/opt/docs"]),
            Place::Config
        )
        .is_ok());
    }

    #[test]
    fn capped_integers_stay_under_the_author_and_the_operator() {
        let p = builtin();
        let err = resolve_request(&p, "n", &LIMIT, Some(&json!(512)), &json!(1024)).unwrap_err();
        assert!(err.contains("author's limit 512"), "{err}");
        assert_eq!(
            resolve_request(&p, "n", &LIMIT, Some(&json!(512)), &json!(100)).unwrap(),
            json!(100)
        );
        // No author config: the default is not a ceiling.
        assert_eq!(
            resolve_request(&p, "n", &LIMIT, None, &json!(300)).unwrap(),
            json!(300)
        );
        let op = Policy::from_toml_str("[all]\nmax = { memory_mb = 200 }\n", "/p.toml").unwrap();
        let err = resolve_request(&op, "n", &LIMIT, None, &json!(300)).unwrap_err();
        assert_eq!(err, "memory_mb 300 is above the operator's limit 200 (policy /p.toml [all]); use at most 200");
        assert_eq!(ceiling(&op, "n", &TIMEOUT).unwrap().0, 600000);
        assert_eq!(ceiling(&op, "n", &LIMIT).unwrap().0, 200);
    }
}
