//! `list_tools`: one LLM function per usable entry.
//!
//! A function's `parameters` are exactly the node's agent-facing input schema
//! ([`cheng_node::schema::input_schema_with`] under the run's policy): author and engine ports
//! never appear, so the agent is never invited to set what the engine would refuse. The description says when a person
//! approves each call, so the agent knows to explain itself (`purpose`) and to expect a wait.
//!
//! The parameters are written in the subset every function-calling dialect accepts (OpenAI's
//! strict mode, Gemini's, MCP clients validating with draft-07): no `$schema` (the keywords used
//! mean the same in draft-07 and 2020-12), one `type` on every property. `docs/guides/mcp.md`
//! lists the rules; the CLI suite's schema_portability test checks them on every tool.

use crate::outcome::{Outcome, Status};
use crate::toolkit::{Tool, Toolkit};
use cheng_node::policy::Policy;
use cheng_node::{schema, ApprovalRule, Effects, ErrorKind};
use serde_json::{json, Value};

/// The function an agent sees for `tool` under the operator's `policy` (its effective bounds):
/// `{"type": "function", "function": {"name", "description", "parameters"}}`.
pub fn function(tool: &Tool, policy: &Policy) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": tool.name,
            "description": description(tool),
            "parameters": parameters(tool, policy),
        }
    })
}

/// The node's agent-facing input schema under `policy`, minus the ports the author preset,
/// portable.
pub fn parameters(tool: &Tool, policy: &Policy) -> Value {
    let mut parameters = portable(schema::input_schema_with(tool.spec, policy));
    if tool.presets.is_empty() {
        return parameters;
    }
    if let Some(Value::Object(properties)) = parameters.get_mut("properties") {
        properties.retain(|name, _| !tool.presets.contains_key(name));
    }
    if let Some(Value::Array(required)) = parameters.get_mut("required") {
        required.retain(|name| !name.as_str().is_some_and(|n| tool.presets.contains_key(n)));
    }
    parameters
}

/// Offered to a model as an object: an `any` port has no single JSON type, and a property
/// without one is rejected or guessed at by function-calling dialects.
const ANY_AS_OBJECT: &str =
    "(Give a JSON object; wrap any other value in one, e.g. {\"values\": [1, 2]}.)";

/// An input schema (as in `schemas/`, for canvases and editors: 2020-12, `any` ports untyped) in
/// the portable subset models are given: without `$schema`, an untyped (`any`) property offered
/// as a JSON object.
pub fn portable(mut schema: Value) -> Value {
    if let Value::Object(root) = &mut schema {
        root.remove("$schema");
    }
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        for property in properties.values_mut() {
            let Value::Object(property) = property else {
                continue;
            };
            if property.contains_key("type") || property.contains_key("enum") {
                continue;
            }
            property.insert("type".into(), json!("object"));
            let described = match property.get("description").and_then(Value::as_str) {
                Some(text) => format!("{text} {ANY_AS_OBJECT}"),
                None => ANY_AS_OBJECT.to_string(),
            };
            property.insert("description".into(), Value::String(described));
        }
    }
    schema
}

fn description(tool: &Tool) -> String {
    let note = match tool.spec.effects {
        Effects::ReadOnly => None,
        Effects::Sandboxed => Some(
            "Runs sandboxed; a person approves any path it asks to read outside the sandbox."
                .to_string(),
        ),
        Effects::Approval(ApprovalRule::Always) | Effects::Serial(ApprovalRule::Always) => {
            Some("A person approves each call before it runs.".to_string())
        }
        Effects::Approval(ApprovalRule::Operations(ops))
        | Effects::Serial(ApprovalRule::Operations(ops)) => Some(format!(
            "A person approves each call with operation {} before it runs.",
            ops.join(" or ")
        )),
        // The author's switch decides, so the model is told only when a person will be asked.
        Effects::Approval(ApprovalRule::Switch(port))
        | Effects::Serial(ApprovalRule::Switch(port)) => (tool.config.get(port)
            == Some(&serde_json::Value::Bool(true)))
        .then(|| "A person approves each call before it runs.".to_string()),
    };
    let base = tool.description.trim_end();
    match note {
        Some(note) if base.ends_with(['.', '!', '?']) => format!("{base} {note}"),
        Some(note) => format!("{base}. {note}"),
        None => base.to_string(),
    }
}

/// The `list_tools` outcome: functions for the usable entries, every entry's problems.
pub(crate) fn list_tools(toolkit: &Toolkit, policy: &Policy) -> Outcome {
    let errors = toolkit.errors();
    let mut outcome = if errors.is_empty() {
        Outcome::new(Status::Ok)
    } else {
        // The author must fix the curation; the agent retrying cannot help.
        Outcome::refused(Status::Error, ErrorKind::InvalidInput, true, errors)
    };
    outcome.functions = Some(toolkit.tools().map(|t| function(t, policy)).collect());
    outcome.warnings = toolkit.warnings();
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;
    use cheng_node::{NodeSpec, PortSpec, PortType, Values};

    static GATED: NodeSpec = NodeSpec {
        id: "test/gated",
        title: "Gated",
        description: "Does things",
        category: "test",
        inputs: &[PortSpec::input("operation", PortType::String, "op").default("\"\"")],
        outputs: &[],
        gate: None,
        effects: Effects::Approval(ApprovalRule::Operations(&["run", "write"])),
    };

    #[test]
    fn an_any_port_is_offered_as_an_object() {
        let schema = portable(json!({"$schema": "x", "type": "object", "properties": {
            "input": {"description": "Any JSON"}, "n": {"type": "integer"}}}));
        assert_eq!(schema.get("$schema"), None);
        assert_eq!(schema["properties"]["input"]["type"], "object");
        assert!(schema["properties"]["input"]["description"]
            .as_str()
            .is_some_and(|d| d.starts_with("Any JSON (Give a JSON object")));
        assert_eq!(schema["properties"]["n"], json!({"type": "integer"}));
    }

    #[test]
    fn approval_is_stated_in_the_description() {
        let tool = Tool {
            name: "g".into(),
            spec: &GATED,
            description: GATED.description.into(),
            config: Values::new(),
            presets: Values::new(),
        };
        let f = function(&tool, &Policy::builtin());
        assert_eq!(
            f["function"]["description"],
            "Does things. A person approves each call with operation run or write before it runs."
        );
        // The node's input schema, in the portable subset (no `$schema`).
        let expected = schema::input_schema(&GATED);
        assert!(expected.get("$schema").is_some());
        assert_eq!(f["function"]["parameters"], portable(expected));
        assert_eq!(f["type"], "function");
    }

    static SWITCHED: NodeSpec = NodeSpec {
        id: "test/switched",
        title: "Switched",
        description: "Writes things.",
        category: "test",
        inputs: &[],
        outputs: &[],
        gate: None,
        effects: Effects::Approval(ApprovalRule::Switch("sensitive")),
    };

    #[test]
    fn a_switched_approval_is_stated_only_when_the_author_turned_it_on() {
        let tool = |on: bool| Tool {
            name: "s".into(),
            spec: &SWITCHED,
            description: SWITCHED.description.into(),
            config: Values::from_iter([("sensitive".to_string(), serde_json::json!(on))]),
            presets: Values::new(),
        };
        assert_eq!(
            function(&tool(true), &Policy::builtin())["function"]["description"],
            "Writes things. A person approves each call before it runs."
        );
        assert_eq!(
            function(&tool(false), &Policy::builtin())["function"]["description"],
            "Writes things."
        );
    }
}
