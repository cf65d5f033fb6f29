//! JSON Schema (draft 2020-12) rendering of node specs.
//!
//! Three schemas per node: `input` holds only what an agent may fill (Llm and Capped ports),
//! `config` only what the node's author sets (Author and Capped ports), `output` every output.
//! Engine ports appear in neither input nor config.

use crate::capability::Setting;
use crate::policy::Policy;
use crate::{NodeSpec, PortSpec, PortType};
use serde_json::{json, Map, Value};

pub const DRAFT: &str = "https://json-schema.org/draft/2020-12/schema";

/// The default a run gets under `policy`: the spec's, lowered to the operator's ceiling when
/// that is below it (an operator's `max` bounds defaults too).
pub fn effective_default(spec: &NodeSpec, port: &PortSpec, policy: &Policy) -> Option<Value> {
    let default = port.default_value()?;
    match (default.as_i64(), policy.max(spec.id, port.name)) {
        (Some(n), Some((max, _))) if n > max => Some(json!(max)),
        _ => Some(default),
    }
}

/// The schema of a port's value.
pub fn port_type_schema(ty: &PortType) -> Value {
    match ty {
        PortType::String => json!({"type": "string"}),
        PortType::Integer => json!({"type": "integer"}),
        PortType::Boolean => json!({"type": "boolean"}),
        PortType::Object => json!({"type": "object"}),
        PortType::Any => json!({}),
        PortType::Array(elem) => json!({"type": "array", "items": port_type_schema(elem)}),
        PortType::Enum(values) => json!({"type": "string", "enum": values}),
    }
}

fn port_schema(spec: &NodeSpec, port: &PortSpec, policy: &Policy, side: Side) -> Value {
    if side == Side::Config && crate::check::is_capability(port) {
        let key = port.capability.map_or(port.name, |c| c.key);
        let (operator, _) = policy.setting(spec.id, key);
        let allowed: Vec<Value> = [
            (Setting::Grant, json!(true)),
            (Setting::Ask, json!("ask")),
            (Setting::Deny, json!(false)),
        ]
        .into_iter()
        .filter(|(c, _)| *c <= operator)
        .map(|(_, v)| v)
        .collect();
        let default = if operator >= Setting::Ask {
            json!("ask")
        } else {
            json!(false)
        };
        return json!({
            "enum": allowed,
            "description": format!("{} {CAPABILITY_CONFIG_NOTE}", port.description),
            "default": default,
        });
    }
    let mut schema = match port_type_schema(&port.ty) {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    schema.insert("description".into(), json!(port.description));
    if let Some(choices) = port.choices {
        schema.insert("enum".into(), json!(choices));
    }
    if let Some(min) = port.min {
        schema.insert("minimum".into(), json!(min));
    }
    if let Some((max, _)) = crate::check::ceiling(policy, spec.id, port) {
        schema.insert("maximum".into(), json!(max));
    }
    if let Some(default) = effective_default(spec, port, policy).filter(|d| !d.is_null()) {
        schema.insert("default".into(), default);
    }
    Value::Object(schema)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Input,
    Config,
    Output,
}

fn object_schema<'a>(
    spec: &NodeSpec,
    policy: &Policy,
    side: Side,
    title: String,
    ports: impl Iterator<Item = &'a PortSpec>,
) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for port in ports {
        properties.insert(port.name.to_string(), port_schema(spec, port, policy, side));
        if port.required {
            required.push(port.name);
        }
    }
    let mut schema = json!({
        "$schema": DRAFT,
        "title": title,
        "type": "object",
        "properties": properties,
        "additionalProperties": false,
    });
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

/// Appended to a Capped integer port's description in the agent-facing schema, so that an agent
/// knows a request may be refused.
pub const CAPPED_NOTE: &str = "(Capped: an agent may request up to the maximum; the node's author may set a lower limit in the node's config.)";

/// Appended to a capability switch's description in the agent-facing schema.
pub const CAPABILITY_NOTE: &str = "(Capability: requesting true asks a person to approve this run, unless the node's author granted it in the node's config; refused when the author or the machine's operator set it to false.)";

/// Appended to a capability switch's description in the author's config schema.
pub const CAPABILITY_CONFIG_NOTE: &str = "(Author setting: true grants it without asking, \"ask\" (default) lets an agent request it with a person approving each run, false refuses it.)";

/// What an agent sees: only Llm and Capped ports (Capped ones say so in their description),
/// under the built-in policy (what the published files show; [`input_schema_with`] renders an
/// operator's effective bounds).
pub fn input_schema(spec: &NodeSpec) -> Value {
    input_schema_with(spec, &Policy::builtin())
}

/// [`input_schema`] under an explicit operator policy.
pub fn input_schema_with(spec: &NodeSpec, policy: &Policy) -> Value {
    let mut schema = object_schema(
        spec,
        policy,
        Side::Input,
        format!("{} input", spec.id),
        spec.inputs.iter().filter(|p| p.agent_visible()),
    );
    for port in spec
        .inputs
        .iter()
        .filter(|p| p.audience == crate::Audience::Capped)
    {
        let note = if crate::check::is_capability(port) {
            CAPABILITY_NOTE
        } else {
            CAPPED_NOTE
        };
        if let Some(Value::String(text)) =
            schema.pointer_mut(&format!("/properties/{}/description", port.name))
        {
            *text = format!("{text} {note}");
        }
    }
    schema
}

/// What the node's author may set in `config`: Author and Capped ports, under the built-in policy.
pub fn config_schema(spec: &NodeSpec) -> Value {
    config_schema_with(spec, &Policy::builtin())
}

/// [`config_schema`] under an explicit operator policy.
pub fn config_schema_with(spec: &NodeSpec, policy: &Policy) -> Value {
    object_schema(
        spec,
        policy,
        Side::Config,
        format!("{} config", spec.id),
        spec.inputs.iter().filter(|p| p.author_settable()),
    )
}

pub fn output_schema(spec: &NodeSpec) -> Value {
    let policy = Policy::builtin();
    let mut schema = object_schema(
        spec,
        &policy,
        Side::Output,
        format!("{} output", spec.id),
        spec.outputs.iter(),
    );
    // Outputs may grow new fields without breaking readers.
    schema["additionalProperties"] = json!(true);
    schema
}

/// The file written to `schemas/<short_name>.json` (always under the built-in policy, so that
/// the published files do not depend on the machine that wrote them).
pub fn node_schemas(spec: &NodeSpec) -> Value {
    node_schemas_with(spec, &Policy::builtin())
}

/// [`node_schemas`] under an explicit operator policy (`cheng describe --json`).
pub fn node_schemas_with(spec: &NodeSpec, policy: &Policy) -> Value {
    json!({
        "id": spec.id,
        "input": input_schema_with(spec, policy),
        "config": config_schema_with(spec, policy),
        "output": output_schema(spec),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Audience, Control, Effects};

    static SPEC: NodeSpec = NodeSpec {
        id: "test/schema",
        title: "Schema test",
        description: "",
        category: "test",
        inputs: &[
            PortSpec::input("command", PortType::String, "program").default("\"\""),
            PortSpec::input("timeout_ms", PortType::Integer, "budget")
                .default("null")
                .min(1)
                .max(600000),
            PortSpec::sandbox_root(),
            PortSpec::input("allow_x", PortType::Boolean, "switch")
                .default("false")
                .audience(Audience::Author)
                .control(Control::Switch),
            PortSpec::input("allow_net", PortType::Boolean, "capped")
                .default("false")
                .audience(Audience::Capped)
                .capability(&NET),
        ],
        outputs: &[PortSpec::output("success", PortType::Boolean, "ok")],
        gate: None,
        effects: Effects::ReadOnly,
    };

    use crate::capability::NETWORK as NET;

    /// A capability the built-in policy does not know.
    const GPU: crate::capability::Capability = crate::capability::Capability {
        name: "the GPU",
        key: "allow_gpu",
        opens: "the host's GPU",
        kind: crate::capability::Kind::Request,
        open_world: false,
    };

    #[test]
    fn engine_ports_are_in_no_schema_and_author_ports_only_in_config() {
        let input = input_schema(&SPEC);
        let config = config_schema(&SPEC);
        let props = |s: &Value| {
            s["properties"]
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(props(&input), ["command", "timeout_ms", "allow_net"]);
        assert_eq!(props(&config), ["allow_x", "allow_net"]);
        // The agent is told a capped port may be refused; the author's config is not.
        assert_eq!(
            input["properties"]["allow_net"]["description"],
            format!("capped {CAPABILITY_NOTE}")
        );
        assert_eq!(
            config["properties"]["allow_net"]["description"],
            format!("capped {CAPABILITY_CONFIG_NOTE}")
        );
        assert_eq!(
            config["properties"]["allow_net"]["enum"],
            json!([true, "ask", false])
        );
        assert_eq!(config["properties"]["allow_net"]["default"], "ask");
        assert_eq!(input["properties"]["timeout_ms"]["maximum"], 600000);
        assert!(input["properties"]["timeout_ms"].get("default").is_none());
        assert_eq!(input["additionalProperties"], false);
        for schema in [&input, &config, &output_schema(&SPEC)] {
            assert_eq!(
                schema["$schema"],
                "https://json-schema.org/draft/2020-12/schema"
            );
            assert_eq!(schema["type"], "object");
        }
        assert!(!props(&output_schema(&SPEC)).is_empty());
        // The operator's bounds are the published ones.
        let policy = Policy::from_toml_str(
            "[all]\nmax = { timeout_ms = 1000 }\nallow_network = \"ask\"\n",
            "/p.toml",
        )
        .unwrap();
        assert_eq!(
            input_schema_with(&SPEC, &policy)["properties"]["timeout_ms"]["maximum"],
            1000
        );
        assert_eq!(
            config_schema_with(&SPEC, &policy)["properties"]["allow_net"]["enum"],
            json!(["ask", false])
        );
        // A capability the policy does not name: the author can only say false.
        static UNKNOWN: NodeSpec = NodeSpec {
            id: "test/unknown",
            title: "Unknown",
            description: "",
            category: "test",
            inputs: &[PortSpec::input("allow_gpu", PortType::Boolean, "gpu")
                .default("false")
                .audience(Audience::Capped)
                .capability(&GPU)],
            outputs: &[],
            gate: None,
            effects: Effects::ReadOnly,
        };
        let gpu = &config_schema(&UNKNOWN)["properties"]["allow_gpu"];
        assert_eq!(
            (&gpu["enum"], &gpu["default"]),
            (&json!([false]), &json!(false))
        );
        let all = node_schemas(&SPEC);
        assert_eq!(all["id"], "test/schema");
        for part in ["input", "config", "output"] {
            assert!(all[part].is_object(), "{part}");
        }
    }
}
