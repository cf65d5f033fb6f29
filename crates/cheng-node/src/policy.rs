//! The operator's policy: the machine-wide layer that bounds every node's author.
//!
//! Three layers of control, strictly ordered: the **operator** (this file) bounds the **author**
//! (a node's `config`), who bounds the **agent** (the node's `inputs`). A value above the layer
//! above it is refused at validation, with a message naming the layer that set the bound.
//!
//! Two files, both TOML; an unknown key, a wrong type or an unreadable file is an error naming
//! the file and the key, never a silent default:
//!
//! - the **machine policy**, [`SYSTEM_PATH`]: when it exists it is always read, whoever runs
//!   cheng and whatever they pass;
//! - a **user policy**, named by `--policy FILE`, else `$CHENG_POLICY`: it may only tighten the
//!   machine policy. A key that would loosen it (a higher `max`, a capability above the
//!   machine's, `honour_approve_flag = true` where the machine says false, an `env_allow` name
//!   or a `read_paths` entry the machine does not list, …) is an error naming both files and the
//!   key ([`Policy::load`]). Without a machine file the user policy is the whole policy.
//!
//! Each value comes from the user policy if it sets it, else the machine policy, else the
//! built-in defaults ([`Policy::builtin`]); since the user policy only tightens, that is the
//! strictest of the layers.
//!
//! The machine path is a constant with no run-time override: no flag, variable or feature can
//! point cheng at another machine file, so whoever starts cheng cannot swap the operator's
//! ceilings for their own. The library takes the path as a parameter ([`Policy::load_from`]) for
//! unit tests; the CLI tests put a machine file at the real path inside a private mount namespace
//! (bubblewrap: a tmpfs over /etc holding the host's entries and the test's file), so no test
//! writes the host's /etc and no other test or process can see the file.
//!
//! ```
//! use cheng_node::policy::{Capability, Policy};
//!
//! let policy = Policy::from_toml_str(r#"
//!     [all]
//!     max = { timeout_ms = 120000 }
//!     [nodes."tools/code_shell"]
//!     allow_network = false
//! "#, "/etc/cheng/policy.toml").unwrap();
//! assert_eq!(policy.max("tools/code_shell", "timeout_ms").unwrap().0, 120000);
//! assert_eq!(policy.capability("tools/code_shell", "allow_network").0, Capability::Deny);
//! assert_eq!(policy.capability("tools/code_python", "allow_network").0, Capability::Grant);
//! ```

mod tighten;

use crate::NodeSpec;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use tighten::check_tightens;

/// The machine policy: read whenever it exists; a user policy may only tighten it.
pub const SYSTEM_PATH: &str = "/etc/cheng/policy.toml";

/// Node types that are raw shell themselves (no `allow_shell_string` switch to turn it on): the
/// operator's `shell_syntax` decides whether they run at all, and `policy show` lists it for them.
pub const RAW_SHELL_NODES: &[&str] = &["tools/run_command"];

/// The environment variable naming a user policy file.
pub const ENV_VAR: &str = "CHENG_POLICY";

/// The capability switches an agent may request on the code executors.
pub const CAPABILITIES: [&str; 3] = [
    "allow_network",
    "allow_filesystem",
    "allow_full_disk_readonly",
];

/// What a capability switch opens, in the words an approval card uses.
pub fn capability_opens(name: &str) -> &'static str {
    match name {
        "allow_network" => "outbound network access from the sandbox (any host, any port)",
        "allow_filesystem" => {
            "write access to the workspace (files can be created, changed and deleted)"
        }
        "allow_full_disk_readonly" => {
            "read-only access to the whole disk (every file this user can read)"
        }
        _ => "a capability beyond the sandbox's defaults",
    }
}

/// An author's or operator's setting of a capability switch: `true`, `"ask"` or `false`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(try_from = "CapabilityText")]
pub enum Capability {
    /// `false`: refused at validation; nobody is asked.
    Deny,
    /// `"ask"`: an agent may request it; a person approves it for the run.
    Ask,
    /// `true`: granted without asking.
    Grant,
}

impl Capability {
    /// From a config value: `true`, `false` or `"ask"`.
    pub fn from_json(value: &serde_json::Value) -> Option<Capability> {
        match value {
            serde_json::Value::Bool(true) => Some(Capability::Grant),
            serde_json::Value::Bool(false) => Some(Capability::Deny),
            serde_json::Value::String(s) if s == "ask" => Some(Capability::Ask),
            _ => None,
        }
    }

    /// The TOML/JSON spelling.
    pub fn as_str(&self) -> &'static str {
        match self {
            Capability::Deny => "false",
            Capability::Ask => "\"ask\"",
            Capability::Grant => "true",
        }
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum CapabilityText {
    Bool(bool),
    Word(String),
}

impl TryFrom<CapabilityText> for Capability {
    type Error = String;
    fn try_from(text: CapabilityText) -> Result<Self, String> {
        match text {
            CapabilityText::Bool(true) => Ok(Capability::Grant),
            CapabilityText::Bool(false) => Ok(Capability::Deny),
            CapabilityText::Word(w) if w == "ask" => Ok(Capability::Ask),
            CapabilityText::Word(w) => Err(format!(
                "\"{w}\" is not a capability setting; use true, \"ask\" or false"
            )),
        }
    }
}

/// The file's top level.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    /// Whether `--approve` (and other blanket approvals) are honoured. Default true.
    honour_approve_flag: Option<bool>,
    /// Rules for every node type.
    all: Option<Rules>,
    /// Rules for one node type, by id; they override `all`.
    #[serde(default)]
    nodes: BTreeMap<String, Rules>,
}

/// What the operator may say about a node type (or all of them).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Rules {
    disabled: Option<bool>,
    shell_syntax: Option<bool>,
    env_allow: Option<Vec<String>>,
    allow_network: Option<Capability>,
    allow_filesystem: Option<Capability>,
    allow_full_disk_readonly: Option<Capability>,
    /// Whether an author may add read-only roots (`read_roots`) to the file nodes. Default true.
    read_roots: Option<bool>,
    /// Host paths the sandboxed executors (the nodes with `request_read_paths`) mount read-only
    /// in every run, at the same path, without asking anybody. Default none.
    read_paths: Option<Vec<PathBuf>>,
    /// Highest value per integer port, by port name.
    #[serde(default)]
    max: BTreeMap<String, i64>,
}

impl Rules {
    fn capability(&self, name: &str) -> Option<Capability> {
        match name {
            "allow_network" => self.allow_network,
            "allow_filesystem" => self.allow_filesystem,
            "allow_full_disk_readonly" => self.allow_full_disk_readonly,
            _ => None,
        }
    }
}

/// How the policy file was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Builtin,
    Flag,
    Env,
    System,
}

/// Where one effective value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// No policy said anything: the documented built-in default.
    Builtin,
    /// A section of the policy file: `all` or `nodes."tools/x"`.
    File { path: PathBuf, section: String },
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Builtin => f.write_str("built-in default"),
            Source::File { path, section } => write!(f, "policy {} [{section}]", path.display()),
        }
    }
}

/// A policy file that could not be used: the message names the file and, where there is one, the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyError(pub String);

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PolicyError {}

/// One policy file, parsed.
#[derive(Debug, Clone)]
struct Layer {
    path: PathBuf,
    origin: Origin,
    file: PolicyFile,
}

impl Layer {
    /// The node-specific rule, else the `all` rule, with where it came from.
    fn rule<T>(&self, node_type: &str, get: impl Fn(&Rules) -> Option<T>) -> Option<(T, Source)> {
        if let Some(value) = self.file.nodes.get(node_type).and_then(&get) {
            return Some((
                value,
                Source::File {
                    path: self.path.clone(),
                    section: format!("nodes.\"{node_type}\""),
                },
            ));
        }
        let value = self.file.all.as_ref().and_then(get)?;
        Some((
            value,
            Source::File {
                path: self.path.clone(),
                section: "all".into(),
            },
        ))
    }

    fn honour_approve_flag(&self) -> Option<(bool, Source)> {
        self.file.honour_approve_flag.map(|v| {
            (
                v,
                Source::File {
                    path: self.path.clone(),
                    section: "top level".into(),
                },
            )
        })
    }
}

/// The operator's effective policy: the machine policy, tightened by a user policy.
#[derive(Debug, Clone)]
pub struct Policy {
    machine: Option<Layer>,
    user: Option<Layer>,
}

impl Default for Policy {
    fn default() -> Self {
        Policy::builtin()
    }
}

impl Policy {
    /// The built-in defaults: nothing disabled, shell syntax not allowed, no extra env names,
    /// no ceilings beyond the specs', capabilities left to the author, `--approve` honoured.
    pub fn builtin() -> Policy {
        Policy {
            machine: None,
            user: None,
        }
    }

    /// Parses policy text as the whole policy (one layer); `path` is only used in messages and
    /// sources.
    pub fn from_toml_str(text: &str, path: impl Into<PathBuf>) -> Result<Policy, PolicyError> {
        Ok(Policy {
            machine: None,
            user: Some(parse(text, path.into(), Origin::Flag)?),
        })
    }

    /// Reads one policy file as the whole policy (an unreadable file is an error naming it).
    pub fn from_file(path: &Path) -> Result<Policy, PolicyError> {
        Ok(Policy {
            machine: None,
            user: Some(read(path, Origin::Flag)?),
        })
    }

    /// The machine policy ([`SYSTEM_PATH`]) when it exists, tightened by `--policy FILE`, else
    /// `$CHENG_POLICY`.
    pub fn load(flag: Option<&Path>) -> Result<Policy, PolicyError> {
        let env = std::env::var_os(ENV_VAR)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        Policy::load_from(flag, env.as_deref(), Path::new(SYSTEM_PATH))
    }

    /// [`Policy::load`] with the environment and the machine path given (for tests).
    pub fn load_from(
        flag: Option<&Path>,
        env: Option<&Path>,
        system: &Path,
    ) -> Result<Policy, PolicyError> {
        // Present but unreadable (or not even known to be absent) is an error, never "absent".
        let machine = match system.try_exists() {
            Ok(true) => Some(read(system, Origin::System).map_err(|e| {
                PolicyError(format!(
                    "{e} (the machine policy; it binds everyone who runs cheng here, so cheng does not start without it)"
                ))
            })?),
            Ok(false) => None,
            Err(e) => {
                return Err(PolicyError(format!(
                    "cannot tell whether the machine policy {} exists: {e}; cheng does not start without knowing it",
                    system.display()
                )))
            }
        };
        let user = match (flag, env) {
            (Some(p), _) => Some(
                read(p, Origin::Flag)
                    .map_err(|e| PolicyError(format!("{e} (given with --policy)")))?,
            ),
            (None, Some(p)) => Some(
                read(p, Origin::Env)
                    .map_err(|e| PolicyError(format!("{e} (named by ${ENV_VAR})")))?,
            ),
            (None, None) => None,
        };
        if let (Some(machine), Some(user)) = (&machine, &user) {
            check_tightens(machine, user)?;
        }
        Ok(Policy { machine, user })
    }

    /// The operator's file, the one to edit to allow more: the machine policy when there is
    /// one, else the user policy (`None` for the built-in defaults).
    pub fn path(&self) -> Option<&Path> {
        self.machine
            .as_ref()
            .or(self.user.as_ref())
            .map(|l| l.path.as_path())
    }

    /// The machine policy's file, when it exists.
    pub fn machine_path(&self) -> Option<&Path> {
        self.machine.as_ref().map(|l| l.path.as_path())
    }

    /// The user policy's file, when one was named.
    pub fn user_path(&self) -> Option<&Path> {
        self.user.as_ref().map(|l| l.path.as_path())
    }

    /// Where the layer that decides first came from: the user policy's origin, else the
    /// machine's, else built-in.
    pub fn origin(&self) -> Origin {
        self.user
            .as_ref()
            .or(self.machine.as_ref())
            .map_or(Origin::Builtin, |l| l.origin)
    }

    /// The machine policy alone (what the user policy tightens).
    fn machine_only(&self) -> Policy {
        Policy {
            machine: self.machine.clone(),
            user: None,
        }
    }

    /// The layers, machine first.
    fn layers(&self) -> impl Iterator<Item = &Layer> {
        self.machine.iter().chain(self.user.iter())
    }

    /// Checks the names the file uses against the node types there are (gated ones included):
    /// a section for an unknown type, or a `max` for a port that is not an integer port of it.
    /// Each layer is checked on its own.
    pub fn check_names<'a>(
        &self,
        specs: impl IntoIterator<Item = &'a NodeSpec>,
    ) -> Result<(), PolicyError> {
        let specs: Vec<&NodeSpec> = specs.into_iter().collect();
        self.layers()
            .try_for_each(|layer| check_layer_names(layer, &specs))
    }

    /// The user policy's rule, else the machine policy's (each: the node-specific rule, else the
    /// `all` rule), with where it came from. The user's is never looser ([`check_tightens`]).
    fn rule<T>(&self, node_type: &str, get: impl Fn(&Rules) -> Option<T>) -> Option<(T, Source)> {
        self.user
            .as_ref()
            .and_then(|l| l.rule(node_type, &get))
            .or_else(|| self.machine.as_ref().and_then(|l| l.rule(node_type, &get)))
    }

    /// `Some(source)` when the operator disabled this node type.
    pub fn disabled(&self, node_type: &str) -> Option<Source> {
        self.rule(node_type, |r| r.disabled)
            .filter(|(d, _)| *d)
            .map(|(_, s)| s)
    }

    /// Whether raw shell syntax may be allowed by an author (`allow_shell_string`). Default false.
    pub fn shell_syntax(&self, node_type: &str) -> (bool, Source) {
        self.rule(node_type, |r| r.shell_syntax)
            .unwrap_or((false, Source::Builtin))
    }

    /// Extra environment names agents may set (beyond the node's safe baseline). Default none.
    pub fn env_allow(&self, node_type: &str) -> (Vec<String>, Source) {
        self.rule(node_type, |r| r.env_allow.clone())
            .unwrap_or((Vec::new(), Source::Builtin))
    }

    /// Whether an author may add read-only roots outside the workspace (`read_roots` on the file
    /// nodes). Default true.
    pub fn read_roots(&self, node_type: &str) -> (bool, Source) {
        self.rule(node_type, |r| r.read_roots)
            .unwrap_or((true, Source::Builtin))
    }

    /// The highest setting the operator allows for a capability switch. Default `true` (the
    /// author decides).
    pub fn capability(&self, node_type: &str, name: &str) -> (Capability, Source) {
        self.rule(node_type, |r| r.capability(name))
            .unwrap_or((Capability::Grant, Source::Builtin))
    }

    /// Host paths mounted read-only in every sandboxed run of this node type, unasked. Default none.
    pub fn read_paths(&self, node_type: &str) -> (Vec<PathBuf>, Source) {
        self.rule(node_type, |r| r.read_paths.clone())
            .unwrap_or((Vec::new(), Source::Builtin))
    }

    /// The operator's ceiling for an integer port, if any.
    pub fn max(&self, node_type: &str, port: &str) -> Option<(i64, Source)> {
        self.rule(node_type, |r| r.max.get(port).copied())
    }

    /// Whether `--approve` is honoured. Default true.
    pub fn honour_approve_flag(&self) -> (bool, Source) {
        self.user
            .as_ref()
            .and_then(Layer::honour_approve_flag)
            .or_else(|| self.machine.as_ref().and_then(Layer::honour_approve_flag))
            .unwrap_or((true, Source::Builtin))
    }

    /// The text `cheng policy show` prints: both layers, then every effective value and where it
    /// came from; where the user policy tightened a value, the machine policy's beside it.
    pub fn show<'a>(&self, specs: impl IntoIterator<Item = &'a NodeSpec>) -> String {
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
        if spec.input("allow_shell_string").is_some() || RAW_SHELL_NODES.contains(&spec.id) {
            let (allowed, source) = self.shell_syntax(spec.id);
            push(&mut shown, "shell_syntax", allowed.to_string(), &source);
        }
        if spec.input("read_roots").is_some() {
            let (allowed, source) = self.read_roots(spec.id);
            push(&mut shown, "read_roots", allowed.to_string(), &source);
        }
        if spec.input("request_read_paths").is_some() {
            let (paths, source) = self.read_paths(spec.id);
            let paths: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
            push(&mut shown, "read_paths", format!("{paths:?}"), &source);
        }
        if spec.input("env").is_some() {
            let (names, source) = self.env_allow(spec.id);
            push(&mut shown, "env_allow", format!("{names:?}"), &source);
        }
        for name in CAPABILITIES.iter().filter(|n| spec.input(n).is_some()) {
            let (cap, source) = self.capability(spec.id, name);
            push(&mut shown, name, cap.as_str().to_string(), &source);
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

/// Parses one policy file's text.
fn parse(text: &str, path: PathBuf, origin: Origin) -> Result<Layer, PolicyError> {
    let file: PolicyFile = toml::from_str(text).map_err(|e| {
        PolicyError(format!(
            "the policy file {} is not valid: {}(see docs/guides/policy.md for every key)",
            path.display(),
            e.to_string().trim_end().to_string() + "\n"
        ))
    })?;
    Ok(Layer { path, origin, file })
}

/// Reads and parses one policy file (an unreadable file is an error naming it).
fn read(path: &Path, origin: Origin) -> Result<Layer, PolicyError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        PolicyError(format!(
            "cannot read the policy file {}: {e}",
            path.display()
        ))
    })?;
    parse(&text, path.to_path_buf(), origin)
}

/// The names one layer uses, against the node types there are (gated ones included).
fn check_layer_names(layer: &Layer, specs: &[&NodeSpec]) -> Result<(), PolicyError> {
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

static CURRENT: OnceLock<Arc<Policy>> = OnceLock::new();

/// Makes `policy` the process's policy (what [`current`] returns). The first call wins; a
/// later call returns `false` and changes nothing.
pub fn install(policy: Policy) -> bool {
    CURRENT.set(Arc::new(policy)).is_ok()
}

/// The installed policy, else the built-in defaults. Engines and schema rendering without an
/// explicit policy use this.
pub fn current() -> Arc<Policy> {
    match CURRENT.get() {
        Some(policy) => Arc::clone(policy),
        None => Arc::new(Policy::builtin()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "/etc/cheng/policy.toml";

    #[test]
    fn node_rules_override_all_and_sources_name_the_section() {
        let policy = Policy::from_toml_str(
            "[all]\nmax = { timeout_ms = 100 }\nshell_syntax = true\n[nodes.\"tools/code_shell\"]\nmax = { timeout_ms = 50 }\n",
            FILE,
        )
        .unwrap();
        let (max, source) = policy.max("tools/code_shell", "timeout_ms").unwrap();
        assert_eq!(max, 50);
        assert_eq!(
            source.to_string(),
            "policy /etc/cheng/policy.toml [nodes.\"tools/code_shell\"]"
        );
        let (max, source) = policy.max("tools/code_python", "timeout_ms").unwrap();
        assert_eq!(max, 100);
        assert_eq!(source.to_string(), "policy /etc/cheng/policy.toml [all]");
        assert!(policy.shell_syntax("tools/workspace_shell").0);
    }

    #[test]
    fn builtin_defaults() {
        let policy = Policy::builtin();
        assert_eq!(
            policy.shell_syntax("tools/workspace_shell"),
            (false, Source::Builtin)
        );
        assert_eq!(
            policy.capability("tools/code_shell", "allow_network"),
            (Capability::Grant, Source::Builtin)
        );
        assert_eq!(policy.honour_approve_flag(), (true, Source::Builtin));
        assert!(policy.max("tools/code_shell", "timeout_ms").is_none());
        assert!(policy.disabled("tools/code_shell").is_none());
    }

    #[test]
    fn unknown_keys_and_wrong_types_name_the_key_and_the_file() {
        let err = Policy::from_toml_str("[all]\nallow_netwrok = false\n", FILE)
            .unwrap_err()
            .0;
        assert!(err.contains(FILE) && err.contains("allow_netwrok"), "{err}");
        let err = Policy::from_toml_str("[all]\nmax = { timeout_ms = \"lots\" }\n", FILE)
            .unwrap_err()
            .0;
        assert!(
            err.contains(FILE) && err.contains("timeout_ms") && err.contains("invalid type"),
            "{err}"
        );
        let err = Policy::from_toml_str("[all]\nallow_network = \"maybe\"\n", FILE)
            .unwrap_err()
            .0;
        assert!(
            err.contains("allow_network") && err.contains("\"ask\""),
            "{err}"
        );
        let err = Policy::from_toml_str("honor_approve_flag = false\n", FILE)
            .unwrap_err()
            .0;
        assert!(err.contains("honor_approve_flag"), "{err}");
    }

    #[test]
    fn read_roots_can_be_forbidden_per_node_or_for_all() {
        assert_eq!(
            Policy::builtin().read_roots("tools/read_file"),
            (true, Source::Builtin)
        );
        let policy =
            Policy::from_toml_str("[nodes.\"tools/read_file\"]\nread_roots = false\n", FILE)
                .unwrap();
        assert!(!policy.read_roots("tools/read_file").0);
        assert!(policy.read_roots("tools/write_file").0);
    }

    #[test]
    fn capability_words() {
        let policy = Policy::from_toml_str(
            "[all]\nallow_network = \"ask\"\nallow_filesystem = false\n",
            FILE,
        )
        .unwrap();
        assert_eq!(policy.capability("x", "allow_network").0, Capability::Ask);
        assert_eq!(
            policy.capability("x", "allow_filesystem").0,
            Capability::Deny
        );
        assert!(Capability::Deny < Capability::Ask && Capability::Ask < Capability::Grant);
    }

    #[test]
    fn loading_order_and_missing_files() {
        let dir = tempfile::tempdir().unwrap();
        let system = dir.path().join("system.toml");
        let env = dir.path().join("env.toml");
        let flag = dir.path().join("flag.toml");
        // Nothing exists: built-in.
        assert_eq!(
            Policy::load_from(None, None, &system).unwrap().origin(),
            Origin::Builtin
        );
        std::fs::write(&system, "honour_approve_flag = false\n").unwrap();
        std::fs::write(&env, "").unwrap();
        std::fs::write(&flag, "").unwrap();
        assert_eq!(
            Policy::load_from(None, None, &system).unwrap().origin(),
            Origin::System
        );
        assert_eq!(
            Policy::load_from(None, Some(&env), &system)
                .unwrap()
                .origin(),
            Origin::Env
        );
        assert_eq!(
            Policy::load_from(Some(&flag), Some(&env), &system)
                .unwrap()
                .origin(),
            Origin::Flag
        );
        // A file named explicitly must exist: never a silent fallback.
        let missing = dir.path().join("missing.toml");
        let err = Policy::load_from(Some(&missing), None, &system)
            .unwrap_err()
            .0;
        assert!(
            err.contains("missing.toml") && err.contains("--policy"),
            "{err}"
        );
        let err = Policy::load_from(None, Some(&missing), &system)
            .unwrap_err()
            .0;
        assert!(err.contains("CHENG_POLICY"), "{err}");
        // A directory is unreadable as a file.
        let err = Policy::load_from(Some(dir.path()), None, &system)
            .unwrap_err()
            .0;
        assert!(err.contains("cannot read the policy file"), "{err}");
    }

    const MACHINE: &str = "honour_approve_flag = false\n[all]\nmax = { timeout_ms = 120000 }\nallow_network = \"ask\"\nread_paths = [\"/srv/data\"]\n[nodes.\"tools/code_shell\"]\nallow_network = false\n[nodes.\"tools/workspace_shell\"]\nenv_allow = [\"HTTP_*\"]\n[nodes.\"tools/code_js\"]\ndisabled = true\n";

    /// A machine file and a user file in a temporary directory.
    fn layered(user: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let machine = dir.path().join("machine.toml");
        let user_path = dir.path().join("user.toml");
        std::fs::write(&machine, MACHINE).unwrap();
        std::fs::write(&user_path, user).unwrap();
        (dir, machine, user_path)
    }

    #[test]
    fn a_user_policy_that_loosens_the_machine_policy_is_refused_naming_both_files_and_the_key() {
        for (user, says) in [
            ("honour_approve_flag = true\n", "honour_approve_flag = true"),
            (
                "[all]\nmax = { timeout_ms = 200000 }\n",
                "[all] max.timeout_ms = 200000 is looser than the machine policy's 120000",
            ),
            (
                "[nodes.\"tools/code_python\"]\nmax = { timeout_ms = 120001 }\n",
                "max.timeout_ms = 120001",
            ),
            (
                "[all]\nallow_network = true\n",
                "[all] allow_network = true is looser than the machine policy's \"ask\"",
            ),
            // "ask" is the machine's [all], but code_shell's section says false.
            (
                "[all]\nallow_network = \"ask\"\n",
                "[nodes.\"tools/code_shell\"]",
            ),
            (
                "[nodes.\"tools/code_shell\"]\nallow_network = \"ask\"\n",
                "allow_network = \"ask\"",
            ),
            ("[all]\nshell_syntax = true\n", "(built-in default)"),
            (
                "[nodes.\"tools/workspace_shell\"]\nenv_allow = [\"H*\"]\n",
                "env_allow = [\"H*\"]",
            ),
            ("[all]\nread_paths = [\"/srv/data/link\"]\n", "read_paths"),
            ("[all]\nread_paths = [\"/etc\"]\n", "read_paths"),
            (
                "[nodes.\"tools/code_js\"]\ndisabled = false\n",
                "disabled = false",
            ),
        ] {
            let (dir, machine, user_path) = layered(user);
            let loaded = Policy::load_from(Some(&user_path), None, &machine);
            let err = loaded.unwrap_err().0;
            assert!(
                err.contains(&user_path.display().to_string())
                    && err.contains(&machine.display().to_string())
                    && err.contains(says),
                "{user} => {err}"
            );
            // Named by $CHENG_POLICY: the same.
            assert!(
                Policy::load_from(None, Some(&user_path), &machine).is_err(),
                "{user}"
            );
            // Without a machine file the same user file is the whole policy: it would have worked.
            let absent = dir.path().join("absent.toml");
            let alone = Policy::load_from(Some(&user_path), None, &absent);
            assert!(alone.is_ok(), "{user}: {:?}", alone.err());
        }
    }

    #[test]
    fn a_user_policy_that_tightens_is_applied_and_the_machine_fills_the_rest() {
        let (_dir, machine, user) = layered(
            "[all]\nmax = { timeout_ms = 1000 }\nallow_network = false\n[nodes.\"tools/workspace_shell\"]\nenv_allow = [\"HTTP_PROXY\"]\n[nodes.\"tools/code_python\"]\nread_paths = [\"/srv/data\"]\ndisabled = true\n",
        );
        let policy = Policy::load_from(Some(&user), None, &machine).unwrap();
        let (max, source) = policy.max("tools/code_shell", "timeout_ms").unwrap();
        assert_eq!(max, 1000);
        assert_eq!(
            source.to_string(),
            format!("policy {} [all]", user.display())
        );
        assert_eq!(
            policy.capability("tools/code_python", "allow_network").0,
            Capability::Deny
        );
        assert_eq!(policy.env_allow("tools/workspace_shell").0, ["HTTP_PROXY"]);
        assert!(policy.disabled("tools/code_python").is_some());
        // What the user policy does not set comes from the machine policy.
        let (approve, source) = policy.honour_approve_flag();
        assert!(!approve);
        assert!(source.to_string().contains(&machine.display().to_string()));
        assert!(policy.disabled("tools/code_js").is_some());
        assert_eq!(
            policy.read_paths("tools/code_shell").0,
            [PathBuf::from("/srv/data")]
        );
        assert_eq!(policy.path(), Some(machine.as_path()));
        assert_eq!(policy.user_path(), Some(user.as_path()));
        // `policy show` names both layers, and beside a tightened value the machine's.
        let show = policy.show(std::iter::empty());
        assert!(
            show.contains(&format!("machine policy: {}", machine.display())),
            "{show}"
        );
        assert!(
            show.contains(&format!(
                "user policy:    {} (from --policy)",
                user.display()
            )),
            "{show}"
        );
        let approve = show
            .lines()
            .find(|l| l.starts_with("honour_approve_flag"))
            .unwrap();
        assert!(approve.contains(&machine.display().to_string()), "{show}");
        // read_roots is true on the machine (built-in): a user may say true for one node type.
        let (_dir, machine, user) =
            layered("[all]\nread_roots = false\n[nodes.\"tools/read_file\"]\nread_roots = true\n");
        assert!(Policy::load_from(Some(&user), None, &machine).is_ok());
    }

    #[test]
    fn a_machine_policy_that_cannot_be_read_stops_cheng() {
        let dir = tempfile::tempdir().unwrap();
        // A directory where the file should be: present, unreadable as a file.
        let err = Policy::load_from(None, None, dir.path()).unwrap_err().0;
        assert!(err.contains("the machine policy"), "{err}");
        let bad = dir.path().join("bad.toml");
        std::fs::write(&bad, "honour_approve_flag = \"no\"\n").unwrap();
        let err = Policy::load_from(None, None, &bad).unwrap_err().0;
        assert!(
            err.contains("bad.toml") && err.contains("honour_approve_flag"),
            "{err}"
        );
    }
}
