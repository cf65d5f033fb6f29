//! `cheng nodes` and `cheng describe`.

use crate::{complain, out, Exit};
use cheng_engine::{catalog, Engine, Graph, ValidationErrorKind};
use cheng_node::{schema, Lookup, Registry};
use serde_json::Value;

pub fn nodes(json: bool) -> Exit {
    let registry = Registry::from_inventory();
    if json {
        let all: Vec<Value> = registry.specs().map(catalog::node_json).collect();
        return print_json(&Value::Array(all));
    }
    let width = registry.specs().map(|s| s.id.len()).max().unwrap_or(0);
    let category = registry.specs().map(|s| s.category.len()).max().unwrap_or(0);
    let effects = registry.specs().map(|s| s.effects.describe().len()).max().unwrap_or(0);
    let mut text = String::new();
    for spec in registry.specs() {
        text.push_str(&format!("{:<width$}  {:<category$}  {:<effects$}  {}\n", spec.id, spec.category, spec.effects.describe(), spec.title));
    }
    out::print(&text)
}

pub fn describe(node_type: &str, json: bool) -> Exit {
    let registry = Registry::from_inventory();
    let node_type = &crate::set::node_type(&registry, node_type);
    let spec = match registry.lookup(node_type) {
        Lookup::Found(node) => node.spec(),
        // Its page says which variable registers it; `run` keeps refusing it.
        Lookup::Gated(_) => match Registry::from_inventory_with(|_| true).get(node_type) {
            Some(node) => node.spec(),
            None => return unknown_type(registry, node_type),
        },
        Lookup::Unknown => return unknown_type(registry, node_type),
    };
    if json {
        let mut value = catalog::node_json(spec);
        value["schemas"] = schema::node_schemas_with(spec, &cheng_node::policy::current());
        print_json(&value)
    } else {
        out::print(&catalog::node_markdown_with(spec, &cheng_node::policy::current()))
    }
}

/// The engine's own message for an unknown or gated type (with its suggestions).
fn unknown_type(registry: Registry, node_type: &str) -> Exit {
    let engine = Engine::new(registry);
    if let Err(errors) = engine.validate(&Graph::single(node_type, Default::default(), Default::default())) {
        for e in errors.iter().filter(|e| matches!(e.kind, ValidationErrorKind::UnknownType | ValidationErrorKind::GatedType)) {
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
