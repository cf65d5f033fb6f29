//! The environment policy as a child sees it.

use super::support::*;
use cheng_exec::{env, ProcessSpec};
use serde_json::json;

#[test]
fn user_variables_reach_the_child_on_top_of_the_base() {
    let user = json!({"CHENG_TEST_VAR": "it works", "LANG": "C"});
    let env = env::build(user.as_object().unwrap()).unwrap();
    let out = run(ProcessSpec::new("env", Vec::<String>::new(), std::env::temp_dir()).env(env));
    assert!(out.stdout.text.lines().any(|l| l == "CHENG_TEST_VAR=it works"), "{}", out.stdout.text);
    assert_eq!(out.stdout.text.lines().filter(|l| l.starts_with("LANG=")).collect::<Vec<_>>(), ["LANG=C"]);
}

#[test]
fn loader_and_interpreter_hooks_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let hook = dir.path().join("hook.sh");
    std::fs::write(&hook, "touch pwned\n").unwrap();
    for (name, value) in [
        ("LD_PRELOAD", "/tmp/evil.so"),
        ("BASH_ENV", hook.to_str().unwrap()),
        ("ENV", hook.to_str().unwrap()),
        ("PATH", dir.path().to_str().unwrap()),
        ("GIT_SSH_COMMAND", "touch pwned"),
        ("BASH_FUNC_echo%%", "() { touch pwned; }"),
    ] {
        let user = json!({ name: value });
        let err = env::build(user.as_object().unwrap()).unwrap_err();
        assert_eq!(err.kind, cheng_node::ErrorKind::InvalidInput, "{name}");
        assert!(err.message.contains(name), "{}", err.message);
    }
    assert!(!dir.path().join("pwned").exists());
}
