//! `cheng nodes` and `cheng describe`.

use crate::{complain, out, Exit};
use cheng_engine::{catalog, Engine, Graph, ValidationErrorKind};
use cheng_node::policy::Policy;
use cheng_node::{schema, Lookup, NodeSpec, Registry};
use serde_json::Value;

pub fn nodes(json: bool, policy: &Policy) -> Exit {
    let registry = Registry::from_inventory();
    // What the operator's policy disables is not offered (run and describe still name the rule).
    let specs: Vec<&NodeSpec> = registry
        .specs()
        .filter(|s| policy.disabled(s.id).is_none())
        .collect();
    if json {
        // A node's own description with no author config (a toolkit's may say more).
        let all: Vec<Value> = specs
            .iter()
            .map(|s| {
                let mut value = catalog::node_json(s);
                if let Some(node) = registry.get(s.id) {
                    value["description"] = node.description_for(&Default::default()).into();
                }
                value
            })
            .collect();
        return print_json(&Value::Array(all));
    }
    let width = specs.iter().map(|s| s.id.len()).max().unwrap_or(0);
    let category = specs.iter().map(|s| s.category.len()).max().unwrap_or(0);
    let effects = specs
        .iter()
        .map(|s| s.effects.describe().len())
        .max()
        .unwrap_or(0);
    let mut text = String::new();
    for spec in specs {
        text.push_str(&format!(
            "{:<width$}  {:<category$}  {:<effects$}  {}\n",
            spec.id,
            spec.category,
            spec.effects.describe(),
            spec.title
        ));
    }
    out::print(&text)
}

pub fn describe(node_type: &str, json: bool, policy: &Policy) -> Exit {
    let registry = Registry::from_inventory();
    let node_type = &crate::set::node_type(&registry, node_type);
    let spec = match registry.lookup(node_type) {
        Lookup::Found(node) => node.spec(),
        // Its page says which variable registers it; `run` keeps refusing it.
        Lookup::Gated(_) => match Registry::from_inventory_with(|_| true).get(node_type) {
            Some(node) => node.spec(),
            None => return unknown_type(registry, node_type, policy),
        },
        Lookup::Unknown => return unknown_type(registry, node_type, policy),
    };
    if let Some(source) = policy.disabled(spec.id) {
        complain(format!(
            "note: {} is disabled by the operator's policy ({source}); `cheng run` refuses it",
            spec.id
        ));
    }
    if json {
        let mut value = catalog::node_json(spec);
        value["schemas"] = schema::node_schemas_with(spec, policy);
        print_json(&value)
    } else {
        out::print(&catalog::node_markdown_with(spec, policy))
    }
}

/// The engine's own message for an unknown or gated type (with its suggestions).
fn unknown_type(registry: Registry, node_type: &str, policy: &Policy) -> Exit {
    let engine = Engine::new(registry, policy.clone());
    if let Err(errors) = engine.validate(&Graph::single(
        node_type,
        Default::default(),
        Default::default(),
    )) {
        for e in errors.iter().filter(|e| {
            matches!(
                e.kind,
                ValidationErrorKind::UnknownType | ValidationErrorKind::GatedType
            )
        }) {
            complain(&e.message);
        }
    }
    Exit::Usage
}

pub fn print_json(value: &Value) -> Exit {
    match serde_json::to_string_pretty(value) {
        Ok(text) => out::print(&format!("{text}\n")),
        Err(e) => {
            complain(format!("cannot render JSON: {e}"));
            Exit::Failed
        }
    }
}
