//! `schemas/graph.json`: the JSON Schema of a version 1 graph file, with each registered node
//! type's input and config schemas attached to its `type`, so editors complete and check ports.

use cheng_node::{schema, Registry};
use serde_json::{json, Map, Value};

/// A node schema's `input` or `config` part without its document-level keys.
fn part(schemas: &Value, key: &str) -> Value {
    let mut part = schemas[key].clone();
    if let Some(obj) = part.as_object_mut() {
        obj.remove("$schema");
    }
    part
}

pub fn graph_schema(registry: &Registry) -> Value {
    let ids: Vec<&str> = registry.specs().map(|s| s.id).collect();
    let per_type: Vec<Value> = registry
        .specs()
        .map(|spec| {
            let schemas = schema::node_schemas(spec);
            json!({
                "if": { "properties": { "type": { "const": spec.id } }, "required": ["type"] },
                "then": { "properties": { "inputs": part(&schemas, "input"), "config": part(&schemas, "config") } }
            })
        })
        .collect();
    let mut node = Map::new();
    node.insert("type".into(), json!("object"));
    node.insert("required".into(), json!(["id", "type"]));
    node.insert("additionalProperties".into(), json!(false));
    node.insert(
        "properties".into(),
        json!({
            "id": { "type": "string", "pattern": "^[^.\\s]+$", "description": "Unique in the graph; no dots or whitespace (edges name ports as node.port)." },
            "type": { "type": "string", "enum": ids, "description": "A node type, as listed by `cheng nodes`." },
            "config": { "type": "object", "description": "The node author's settings: author-only ports, caps for capped ports, defaults." },
            "inputs": { "type": "object", "description": "Port values (llm and capped ports); ports fed by an edge are left out." },
            "after": {
                "type": "array",
                "items": { "type": "string" },
                "uniqueItems": true,
                "description": "Ids of nodes that must succeed before this one starts, without wiring a port (ordering only)."
            }
        }),
    );
    node.insert("allOf".into(), Value::Array(per_type));
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "cheng graph (version 1)",
        "description": "Nodes run in dependency order; an edge feeds one node's output port into another's input port. See docs/guides/graphs.md.",
        "type": "object",
        "required": ["version", "nodes"],
        "additionalProperties": false,
        "properties": {
            "version": { "const": 1 },
            "nodes": { "type": "array", "items": { "$ref": "#/$defs/node" } },
            "edges": { "type": "array", "items": { "$ref": "#/$defs/edge" } }
        },
        "$defs": {
            "node": Value::Object(node),
            "edge": {
                "type": "object",
                "required": ["from", "to"],
                "additionalProperties": false,
                "properties": {
                    "from": { "type": "string", "pattern": "^[^.\\s]+\\.[^.\\s]+$", "description": "node.output_port" },
                    "to": { "type": "string", "pattern": "^[^.\\s]+\\.[^.\\s]+$", "description": "node.input_port" }
                }
            }
        }
    })
}

/// The starter `cheng graph new` writes: two nodes, one edge, every key of the format.
pub const STARTER: &str = r#"{
  "version": 1,
  "nodes": [
    {
      "id": "list",
      "type": "tools/workspace_shell",
      "config": {},
      "inputs": { "command": "ls", "args": ["-l"], "purpose": "See what the workspace holds" }
    },
    {
      "id": "count",
      "type": "tools/workspace_shell",
      "inputs": { "command": "sh", "args": ["-c", "ls | wc -l"] }
    }
  ],
  "edges": [
    { "from": "list.summary", "to": "count.purpose" }
  ]
}
"#;

/// `cheng graph new FILE`.
pub fn new_graph(file: &std::path::Path) -> crate::Exit {
    use std::io::Write;
    let created = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(file);
    let written = created.and_then(|mut f| f.write_all(STARTER.as_bytes()));
    if let Err(e) = written {
        crate::complain(format!(
            "cannot write {}: {e} (graph new never replaces an existing file)",
            file.display()
        ));
        return crate::Exit::Usage;
    }
    let name = file.display();
    crate::out::errln!(
        "wrote {name}: two workspace_shell nodes and an edge (list.summary feeds count.purpose).\n\
         Next: `cheng describe TYPE` shows a node's ports; `cheng graph check {name}` validates; \
         `cheng graph run {name}` runs it (it asks before each command).\n\
         The format: docs/guides/graphs.md; its JSON Schema: schemas/graph.json."
    );
    crate::Exit::Ok
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every graph under fixtures/graphs/ fits the schema's shape: known keys, registered types,
    /// inputs that the type's input schema names.
    #[test]
    fn fixture_graphs_fit_the_schema() {
        let registry = Registry::from_inventory();
        let schema = graph_schema(&registry);
        let node = &schema["$defs"]["node"];
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/graphs");
        let mut seen = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let graph: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            for key in graph.as_object().unwrap().keys() {
                assert!(
                    schema["properties"].get(key).is_some(),
                    "{}: {key}",
                    path.display()
                );
            }
            for n in graph["nodes"].as_array().unwrap() {
                assert!(
                    node["properties"]["type"]["enum"]
                        .as_array()
                        .unwrap()
                        .contains(&n["type"]),
                    "{}",
                    path.display()
                );
                let then = node["allOf"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|c| c["if"]["properties"]["type"]["const"] == n["type"])
                    .unwrap();
                for port in n["inputs"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, _)| k)
                {
                    assert!(
                        then["then"]["properties"]["inputs"]["properties"]
                            .get(port)
                            .is_some(),
                        "{}: {port}",
                        path.display()
                    );
                }
            }
            seen += 1;
        }
        assert!(seen > 0);
    }
}
