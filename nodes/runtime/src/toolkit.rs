//! The author's curation: `exposed_tools` entries parsed and checked against the registry.
//!
//! Every entry is checked on its own and every problem is kept (a canvas shows them all at
//! once); a broken entry never takes the others down. The node type and the entry's config go
//! through the engine's own validation, so an unknown type, a gated-out type, an unknown port or
//! a value out of range reads exactly as it would for `cheng run`.

use cheng_engine::{Engine, Graph, GraphNode, ValidationErrorKind};
use cheng_node::{Audience, Lookup, NodeSpec, PortType, Values};
use serde_json::Value;
use std::collections::HashMap;

/// The keys an entry may have.
const ENTRY_KEYS: &[&str] = &["type", "name", "description", "config", "presets"];

/// Longest function name (the limit LLM function-calling APIs share).
pub const MAX_NAME_LEN: usize = 64;

/// A usable entry: the function an agent sees and the node it runs.
#[derive(Debug, Clone)]
pub struct Tool {
    /// Function name (the entry's `name`, else the type's last segment).
    pub name: String,
    pub spec: &'static NodeSpec,
    /// The entry's `description`, else the node's own.
    pub description: String,
    /// The author's config for the node (its author ports, capped ceilings, defaults).
    pub config: Values,
    /// Agent ports the author fixed (`presets`): hidden from the function's parameters, set on
    /// every call, and refused when a call sets them.
    pub presets: Values,
}

impl Tool {
    /// The call's arguments with the presets applied; a call that sets a preset port is refused
    /// (naming the port and the author's value), so a model cannot override the author.
    pub fn with_presets(&self, mut arguments: Values) -> Result<Values, String> {
        let fixed: Vec<&String> = self
            .presets
            .keys()
            .filter(|k| arguments.contains_key(k.as_str()))
            .collect();
        if let Some(port) = fixed.first() {
            return Err(format!(
                "tool `{}`: `{port}` is fixed by the toolkit's author to {}; remove it from the arguments",
                self.name, self.presets[port.as_str()]
            ));
        }
        for (port, value) in &self.presets {
            arguments.insert(port.clone(), value.clone());
        }
        Ok(arguments)
    }
}

/// One `exposed_tools` entry: its tool when usable, else what is wrong with it.
#[derive(Debug, Clone)]
pub struct Entry {
    pub index: usize,
    /// The function name, when one could be determined (used to match tool calls).
    pub name: Option<String>,
    pub tool: Option<Tool>,
    pub errors: Vec<String>,
    pub warnings: Vec<String>,
}

/// The whole curation, in entry order.
#[derive(Debug, Clone, Default)]
pub struct Toolkit {
    pub entries: Vec<Entry>,
    /// Warnings about the toolkit as a whole.
    pub warnings: Vec<String>,
}

impl Toolkit {
    /// Parses and checks `entries` against the engine's registry.
    pub fn parse(engine: &Engine, entries: &[Value]) -> Toolkit {
        let mut toolkit = Toolkit::default();
        if entries.is_empty() {
            toolkit.warnings.push(
                "exposed_tools is empty: the toolkit offers no functions; the node's author adds entries such as {\"type\": \"tools/workspace_git\"} in the node's config".into(),
            );
        }
        let mut taken: HashMap<String, usize> = HashMap::new();
        for (index, value) in entries.iter().enumerate() {
            let mut entry = parse_entry(engine, index, value);
            if let Some(name) = &entry.name {
                if let Some(first) = taken.get(name) {
                    entry.errors.push(format!(
                        "exposed_tools[{index}]: function name `{name}` is already used by exposed_tools[{first}]; give this entry a distinct `name`"
                    ));
                    entry.tool = None;
                } else {
                    taken.insert(name.clone(), index);
                }
            }
            toolkit.entries.push(entry);
        }
        toolkit
    }

    /// Usable tools, in entry order.
    pub fn tools(&self) -> impl Iterator<Item = &Tool> {
        self.entries.iter().filter_map(|e| e.tool.as_ref())
    }

    /// The entry a tool call names: the usable one if any, else the first broken one.
    pub fn find(&self, name: &str) -> Option<&Entry> {
        let mut named = self
            .entries
            .iter()
            .filter(|e| e.name.as_deref() == Some(name));
        let first = named.clone().next();
        named.find(|e| e.tool.is_some()).or(first)
    }

    /// Every entry's errors, in entry order.
    pub fn errors(&self) -> Vec<String> {
        self.entries
            .iter()
            .flat_map(|e| e.errors.iter().cloned())
            .collect()
    }

    /// Toolkit-wide warnings, then every entry's.
    pub fn warnings(&self) -> Vec<String> {
        self.warnings
            .iter()
            .chain(self.entries.iter().flat_map(|e| e.warnings.iter()))
            .cloned()
            .collect()
    }
}

fn parse_entry(engine: &Engine, index: usize, value: &Value) -> Entry {
    let mut entry = Entry {
        index,
        name: None,
        tool: None,
        errors: Vec::new(),
        warnings: Vec::new(),
    };
    let at = format!("exposed_tools[{index}]");
    let Some(fields) = value.as_object() else {
        entry.errors.push(format!(
            "{at}: expected an object like {{\"type\": \"tools/workspace_git\"}}, got {}",
            kind_of(value)
        ));
        return entry;
    };
    for key in fields.keys().filter(|k| !ENTRY_KEYS.contains(&k.as_str())) {
        entry.errors.push(format!("{at}: unknown key `{key}`; an entry has only `type`, `name`, `description`, `config` and `presets`"));
    }
    let node_type = match fields.get("type") {
        Some(Value::String(t)) if !t.is_empty() => Some(t.as_str()),
        None | Some(Value::Null) => {
            entry.errors.push(format!("{at}: `type` is missing; name a node type such as \"tools/workspace_git\" (`cheng nodes` lists them)"));
            None
        }
        Some(other) => {
            entry.errors.push(format!(
                "{at}: `type` must be a node type id such as \"tools/workspace_git\", got {}",
                kind_of(other)
            ));
            None
        }
    };
    entry.name = match fields.get("name") {
        None | Some(Value::Null) => {
            node_type.map(|t| t.rsplit('/').next().unwrap_or(t).to_string())
        }
        Some(Value::String(name)) => Some(name.clone()),
        Some(other) => {
            entry.errors.push(format!(
                "{at}: `name` must be a string, got {}",
                kind_of(other)
            ));
            None
        }
    };
    if let Some(name) = &entry.name {
        if let Err(problem) = check_name(name) {
            let hint = if fields.get("name").is_none_or(Value::is_null) {
                "; set `name` explicitly"
            } else {
                ""
            };
            entry
                .errors
                .push(format!("{at}: function name `{name}` {problem}{hint}"));
            entry.name = None;
        }
    }
    let description = match fields.get("description") {
        None | Some(Value::Null) => None,
        Some(Value::String(d)) if !d.trim().is_empty() => Some(d.clone()),
        Some(Value::String(_)) => {
            entry.errors.push(format!(
                "{at}: `description` is empty; remove it to use the node's own description"
            ));
            None
        }
        Some(other) => {
            entry.errors.push(format!(
                "{at}: `description` must be a string, got {}",
                kind_of(other)
            ));
            None
        }
    };
    let config = match fields.get("config") {
        None | Some(Value::Null) => Values::new(),
        Some(Value::Object(config)) => config.clone(),
        Some(other) => {
            entry.errors.push(format!(
                "{at}: `config` must be an object of the node's ports, got {}",
                kind_of(other)
            ));
            Values::new()
        }
    };
    let presets = match fields.get("presets") {
        None | Some(Value::Null) => Values::new(),
        Some(Value::Object(presets)) => presets.clone(),
        Some(other) => {
            entry.errors.push(format!(
                "{at}: `presets` must be an object of the node's agent ports, got {}",
                kind_of(other)
            ));
            Values::new()
        }
    };
    let Some(node_type) = node_type else {
        return entry;
    };
    // Named for messages from here on.
    let at = match &entry.name {
        Some(name) => format!("{at} (`{name}`, {node_type})"),
        None => format!("{at} ({node_type})"),
    };
    if node_type == crate::ID {
        entry.errors.push(format!("{at}: a toolkit cannot expose {} itself (no recursion); expose the tools it would offer directly", crate::ID));
        return entry;
    }
    check_presets(engine, &at, node_type, &presets, &mut entry.errors);
    check_config(engine, &at, node_type, &config, &presets, &mut entry.errors);
    if !entry.errors.is_empty() {
        return entry;
    }
    let Lookup::Found(node) = engine.registry().lookup(node_type) else {
        // The engine's validation above already reported an unknown or gated type.
        return entry;
    };
    let spec = node.spec();
    entry.warnings.extend(switch_warnings(&at, spec, &config));
    let name = entry.name.clone().unwrap_or_default();
    entry.tool = Some(Tool {
        name,
        spec,
        description: description.unwrap_or_else(|| node.description_for(&config)),
        config,
        presets,
    });
    entry
}

/// `^[a-zA-Z0-9_-]{1,64}$`, the function-name rule LLM APIs share.
fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("is empty".into());
    }
    if name.len() > MAX_NAME_LEN {
        return Err(format!(
            "is {} characters long; use at most {MAX_NAME_LEN}",
            name.len()
        ));
    }
    match name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        Some(c) => Err(format!(
            "contains {c:?}; use only letters, digits, `_` and `-`"
        )),
        None => Ok(()),
    }
}

/// The engine's validation of the type and config, as a one-node graph without inputs. Missing
/// required agent ports are the caller's to supply, so they are not configuration errors; a
/// missing required author port is.
fn check_config(
    engine: &Engine,
    at: &str,
    node_type: &str,
    config: &Values,
    presets: &Values,
    errors: &mut Vec<String>,
) {
    let graph = Graph {
        nodes: vec![GraphNode {
            id: "tool".into(),
            node_type: node_type.into(),
            config: config.clone(),
            inputs: presets.clone(),
            after: Vec::new(),
        }],
        edges: Vec::new(),
    };
    let Err(problems) = engine.validate(&graph) else {
        return;
    };
    let spec = engine.registry().get(node_type).map(|node| node.spec());
    let callers = |port: &Option<String>| {
        let port = port
            .as_deref()
            .and_then(|name| spec.and_then(|s| s.input(name)));
        port.is_some_and(|p| p.agent_visible())
    };
    for problem in problems
        .iter()
        .filter(|p| !(p.kind == ValidationErrorKind::MissingRequired && callers(&p.port)))
    {
        errors.push(match &problem.port {
            Some(port) => format!("{at}: config.{port}: {}", problem.message),
            None => format!("{at}: {}", problem.message),
        });
    }
}

/// Presets name agent ports only: author ports belong in `config`, engine ports are the engine's.
/// Their values are checked with the config, as the call's inputs.
fn check_presets(
    engine: &Engine,
    at: &str,
    node_type: &str,
    presets: &Values,
    errors: &mut Vec<String>,
) {
    let Some(spec) = engine.registry().get(node_type).map(|node| node.spec()) else {
        return;
    };
    for port in presets.keys() {
        match spec.input(port) {
            Some(p) if p.agent_visible() => {}
            Some(p) if p.audience == Audience::Engine => errors.push(format!(
                "{at}: presets.{port}: `{port}` is set by the engine; it cannot be preset"
            )),
            Some(_) => errors.push(format!(
                "{at}: presets.{port}: `{port}` is an author port; set it in `config` instead"
            )),
            None => errors.push(format!(
                "{at}: presets.{port}: {node_type} has no input `{port}`"
            )),
        }
    }
}

/// The author turned on a capability switch: worth saying what the caller may now do.
fn switch_warnings(at: &str, spec: &NodeSpec, config: &Values) -> Vec<String> {
    spec.inputs
        .iter()
        .filter(|p| p.ty == PortType::Boolean && p.capability.is_some() && config.get(p.name) == Some(&Value::Bool(true)))
        .map(|p| match p.audience {
            Audience::Capped => format!("{at}: config.{} is true, so a caller that requests it gets it without a person being asked", p.name),
            _ => format!("{at}: config.{} is on for every call of this tool", p.name),
        })
        .collect()
}

pub(crate) use cheng_node::text::json_kind as kind_of;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_llm_function_rule() {
        assert!(check_name("workspace_git").is_ok());
        assert!(check_name("a-b_C9").is_ok());
        assert!(check_name(&"x".repeat(64)).is_ok());
        assert!(check_name(&"x".repeat(65))
            .unwrap_err()
            .contains("at most 64"));
        assert!(check_name("").is_err());
        assert!(check_name("git status").unwrap_err().contains("' '"));
        assert!(check_name("a.b").is_err());
        assert!(check_name("é").is_err());
    }
}
