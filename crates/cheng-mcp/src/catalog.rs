//! The tools the server offers: a `tools/runtime` toolkit (the same `exposed_tools` model, parsed
//! and checked by the same code), rendered as MCP tool definitions once at start-up.
//!
//! Without `--tools`, the toolkit is every registered node (gates respected: a gated-out node is
//! not in the registry) with its default config, named after the last segment of its id.

use cheng_engine::Engine;
use cheng_node::policy::Policy;
use cheng_node::{schema, ApprovalRule, Effects, NodeSpec};
use cheng_nodes_runtime::{function, Tool, Toolkit};
use serde_json::{json, Map, Value};

/// A usable tool and its MCP definition.
pub struct Offered {
    pub tool: Tool,
    /// The `tools/list` entry (name, title, description, inputSchema, outputSchema, annotations).
    pub definition: Value,
}

/// The server's tools, in listing order.
pub struct Catalog {
    pub tools: Vec<Offered>,
    /// Warnings about the curation (printed on stderr at start-up).
    pub warnings: Vec<String>,
}

impl Catalog {
    /// Every registered node except `tools/runtime` itself (a toolkit cannot expose itself) and
    /// those the operator's policy disables (named in the start-up warnings).
    pub fn every_node(engine: &Engine) -> Result<Catalog, Vec<String>> {
        let (offered, disabled): (Vec<&str>, Vec<&str>) = engine
            .registry()
            .ids()
            .into_iter()
            .filter(|id| *id != cheng_nodes_runtime::ID)
            .partition(|id| engine.policy().disabled(id).is_none());
        // A node that needs its author's config (a required author port: the skill and notes
        // directories) has no default to run with; --tools gives it one.
        let (offered, unconfigured): (Vec<&str>, Vec<&str>) = offered
            .into_iter()
            .partition(|id| author_ports_needed(engine, id).is_empty());
        let entries: Vec<Value> = offered.into_iter().map(|id| json!({"type": id})).collect();
        let mut catalog = Catalog::from_entries(engine, &entries)?;
        for id in unconfigured {
            catalog.warnings.push(format!(
                "{id} needs its author's config ({}); not offered as an MCP tool without --tools (a graph sets it in the node's config)",
                author_ports_needed(engine, id).join(", ")
            ));
        }
        for id in disabled {
            if let Some(source) = engine.policy().disabled(id) {
                catalog.warnings.push(format!(
                    "{id} is disabled by the operator's policy ({source}); not offered"
                ));
            }
        }
        Ok(catalog)
    }

    /// The author's `exposed_tools` entries (the JSON array `tools/runtime` takes). Any broken
    /// entry refuses the whole file: a server never starts with a toolkit its author got wrong.
    pub fn from_entries(engine: &Engine, entries: &[Value]) -> Result<Catalog, Vec<String>> {
        let toolkit = Toolkit::parse(engine, entries);
        let errors = toolkit.errors();
        if !errors.is_empty() {
            return Err(errors);
        }
        let tools = toolkit
            .tools()
            .map(|tool| Offered {
                definition: definition(tool, engine.policy()),
                tool: tool.clone(),
            })
            .collect();
        Ok(Catalog {
            tools,
            warnings: toolkit.warnings(),
        })
    }

    pub fn find(&self, name: &str) -> Option<&Offered> {
        self.tools.iter().find(|t| t.tool.name == name)
    }

    pub fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.tool.name.as_str()).collect()
    }
}

/// The required author ports of node type `id`, which no default config fills.
fn author_ports_needed(engine: &Engine, id: &str) -> Vec<&'static str> {
    engine.registry().get(id).map_or_else(Vec::new, |node| {
        node.spec()
            .inputs
            .iter()
            .filter(|p| p.required && p.audience == cheng_node::Audience::Author)
            .map(|p| p.name)
            .collect()
    })
}

/// The MCP tool definition of `tool` under the operator's `policy`: the runtime's own function
/// (description and parameters, so the two never disagree), plus the output schema and hints
/// from the node's effects.
pub fn definition(tool: &Tool, policy: &Policy) -> Value {
    let function = function(tool, policy);
    let function = &function["function"];
    json!({
        "name": tool.name,
        "title": tool.spec.title,
        "description": function["description"],
        "inputSchema": function["parameters"],
        "outputSchema": nullable_outputs(schema::output_schema(tool.spec)),
        "annotations": annotations(tool.spec, &tool.config),
    })
}

/// Output ports are `null` when they do not apply (e.g. `error` on success); clients validate
/// `structuredContent` against the schema, so every typed property also admits `null`. No
/// `$schema`: each client validates in its own dialect, and the keywords used mean the same in
/// draft-07 and 2020-12.
fn nullable_outputs(mut schema: Value) -> Value {
    if let Value::Object(root) = &mut schema {
        root.remove("$schema");
    }
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        for property in properties.values_mut() {
            let Some(obj) = property.as_object_mut() else {
                continue;
            };
            match obj.get("type").cloned() {
                Some(Value::String(ty)) => {
                    obj.insert("type".into(), json!([ty, "null"]));
                    if let Some(Value::Array(values)) = obj.get_mut("enum") {
                        values.push(Value::Null);
                    }
                }
                Some(Value::Array(mut types)) => {
                    if !types.contains(&json!("null")) {
                        types.push(json!("null"));
                    }
                    obj.insert("type".into(), Value::Array(types));
                }
                _ => {}
            }
        }
    }
    schema
}

/// `readOnlyHint`, `destructiveHint`, `idempotentHint`, `openWorldHint` from the node's declared
/// effects (and, for sandboxed nodes, whether the author granted a capability that reaches
/// beyond the machine, such as the network).
pub fn annotations(spec: &NodeSpec, config: &Map<String, Value>) -> Value {
    let network = spec.inputs.iter().any(|p| {
        p.capability.is_some_and(|c| c.open_world) && config.get(p.name) == Some(&Value::Bool(true))
    });
    let (read_only, destructive, idempotent, open_world) = match spec.effects {
        Effects::ReadOnly => (true, false, true, false),
        Effects::Sandboxed => (false, false, false, network),
        Effects::Approval(ApprovalRule::Always) => (false, true, false, true),
        Effects::Approval(ApprovalRule::Operations(_) | ApprovalRule::Switch(_))
        | Effects::Serial(_) => (false, true, false, false),
    };
    json!({
        "title": spec.title,
        "readOnlyHint": read_only,
        "destructiveHint": destructive,
        "idempotentHint": idempotent,
        "openWorldHint": open_world,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use cheng_node::capability::{Capability, Kind, FILESYSTEM, NETWORK};
    use cheng_node::{Audience, PortSpec, PortType};

    /// A capability reaching beyond the machine that no node of cheng declares.
    const RADIO: Capability = Capability {
        name: "the radio",
        key: "allow_radio",
        opens: "transmitting",
        kind: Kind::Request,
        open_world: true,
    };

    static SANDBOXED: NodeSpec = NodeSpec {
        id: "test/sandboxed",
        title: "Sandboxed",
        description: "",
        category: "test",
        inputs: &[
            PortSpec::input("allow_network", PortType::Boolean, "")
                .audience(Audience::Capped)
                .capability(&NETWORK),
            PortSpec::input("allow_filesystem", PortType::Boolean, "")
                .audience(Audience::Capped)
                .capability(&FILESYSTEM),
            PortSpec::input("radio", PortType::Boolean, "")
                .audience(Audience::Capped)
                .capability(&RADIO),
        ],
        outputs: &[],
        gate: None,
        effects: Effects::Sandboxed,
    };

    fn open_world(config: Value) -> Value {
        let config = config.as_object().cloned().unwrap_or_default();
        annotations(&SANDBOXED, &config)["openWorldHint"].clone()
    }

    /// The hint follows the capabilities that reach beyond the machine, whatever their port is
    /// called, and only when the author granted one.
    #[test]
    fn an_author_granted_open_world_capability_sets_the_hint() {
        assert_eq!(open_world(json!({})), json!(false));
        assert_eq!(open_world(json!({"allow_network": "ask"})), json!(false));
        assert_eq!(open_world(json!({"allow_filesystem": true})), json!(false));
        assert_eq!(open_world(json!({"allow_network": true})), json!(true));
        assert_eq!(open_world(json!({"radio": true})), json!(true));
    }
}
