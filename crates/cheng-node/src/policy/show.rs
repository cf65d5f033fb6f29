//! `cheng policy show`: both layers, then every effective value and where it came from.

use super::{Origin, Policy, Source, ENV_VAR, SYSTEM_PATH};
use crate::NodeSpec;
use std::fmt;

impl Policy {
    /// The text `cheng policy show` prints: both layers, then every effective value and where it
    /// came from; where the user policy tightened a value, the machine policy's beside it.
    pub fn show<'a>(&self, specs: impl IntoIterator<Item = &'a NodeSpec>) -> String {
        self.show_marking(specs, |_| None)
    }

    /// [`Policy::show`], with a comment under each node type `gated_off` names the unset gate
    /// variable of (a node type this process does not offer: its values apply once it is set).
    pub fn show_marking<'a>(
        &self,
        specs: impl IntoIterator<Item = &'a NodeSpec>,
        gated_off: impl Fn(&NodeSpec) -> Option<&'static str>,
    ) -> String {
        let mut out = String::new();
        if self.machine.is_none() && self.user.is_none() {
            out.push_str(&format!(
                "policy: built-in defaults (no --policy, no ${ENV_VAR}, no {SYSTEM_PATH})\n"
            ));
        } else {
            match &self.machine {
                Some(m) => out.push_str(&format!(
                    "machine policy: {} (binds everyone who runs cheng here)\n",
                    m.path.display()
                )),
                None => out.push_str(&format!(
                    "machine policy: none ({SYSTEM_PATH} does not exist)\n"
                )),
            }
            match &self.user {
                Some(u) => {
                    let from = match u.origin {
                        Origin::Env => format!("${ENV_VAR}"),
                        _ => "--policy".to_string(),
                    };
                    out.push_str(&format!(
                        "user policy:    {} (from {from}){}\n",
                        u.path.display(),
                        if self.machine.is_some() {
                            "; it may only tighten the machine policy"
                        } else {
                            ""
                        }
                    ));
                }
                None => out.push_str(&format!(
                    "user policy:    none (no --policy, no ${ENV_VAR})\n"
                )),
            }
        }
        let machine = self.machine.as_ref().map(|_| self.machine_only());
        let line =
            |out: &mut String, indent: &str, (key, value, source): Shown, beside: Option<Shown>| {
                out.push_str(&format!(
                    "{indent}{:<34} {source}",
                    format!("{key} = {value}")
                ));
                // The user policy set it: show what it tightened.
                if let Some((_, machine_value, machine_source)) = beside.filter(|b| b.2 != source) {
                    out.push_str(&format!(
                        " (machine policy: {machine_value}, {machine_source})"
                    ));
                }
                out.push('\n');
            };
        let (approve, source) = self.honour_approve_flag();
        let beside = machine.as_ref().map(|m| {
            let (v, s) = m.honour_approve_flag();
            (
                "honour_approve_flag".to_string(),
                v.to_string(),
                s.to_string(),
            )
        });
        line(
            &mut out,
            "",
            (
                "honour_approve_flag".to_string(),
                approve.to_string(),
                source.to_string(),
            ),
            beside,
        );
        for spec in specs {
            out.push_str(&format!("\n[nodes.\"{}\"]\n", spec.id));
            if let Some(var) = gated_off(spec) {
                out.push_str(&format!(
                    "  # not offered here: {var} is unset (set {var}=1 to register it); these values apply once it is\n"
                ));
            }
            let mut beside = machine.as_ref().map(|m| m.shown(spec).into_iter());
            for shown in self.shown(spec) {
                let machine_shown = beside.as_mut().and_then(Iterator::next);
                line(&mut out, "  ", shown, machine_shown);
            }
        }
        out
    }

    /// One node type's effective values as (key, value, source) for [`Policy::show`].
    fn shown(&self, spec: &NodeSpec) -> Vec<Shown> {
        let mut shown: Vec<Shown> = Vec::new();
        let push = |shown: &mut Vec<Shown>, key: &str, value: String, source: &dyn fmt::Display| {
            shown.push((key.to_string(), value, source.to_string()));
        };
        let (disabled, source) = match self.disabled(spec.id) {
            Some(source) => (true, source),
            None => (
                false,
                self.rule(spec.id, |r| r.disabled)
                    .map_or(Source::Builtin, |(_, s)| s),
            ),
        };
        push(&mut shown, "disabled", disabled.to_string(), &source);
        // Each capability the node declares, once (two ports may share one).
        let mut keys: Vec<&str> = spec
            .inputs
            .iter()
            .filter_map(|p| p.capability.map(|c| c.key))
            .collect();
        // A node that is raw shell itself has no switch declaring it: the operator's
        // `shell_syntax` decides whether it runs at all.
        if super::RAW_SHELL_NODES.contains(&spec.id) {
            keys.push(crate::capability::SHELL_SYNTAX.key);
        }
        keys.dedup();
        for key in keys {
            let (setting, source) = self.setting(spec.id, key);
            push(&mut shown, key, setting.as_str().to_string(), &source);
        }
        if spec.input("request_read_paths").is_some() {
            let (paths, source) = self.read_paths(spec.id);
            let paths: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
            push(&mut shown, "read_paths", format!("{paths:?}"), &source);
        }
        if spec.input(super::HOST_RULES_PORT).is_some() {
            let (allow, deny) = self.host_rule_lists(spec.id);
            let texts = |list: &[cheng_net::HostPattern]| {
                list.iter()
                    .map(|h| h.as_str().to_string())
                    .collect::<Vec<_>>()
            };
            match allow {
                Some((list, source)) => push(
                    &mut shown,
                    "network_allow",
                    format!("{:?}", texts(&list)),
                    &source,
                ),
                None => push(
                    &mut shown,
                    "network_allow",
                    "every public host".to_string(),
                    &Source::Builtin,
                ),
            }
            let all: Vec<String> = deny.iter().flat_map(|(list, _)| texts(list)).collect();
            let deny_source = match deny.as_slice() {
                [] => Source::Builtin.to_string(),
                layers => layers
                    .iter()
                    .map(|(_, source)| source.to_string())
                    .collect::<Vec<_>>()
                    .join(" + "),
            };
            push(&mut shown, "network_deny", format!("{all:?}"), &deny_source);
        }
        if super::ENV_PROXY_NODES.contains(&spec.id) {
            let (on, source) = self.env_proxy(spec.id);
            push(&mut shown, "env_proxy", on.to_string(), &source);
        }
        if spec.input("env").is_some() {
            let (names, source) = self.env_allow(spec.id);
            push(&mut shown, "env_allow", format!("{names:?}"), &source);
        }
        for port in spec
            .inputs
            .iter()
            .filter(|p| p.ty == crate::PortType::Integer && p.agent_visible())
        {
            let key = format!("max.{}", port.name);
            match (self.max(spec.id, port.name), port.max) {
                (Some((value, source)), _) => push(&mut shown, &key, value.to_string(), &source),
                (None, Some(max)) => push(&mut shown, &key, max.to_string(), &"node spec maximum"),
                (None, None) => push(&mut shown, &key, "(none)".to_string(), &"node spec"),
            }
        }
        shown
    }
}

/// A value as `policy show` prints it: key, value, where it came from.
type Shown = (String, String, String);
