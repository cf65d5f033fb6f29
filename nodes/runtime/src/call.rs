//! `tool_call`: which function to run, with which arguments.
//!
//! Two shapes are accepted, because LLM hosts produce both: `{"name", "arguments"}` and the
//! OpenAI tool-call object `{"id", "type": "function", "function": {"name", "arguments"}}`.
//! `arguments` is an object, or a string holding one (OpenAI sends JSON text); absent or
//! `null` means no arguments. `id` and `type` are accepted and ignored; other keys are errors.

use crate::toolkit::kind_of;
use cheng_node::Values;
use serde_json::Value;

/// A parsed tool call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolCall {
    pub name: String,
    pub arguments: Values,
}

const SHAPE: &str = "{\"name\": \"<function name>\", \"arguments\": {...}}";

/// Parses `tool_call` (`None` when it is unset).
pub(crate) fn parse(value: Option<&Value>) -> Result<ToolCall, String> {
    let Some(value) = value else {
        return Err(format!("tool_call is required when action=execute: {SHAPE}; action=list_tools lists the function names"));
    };
    let Some(top) = value.as_object() else {
        return Err(format!(
            "tool_call must be an object {SHAPE}, got {}",
            kind_of(value)
        ));
    };
    let (fields, place) = match top.get("function") {
        Some(Value::Object(function)) => {
            unknown_keys(top, &["id", "type", "function"], "tool_call")?;
            (function, "tool_call.function")
        }
        Some(other) => {
            return Err(format!(
                "tool_call.function must be an object {SHAPE}, got {}",
                kind_of(other)
            ))
        }
        None => (top, "tool_call"),
    };
    unknown_keys(fields, &["id", "type", "name", "arguments"], place)?;
    if let Some(kind) = top
        .get("type")
        .filter(|t| !t.is_null() && t.as_str() != Some("function"))
    {
        return Err(format!(
            "tool_call.type must be \"function\" when given, got {kind}"
        ));
    }
    let name = match fields.get("name") {
        Some(Value::String(name)) if !name.is_empty() => name.clone(),
        None | Some(Value::Null) => {
            return Err(format!(
                "{place}.name is missing: name one of the functions list_tools returns"
            ))
        }
        Some(other) => {
            return Err(format!(
                "{place}.name must be a function name (a string), got {}",
                kind_of(other)
            ))
        }
    };
    let arguments = match fields.get("arguments") {
        None | Some(Value::Null) => Values::new(),
        Some(Value::Object(arguments)) => arguments.clone(),
        Some(Value::String(text)) if text.trim().is_empty() => Values::new(),
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(arguments)) => arguments,
            Ok(other) => {
                return Err(format!(
                    "{place}.arguments must hold a JSON object, got {}",
                    kind_of(&other)
                ))
            }
            Err(e) => return Err(format!("{place}.arguments is not valid JSON: {e}")),
        },
        Some(other) => {
            return Err(format!(
                "{place}.arguments must be an object, got {}",
                kind_of(other)
            ))
        }
    };
    Ok(ToolCall { name, arguments })
}

fn unknown_keys(fields: &Values, allowed: &[&str], place: &str) -> Result<(), String> {
    match fields.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(key) => Err(format!(
            "{place} has an unknown key `{key}`; expected {SHAPE}"
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(v: Value) -> Values {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn plain_and_openai_shapes() {
        let plain = json!({"name": "git", "arguments": {"operation": "status"}});
        assert_eq!(
            parse(Some(&plain)).unwrap(),
            ToolCall {
                name: "git".into(),
                arguments: args(json!({"operation": "status"}))
            }
        );
        let openai = json!({"id": "call_1", "type": "function", "function": {"name": "git", "arguments": "{\"operation\":\"status\"}"}});
        assert_eq!(
            parse(Some(&openai)).unwrap(),
            ToolCall {
                name: "git".into(),
                arguments: args(json!({"operation": "status"}))
            }
        );
        assert_eq!(
            parse(Some(&json!({"name": "git"}))).unwrap().arguments,
            Values::new()
        );
    }

    #[test]
    fn malformed_calls_say_what_is_wrong() {
        assert!(parse(None)
            .unwrap_err()
            .contains("required when action=execute"));
        assert!(parse(Some(&json!("git")))
            .unwrap_err()
            .contains("got a string"));
        assert!(parse(Some(&json!({"name": "git", "args": {}})))
            .unwrap_err()
            .contains("unknown key `args`"));
        assert!(parse(Some(&json!({"arguments": {}})))
            .unwrap_err()
            .contains("name is missing"));
        assert!(parse(Some(&json!({"name": "git", "arguments": "[1]"})))
            .unwrap_err()
            .contains("JSON object"));
        assert!(parse(Some(&json!({"name": "git", "arguments": "{"})))
            .unwrap_err()
            .contains("not valid JSON"));
        assert!(parse(Some(&json!({"name": "git", "arguments": [1]})))
            .unwrap_err()
            .contains("got an array"));
        assert!(parse(Some(&json!({"type": "other", "name": "git"})))
            .unwrap_err()
            .contains("\"function\""));
    }
}
