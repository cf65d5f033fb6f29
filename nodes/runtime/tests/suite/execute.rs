//! execute: tool calls run through the engine, with its validation, approval and cancellation.

use super::support::*;
use cheng_node::{CancellationToken, Decision};
use serde_json::{json, Value};
use std::time::Duration;

fn call(name: &str, arguments: Value) -> Value {
    json!({"action": "execute", "tool_call": {"name": name, "arguments": arguments}})
}

fn dry(name: &str, arguments: Value) -> Value {
    json!({"action": "execute", "dry_run": true, "tool_call": {"name": name, "arguments": arguments}})
}

#[tokio::test]
async fn git_status_runs_on_the_runtimes_workspace() {
    let (_d, ws) = temp_workspace();
    repo(&ws);
    let (out, recorder) = runtime(
        &ws,
        json!([{"type": "tools/workspace_git", "name": "git"}]),
        call("git", json!({"operation": "status"})),
        Decision::Denied,
    )
    .await;
    assert_eq!(out["status"], "ok", "{out:?}");
    assert_eq!(out["success"], true);
    assert_eq!(out["functions"], Value::Null);
    let result = &out["result"];
    assert_eq!(result["operation"], "status");
    assert_eq!(result["success"], true);
    assert!(
        result["files"].to_string().contains("untracked.txt"),
        "{result}"
    );
    assert_eq!(recorder.asked(), 0, "read-only tools ask nobody");
}

#[tokio::test]
async fn openai_shaped_calls_with_json_text_arguments_work() {
    let (_d, ws) = temp_workspace();
    repo(&ws);
    let input = json!({"action": "execute", "tool_call": {"id": "call_1", "type": "function",
        "function": {"name": "workspace_git", "arguments": "{\"operation\": \"branch\"}"}}});
    let (out, _) = runtime(
        &ws,
        json!([{"type": "tools/workspace_git"}]),
        input,
        Decision::Denied,
    )
    .await;
    assert_eq!(out["status"], "ok", "{out:?}");
    assert_eq!(out["result"]["current_branch"], "main");
}

#[tokio::test]
async fn a_failing_tool_returns_its_outputs_and_status_failed() {
    let (_d, ws) = temp_workspace(); // not a repository
    let (out, _) = runtime(
        &ws,
        json!([{"type": "tools/workspace_git"}]),
        call("workspace_git", json!({"operation": "status"})),
        Decision::Denied,
    )
    .await;
    assert_eq!(out["status"], "failed", "{out:?}");
    assert_eq!(out["success"], false);
    assert_eq!(
        out["result"]["error_kind"],
        "LOCAL_EXECUTOR_NOT_A_REPOSITORY"
    );
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_NOT_A_REPOSITORY");
    assert!(
        out["error"]
            .as_str()
            .unwrap_or("")
            .starts_with("tool `workspace_git`: "),
        "{}",
        out["error"]
    );
}

#[tokio::test]
async fn shell_is_denied_without_approval_and_runs_with_it() {
    let (_d, ws) = temp_workspace();
    let exposed = json!([{"type": "tools/workspace_shell", "name": "shell"}]);
    let args = json!({"command": "touch", "args": ["made-by-shell"], "purpose": "prove approval"});

    let (out, recorder) = runtime(
        &ws,
        exposed.clone(),
        call("shell", args.clone()),
        Decision::Denied,
    )
    .await;
    assert_eq!(out["status"], "denied", "{out:?}");
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_APPROVAL_DENIED");
    assert_eq!(
        out["result"]["error_kind"],
        "LOCAL_EXECUTOR_APPROVAL_DENIED"
    );
    assert!(
        !ws.join("made-by-shell").exists(),
        "a denied command must not run"
    );
    assert_eq!(
        recorder.asked(),
        1,
        "the person behind the runtime's approver was asked"
    );
    let request = recorder.last().expect("request");
    assert_eq!(request.node_id, "shell");
    assert_eq!(request.node_type, "tools/workspace_shell");
    assert!(
        request.command_display.contains("touch made-by-shell"),
        "{request:?}"
    );
    assert_eq!(request.purpose.as_deref(), Some("prove approval"));

    let (out, recorder) = runtime(&ws, exposed, call("shell", args), Decision::Approved).await;
    assert_eq!(out["status"], "ok", "{out:?}");
    assert_eq!(out["result"]["exit_code"], 0);
    assert!(
        ws.join("made-by-shell").exists(),
        "the approved command ran in the workspace"
    );
    assert_eq!(recorder.asked(), 1);
}

#[tokio::test]
async fn an_agent_cannot_turn_on_author_switches_through_arguments() {
    let (_d, ws) = temp_workspace();
    let exposed = json!([{"type": "tools/workspace_shell", "name": "shell"}]);
    let args = json!({"shell_string": "touch pwned; touch pwned2", "allow_shell_string": true, "command_whitelist": ""});
    let (out, recorder) = runtime(&ws, exposed, call("shell", args), Decision::Approved).await;
    assert_eq!(out["status"], "invalid", "{out:?}");
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_POLICY_DENIED");
    assert_eq!(out["terminal"], true);
    assert_eq!(out["result"], Value::Null);
    let text = errors(&out);
    assert!(
        text.contains("tool `shell`: `allow_shell_string` is author-only: the toolkit's author sets it in exposed_tools[0].config; a tool call cannot"),
        "{text}"
    );
    assert!(
        text.contains("`command_whitelist` is author-only"),
        "{text}"
    );
    assert_eq!(recorder.asked(), 0, "refused before anybody is asked");
    assert!(!ws.join("pwned").exists());
}

#[tokio::test]
async fn an_agent_cannot_move_the_sandbox_root() {
    let (_d, ws) = temp_workspace();
    let exposed = json!([{"type": "tools/workspace_shell", "name": "shell"}]);
    let args = json!({"command": "touch", "args": ["escaped"], "sandbox_root": "/tmp"});
    let (out, recorder) = runtime(&ws, exposed, call("shell", args), Decision::Approved).await;
    assert_eq!(out["status"], "invalid", "{out:?}");
    assert!(
        errors(&out).contains("tool `shell`: `sandbox_root` is set by the engine"),
        "{}",
        errors(&out)
    );
    assert_eq!(recorder.asked(), 0);
}

#[tokio::test]
async fn capped_arguments_are_capped_by_the_entrys_config() {
    let (_d, ws) = temp_workspace();
    let args = json!({"text": "hi", "allow_net": true, "limit": 3});
    // Left on "ask" (the default): the request goes to a person, who says no here.
    let (out, recorder) = runtime(
        &ws,
        json!([{"type": "test/echo", "name": "echo"}]),
        call("echo", args.clone()),
        Decision::Denied,
    )
    .await;
    assert_eq!(out["status"], "denied", "{out:?}");
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_APPROVAL_DENIED");
    assert_eq!(recorder.asked(), 1);
    // Set to false by the author: refused without asking.
    let exposed = json!([{"type": "test/echo", "name": "echo", "config": {"allow_net": false}}]);
    let (out, recorder) =
        runtime(&ws, exposed, call("echo", args.clone()), Decision::Approved).await;
    assert_eq!(out["status"], "invalid", "{out:?}");
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_POLICY_DENIED");
    assert!(errors(&out).contains("tool `echo`, argument `allow_net`: allow_net=true was requested, but the node's author (the node's config) sets allow_net to false"), "{}", errors(&out));
    assert_eq!(recorder.asked(), 0);

    let exposed = json!([{"type": "test/echo", "name": "echo", "config": {"allow_net": true, "limit": 2, "mode": "loud"}}]);
    let (out, _) = runtime(&ws, exposed.clone(), call("echo", args), Decision::Denied).await;
    assert_eq!(out["status"], "invalid");
    assert!(
        errors(&out).contains("limit 3 is above the author's limit 2"),
        "{}",
        errors(&out)
    );

    let (out, _) = runtime(
        &ws,
        exposed,
        call("echo", json!({"text": "hi", "allow_net": true, "limit": 2})),
        Decision::Denied,
    )
    .await;
    assert_eq!(out["status"], "ok", "{out:?}");
    let seen = &out["result"]["seen"];
    assert_eq!(seen["allow_net"], true);
    assert_eq!(
        seen["mode"], "loud",
        "the entry's author config reaches the tool"
    );
    assert_eq!(
        seen["sandbox_root"],
        json!(ws.display().to_string()),
        "the engine injects the runtime's workspace"
    );
}

#[tokio::test]
async fn bad_arguments_are_refused_with_the_port_named() {
    let (_d, ws) = temp_workspace();
    let exposed = json!([{"type": "test/echo", "name": "echo"}]);
    let (out, _) = runtime(
        &ws,
        exposed.clone(),
        call("echo", json!({"txt": "hi"})),
        Decision::Denied,
    )
    .await;
    assert_eq!(out["status"], "invalid");
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_INVALID_INPUT");
    assert_eq!(out["terminal"], false, "the caller can fix its arguments");
    let text = errors(&out);
    assert!(text.contains("tool `echo`, argument `txt`: test/echo has no input `txt` (set in inputs). Did you mean `text`?"), "{text}");
    assert!(
        text.contains("tool `echo`, argument `text`: required input of test/echo is missing"),
        "{text}"
    );
    let (out, _) = runtime(
        &ws,
        exposed,
        call("echo", json!({"text": 5})),
        Decision::Denied,
    )
    .await;
    assert!(
        errors(&out).contains("argument `text`: expected string, got an integer"),
        "{}",
        errors(&out)
    );
}

#[tokio::test]
async fn dry_run_dispatches_nothing() {
    let (_d, ws) = temp_workspace();
    let exposed = json!([{"type": "tools/workspace_shell", "name": "shell", "config": {"allow_shell_string": true}}]);
    let args =
        json!({"shell_string": "touch dry-run-marker && echo done", "purpose": "check dry run"});
    // The approver would approve: only the dry run keeps the command from running.
    let (out, recorder) = runtime(
        &ws,
        exposed.clone(),
        dry("shell", args.clone()),
        Decision::Approved,
    )
    .await;
    assert_eq!(out["status"], "validated", "{out:?}");
    assert_eq!(out["success"], true);
    let result = &out["result"];
    assert_eq!(result["dry_run"], true);
    assert_eq!(result["tool"], "shell");
    assert_eq!(result["type"], "tools/workspace_shell");
    assert_eq!(result["requires_approval"], true);
    assert!(
        result["approval"]["command_display"]
            .as_str()
            .unwrap_or("")
            .contains("touch dry-run-marker"),
        "{result}"
    );
    assert_eq!(result["approval"]["purpose"], "check dry run");
    assert_eq!(result["input"]["allow_shell_string"], true);
    assert!(
        result["input"].get("sandbox_root").is_none(),
        "engine ports are not shown"
    );
    assert_eq!(recorder.asked(), 0, "nobody is asked in a dry run");
    // No wait needed: the runtime awaits the tool it dispatches, so a run would be over by now.
    assert!(
        !ws.join("dry-run-marker").exists(),
        "a dry run must not run the command"
    );

    // The same call without dry_run does run (so the marker above proves something).
    let (out, _) = runtime(&ws, exposed, call("shell", args), Decision::Approved).await;
    assert_eq!(out["status"], "ok", "{out:?}");
    assert!(ws.join("dry-run-marker").exists());
}

#[tokio::test]
async fn dry_run_of_a_read_only_tool_needs_no_approval() {
    let (_d, ws) = temp_workspace();
    let (out, _) = runtime(
        &ws,
        json!([{"type": "tools/workspace_git"}]),
        dry("workspace_git", json!({"operation": "log"})),
        Decision::Denied,
    )
    .await;
    assert_eq!(out["status"], "validated", "{out:?}");
    assert_eq!(out["result"]["requires_approval"], false);
    assert_eq!(out["result"]["approval"], Value::Null);
    assert_eq!(out["result"]["input"]["operation"], "log");
    assert_eq!(
        out["result"]["input"]["max_count"], 20,
        "the dry run shows the default that will apply"
    );
}

#[tokio::test]
async fn dry_run_applies_the_tools_own_policy() {
    let (_d, ws) = temp_workspace();
    let exposed = json!([{"type": "tools/workspace_shell", "name": "shell", "config": {"command_whitelist": "git"}}]);
    let (out, recorder) = runtime(
        &ws,
        exposed,
        dry("shell", json!({"command": "touch", "args": ["x"]})),
        Decision::Approved,
    )
    .await;
    assert_eq!(out["status"], "invalid", "{out:?}");
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_POLICY_DENIED");
    assert!(
        errors(&out).starts_with("tool `shell`: "),
        "{}",
        errors(&out)
    );
    assert_eq!(recorder.asked(), 0);
    assert!(!ws.join("x").exists());
}

#[tokio::test]
async fn an_unknown_tool_name_lists_what_is_offered() {
    let (_d, ws) = temp_workspace();
    let exposed = json!([{"type": "tools/workspace_git", "name": "git"}, {"type": "tools/workspace_markdown"}]);
    let (out, _) = runtime(
        &ws,
        exposed,
        call("shell", json!({"command": "ls"})),
        Decision::Approved,
    )
    .await;
    assert_eq!(out["status"], "invalid");
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_NOT_FOUND");
    assert_eq!(errors(&out), "unknown tool `shell`; this toolkit offers: git, workspace_markdown (action=list_tools describes them)");
}

#[tokio::test]
async fn a_tool_hidden_by_its_gate_cannot_be_called() {
    let (_d, ws) = temp_workspace();
    let (out, _) = runtime(
        &ws,
        json!([{"type": "test/gated"}]),
        call("gated", json!({})),
        Decision::Approved,
    )
    .await;
    assert_eq!(out["status"], "error", "{out:?}");
    let text = errors(&out);
    assert!(
        text.contains("tool `gated` is misconfigured in exposed_tools[0]"),
        "{text}"
    );
    assert!(
        text.contains("set CHENG_TEST_RUNTIME_GATE=1 to enable it"),
        "{text}"
    );

    let open = run_with(
        &engine(tools(true)),
        &ws,
        json!({"exposed_tools": [{"type": "test/gated"}]}),
        call("gated", json!({})),
        Recorder::new(Decision::Denied),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(open.outputs["status"], "ok");
    assert_eq!(open.outputs["result"]["ran"], true);
}

#[tokio::test]
async fn recursion_is_refused() {
    let (_d, ws) = temp_workspace();
    let inner = json!({"action": "list_tools"});
    let (out, _) = runtime(
        &ws,
        json!([{"type": "tools/runtime", "name": "again"}]),
        call("again", inner),
        Decision::Approved,
    )
    .await;
    assert_eq!(out["status"], "error");
    assert!(errors(&out).contains("no recursion"), "{}", errors(&out));
    assert_eq!(out["result"], Value::Null);
}

#[tokio::test]
async fn a_missing_or_malformed_tool_call_is_invalid() {
    let (_d, ws) = temp_workspace();
    let exposed = json!([{"type": "tools/workspace_git"}]);
    let (out, _) = runtime(
        &ws,
        exposed.clone(),
        json!({"action": "execute"}),
        Decision::Denied,
    )
    .await;
    assert_eq!(out["status"], "invalid");
    assert!(
        errors(&out).contains("tool_call is required when action=execute"),
        "{}",
        errors(&out)
    );
    let (out, _) = runtime(
        &ws,
        exposed,
        json!({"action": "execute", "tool_call": {"tool": "workspace_git"}}),
        Decision::Denied,
    )
    .await;
    assert!(
        errors(&out).contains("unknown key `tool`"),
        "{}",
        errors(&out)
    );
}

#[tokio::test]
async fn cancelling_the_runtime_cancels_the_tool() {
    let (_d, ws) = temp_workspace();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        trigger.cancel();
    });
    let engine = engine(tools(false));
    let config = json!({"exposed_tools": [{"type": "test/wait"}]});
    let run = run_with(
        &engine,
        &ws,
        config,
        call("wait", json!({})),
        Recorder::new(Decision::Denied),
        cancel,
    );
    let result = tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .expect("the tool saw the cancellation");
    let out = &result.outputs;
    assert_eq!(out["status"], "cancelled", "{out:?}");
    assert_eq!(out["result"]["error_kind"], "LOCAL_EXECUTOR_CANCELLED");
    assert_eq!(result.status, cheng_engine::NodeStatus::Cancelled);
}
