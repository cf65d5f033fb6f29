//! Capabilities: what a port opens beyond a node's defaults, declared on the port
//! ([`crate::PortSpec::capability`]) and decided by the operator's policy.
//!
//! A capability says what it is, the operator policy key that decides it and how it shows on an
//! approval card. The generic layers (the value checks in [`crate::check`], the policy's
//! tightening rule and `policy show`, the schemas, the engine's card, the MCP hints) iterate over
//! the ports that declare one and never name a port, so a new capped port works without
//! touching them.
//!
//! The operator decides per capability key: `true`, `"ask"` or `false` ([`Setting`]). The
//! built-in defaults for the keys the policy knows are in [`crate::policy`]; a key it does not
//! know is refused until the operator's file names it ([`crate::policy::Policy::setting`]), so a
//! node can never grant itself a capability by declaring one.

/// How a capability is granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An agent requests it per run (a capped boolean port); the author's config sets `true`,
    /// `"ask"` (a person approves each run) or `false`, up to the operator's setting.
    Request,
    /// The node's author turns it on in config (an author port); the operator allows it
    /// (`true`) or not (`false`).
    Switch,
}

/// What a port opens and who decides it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capability {
    /// What it is, in a few words: "the network", "raw shell syntax".
    pub name: &'static str,
    /// The operator policy key that decides it (`allow_network`, `shell_syntax`).
    pub key: &'static str,
    /// What granting it opens, in the words an approval card uses.
    pub opens: &'static str,
    pub kind: Kind,
    /// Whether using it reaches beyond the machine (MCP's `openWorldHint`).
    pub open_world: bool,
}

impl Capability {
    /// Whether `value`, set on a port declaring this capability, uses it: `true`, or a non-empty
    /// string, array or object (`read_roots: ["/opt/docs"]`).
    pub fn used_by(&self, value: &serde_json::Value) -> bool {
        use serde_json::Value;
        match value {
            Value::Bool(b) => *b,
            Value::String(s) => !s.is_empty(),
            Value::Array(items) => !items.is_empty(),
            Value::Object(map) => !map.is_empty(),
            Value::Null | Value::Number(_) => false,
        }
    }
}

/// Outbound network access from the sandbox (code_shell's `allow_network`).
pub const NETWORK: Capability = Capability {
    name: "the network",
    key: "allow_network",
    opens: "outbound connections from the sandbox through cheng's filtering proxy, to the hosts the operator's network rules allow (every public host, any port, unless they narrow it)",
    kind: Kind::Request,
    open_world: true,
};

/// Writes to the workspace from the sandbox (`allow_filesystem`).
pub const FILESYSTEM: Capability = Capability {
    name: "workspace writes",
    key: "allow_filesystem",
    opens: "write access to the workspace (files can be created, changed and deleted)",
    kind: Kind::Request,
    open_world: false,
};

/// Reading the whole disk from the sandbox (`allow_full_disk_readonly`).
pub const FULL_DISK_READONLY: Capability = Capability {
    name: "full-disk reads",
    key: "allow_full_disk_readonly",
    opens: "read-only access to the whole disk (every file this user can read)",
    kind: Kind::Request,
    open_world: false,
};

/// Raw shell syntax in a command line (`allow_shell_string`).
pub const SHELL_SYNTAX: Capability = Capability {
    name: "raw shell syntax",
    key: "shell_syntax",
    opens: "raw shell syntax (pipes, redirection, variables, command substitution)",
    kind: Kind::Switch,
    open_world: false,
};

/// Read-only roots outside the workspace for the file nodes (`read_roots`).
pub const READ_ROOTS: Capability = Capability {
    name: "read-only roots outside the workspace",
    key: "read_roots",
    opens: "reads of host directories outside the workspace",
    kind: Kind::Switch,
    open_world: false,
};

/// An author's or operator's setting of a capability: `true`, `"ask"` or `false`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Setting {
    /// `false`: refused at validation; nobody is asked.
    Deny,
    /// `"ask"`: an agent may request it; a person approves it for the run.
    Ask,
    /// `true`: granted without asking.
    Grant,
}

impl Setting {
    /// From a config value: `true`, `false` or `"ask"`.
    pub fn from_json(value: &serde_json::Value) -> Option<Setting> {
        match value {
            serde_json::Value::Bool(true) => Some(Setting::Grant),
            serde_json::Value::Bool(false) => Some(Setting::Deny),
            serde_json::Value::String(s) if s == "ask" => Some(Setting::Ask),
            _ => None,
        }
    }

    /// The TOML/JSON spelling.
    pub fn as_str(&self) -> &'static str {
        match self {
            Setting::Deny => "false",
            Setting::Ask => "\"ask\"",
            Setting::Grant => "true",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_value_uses_its_capability_when_it_turns_something_on() {
        for on in [json!(true), json!(["/opt"]), json!("x"), json!({"a": 1})] {
            assert!(READ_ROOTS.used_by(&on), "{on}");
        }
        for off in [
            json!(false),
            json!([]),
            json!(""),
            json!({}),
            json!(null),
            json!(3),
        ] {
            assert!(!READ_ROOTS.used_by(&off), "{off}");
        }
    }

    #[test]
    fn settings_are_ordered_and_spelled_as_in_the_files() {
        assert!(Setting::Deny < Setting::Ask && Setting::Ask < Setting::Grant);
        assert_eq!(Setting::from_json(&json!("ask")), Some(Setting::Ask));
        assert_eq!(Setting::from_json(&json!("yes")), None);
        assert_eq!(Setting::Ask.as_str(), "\"ask\"");
    }
}
