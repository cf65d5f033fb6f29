//! Real gated nodes in tools/runtime: tools/code_python behind CHENG_ENABLE_CODE_PYTHON. The gate
//! is decided by a predicate on the registry, never by the process environment (tests run in
//! parallel).

use super::support::*;
use cheng_node::{CancellationToken, Decision, Registry};
use serde_json::json;

// Linked so that tools/code_python's registration is in this test binary's inventory.
use cheng_nodes_code as _;

const PYTHON_GATE: &str = "CHENG_ENABLE_CODE_PYTHON";

fn registry(python_enabled: bool) -> Registry {
    Registry::from_inventory_with(|var| python_enabled && var == PYTHON_GATE)
}

#[tokio::test]
async fn code_python_cannot_be_executed_until_its_gate_is_set_then_is_listed() {
    let (_d, ws) = temp_workspace();
    let config = json!({"exposed_tools": [{"type": "tools/workspace_git"}, {"type": "tools/code_python", "name": "py"}]});
    let list = json!({"action": "list_tools"});

    // How list_tools reports a gated-out entry: list.rs, a_gated_out_node_is_absent_and_the_error_names_its_variable.
    // Executing it is refused naming the variable, and nothing runs.
    let call = json!({"action": "execute", "tool_call": {"name": "py", "arguments": {"script": "result = 1"}}});
    let refused = run_with(
        &engine(registry(false)),
        &ws,
        config.clone(),
        call,
        Recorder::new(Decision::Approved),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(refused.outputs["success"], false, "{:?}", refused.outputs);
    assert!(
        errors(&refused.outputs).contains(PYTHON_GATE),
        "{}",
        errors(&refused.outputs)
    );
    assert_eq!(refused.outputs["result"], serde_json::Value::Null);

    let open = run_with(
        &engine(registry(true)),
        &ws,
        config,
        list,
        Recorder::new(Decision::Denied),
        CancellationToken::new(),
    )
    .await;
    let out = open.outputs;
    assert_eq!(out["status"], "ok", "{}", errors(&out));
    assert_eq!(names(&out), ["workspace_git", "py"]);
    let function = &out["functions"][1]["function"];
    assert!(
        function["parameters"]["properties"].get("script").is_some(),
        "{function}"
    );
}
