//! One policy file: its TOML shape and the parse. A section's keys are the fixed rules
//! (`disabled`, `env_allow`, `read_paths`, `network_allow`, `network_deny`, `env_proxy`, `max`) plus one capability setting per key a node
//! declares (`allow_network = "ask"`, `shell_syntax = true`); whether each capability key names
//! a capability some node declares is checked against the specs ([`super::Policy::check_names`]).

use super::{Layer, Origin, PolicyError};
use crate::capability::Setting;
use cheng_net::HostPattern;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The file's top level.
#[derive(Debug, Clone, Default)]
pub(super) struct PolicyFile {
    /// Whether `--approve` (and other blanket approvals) are honoured. Default true.
    pub honour_approve_flag: Option<bool>,
    /// Rules for every node type.
    pub all: Option<Rules>,
    /// Rules for one node type, by id; they override `all`.
    pub nodes: BTreeMap<String, Rules>,
}

/// What the operator may say about a node type (or all of them).
#[derive(Debug, Clone, Default)]
pub(super) struct Rules {
    pub disabled: Option<bool>,
    pub env_allow: Option<Vec<String>>,
    /// Host paths the sandboxed executors (the nodes with `request_read_paths`) mount read-only
    /// in every run, at the same path, without asking anybody. Default none.
    pub read_paths: Option<Vec<PathBuf>>,
    /// Highest value per integer port, by port name.
    pub max: BTreeMap<String, i64>,
    /// Hosts the nodes that apply host rules (those with an `allowed_hosts` port) may reach;
    /// `None`: every public host.
    pub network_allow: Option<Vec<HostPattern>>,
    /// Hosts they may never reach, whatever allows them.
    pub network_deny: Option<Vec<HostPattern>>,
    /// Whether tools/web_fetch goes through the proxy the environment names (`https_proxy`,
    /// `http_proxy`, `all_proxy`, `no_proxy`). Default false: it connects directly.
    pub env_proxy: Option<bool>,
    /// The operator's setting per capability key (`allow_network`, `shell_syntax`, …).
    pub capabilities: BTreeMap<String, Setting>,
}

/// The file as TOML gives it: the top level is fixed, a section's keys are read one by one.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    honour_approve_flag: Option<bool>,
    all: Option<toml::Table>,
    #[serde(default)]
    nodes: BTreeMap<String, toml::Table>,
}

/// One key's value as `T`, or a message naming the section and the key.
fn typed<T: DeserializeOwned>(section: &str, key: &str, value: toml::Value) -> Result<T, String> {
    value
        .try_into()
        .map_err(|e| format!("[{section}] {key}: {}", e.to_string().trim_end()))
}

/// A list of host rules (`network_allow`, `network_deny`), each read as [`HostPattern`].
fn hosts(section: &str, key: &str, value: toml::Value) -> Result<Vec<HostPattern>, String> {
    let texts: Vec<String> = typed(section, key, value)?;
    texts
        .iter()
        .map(|text| HostPattern::parse(text).map_err(|e| format!("[{section}] {key}: {e}")))
        .collect()
}

impl Rules {
    fn from_table(section: &str, table: toml::Table) -> Result<Rules, String> {
        let mut rules = Rules::default();
        for (key, value) in table {
            match key.as_str() {
                "disabled" => rules.disabled = Some(typed(section, &key, value)?),
                "env_allow" => rules.env_allow = Some(typed(section, &key, value)?),
                "read_paths" => rules.read_paths = Some(typed(section, &key, value)?),
                "network_allow" => rules.network_allow = Some(hosts(section, &key, value)?),
                "network_deny" => rules.network_deny = Some(hosts(section, &key, value)?),
                "env_proxy" => rules.env_proxy = Some(typed(section, &key, value)?),
                "max" => {
                    let table: toml::Table = typed(section, &key, value)?;
                    for (port, value) in table {
                        let n = typed(section, &format!("max.{port}"), value)?;
                        rules.max.insert(port, n);
                    }
                }
                // Every other key is a capability's; its name is checked against the specs.
                _ => {
                    let setting = match &value {
                        toml::Value::Boolean(true) => Setting::Grant,
                        toml::Value::Boolean(false) => Setting::Deny,
                        toml::Value::String(s) if s == "ask" => Setting::Ask,
                        other => {
                            let given = match other {
                                toml::Value::String(s) => format!("{s:?}"),
                                other => format!(
                                    "a{} {}",
                                    if other.type_str().starts_with(['a', 'i']) {
                                        "n"
                                    } else {
                                        ""
                                    },
                                    other.type_str()
                                ),
                            };
                            return Err(format!(
                                "[{section}] {key}: {given} is not a capability setting; use true, \"ask\" or false \
                                 (every key besides disabled, env_allow, read_paths, network_allow, network_deny, env_proxy and max names a capability)"
                            ));
                        }
                    };
                    rules.capabilities.insert(key, setting);
                }
            }
        }
        Ok(rules)
    }
}

/// Parses one policy file's text.
pub(super) fn parse(text: &str, path: PathBuf, origin: Origin) -> Result<Layer, PolicyError> {
    let invalid = |message: String| {
        PolicyError(format!(
            "the policy file {} is not valid: {}\n(see docs/guides/policy.md for every key)",
            path.display(),
            message.trim_end()
        ))
    };
    let raw: RawFile = toml::from_str(text).map_err(|e| invalid(e.to_string()))?;
    let all = match raw.all {
        Some(table) => Some(Rules::from_table("all", table).map_err(invalid)?),
        None => None,
    };
    let mut nodes = BTreeMap::new();
    for (id, table) in raw.nodes {
        let rules = Rules::from_table(&format!("nodes.\"{id}\""), table).map_err(invalid)?;
        nodes.insert(id, rules);
    }
    let file = PolicyFile {
        honour_approve_flag: raw.honour_approve_flag,
        all,
        nodes,
    };
    Ok(Layer { path, origin, file })
}

/// Reads and parses one policy file (an unreadable file is an error naming it).
pub(super) fn read(path: &Path, origin: Origin) -> Result<Layer, PolicyError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        PolicyError(format!(
            "cannot read the policy file {}: {e}",
            path.display()
        ))
    })?;
    parse(&text, path.to_path_buf(), origin)
}
