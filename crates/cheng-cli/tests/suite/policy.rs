//! The three layers of control through the real binary: the operator's policy file (loading,
//! bad files, `policy show`), its bounds on the author and the agent, and capability requests
//! that go to a person.

use super::support::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

const CODE: &str = "tools/code_shell";
const SHELL: &str = "tools/workspace_shell";

/// Writes `text` as a policy file in `dir`.
pub(super) fn policy_file(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("policy.toml");
    std::fs::write(&path, text).expect("write policy");
    path
}

pub(super) fn events_of(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[test]
fn the_reference_curl_example_asks_a_person_and_no_terminal_means_denied() {
    let (_d, ws) = temp_workspace();
    let input = json!({"script": "curl -s 'wttr.in/Tokyo?format=3'", "allow_network": true});
    let events = ws.join("events.jsonl");
    let (code, out, stderr) = run_node(CODE, &ws, &input, &["--events", events.to_str().unwrap()]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_APPROVAL_DENIED", "{out}");
    let error = out["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("allow_network=true") && error.contains("\"allow_network\": true"),
        "{error}"
    );
    assert!(error.contains("--approve"), "{error}");
    assert!(
        stderr.contains("no terminal") && stderr.contains("allow_network"),
        "{stderr}"
    );
    // One card naming the capability and what it opens.
    let asked: Vec<Value> = events_of(&events)
        .into_iter()
        .filter(|e| e["event"] == "approval_requested")
        .collect();
    assert_eq!(asked.len(), 1, "{asked:?}");
    let caps = &asked[0]["request"]["capabilities"];
    assert_eq!(caps[0]["name"], "allow_network", "{caps}");
    assert!(
        caps[0]["opens"]
            .as_str()
            .unwrap_or_default()
            .contains("network"),
        "{caps}"
    );
    assert!(
        asked[0]["request"]["command_display"]
            .as_str()
            .unwrap_or_default()
            .contains("curl"),
        "{asked:?}"
    );
}

#[test]
fn an_approved_capability_runs_with_the_network_on() {
    if !bwrap_works() {
        return;
    }
    let (_d, ws) = temp_workspace();
    let script = "true";
    let (code, out, stderr) = run_node(
        CODE,
        &ws,
        &json!({"script": script, "allow_network": true}),
        &["--approve"],
    );
    assert_eq!(code, 0, "{out} {stderr}");
    assert!(stderr.contains("approved (--approve)"), "{stderr}");
    let (code, off, stderr) = run_node(CODE, &ws, &json!({"script": script}), &[]);
    assert_eq!(code, 0, "{off} {stderr}");
    // What the sandbox enforced: a private network namespace only when nobody approved the network.
    let network = |v: &Value| {
        v["metrics"]["limits"]["network"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    assert!(network(&off).starts_with("none"), "{off}");
    assert!(
        !network(&out).is_empty() && !network(&out).starts_with("none"),
        "{out}"
    );
    // Nothing requested, nothing asked.
    assert!(!stderr.contains("approv"), "{stderr}");
}

#[test]
fn an_authors_false_is_refused_without_asking() {
    let (_d, ws) = temp_workspace();
    let input = json!({"script": "true", "allow_network": true});
    let (code, _, stderr) = run_node(
        CODE,
        &ws,
        &input,
        &["--approve", "--config", r#"{"allow_network": false}"#],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("the node's author (the node's config) sets allow_network to false"),
        "{stderr}"
    );
    // The approver was never consulted.
    assert!(!stderr.contains("approved"), "{stderr}");
    // "ask" and true are the only other settings; anything else names the three.
    let (code, _, stderr) = run_node(
        CODE,
        &ws,
        &input,
        &["--config", r#"{"allow_network": "yes"}"#],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("true, \"ask\" or false"), "{stderr}");
}

#[test]
fn an_authors_true_grants_without_asking_unless_the_operator_says_false() {
    let (d, ws) = temp_workspace();
    let input = json!({"script": "true", "allow_network": true});
    let events = ws.join("events.jsonl");
    // Granted by the author: no card, and the run has the network (where there is no sandbox it
    // can fail for want of one, never for want of approval; under CI the sandbox is required).
    let (code, out, stderr) = run_node(
        CODE,
        &ws,
        &input,
        &[
            "--config",
            r#"{"allow_network": true}"#,
            "--events",
            events.to_str().unwrap(),
        ],
    );
    if bwrap_works() {
        assert_eq!((code, &out["success"]), (0, &json!(true)), "{out} {stderr}");
        let network = out["metrics"]["limits"]["network"]
            .as_str()
            .unwrap_or_default();
        assert!(
            !network.is_empty() && !network.starts_with("none"),
            "the network stayed off: {out}"
        );
    } else {
        assert_eq!(
            out["error_kind"], "LOCAL_EXECUTOR_SANDBOX_UNAVAILABLE",
            "{out} {stderr}"
        );
    }
    assert!(events_of(&events)
        .iter()
        .all(|e| e["event"] != "approval_requested"));
    // The operator's false beats the author's true, at validation, naming the file.
    let policy = policy_file(
        d.path(),
        "[nodes.\"tools/code_shell\"]\nallow_network = false\n",
    );
    let args = [
        "--config",
        r#"{"allow_network": true}"#,
        "--approve",
        "--policy",
        policy.to_str().unwrap(),
    ];
    let (code, _, stderr) = run_node(CODE, &ws, &json!({"script": "true"}), &args);
    assert_eq!(code, 2, "{stderr}");
    let expected = format!(
        "allow_network true in the node's config is above the operator's limit false (policy {} [nodes.\"tools/code_shell\"])",
        policy.display()
    );
    assert!(stderr.contains(&expected), "{stderr}");
    // And an agent's request, with no author config, is refused naming the operator.
    let (code, _, stderr) = run_node(
        CODE,
        &ws,
        &input,
        &["--approve", "--policy", policy.to_str().unwrap()],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("above the operator's limit false"),
        "{stderr}"
    );
}

#[test]
fn numeric_ceilings_name_the_layer_that_set_them() {
    let (d, ws) = temp_workspace();
    let policy = policy_file(d.path(), "[all]\nmax = { timeout_ms = 120000 }\n");
    let p = policy.to_str().unwrap();
    // The agent's 30 s timeout is no longer refused by the 5000 ms default.
    let (code, out, stderr) = run_node(
        CODE,
        &ws,
        &json!({"script": "true", "timeout_ms": 30000}),
        &["--deny"],
    );
    assert_ne!(code, 2, "{out} {stderr}");
    // Spec maximum.
    let (code, _, stderr) = run_node(
        CODE,
        &ws,
        &json!({"script": "true", "timeout_ms": 400000}),
        &[],
    );
    assert_eq!(code, 2);
    assert!(
        stderr.contains("400000 is above the maximum 300000"),
        "{stderr}"
    );
    // Operator.
    let (code, _, stderr) = run_node(
        CODE,
        &ws,
        &json!({"script": "true", "timeout_ms": 200000}),
        &["--policy", p],
    );
    assert_eq!(code, 2);
    let expected = format!(
        "timeout_ms 200000 is above the operator's limit 120000 (policy {} [all])",
        policy.display()
    );
    assert!(stderr.contains(&expected), "{stderr}");
    // Operator over author.
    let (code, _, stderr) = run_node(
        CODE,
        &ws,
        &json!({"script": "true"}),
        &["--policy", p, "--config", r#"{"timeout_ms": 200000}"#],
    );
    assert_eq!(code, 2);
    assert!(
        stderr.contains(
            "timeout_ms 200000 in the node's config is above the operator's limit 120000"
        ),
        "{stderr}"
    );
    // Author over agent.
    let (code, _, stderr) = run_node(
        CODE,
        &ws,
        &json!({"script": "true", "timeout_ms": 60000}),
        &["--config", r#"{"timeout_ms": 30000}"#],
    );
    assert_eq!(code, 2);
    assert!(
        stderr.contains("timeout_ms 60000 is above the author's limit 30000"),
        "{stderr}"
    );
    // The operator bounds agent-filled (not capped) ports too.
    let (code, _, stderr) = run_node(
        SHELL,
        &ws,
        &json!({"command": "true", "timeout_ms": 200000}),
        &["--policy", p],
    );
    assert_eq!(code, 2);
    assert!(
        stderr.contains("above the operator's limit 120000"),
        "{stderr}"
    );
    // An operator's ceiling below a default lowers the default: the run never exceeds it.
    let low = policy_file(d.path(), "[all]\nmax = { timeout_ms = 1000 }\n");
    let sleep = json!({"command": "sleep", "args": ["3"]});
    let (_, out, stderr) = run_node(
        SHELL,
        &ws,
        &sleep,
        &["--policy", low.to_str().unwrap(), "--approve"],
    );
    assert_eq!(
        out["error_kind"], "LOCAL_EXECUTOR_TIMED_OUT",
        "the 60000 ms default ran past the operator's 1000: {out} {stderr}"
    );
    // memory_mb: 4096 is the highest anyone may set.
    let (code, _, stderr) = run_node(
        CODE,
        &ws,
        &json!({"script": "true", "memory_mb": 8192}),
        &[],
    );
    assert_eq!(code, 2);
    assert!(stderr.contains("above the maximum 4096"), "{stderr}");
}

#[test]
fn raw_shell_needs_the_operator_too() {
    let (d, ws) = temp_workspace();
    let input = json!({"shell_string": "echo a | tr a b"});
    let (code, _, stderr) = run_node(
        SHELL,
        &ws,
        &input,
        &["--approve", "--config", r#"{"allow_shell_string": true}"#],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("shell_syntax = true")
            && stderr.contains("[nodes.\"tools/workspace_shell\"]"),
        "{stderr}"
    );
    let policy = policy_file(
        d.path(),
        "[nodes.\"tools/workspace_shell\"]\nshell_syntax = true\n",
    );
    let args = [
        "--approve",
        "--config",
        r#"{"allow_shell_string": true}"#,
        "--policy",
        policy.to_str().unwrap(),
    ];
    let (code, out, stderr) = run_node(SHELL, &ws, &input, &args);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out["stdout"], "b\n");
}

#[test]
fn an_operator_can_disable_a_node_and_require_a_person() {
    let (d, ws) = temp_workspace();
    let policy = policy_file(
        d.path(),
        "honour_approve_flag = false\n[nodes.\"tools/workspace_git\"]\ndisabled = true\n",
    );
    let p = policy.to_str().unwrap();
    let (code, _, stderr) = run_node(
        "tools/workspace_git",
        &ws,
        &json!({"operation": "status"}),
        &["--policy", p],
    );
    assert_eq!(code, 2);
    assert!(
        stderr.contains("disabled by the operator's policy"),
        "{stderr}"
    );
    let (code, _, stderr) = run_node(
        SHELL,
        &ws,
        &json!({"command": "true"}),
        &["--policy", p, "--approve"],
    );
    assert_eq!(code, 2);
    assert!(
        stderr.contains("--approve is not honoured")
            && stderr.contains("honour_approve_flag = false"),
        "{stderr}"
    );
}

#[test]
fn bad_policy_files_are_startup_errors_naming_file_and_key() {
    let (d, ws) = temp_workspace();
    let w = ws.to_str().unwrap();
    let cases = [
        ("[all]\nallow_netwrok = false\n", "allow_netwrok"),
        ("[all]\nmax = { timeout_ms = \"lots\" }\n", "timeout_ms"),
        ("[all]\nallow_network = \"maybe\"\n", "\"ask\""),
        ("[nodes.\"tools/nope\"]\ndisabled = true\n", "tools/nope"),
        (
            "[nodes.\"tools/code_shell\"]\nmax = { timeot_ms = 5 }\n",
            "timeot_ms",
        ),
        ("not toml at all [", "policy.toml"),
    ];
    for (text, key) in cases {
        let policy = policy_file(d.path(), text);
        let out = run_cheng(&[
            "run",
            SHELL,
            "--workspace",
            w,
            "--input",
            r#"{"command":"true"}"#,
            "--policy",
            policy.to_str().unwrap(),
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text}: {stderr}");
        assert!(
            stderr.contains(key) && stderr.contains(&policy.display().to_string()),
            "{text}: {stderr}"
        );
        assert!(out.stdout.is_empty(), "nothing ran");
    }
    // Missing, named explicitly (flag and environment), and unreadable (a directory).
    let missing = d.path().join("missing.toml");
    let out = run_cheng(&["policy", "show", "--policy", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.toml"));
    let out = cheng()
        .args(["policy", "show"])
        .env("CHENG_POLICY", &missing)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("CHENG_POLICY"));
    let out = run_cheng(&["policy", "show", "--policy", d.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read the policy file"));
}

#[test]
fn policy_show_says_where_each_value_came_from() {
    let (d, _ws) = temp_workspace();
    let policy = policy_file(d.path(), "[all]\nmax = { timeout_ms = 120000 }\n[nodes.\"tools/code_shell\"]\nallow_network = \"ask\"\n");
    let out = cheng()
        .args(["policy", "show"])
        .env("CHENG_POLICY", &policy)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let line = |key: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(key))
            .unwrap_or_default()
            .to_string()
    };
    assert!(text.contains("(from $CHENG_POLICY)"), "{text}");
    assert!(
        line("honour_approve_flag = true").contains("built-in default"),
        "{text}"
    );
    assert!(
        line("allow_network = \"ask\"").contains("[nodes.\"tools/code_shell\"]"),
        "{text}"
    );
    assert!(line("max.timeout_ms = 120000").contains("[all]"), "{text}");
    assert!(
        line("shell_syntax = false").contains("built-in default"),
        "{text}"
    );
    // Without any file: built-in defaults, said so.
    let out = run_cheng(&["policy", "show"]);
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("policy: built-in defaults"));
}

#[test]
fn describe_and_schemas_show_the_effective_bounds() {
    let (d, _ws) = temp_workspace();
    let policy = policy_file(d.path(), "[all]\nmax = { timeout_ms = 120000 }\n[nodes.\"tools/code_shell\"]\nallow_network = false\n");
    let p = policy.to_str().unwrap();
    let out = run_cheng(&["describe", CODE, "--json", "--policy", p]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(
        v["schemas"]["input"]["properties"]["timeout_ms"]["maximum"],
        120000
    );
    assert_eq!(
        v["schemas"]["config"]["properties"]["timeout_ms"]["maximum"],
        120000
    );
    assert_eq!(
        v["schemas"]["config"]["properties"]["allow_network"]["enum"],
        json!([false])
    );
    let out = run_cheng(&["describe", CODE, "--policy", p]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("max 120000, the operator's limit"), "{text}");
    assert!(
        text.contains("refused: the operator set it to `false`"),
        "{text}"
    );
    // Without a policy: the node's own maxima.
    let out = run_cheng(&["describe", CODE, "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(
        v["schemas"]["input"]["properties"]["timeout_ms"]["maximum"],
        300000
    );
    assert_eq!(
        v["schemas"]["config"]["properties"]["allow_network"]["default"],
        "ask"
    );
}

/// `cheng nodes` (text and JSON, what canvases draw) leaves out what the operator disables;
/// `describe` still prints the page with a note, and `run` names the rule.
#[test]
fn disabled_nodes_are_not_listed() {
    let (d, ws) = temp_workspace();
    let policy = policy_file(
        d.path(),
        "[nodes.\"tools/workspace_git\"]\ndisabled = true\n",
    );
    let p = policy.to_str().unwrap();
    let listed = text(&run_cheng(&["--policy", p, "nodes"]).stdout);
    assert!(
        listed.contains("tools/workspace_shell") && !listed.contains("tools/workspace_git"),
        "{listed}"
    );
    let json: Value =
        serde_json::from_slice(&run_cheng(&["--policy", p, "nodes", "--json"]).stdout).unwrap();
    assert!(
        json.as_array()
            .unwrap()
            .iter()
            .all(|n| n["id"] != "tools/workspace_git"),
        "{json}"
    );
    let out = run_cheng(&["--policy", p, "describe", "tools/workspace_git"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text(&out.stderr).contains("disabled by the operator's policy"),
        "{}",
        text(&out.stderr)
    );
    let (code, _, stderr) = run_node(
        "tools/workspace_git",
        &ws,
        &json!({"operation": "status"}),
        &["--policy", p],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("disabled by the operator's policy"),
        "{stderr}"
    );
}
