//! The names a policy file uses, against the node types there are: sections, `max` ports,
//! `read_paths` and capability keys.

use super::{builtin_setting, Layer, PolicyError};
use crate::capability::{Capability, Kind, Setting};
use crate::NodeSpec;

/// The capabilities `specs` declare with this key.
fn declared<'a>(
    specs: &'a [&NodeSpec],
    key: &'a str,
) -> impl Iterator<Item = &'static Capability> + 'a {
    specs
        .iter()
        .flat_map(|s| s.inputs.iter())
        .filter_map(|p| p.capability)
        .filter(move |c| c.key == key)
}

/// What is wrong with `key = setting` in `section`, whose rules reach the node types `reach`:
/// a key no node there declares (a typo, or a node type without it), or `"ask"` for a
/// capability only an author switches on.
fn capability_problem(
    section: &str,
    key: &str,
    setting: Setting,
    reach: &[&NodeSpec],
    specs: &[&NodeSpec],
) -> Option<String> {
    let switch = declared(specs, key).any(|c| c.kind == Kind::Switch);
    if declared(reach, key).next().is_none() && builtin_setting(key).is_none() {
        let mut known: Vec<&str> = specs
            .iter()
            .flat_map(|s| s.inputs.iter())
            .filter_map(|p| p.capability.map(|c| c.key))
            .chain([
                "disabled",
                "env_allow",
                "read_paths",
                "network_allow",
                "network_deny",
                "env_proxy",
                "max",
            ])
            .collect();
        known.sort_unstable();
        known.dedup();
        let closest = known
            .iter()
            .map(|k| (strsim::levenshtein(key, k), *k))
            .filter(|(d, _)| *d <= 2)
            .min()
            .map_or(String::new(), |(_, k)| format!("; did you mean `{k}`?"));
        return Some(format!(
            "[{section}] {key}: unknown key: no node type here declares a capability `{key}` (keys: {}){closest}",
            known.join(", ")
        ));
    }
    if switch && setting == Setting::Ask {
        return Some(format!(
            "[{section}] {key} = \"ask\": the node's author switches this on in config, so the operator allows it (true) or not (false)"
        ));
    }
    None
}

/// The names one layer uses, against the node types there are (gated ones included).
pub(super) fn check_layer_names(layer: &Layer, specs: &[&NodeSpec]) -> Result<(), PolicyError> {
    let file = layer.path.display().to_string();
    let mut problems = Vec::new();
    let integer_port = |spec: &NodeSpec, name: &str| {
        spec.input(name)
            .is_some_and(|p| p.ty == crate::PortType::Integer)
    };
    for (id, rules) in &layer.file.nodes {
        let Some(spec) = specs.iter().find(|s| s.id == id) else {
            let known: Vec<&str> = specs.iter().map(|s| s.id).collect();
            problems.push(format!(
                "[nodes.\"{id}\"] names no node type; known types: {}",
                known.join(", ")
            ));
            continue;
        };
        for port in rules.max.keys().filter(|port| !integer_port(spec, port)) {
            problems.push(format!(
                "[nodes.\"{id}\"] max.{port}: {id} has no integer port `{port}`"
            ));
        }
        if (rules.network_allow.is_some() || rules.network_deny.is_some())
            && spec.input(super::HOST_RULES_PORT).is_none()
        {
            problems.push(format!("[nodes.\"{id}\"] network_allow/network_deny: {id} does not apply host rules (the nodes with an allowed_hosts port do; docs/guides/network.md)"));
        }
        if rules.env_proxy.is_some() && !super::ENV_PROXY_NODES.contains(&spec.id) {
            problems.push(format!("[nodes.\"{id}\"] env_proxy: {id} connects through no proxy of the environment (only {} does; docs/guides/network.md)", super::ENV_PROXY_NODES.join(", ")));
        }
        if rules.read_paths.is_some() && spec.input("request_read_paths").is_none() {
            problems.push(format!("[nodes.\"{id}\"] read_paths: {id} runs no sandbox to mount them in (code_shell and code_python do)"));
        }
    }
    let sections = layer
        .file
        .nodes
        .iter()
        .map(|(id, r)| (format!("nodes.\"{id}\""), r))
        .chain(layer.file.all.iter().map(|r| ("all".to_string(), r)));
    for (section, rules) in sections {
        for path in rules
            .read_paths
            .iter()
            .flatten()
            .filter(|p| !p.is_absolute())
        {
            problems.push(format!(
                "[{section}] read_paths: {:?} is not an absolute host path (such as /srv/datasets)",
                path.display().to_string()
            ));
        }
    }
    for (section, node_type, rules) in layer
        .file
        .nodes
        .iter()
        .map(|(id, r)| (format!("nodes.\"{id}\""), Some(id.as_str()), r))
        .chain(layer.file.all.iter().map(|r| ("all".to_string(), None, r)))
    {
        // A node section may only name what that node declares; [all] what any node declares.
        let reach: Vec<&NodeSpec> = match node_type {
            Some(id) => specs.iter().copied().filter(|s| s.id == id).collect(),
            None => specs.to_vec(),
        };
        for (key, setting) in &rules.capabilities {
            if let Some(problem) = capability_problem(&section, key, *setting, &reach, specs) {
                problems.push(problem);
            }
        }
    }
    if let Some(all) = &layer.file.all {
        for port in all
            .max
            .keys()
            .filter(|port| !specs.iter().any(|s| integer_port(s, port)))
        {
            problems.push(format!(
                "[all] max.{port}: no node type has an integer port `{port}`"
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(PolicyError(format!(
            "the policy file {file} is not valid: {}",
            problems.join("; ")
        )))
    }
}
