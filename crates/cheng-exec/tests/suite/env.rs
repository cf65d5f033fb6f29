//! The environment policy as a child sees it.

use super::support::*;
use cheng_exec::{env, ProcessSpec};
use serde_json::json;

#[test]
fn user_variables_reach_the_child_on_top_of_the_base() {
    let user = json!({"CHENG_TEST_VAR": "it works", "LANG": "C"});
    let env = env::build(user.as_object().unwrap()).unwrap();
    let out = run(ProcessSpec::new("env", Vec::<String>::new(), std::env::temp_dir()).env(env));
    assert!(
        out.stdout
            .text
            .lines()
            .any(|l| l == "CHENG_TEST_VAR=it works"),
        "{}",
        out.stdout.text
    );
    assert_eq!(
        out.stdout
            .text
            .lines()
            .filter(|l| l.starts_with("LANG="))
            .collect::<Vec<_>>(),
        ["LANG=C"]
    );
}
