//! What a run reports: each node's status and outputs, and the graph's.

use super::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeStatus {
    Succeeded,
    Failed,
    /// Not run because a node it depends on failed (or was skipped).
    Skipped,
    Cancelled,
}

impl NodeStatus {
    pub fn as_str(&self) -> &'static str {
        match self {
            NodeStatus::Succeeded => "succeeded",
            NodeStatus::Failed => "failed",
            NodeStatus::Skipped => "skipped",
            NodeStatus::Cancelled => "cancelled",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GraphStatus {
    Succeeded,
    Failed,
    Cancelled,
}

/// One node's result: its output object (every declared output present, `null` when missing).
#[derive(Debug, Clone)]
pub struct NodeResult {
    pub id: String,
    pub node_type: &'static str,
    pub status: NodeStatus,
    pub outputs: Values,
    pub duration: Duration,
    /// Why the node did not run (skipped or cancelled before it started).
    pub reason: Option<String>,
}

impl NodeResult {
    /// `{type, status, duration_ms, reason?, outputs}`.
    pub fn to_json(&self) -> Value {
        let mut obj = Map::new();
        obj.insert("type".into(), json!(self.node_type));
        obj.insert("status".into(), json!(self.status));
        obj.insert("duration_ms".into(), json!(millis(self.duration)));
        if let Some(reason) = &self.reason {
            obj.insert("reason".into(), json!(reason));
        }
        obj.insert("outputs".into(), Value::Object(self.outputs.clone()));
        Value::Object(obj)
    }
}

/// The result of a run: every node, in graph order.
#[derive(Debug, Clone)]
pub struct GraphResult {
    pub status: GraphStatus,
    pub nodes: Vec<NodeResult>,
    pub duration: Duration,
}

impl GraphResult {
    pub fn node(&self, id: &str) -> Option<&NodeResult> {
        self.nodes.iter().find(|n| n.id == id)
    }

    pub fn count(&self, status: NodeStatus) -> usize {
        self.nodes.iter().filter(|n| n.status == status).count()
    }

    /// `{status, duration_ms, nodes: {id: {type, status, duration_ms, reason?, outputs}}}`.
    pub fn to_json(&self) -> Value {
        let nodes: Map<String, Value> = self
            .nodes
            .iter()
            .map(|n| (n.id.clone(), n.to_json()))
            .collect();
        json!({ "status": self.status, "duration_ms": millis(self.duration), "nodes": nodes })
    }
}
