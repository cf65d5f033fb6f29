//! Describing node types to people and canvases: the palette JSON and the reference-page-style Markdown
//! reference (`cheng nodes --json`, `cheng describe`, `cheng docs`).
//!
//! Everything here is a pure function of the specs, so generated files are deterministic.

use cheng_node::capability::Setting;
use cheng_node::policy::Policy;
use cheng_node::{ApprovalRule, Effects, ErrorKind, NodeSpec, PortSpec, PortType};
use serde_json::{json, Map, Value};
use std::fmt::Write;

/// Everything a canvas needs to draw a node: ids, text, every port with its widget and audience,
/// the gate variable and the effects.
pub fn node_json(spec: &NodeSpec) -> Value {
    json!({
        "id": spec.id,
        "title": spec.title,
        "category": spec.category,
        "description": spec.description,
        "inputs": spec.inputs.iter().map(input_json).collect::<Vec<_>>(),
        "outputs": spec.outputs.iter().map(|p| json!({
            "name": p.name, "type": p.ty.display(), "description": p.description,
        })).collect::<Vec<_>>(),
        "gate": spec.gate,
        "effects": effects_json(&spec.effects),
    })
}

fn input_json(port: &PortSpec) -> Value {
    let mut obj = Map::new();
    obj.insert("name".into(), json!(port.name));
    obj.insert("type".into(), json!(port.ty.display()));
    obj.insert("required".into(), json!(port.required));
    obj.insert(
        "default".into(),
        port.default_value().unwrap_or(Value::Null),
    );
    obj.insert("min".into(), json!(port.min));
    obj.insert("max".into(), json!(port.max));
    obj.insert("choices".into(), json!(choices(port)));
    obj.insert("control".into(), json!(port.control.map(|c| c.as_str())));
    obj.insert("audience".into(), json!(port.audience.as_str()));
    obj.insert("description".into(), json!(port.description));
    Value::Object(obj)
}

/// Allowed values from `choices` or an enum type.
fn choices(port: &PortSpec) -> Option<&'static [&'static str]> {
    match (port.choices, port.ty) {
        (Some(c), _) => Some(c),
        (None, PortType::Enum(values)) => Some(values),
        _ => None,
    }
}

fn effects_json(effects: &Effects) -> Value {
    let (kind, operations) = match effects {
        Effects::ReadOnly => ("read_only", None),
        Effects::Sandboxed => ("sandboxed", None),
        Effects::Approval(ApprovalRule::Always) => ("approval", None),
        Effects::Approval(ApprovalRule::Operations(ops)) => ("approval", Some(*ops)),
        Effects::Serial(ApprovalRule::Always) => ("approval", None),
        Effects::Serial(ApprovalRule::Operations(ops)) => ("approval", Some(*ops)),
        Effects::Approval(ApprovalRule::Switch(_)) | Effects::Serial(ApprovalRule::Switch(_)) => {
            ("approval", None)
        }
    };
    let mut obj = json!({ "kind": kind, "description": effects.describe() });
    if effects.serial() {
        obj["serial"] = json!(true);
    }
    if let Some(ops) = operations {
        obj["operations"] = json!(ops);
    }
    if let Effects::Approval(ApprovalRule::Switch(port))
    | Effects::Serial(ApprovalRule::Switch(port)) = effects
    {
        obj["switch"] = json!(port);
    }
    obj
}

/// One table cell: no pipes or line breaks may escape it.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\r', '\n'], " ")
}

fn gate_line(spec: &NodeSpec) -> String {
    match spec.gate {
        Some(var) => format!(
            "registered only when `{var}` is set (e.g. `{var}=1`); otherwise absent from `cheng nodes` and the \
             server's tools, and refused by `cheng run`"
        ),
        None => "none (always registered)".to_string(),
    }
}

fn approval_line(effects: &Effects) -> String {
    match effects {
        Effects::ReadOnly => "never asked; the node only reads".to_string(),
        Effects::Sandboxed => {
            "asked only for access outside the sandbox (extra read paths, capabilities the author left on \"ask\")".to_string()
        }
        Effects::Approval(ApprovalRule::Always) => {
            "asked before every run; a denial returns `LOCAL_EXECUTOR_APPROVAL_DENIED` and nothing runs".to_string()
        }
        Effects::Approval(ApprovalRule::Operations(ops)) => format!(
            "asked before runs whose `operation` is {}; other operations run without approval",
            ops.iter().map(|o| format!("`{o}`")).collect::<Vec<_>>().join(" or ")
        ),
        Effects::Approval(ApprovalRule::Switch(port)) => format!(
            "asked before every run when the author sets `{port}` to true; otherwise never asked"
        ),
        Effects::Serial(rule) => format!(
            "{}; runs one at a time per workspace (never alongside another file-changing node, in a graph or across server calls)",
            approval_line(&Effects::Approval(*rule))
        ),
    }
}

/// The node's reference page: ChengOS's reference tables with audience and control columns, under the
/// built-in policy (what `cheng docs` publishes).
pub fn node_markdown(spec: &NodeSpec) -> String {
    node_markdown_with(spec, &Policy::builtin())
}

/// [`node_markdown`] with the effective bounds of an operator policy (what `cheng describe` prints).
pub fn node_markdown_with(spec: &NodeSpec, policy: &Policy) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# {} — `{}`\n", spec.title, spec.id);
    let _ = writeln!(md, "{}\n", spec.description.trim());
    let _ = writeln!(md, "- Category: {}", spec.category);
    let _ = writeln!(md, "- Gate: {}", gate_line(spec));
    let _ = writeln!(md, "- Effects: {}", spec.effects.describe());
    let _ = writeln!(md, "- Approval: {}\n", approval_line(&spec.effects));
    md.push_str("## Inputs\n\n");
    md.push_str("| Field | Type | Required | Default | Audience | Control | Description |\n");
    md.push_str("|---|---|:-:|---|---|---|---|\n");
    for port in spec.inputs {
        let mut description = cell(port.description);
        let mut limits = Vec::new();
        if let Some(min) = port.min {
            limits.push(format!("min {min}"));
        }
        match (cheng_node::check::ceiling(policy, spec.id, port), port.max) {
            (Some((max, _)), Some(spec_max)) if max == spec_max => {
                limits.push(format!("max {max}"))
            }
            (Some((max, layer)), _) => limits.push(format!("max {max}, {layer}")),
            (None, _) => {}
        }
        if cheng_node::check::is_capability(port) {
            let key = port.capability.map_or(port.name, |c| c.key);
            let (operator, source) = policy.setting(spec.id, key);
            let settings = match operator {
                Setting::Grant => "author: `true` grants, `\"ask\"` (default) asks a person per run, `false` refuses".to_string(),
                Setting::Ask => format!("author: `\"ask\"` (default) or `false`; the operator forbids `true` ({source})"),
                Setting::Deny => format!("refused: the operator set it to `false` ({source})"),
            };
            limits.push(settings);
        }
        if let Some(values) = choices(port) {
            limits.push(format!("one of {}", values.join(", ")));
        }
        if !limits.is_empty() {
            let _ = write!(description, " ({})", limits.join("; "));
        }
        let _ = writeln!(
            md,
            "| `{}` | {} | {} | {} | {} | {} | {} |",
            port.name,
            cell(&port.ty.display()),
            if port.required { "✓" } else { "—" },
            port.default
                .map(|d| format!("`{}`", cell(d)))
                .unwrap_or_else(|| "—".into()),
            port.audience.as_str(),
            port.control
                .map(|c| format!("`{}`", c.as_str()))
                .unwrap_or_else(|| "—".into()),
            description,
        );
    }
    md.push_str(
        "\nAudience: `llm` — agents and canvases fill it; `author` — only the node's config; \
         `capped` — agents may request it, up to what the node's config and the operator's policy allow \
         (capability switches on `\"ask\"` go to a person for approval); \
         `engine` — injected by the engine, rejected from inputs and config.\n\n",
    );
    md.push_str("## Outputs\n\n");
    md.push_str("| Field | Type | Description |\n");
    md.push_str("|---|---|---|\n");
    for port in spec.outputs {
        let _ = writeln!(
            md,
            "| `{}` | {} | {} |",
            port.name,
            cell(&port.ty.display()),
            cell(port.description)
        );
    }
    md
}

/// `docs/nodes/README.md`: one row per node, linking its page.
pub fn index_markdown<'a>(specs: impl Iterator<Item = &'a NodeSpec>) -> String {
    let mut md = String::from(
        "# Node reference\n\nGenerated by `cheng docs --write` from the node specs; do not edit by hand. \
         Nodes with a gate variable are registered only when it is set (their pages say so). Failure codes: [errors](../errors.md).\n\n\
         | Node | Title | Category | Effects | Gate |\n|---|---|---|---|---|\n",
    );
    for spec in specs {
        let _ = writeln!(
            md,
            "| [`{}`]({}.md) | {} | {} | {} | {} |",
            spec.id,
            spec.short_name(),
            cell(spec.title),
            spec.category,
            spec.effects.describe(),
            spec.gate
                .map(|g| format!("`{g}`"))
                .unwrap_or_else(|| "—".into()),
        );
    }
    md
}

/// `docs/errors.md`: every `LOCAL_EXECUTOR_*` code, whether it is terminal, and what it means.
pub fn errors_markdown() -> String {
    let mut md = String::from(
        "# Error codes\n\nGenerated by `cheng docs --write`; do not edit by hand.\n\n\
         A failure is still a normal output object: `success: false`, `error_kind` (one of the codes below), \
         `terminal` and `error`. A terminal error must not be retried as is: a person or the node's author \
         has to act first.\n\n| Code | Terminal | Meaning |\n|---|:-:|---|\n",
    );
    for kind in ErrorKind::ALL {
        let _ = writeln!(
            md,
            "| `{}` | {} | {} |",
            kind.code(),
            if kind.terminal() { "yes" } else { "no" },
            cell(kind.meaning())
        );
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use cheng_node::{Audience, Control};

    static SPEC: NodeSpec = NodeSpec {
        id: "test/doc",
        title: "Doc",
        description: "Documents | things.",
        category: "test",
        inputs: &[
            PortSpec::input("timeout_ms", PortType::Integer, "Budget")
                .default("null")
                .max(600000),
            PortSpec::input("allow_x", PortType::Boolean, "Switch")
                .default("false")
                .audience(Audience::Author)
                .control(Control::Switch),
            PortSpec::sandbox_root(),
        ],
        outputs: &[PortSpec::output("success", PortType::Boolean, "ok")],
        gate: Some("CHENG_ENABLE_DOC"),
        effects: Effects::Approval(ApprovalRule::Operations(&["run"])),
    };

    #[test]
    fn markdown_has_the_reference_columns_and_escapes_pipes() {
        let md = node_markdown(&SPEC);
        assert!(
            md.contains("| Field | Type | Required | Default | Audience | Control | Description |")
        );
        assert!(
            md.contains("| `allow_x` | boolean | — | `false` | author | `switch` | Switch |"),
            "{md}"
        );
        assert!(md.contains("Budget (max 600000)"));
        assert!(md.contains("CHENG_ENABLE_DOC"));
        assert!(md.contains("`operation` is `run`"));
    }

    #[test]
    fn json_carries_what_a_canvas_draws() {
        let v = node_json(&SPEC);
        assert_eq!(v["inputs"][1]["control"], "switch");
        assert_eq!(v["inputs"][1]["audience"], "author");
        assert_eq!(v["inputs"][0]["max"], 600000);
        assert_eq!(v["gate"], "CHENG_ENABLE_DOC");
        assert_eq!(v["effects"]["operations"][0], "run");
    }

    #[test]
    fn error_table_lists_every_code() {
        let md = errors_markdown();
        let rows: Vec<&str> = md
            .lines()
            .filter(|l| l.starts_with("| `LOCAL_EXECUTOR_"))
            .collect();
        assert_eq!(rows.len(), ErrorKind::ALL.len(), "{md}");
        for kind in ErrorKind::ALL {
            // Code, terminal flag and meaning, on one row.
            let terminal = if kind.terminal() { "yes" } else { "no" };
            let row = format!("| `{}` | {terminal} | {} |", kind.code(), kind.meaning());
            assert!(rows.contains(&row.as_str()), "missing row {row}");
            assert!(
                kind.meaning().ends_with('.') && kind.meaning().len() > 30,
                "{kind:?} needs a real meaning"
            );
        }
        // The two ends of the spectrum, spelled out.
        assert!(md.contains("| `LOCAL_EXECUTOR_APPROVAL_DENIED` | yes |"));
        assert!(md.contains("| `LOCAL_EXECUTOR_NON_ZERO_EXIT` | no |"));
    }
}
