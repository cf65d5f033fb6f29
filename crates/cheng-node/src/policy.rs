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
//! use cheng_node::capability::{Setting, NETWORK};
//! use cheng_node::policy::Policy;
//!
//! let policy = Policy::from_toml_str(r#"
//!     [all]
//!     max = { timeout_ms = 120000 }
//!     [nodes."tools/code_shell"]
//!     allow_network = false
//! "#, "/etc/cheng/policy.toml").unwrap();
//! assert_eq!(policy.max("tools/code_shell", "timeout_ms").unwrap().0, 120000);
//! assert_eq!(policy.setting("tools/code_shell", NETWORK.key).0, Setting::Deny);
//! assert_eq!(policy.setting("tools/code_python", NETWORK.key).0, Setting::Grant);
//! // A capability the policy does not know is refused until the operator's file names it.
//! assert_eq!(policy.setting("tools/gpu", "allow_gpu").0, Setting::Deny);
//! ```
//!
//! The effective policy is a value: the CLI loads it once and hands it to the engine it builds
//! (`Engine::new`), which hands it to every node in its `RunContext` (`ctx.policy()`). Nothing
//! reads a process-wide one, so two engines in one process can run under different policies.

mod file;
#[doc(hidden)]
pub mod fuzzing;
mod names;
mod show;
#[cfg(test)]
mod tests;
mod tighten;

use crate::capability::{self, Setting};
use crate::NodeSpec;
use cheng_net::{Gate, HostPattern, HostRules};
use file::{parse, read, PolicyFile, Rules};
use names::check_layer_names;
use std::fmt;
use std::path::{Path, PathBuf};
use tighten::check_tightens;

/// The machine policy: read whenever it exists; a user policy may only tighten it.
pub const SYSTEM_PATH: &str = "/etc/cheng/policy.toml";

/// Node types that are raw shell themselves (no `allow_shell_string` switch to turn it on): the
/// operator's `shell_syntax` decides whether they run at all, and `policy show` lists it for them.
pub const RAW_SHELL_NODES: &[&str] = &["tools/run_command"];

/// The nodes that may go through the proxy their environment names, when the operator says so
/// (`env_proxy`): the ones that connect from the host. A sandbox's way out is always cheng's own
/// filtering proxy.
pub const ENV_PROXY_NODES: &[&str] = &["tools/web_fetch"];

/// The port of a node that applies the operator's host rules (`network_allow`, `network_deny`):
/// its author's own allow list, bounded by the operator's ([`Policy::host_rules`]).
pub const HOST_RULES_PORT: &str = "allowed_hosts";

/// The author's host list ([`HOST_RULES_PORT`]) when the input sets it; an entry that is not a
/// host rule is refused, naming it.
pub fn author_hosts(input: &crate::Values) -> Result<Option<Vec<HostPattern>>, crate::NodeError> {
    match input.get(HOST_RULES_PORT) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(_) => crate::input::string_list(input, HOST_RULES_PORT)?
            .iter()
            .map(|h| HostPattern::parse(h))
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
            .map_err(|e| crate::NodeError::invalid_input(format!("{HOST_RULES_PORT}: {e}"))),
    }
}

/// A list of host rules and the policy section it came from.
type HostList = (Vec<HostPattern>, Source);

/// The environment variable naming a user policy file.
pub const ENV_VAR: &str = "CHENG_POLICY";

/// The capability keys the built-in policy knows, with their built-in settings. Any other key
/// (a capability a node declares that no policy file names) is refused: a node cannot grant
/// itself a capability by declaring one.
const BUILTIN: [(&str, Setting); 5] = [
    // The author decides (default "ask").
    (capability::NETWORK.key, Setting::Grant),
    (capability::FILESYSTEM.key, Setting::Grant),
    (capability::FULL_DISK_READONLY.key, Setting::Grant),
    // Raw shell syntax only where the operator allows it.
    (capability::SHELL_SYNTAX.key, Setting::Deny),
    (capability::READ_ROOTS.key, Setting::Grant),
];

/// The built-in setting of a capability key, `None` for a key the built-in policy does not know.
pub fn builtin_setting(key: &str) -> Option<Setting> {
    BUILTIN.iter().find(|(k, _)| *k == key).map(|(_, s)| *s)
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
    /// A capability key neither the files nor the built-in defaults know: refused.
    Unknown,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Builtin => f.write_str("built-in default"),
            Source::File { path, section } => write!(f, "policy {} [{section}]", path.display()),
            Source::Unknown => f.write_str("a capability the operator's policy does not name"),
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

    /// Whether the node goes through the proxy its environment names (`env_proxy`, for the
    /// nodes in [`ENV_PROXY_NODES`]). Default false.
    pub fn env_proxy(&self, node_type: &str) -> (bool, Source) {
        self.rule(node_type, |r| r.env_proxy)
            .unwrap_or((false, Source::Builtin))
    }

    /// Extra environment names agents may set (beyond the node's safe baseline). Default none.
    pub fn env_allow(&self, node_type: &str) -> (Vec<String>, Source) {
        self.rule(node_type, |r| r.env_allow.clone())
            .unwrap_or((Vec::new(), Source::Builtin))
    }

    /// The operator's setting of a capability key for this node type: the policy files' rule,
    /// else the built-in default for a key the built-in policy knows, else `false`
    /// ([`Source::Unknown`]): a capability nobody named is refused, never granted.
    pub fn setting(&self, node_type: &str, key: &str) -> (Setting, Source) {
        self.rule(node_type, |r| r.capabilities.get(key).copied())
            .or_else(|| builtin_setting(key).map(|s| (s, Source::Builtin)))
            .unwrap_or((Setting::Deny, Source::Unknown))
    }

    /// Whether the operator allows `capability` for this node type outright (`true`). A node
    /// that checks a capability itself asks this; `"ask"` and `false` are not allowed here
    /// (the engine's card asks a person for a port's `"ask"`).
    pub fn allows(&self, node_type: &str, capability: &capability::Capability) -> bool {
        self.setting(node_type, capability.key).0 == Setting::Grant
    }

    /// Host paths mounted read-only in every sandboxed run of this node type, unasked. Default none.
    pub fn read_paths(&self, node_type: &str) -> (Vec<PathBuf>, Source) {
        self.rule(node_type, |r| r.read_paths.clone())
            .unwrap_or((Vec::new(), Source::Builtin))
    }

    /// The operator's host rules for this node type: `network_allow` (the user policy's, else the
    /// machine's; none: every public host) and `network_deny` (both layers' lists, joined: a
    /// user policy can only add to them). Private, loopback and link-local addresses are
    /// reached only through an allow rule naming the host or the address (cheng_net).
    pub fn host_rules(&self, node_type: &str) -> HostRules {
        let (allow, deny) = self.host_rule_lists(node_type);
        let deny = deny.into_iter().flat_map(|(list, _)| list).collect();
        match allow {
            Some((list, _)) => HostRules::new(list, deny, false),
            None => HostRules::new(Vec::new(), deny, true),
        }
    }

    /// The gate a node's connections go through: the operator's host rules, then, when the
    /// node's input sets [`HOST_RULES_PORT`], its author's list with the hosts a person approved
    /// for this run (`approved`). Every layer must admit a connection, so neither can widen the
    /// operator's rules.
    pub fn network_gate(
        &self,
        node_type: &str,
        input: &crate::Values,
        approved: &[HostPattern],
    ) -> Result<Gate, crate::NodeError> {
        let gate = Gate::default().with(
            self.host_rules(node_type),
            "the operator's policy (network_allow, network_deny)",
        );
        Ok(match author_hosts(input)? {
            None => gate,
            Some(mut list) => {
                let set_by = if approved.is_empty() {
                    "the node's author (allowed_hosts)"
                } else {
                    list.extend(approved.iter().cloned());
                    "the node's author (allowed_hosts) and the hosts a person approved (request_hosts)"
                };
                gate.with(HostRules::new(list, Vec::new(), false), set_by)
            }
        })
    }

    /// [`Policy::host_rules`]' lists with where each came from: `network_allow` when a layer
    /// sets it, and each layer's `network_deny`, machine first.
    fn host_rule_lists(&self, node_type: &str) -> (Option<HostList>, Vec<HostList>) {
        let allow = self.rule(node_type, |r| r.network_allow.clone());
        let deny = self
            .layers()
            .filter_map(|layer| layer.rule(node_type, |r| r.network_deny.clone()))
            .collect();
        (allow, deny)
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
}
