//! A user policy may only tighten the machine policy: the one comparison every key goes
//! through ([`check_tightens`]), run whenever both files are loaded.

use super::{Layer, Policy, PolicyError, Rules, Source, ENV_VAR};

/// Refuses a user policy that would loosen the machine policy: every value the user policy sets
/// is compared with the machine policy's effective value (its file, else the built-in default)
/// for every node type the value reaches.
pub(super) fn check_tightens(machine: &Layer, user: &Layer) -> Result<(), PolicyError> {
    let ceiling = Policy {
        machine: Some(machine.clone()),
        user: None,
    };
    let mut problems = Vec::new();
    if let (Some(true), (false, source)) =
        (user.file.honour_approve_flag, ceiling.honour_approve_flag())
    {
        problems.push(format!(
            "honour_approve_flag = true where the machine policy says false ({source})"
        ));
    }
    let mut check = Tightening {
        ceiling: &ceiling,
        user,
        problems: &mut problems,
    };
    check.key(
        "disabled",
        |r| r.disabled,
        |p, id| {
            p.rule(id, |r| r.disabled)
                .unwrap_or((false, Source::Builtin))
        },
        |user, machine| !user && *machine,
        bool::to_string,
    );
    // The environment's proxy is a way around the host's own egress rules: the machine turns it on.
    check.key(
        "env_proxy",
        |r| r.env_proxy,
        Policy::env_proxy,
        |user, machine| *user && !machine,
        bool::to_string,
    );
    check.key(
        "env_allow",
        |r| r.env_allow.clone(),
        Policy::env_allow,
        |user, machine| !user.iter().all(|name| env_covered(name, machine)),
        |names| format!("{names:?}"),
    );
    // Exactly the machine's entries: a path below one could reach elsewhere through a symlink.
    check.key(
        "read_paths",
        |r| r.read_paths.clone(),
        Policy::read_paths,
        |user, machine| !user.iter().all(|path| machine.contains(path)),
        |paths| {
            format!(
                "{:?}",
                paths
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
            )
        },
    );
    // Each host the user allows must be within a host the machine allows (no machine list:
    // every public host, which any list narrows). Deny lists are joined, never replaced.
    check.key_with_ceiling(
        "network_allow",
        |r| r.network_allow.clone(),
        |p, id| p.rule(id, |r| r.network_allow.clone()),
        |user, machine| {
            !user
                .iter()
                .all(|host| machine.iter().any(|m| host.within(m)))
        },
        |hosts| format!("{:?}", hosts.iter().map(|h| h.as_str()).collect::<Vec<_>>()),
    );
    // Every capability key the user policy sets (false < "ask" < true), against the machine's
    // setting: its file, the built-in default, or false for a key neither knows.
    let keys: std::collections::BTreeSet<&String> = user
        .file
        .all
        .iter()
        .chain(user.file.nodes.values())
        .flat_map(|r| r.capabilities.keys())
        .collect();
    for key in keys {
        check.key(
            key,
            |r| r.capabilities.get(key).copied(),
            |p, id| p.setting(id, key),
            |user, machine| user > machine,
            |c| c.as_str().to_string(),
        );
    }
    let ports: std::collections::BTreeSet<&String> = user
        .file
        .all
        .iter()
        .chain(user.file.nodes.values())
        .flat_map(|r| r.max.keys())
        .collect();
    for port in ports {
        check.key_with_ceiling(
            &format!("max.{port}"),
            |r| r.max.get(port).copied(),
            |p, id| p.max(id, port),
            |user, machine| user > machine,
            |v| v.to_string(),
        );
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(PolicyError(format!(
        "the policy file {} would loosen the machine policy {}: {}. A user policy (--policy or ${ENV_VAR}) may only tighten the machine policy, which binds everyone who runs cheng here: remove those keys or tighten them, or ask the machine's operator to change {}",
        user.path.display(),
        machine.path.display(),
        problems.join("; "),
        machine.path.display(),
    )))
}

/// Compares one key of a user policy with the machine policy (see [`check_tightens`]).
struct Tightening<'a> {
    ceiling: &'a Policy,
    user: &'a Layer,
    problems: &'a mut Vec<String>,
}

impl Tightening<'_> {
    /// A key the machine policy always has a value for (its file's, else the built-in default).
    fn key<T>(
        &mut self,
        key: &str,
        get: impl Fn(&Rules) -> Option<T>,
        machine: impl Fn(&Policy, &str) -> (T, Source),
        looser: impl Fn(&T, &T) -> bool,
        show: impl Fn(&T) -> String,
    ) {
        self.key_with_ceiling(key, get, |p, id| Some(machine(p, id)), looser, show);
    }

    /// A key the machine policy may leave without a ceiling (`None`: anything is tighter).
    fn key_with_ceiling<T>(
        &mut self,
        key: &str,
        get: impl Fn(&Rules) -> Option<T>,
        machine: impl Fn(&Policy, &str) -> Option<(T, Source)>,
        looser: impl Fn(&T, &T) -> bool,
        show: impl Fn(&T) -> String,
    ) {
        let mut problems: Vec<String> = Vec::new();
        let mut compare = |section: &str, value: &T, node_type: &str| {
            let Some((ceiling, source)) = machine(self.ceiling, node_type) else {
                return;
            };
            let problem = format!(
                "[{section}] {key} = {} is looser than the machine policy's {} ({source})",
                show(value),
                show(&ceiling)
            );
            if looser(value, &ceiling) && !problems.contains(&problem) {
                problems.push(problem);
            }
        };
        let user = &self.user.file;
        for (id, rules) in &user.nodes {
            if let Some(value) = get(rules) {
                compare(&format!("nodes.\"{id}\""), &value, id);
            }
        }
        if let Some(value) = user.all.as_ref().and_then(&get) {
            // [all] reaches every node type without a value of its own in the user policy: the
            // ones the machine policy has sections for, and the rest (named by "", which is no
            // node type's id, so the machine's [all] or the built-in default applies).
            let sections = self
                .ceiling
                .machine
                .iter()
                .flat_map(|m| m.file.nodes.keys());
            let reached = std::iter::once("").chain(
                sections
                    .filter(|id| user.nodes.get(*id).and_then(&get).is_none())
                    .map(String::as_str),
            );
            for id in reached {
                compare("all", &value, id);
            }
        }
        self.problems.extend(problems);
    }
}

/// Whether the machine policy's `env_allow` covers `name` (a name, or a `PREFIX*` pattern).
fn env_covered(name: &str, machine: &[String]) -> bool {
    machine.iter().any(|allowed| {
        allowed == name
            || allowed
                .strip_suffix('*')
                .is_some_and(|prefix| name.starts_with(prefix))
    })
}
