//! `GET /api/nodes`: the palette a canvas draws from — `cheng nodes --json`'s array, plus what
//! drawing and connecting needs: a widget for every input and object field, and the nodes a
//! canvas should grey out (disabled by the operator, or gated off) with the reason.

use cheng_engine::{catalog, Engine};
use cheng_node::{Control, Field, NodeSpec, PortSpec, PortType};
use serde_json::{json, Value};

/// The palette for `engine` (its registry and the operator's policy), built once at start.
pub fn palette(engine: &Engine) -> Value {
    let registry = engine.registry();
    let policy = engine.policy();
    let mut nodes: Vec<Value> = registry
        .specs()
        .map(|spec| {
            let mut node = node(spec);
            if let Some(n) = registry.get(spec.id) {
                node["description"] = n.description_for(&Default::default()).into();
            }
            match policy.disabled(spec.id) {
                Some(source) => unavailable(
                    &mut node,
                    format!("disabled by the operator's policy ({source})"),
                ),
                None => node["available"] = true.into(),
            }
            node
        })
        .collect();
    for (spec, var) in registry.gated_off() {
        let mut node = node(spec);
        unavailable(
            &mut node,
            format!("gated off: start `cheng serve` with `{var}=1` to offer it"),
        );
        nodes.push(node);
    }
    nodes.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
    Value::Array(nodes)
}

fn unavailable(node: &mut Value, reason: String) {
    node["available"] = false.into();
    node["unavailable_reason"] = reason.into();
}

/// `catalog::node_json` with a widget on every input and the fields of object inputs.
fn node(spec: &NodeSpec) -> Value {
    let mut node = catalog::node_json(spec);
    if let Some(inputs) = node["inputs"].as_array_mut() {
        for (value, port) in inputs.iter_mut().zip(spec.inputs) {
            value["widget"] = widget(port).into();
            if !port.fields.is_empty() {
                value["fields"] = port.fields.iter().map(field).collect();
            }
        }
    }
    node
}

fn field(field: &Field) -> Value {
    json!({
        "name": field.name,
        "type": field.ty.display(),
        "widget": type_widget(&field.ty, false),
        "description": field.description,
    })
}

/// The widget for a port: its reference page's control where it gives one, otherwise one that
/// fits its type, choices and range.
pub fn widget(port: &PortSpec) -> &'static str {
    match port.control {
        Some(Control::Switch) => "checkbox",
        Some(Control::Textarea) => "textarea",
        Some(Control::CodeEditor) => "code",
        Some(Control::Number) => "number",
        Some(Control::Select) => "select",
        None => type_widget(&port.ty, port.choices.is_some()),
    }
}

fn type_widget(ty: &PortType, choices: bool) -> &'static str {
    match ty {
        _ if choices => "select",
        PortType::Enum(_) => "select",
        PortType::Boolean => "checkbox",
        PortType::Integer => "number",
        PortType::String => "text",
        PortType::Array(PortType::String) => "list",
        PortType::Array(_) | PortType::Object | PortType::Any => "json",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_port_type_has_a_widget() {
        let port = |ty| PortSpec::input("p", ty, "");
        assert_eq!(widget(&port(PortType::Boolean)), "checkbox");
        assert_eq!(widget(&port(PortType::Integer)), "number");
        assert_eq!(widget(&port(PortType::String)), "text");
        assert_eq!(
            widget(&port(PortType::String).choices(&["a", "b"])),
            "select"
        );
        assert_eq!(widget(&port(PortType::Enum(&["a"]))), "select");
        assert_eq!(widget(&port(PortType::Array(&PortType::String))), "list");
        assert_eq!(widget(&port(PortType::Object)), "json");
        assert_eq!(
            widget(&port(PortType::String).control(Control::CodeEditor)),
            "code"
        );
    }
}
