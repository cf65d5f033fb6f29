//! The graph file, version 1: loading and shape checks (no registry needed).
//!
//! ```json
//! { "version": 1,
//!   "nodes": [ { "id": "list", "type": "tools/workspace_shell", "config": {}, "inputs": { "command": "ls" },
//!                "after": ["build"] } ],
//!   "edges": [ { "from": "list.summary", "to": "show.purpose" } ] }
//! ```
//!
//! Parsing is strict: unknown keys are errors (a misspelt `input` must not be silently ignored),
//! and every problem is collected rather than stopping at the first.

use crate::error::{ValidationError, ValidationErrorKind as Kind};
use cheng_node::Values;
use serde_json::{json, Value};
use std::fmt;

/// The only graph format version this engine reads.
pub const GRAPH_VERSION: u64 = 1;

/// A parsed (not yet validated) graph.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Graph {
    pub nodes: Vec<GraphNode>,
    pub edges: Vec<Edge>,
}

/// One node instance: an id unique in the graph, a node type, the author's config and the inputs.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphNode {
    pub id: String,
    pub node_type: String,
    /// Set by the node's author on the canvas (author ports, capped ceilings, canvas defaults).
    pub config: Values,
    /// Set by whoever fills the node (an agent, a person): llm and capped ports only.
    pub inputs: Values,
    /// Nodes that must succeed before this one starts, without feeding it a port (ordering only;
    /// like an edge, a failure upstream skips this node).
    pub after: Vec<String>,
}

/// `from` (an output port) feeds `to` (an input port).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    pub from: Endpoint,
    pub to: Endpoint,
}

/// `node.port`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub node: String,
    pub port: String,
}

impl Endpoint {
    /// Splits `node.port` at the last dot (node ids may not contain dots, ports never do).
    pub fn parse(text: &str) -> Option<Endpoint> {
        let (node, port) = text.rsplit_once('.')?;
        (!node.is_empty() && !port.is_empty()).then(|| Endpoint {
            node: node.to_string(),
            port: port.to_string(),
        })
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.node, self.port)
    }
}

impl fmt::Display for Edge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} → {}", self.from, self.to)
    }
}

impl Graph {
    /// A graph of one node (what `cheng run` executes). The node's id is its type.
    pub fn single(node_type: &str, config: Values, inputs: Values) -> Graph {
        Graph {
            nodes: vec![GraphNode {
                id: node_type.to_string(),
                node_type: node_type.to_string(),
                config,
                inputs,
                after: Vec::new(),
            }],
            edges: Vec::new(),
        }
    }

    /// Parses graph JSON text, reporting every shape problem found.
    pub fn from_json(text: &str) -> Result<Graph, Vec<ValidationError>> {
        let value: Value = serde_json::from_str(text).map_err(|e| {
            vec![ValidationError::graph(
                Kind::Malformed,
                format!("the graph is not valid JSON: {e}"),
            )]
        })?;
        Graph::from_value(&value)
    }

    /// Reads a graph from a JSON value, reporting every shape problem found.
    pub fn from_value(value: &Value) -> Result<Graph, Vec<ValidationError>> {
        let mut errors = Vec::new();
        let Some(top) = value.as_object() else {
            return Err(vec![ValidationError::graph(
                Kind::Malformed,
                "a graph is a JSON object with `version`, `nodes` and `edges`",
            )]);
        };
        match top.get("version") {
            None => {
                return Err(vec![ValidationError::graph(
                    Kind::UnsupportedVersion,
                    format!("the graph has no `version`; add \"version\": {GRAPH_VERSION}"),
                )])
            }
            Some(v) if v.as_u64() == Some(GRAPH_VERSION) => {}
            Some(v) => {
                return Err(vec![ValidationError::graph(
                    Kind::UnsupportedVersion,
                    format!(
                    "unsupported graph version {v}; this cheng reads version {GRAPH_VERSION} only"
                ),
                )])
            }
        }
        for key in top.keys() {
            if !matches!(key.as_str(), "version" | "nodes" | "edges") {
                errors.push(ValidationError::graph(
                    Kind::UnknownKey,
                    format!("unknown top-level key `{key}`; a version 1 graph has only `version`, `nodes` and `edges`"),
                ));
            }
        }
        let mut graph = Graph::default();
        match top.get("nodes") {
            Some(Value::Array(nodes)) => {
                for (i, node) in nodes.iter().enumerate() {
                    if let Some(node) = parse_node(i, node, &mut errors) {
                        graph.nodes.push(node);
                    }
                }
            }
            Some(_) => errors.push(ValidationError::graph(
                Kind::Malformed,
                "`nodes` must be an array of node objects",
            )),
            None => errors.push(ValidationError::graph(
                Kind::Malformed,
                "the graph has no `nodes` array",
            )),
        }
        match top.get("edges") {
            None | Some(Value::Null) => {}
            Some(Value::Array(edges)) => {
                for (i, edge) in edges.iter().enumerate() {
                    if let Some(edge) = parse_edge(i, edge, &mut errors) {
                        graph.edges.push(edge);
                    }
                }
            }
            Some(_) => errors.push(ValidationError::graph(
                Kind::Malformed,
                "`edges` must be an array of {\"from\": \"node.port\", \"to\": \"node.port\"} objects",
            )),
        }
        if errors.is_empty() {
            Ok(graph)
        } else {
            Err(errors)
        }
    }

    /// The graph as version 1 JSON.
    pub fn to_value(&self) -> Value {
        json!({
            "version": GRAPH_VERSION,
            "nodes": self.nodes.iter().map(|n| {
                let mut node = json!({ "id": n.id, "type": n.node_type, "config": n.config, "inputs": n.inputs });
                if !n.after.is_empty() {
                    node["after"] = json!(n.after);
                }
                node
            }).collect::<Vec<_>>(),
            "edges": self.edges.iter().map(|e| json!({
                "from": e.from.to_string(), "to": e.to.to_string(),
            })).collect::<Vec<_>>(),
        })
    }
}

fn parse_node(index: usize, value: &Value, errors: &mut Vec<ValidationError>) -> Option<GraphNode> {
    let Some(obj) = value.as_object() else {
        errors.push(ValidationError::graph(
            Kind::Malformed,
            format!("nodes[{index}] must be an object with `id` and `type`"),
        ));
        return None;
    };
    let id = match obj.get("id") {
        Some(Value::String(id)) if id.is_empty() => {
            errors.push(ValidationError::graph(
                Kind::Malformed,
                format!("nodes[{index}]: `id` is empty"),
            ));
            return None;
        }
        Some(Value::String(id)) if id.contains('.') || id.chars().any(char::is_whitespace) => {
            errors.push(ValidationError::node(
                Kind::Malformed,
                id,
                "a node id may not contain dots or whitespace (edges name ports as `node.port`)",
            ));
            return None;
        }
        Some(Value::String(id)) => id.clone(),
        _ => {
            errors.push(ValidationError::graph(
                Kind::Malformed,
                format!("nodes[{index}] needs a string `id`"),
            ));
            return None;
        }
    };
    let mut ok = true;
    for key in obj.keys() {
        if !matches!(key.as_str(), "id" | "type" | "config" | "inputs" | "after") {
            errors.push(ValidationError::node(
                Kind::UnknownKey,
                &id,
                format!("unknown key `{key}`; a node has only `id`, `type`, `config`, `inputs` and `after`"),
            ));
            ok = false;
        }
    }
    let node_type = match obj.get("type") {
        Some(Value::String(t)) => t.clone(),
        _ => {
            errors.push(ValidationError::node(
                Kind::Malformed,
                &id,
                "needs a string `type` such as \"tools/workspace_shell\"",
            ));
            return None;
        }
    };
    let mut map = |key: &str| match obj.get(key) {
        None | Some(Value::Null) => Some(Values::new()),
        Some(Value::Object(m)) => Some(m.clone()),
        Some(_) => {
            errors.push(ValidationError::node(
                Kind::Malformed,
                &id,
                format!("`{key}` must be an object of port values"),
            ));
            None
        }
    };
    let config = map("config");
    let inputs = map("inputs");
    let after = match obj.get("after") {
        None | Some(Value::Null) => Some(Vec::new()),
        Some(Value::Array(ids)) if ids.iter().all(Value::is_string) => Some(
            ids.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
        ),
        Some(_) => {
            errors.push(ValidationError::node(
                Kind::Malformed,
                &id,
                "`after` must be an array of node ids, such as [\"build\"]",
            ));
            None
        }
    };
    match (config, inputs, after) {
        (Some(config), Some(inputs), Some(after)) if ok => Some(GraphNode {
            id,
            node_type,
            config,
            inputs,
            after,
        }),
        _ => None,
    }
}

fn parse_edge(index: usize, value: &Value, errors: &mut Vec<ValidationError>) -> Option<Edge> {
    let Some(obj) = value.as_object() else {
        errors.push(ValidationError::graph(
            Kind::Malformed,
            format!("edges[{index}] must be {{\"from\": \"node.port\", \"to\": \"node.port\"}}"),
        ));
        return None;
    };
    let mut ok = true;
    for key in obj.keys() {
        if !matches!(key.as_str(), "from" | "to") {
            errors.push(ValidationError::graph(
                Kind::UnknownKey,
                format!("edges[{index}]: unknown key `{key}`; an edge has only `from` and `to`"),
            ));
            ok = false;
        }
    }
    let mut end = |key: &str| match obj
        .get(key)
        .and_then(Value::as_str)
        .map(|s| (s, Endpoint::parse(s)))
    {
        Some((_, Some(endpoint))) => Some(endpoint),
        Some((text, None)) => {
            errors.push(ValidationError::graph(
                Kind::Malformed,
                format!("edges[{index}]: `{key}` is \"{text}\"; write it as \"node.port\""),
            ));
            None
        }
        None => {
            errors.push(ValidationError::graph(
                Kind::Malformed,
                format!("edges[{index}] needs a string `{key}` (\"node.port\")"),
            ));
            None
        }
    };
    let from = end("from");
    let to = end("to");
    match (from, to) {
        (Some(from), Some(to)) if ok => Some(Edge { from, to }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_design_example() {
        let graph = Graph::from_json(
            r#"{ "version": 1,
              "nodes": [
                { "id": "detect", "type": "tools/workspace_tests", "inputs": { "operation": "detect" } },
                { "id": "test", "type": "tools/workspace_shell", "config": { "command_whitelist": "cargo" },
                  "inputs": { "command": "cargo", "args": ["test"] } } ],
              "edges": [ { "from": "detect.summary", "to": "test.purpose" } ] }"#,
        )
        .unwrap();
        assert_eq!(graph.nodes.len(), 2);
        assert_eq!(graph.edges[0].to_string(), "detect.summary → test.purpose");
        assert_eq!(Graph::from_value(&graph.to_value()).unwrap(), graph);
    }

    #[test]
    fn rejects_other_versions_and_unknown_keys() {
        let errs = Graph::from_json(r#"{"version": 2, "nodes": []}"#).unwrap_err();
        assert_eq!(errs[0].kind, Kind::UnsupportedVersion);
        assert!(errs[0].message.contains("version 1"), "{}", errs[0]);
        let errs = Graph::from_json(r#"{"version": 1, "nodes": [], "edgez": []}"#).unwrap_err();
        assert_eq!(errs[0].kind, Kind::UnknownKey);
        assert!(errs[0].message.contains("`edgez`"));
    }

    #[test]
    fn collects_every_shape_error() {
        let errs = Graph::from_json(
            r#"{"version": 1, "nodes": [{"id": "a", "type": "t", "input": {}}, {"type": "t"}],
                "edges": [{"from": "a", "to": "b.x"}]}"#,
        )
        .unwrap_err();
        assert_eq!(errs.len(), 3, "{errs:?}");
    }
}
