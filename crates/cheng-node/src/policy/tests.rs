use super::*;
use crate::capability::Setting;

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
    assert_eq!(
        policy.setting("tools/workspace_shell", "shell_syntax").0,
        Setting::Grant
    );
}

#[test]
fn builtin_defaults() {
    let policy = Policy::builtin();
    assert_eq!(
        policy.setting("tools/workspace_shell", "shell_syntax"),
        (Setting::Deny, Source::Builtin)
    );
    assert_eq!(
        policy.setting("tools/code_shell", "allow_network"),
        (Setting::Grant, Source::Builtin)
    );
    assert_eq!(policy.honour_approve_flag(), (true, Source::Builtin));
    assert!(policy.max("tools/code_shell", "timeout_ms").is_none());
    assert!(policy.disabled("tools/code_shell").is_none());
}

#[test]
fn unknown_keys_and_wrong_types_name_the_key_and_the_file() {
    // A capability key is checked against the ports that declare one.
    let policy = Policy::from_toml_str("[all]\nallow_netwrok = false\n", FILE).unwrap();
    let err = policy.check_names([&NET_NODE]).unwrap_err().0;
    assert!(
        err.contains(FILE)
            && err.contains("allow_netwrok")
            && err.contains("did you mean `allow_network`?"),
        "{err}"
    );
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
        Policy::builtin().setting("tools/read_file", "read_roots"),
        (Setting::Grant, Source::Builtin)
    );
    let policy =
        Policy::from_toml_str("[nodes.\"tools/read_file\"]\nread_roots = false\n", FILE).unwrap();
    assert!(!policy.allows("tools/read_file", &crate::capability::READ_ROOTS));
    assert!(policy.allows("tools/write_file", &crate::capability::READ_ROOTS));
}

/// A node with the network capability and a made-up one.
static NET_NODE: NodeSpec = NodeSpec {
    id: "test/net",
    title: "Net",
    description: "",
    category: "test",
    inputs: &[
        crate::PortSpec::input("allow_network", crate::PortType::Boolean, "")
            .default("false")
            .audience(crate::Audience::Capped)
            .capability(&crate::capability::NETWORK),
        crate::PortSpec::input("shell", crate::PortType::Boolean, "")
            .default("false")
            .audience(crate::Audience::Author)
            .capability(&GPU_SWITCH),
    ],
    outputs: &[],
    gate: None,
    effects: crate::Effects::ReadOnly,
};

const GPU_SWITCH: crate::capability::Capability = crate::capability::Capability {
    name: "the GPU",
    key: "allow_gpu",
    opens: "the host's GPU",
    kind: crate::capability::Kind::Switch,
    open_world: false,
};

#[test]
fn a_capability_nobody_named_is_refused_and_a_file_may_name_it() {
    let builtin = Policy::builtin();
    assert_eq!(
        builtin.setting("test/net", "allow_gpu"),
        (Setting::Deny, Source::Unknown)
    );
    assert!(!builtin.allows("test/net", &GPU_SWITCH));
    let policy = Policy::from_toml_str("[nodes.\"test/net\"]\nallow_gpu = true\n", FILE).unwrap();
    assert!(policy.check_names([&NET_NODE]).is_ok());
    assert!(policy.allows("test/net", &GPU_SWITCH));
    assert!(!policy.allows("test/other", &GPU_SWITCH));
    // A node section names only what that node declares; "ask" does not fit an author's switch.
    let other = Policy::from_toml_str("[all]\nallow_gpu = \"ask\"\n", FILE).unwrap();
    let err = other.check_names([&NET_NODE]).unwrap_err().0;
    assert!(err.contains("allow_gpu = \"ask\""), "{err}");
    // `policy show` lists it with where it came from.
    let show = builtin.show([&NET_NODE]);
    assert!(
        show.lines()
            .any(|l| l.contains("allow_gpu = false") && l.contains("does not name")),
        "{show}"
    );
}

#[test]
fn capability_words() {
    let policy = Policy::from_toml_str(
        "[all]\nallow_network = \"ask\"\nallow_filesystem = false\n",
        FILE,
    )
    .unwrap();
    assert_eq!(policy.setting("x", "allow_network").0, Setting::Ask);
    assert_eq!(policy.setting("x", "allow_filesystem").0, Setting::Deny);
    assert!(Setting::Deny < Setting::Ask && Setting::Ask < Setting::Grant);
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
        policy.setting("tools/code_python", "allow_network").0,
        Setting::Deny
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

/// A node that applies the operator's host rules (it has the `allowed_hosts` port).
static FETCH_NODE: NodeSpec = NodeSpec {
    id: "test/fetch",
    title: "Fetch",
    description: "",
    category: "test",
    inputs: &[crate::PortSpec::input(
        HOST_RULES_PORT,
        crate::PortType::Array(&crate::PortType::String),
        "",
    )
    .audience(crate::Audience::Author)],
    outputs: &[],
    gate: None,
    effects: crate::Effects::ReadOnly,
};

fn allowed(rules: &HostRules, host: &str, port: u16, resolved: &str) -> bool {
    let target = cheng_net::Target::new(host, port).unwrap();
    let resolved = [resolved.parse().unwrap()];
    rules
        .admit(&target)
        .and_then(|admitted| admitted.addresses(&resolved))
        .is_ok()
}

#[test]
fn host_rules_default_to_every_public_host_and_read_both_lists() {
    let rules = Policy::builtin().host_rules("test/fetch");
    assert!(allowed(&rules, "example.com", 443, "93.184.216.34"));
    assert!(!allowed(&rules, "example.com", 443, "127.0.0.1"));

    let policy = Policy::from_toml_str(
        "[all]\nnetwork_allow = [\"*.pypi.org\", \"db.internal:5432\"]\nnetwork_deny = [\"evil.pypi.org\"]\n",
        FILE,
    )
    .unwrap();
    policy.check_names([&FETCH_NODE]).unwrap();
    let rules = policy.host_rules("test/fetch");
    assert!(allowed(&rules, "files.pypi.org", 443, "151.101.0.223"));
    assert!(!allowed(&rules, "evil.pypi.org", 443, "151.101.0.223"));
    assert!(!allowed(&rules, "example.com", 443, "93.184.216.34"));
    assert!(allowed(&rules, "db.internal", 5432, "10.0.0.5"));
    let show = policy.show([&FETCH_NODE]);
    assert!(
        show.contains("network_allow = [\"*.pypi.org\", \"db.internal:5432\"]"),
        "{show}"
    );
    assert!(
        show.contains("network_deny = [\"evil.pypi.org\"]"),
        "{show}"
    );
}

#[test]
fn host_rules_that_cannot_be_read_or_do_not_apply_are_refused() {
    let err = Policy::from_toml_str("[all]\nnetwork_allow = [\"a.*.com\"]\n", FILE)
        .unwrap_err()
        .0;
    assert!(
        err.contains(FILE) && err.contains("[all] network_allow") && err.contains("a.*.com"),
        "{err}"
    );
    let err = Policy::from_toml_str("[all]\nnetwork_deny = \"example.com\"\n", FILE)
        .unwrap_err()
        .0;
    assert!(err.contains("network_deny"), "{err}");
    // A node section may name them only for a node that applies them.
    let policy = Policy::from_toml_str(
        "[nodes.\"test/net\"]\nnetwork_allow = [\"pypi.org\"]\n",
        FILE,
    )
    .unwrap();
    let err = policy.check_names([&NET_NODE, &FETCH_NODE]).unwrap_err().0;
    assert!(err.contains("test/net does not apply host rules"), "{err}");
}

#[test]
fn a_user_policy_may_narrow_the_hosts_and_add_denials_but_not_widen() {
    let dir = tempfile::tempdir().unwrap();
    let machine = dir.path().join("machine.toml");
    std::fs::write(
        &machine,
        "[all]\nnetwork_allow = [\"*.pypi.org\"]\nnetwork_deny = [\"evil.pypi.org\"]\n",
    )
    .unwrap();
    let user = dir.path().join("user.toml");
    std::fs::write(&user, "[all]\nnetwork_allow = [\"example.com\"]\n").unwrap();
    let err = Policy::load_from(Some(&user), None, &machine)
        .unwrap_err()
        .0;
    assert!(
        err.contains("[all] network_allow = [\"example.com\"] is looser"),
        "{err}"
    );
    // A name under the machine's wildcard reaches more: it may lead to a private address.
    std::fs::write(&user, "[all]\nnetwork_allow = [\"files.pypi.org\"]\n").unwrap();
    assert!(Policy::load_from(Some(&user), None, &machine).is_err());
    std::fs::write(
        &user,
        "[all]\nnetwork_allow = [\"*.files.pypi.org:443\"]\nnetwork_deny = [\"old.pypi.org\"]\n",
    )
    .unwrap();
    let policy = Policy::load_from(Some(&user), None, &machine).unwrap();
    let rules = policy.host_rules("test/fetch");
    assert!(allowed(&rules, "a.files.pypi.org", 443, "151.101.0.223"));
    assert!(!allowed(&rules, "a.files.pypi.org", 80, "151.101.0.223"));
    assert!(!allowed(&rules, "other.pypi.org", 443, "151.101.0.223"));
    // The machine's denials stay beside the user's.
    let deny: Vec<&str> = rules.deny().iter().map(|h| h.as_str()).collect();
    assert_eq!(deny, ["evil.pypi.org", "old.pypi.org"]);
    // Without a machine list, any user list narrows "every public host".
    let absent = dir.path().join("absent.toml");
    assert!(Policy::load_from(Some(&user), None, &absent).is_ok());
}

/// `env_proxy` is web_fetch's alone, off by default, and a user policy may turn it off but never
/// on: the environment's proxy is a way around the host's own egress rules.
#[test]
fn env_proxy_is_the_machines_to_turn_on() {
    assert!(!Policy::builtin().env_proxy("tools/web_fetch").0);
    let policy = Policy::from_toml_str("[nodes.\"test/net\"]\nenv_proxy = true\n", FILE).unwrap();
    let err = policy.check_names([&NET_NODE, &FETCH_NODE]).unwrap_err().0;
    assert!(
        err.contains("env_proxy: test/net connects through no proxy"),
        "{err}"
    );
    let err = Policy::from_toml_str("[all]\nenv_proxy = \"yes\"\n", FILE)
        .unwrap_err()
        .0;
    assert!(err.contains("[all] env_proxy"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let machine = dir.path().join("machine.toml");
    let user = dir.path().join("user.toml");
    std::fs::write(&machine, "[all]\ndisabled = false\n").unwrap();
    std::fs::write(&user, "[nodes.\"tools/web_fetch\"]\nenv_proxy = true\n").unwrap();
    let err = Policy::load_from(Some(&user), None, &machine)
        .unwrap_err()
        .0;
    assert!(err.contains("env_proxy = true"), "{err}");
    std::fs::write(&machine, "[nodes.\"tools/web_fetch\"]\nenv_proxy = true\n").unwrap();
    std::fs::write(&user, "[nodes.\"tools/web_fetch\"]\nenv_proxy = false\n").unwrap();
    let policy = Policy::load_from(Some(&user), None, &machine).unwrap();
    assert!(!policy.env_proxy("tools/web_fetch").0);
}
