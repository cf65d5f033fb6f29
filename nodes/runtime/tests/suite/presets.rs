//! presets: agent ports the author fixes and hides from the model.

use super::support::*;
use cheng_node::Decision;
use serde_json::{json, Value};

const GIT_STATUS: &str = r#"[{"type": "tools/workspace_git", "name": "git_status", "presets": {"operation": "status"}}]"#;

fn exposed(text: &str) -> Value {
    serde_json::from_str(text).expect("JSON")
}

#[tokio::test]
async fn a_preset_port_is_hidden_from_the_function_and_applied_to_every_call() {
    let (_d, ws) = temp_workspace();
    repo(&ws);
    let (out, _) = runtime(
        &ws,
        exposed(GIT_STATUS),
        json!({"action": "list_tools"}),
        Decision::Denied,
    )
    .await;
    let parameters = &out["functions"][0]["function"]["parameters"];
    assert!(
        parameters["properties"].get("operation").is_none(),
        "the preset port is shown: {parameters}"
    );
    let call = json!({"action": "execute", "tool_call": {"name": "git_status", "arguments": {}}});
    let (out, _) = runtime(&ws, exposed(GIT_STATUS), call, Decision::Denied).await;
    assert_eq!(out["status"], "ok", "{out:?}");
    assert_eq!(out["result"]["operation"], "status");
}

#[tokio::test]
async fn a_call_that_sets_a_preset_port_is_refused_and_nothing_runs() {
    let (_d, ws) = temp_workspace();
    repo(&ws);
    // The attack: the model asks for a commit through a tool its author fixed to `status`.
    let call = json!({"action": "execute", "tool_call": {"name": "git_status", "arguments": {"operation": "commit", "message": "x"}}});
    let (out, recorder) = runtime(&ws, exposed(GIT_STATUS), call, Decision::Approved).await;
    assert_eq!(out["success"], false, "{out:?}");
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_POLICY_DENIED");
    assert!(
        out["error"]
            .as_str()
            .unwrap_or("")
            .contains("fixed by the toolkit's author"),
        "{out:?}"
    );
    assert_eq!(recorder.asked(), 0, "nothing was even put to a person");
}

#[tokio::test]
async fn presets_may_only_name_agent_ports_with_valid_values() {
    let (_d, ws) = temp_workspace();
    let entries = json!([
        {"type": "tools/workspace_shell", "name": "a", "presets": {"command_whitelist": "cargo"}},
        {"type": "tools/workspace_shell", "name": "b", "presets": {"sandbox_root": "/"}},
        {"type": "tools/workspace_shell", "name": "c", "presets": {"no_such_port": 1}},
        {"type": "tools/workspace_shell", "name": "d", "presets": {"timeout_ms": "soon"}},
        {"type": "tools/workspace_shell", "name": "e", "presets": "cargo"},
        {"type": "tools/workspace_shell", "name": "cargo", "presets": {"command": "cargo"}}
    ]);
    let (out, _) = runtime(
        &ws,
        entries,
        json!({"action": "list_tools"}),
        Decision::Denied,
    )
    .await;
    let errors = out["errors"].to_string();
    assert!(
        errors.contains("exposed_tools[0]") && errors.contains("author port"),
        "{errors}"
    );
    assert!(
        errors.contains("exposed_tools[1]") && errors.contains("set by the engine"),
        "{errors}"
    );
    assert!(
        errors.contains("exposed_tools[2]") && errors.contains("no input `no_such_port`"),
        "{errors}"
    );
    assert!(errors.contains("exposed_tools[3]"), "{errors}");
    assert!(
        errors.contains("exposed_tools[4]") && errors.contains("`presets` must be an object"),
        "{errors}"
    );
    assert!(!errors.contains("exposed_tools[5]"), "{errors}");
    let functions = out["functions"].as_array().cloned().unwrap_or_default();
    assert_eq!(functions.len(), 1, "{functions:?}");
    assert!(functions[0]["function"]["parameters"]["properties"]
        .get("command")
        .is_none());
    assert!(functions[0]["function"]["parameters"]["properties"]
        .get("args")
        .is_some());
}
