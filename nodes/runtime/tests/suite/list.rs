//! list_tools: functions, gates, the author's curation and its errors.

use super::support::*;
use cheng_engine::ValidationErrorKind;
use cheng_node::{schema, CancellationToken, Decision, Values};
use serde_json::{json, Value};

const LIST: &str = r#"{"action": "list_tools"}"#;

fn list() -> Value {
    serde_json::from_str(LIST).expect("json")
}

#[tokio::test]
async fn functions_are_exactly_the_agent_facing_input_schemas() {
    let (_d, ws) = temp_workspace();
    let exposed = json!([
        {"type": "tools/workspace_git"},
        {"type": "tools/workspace_shell", "name": "shell", "config": {"command_whitelist": "cargo\ngit"}},
        {"type": "tools/workspace_markdown", "name": "lint-md", "description": "Lint Markdown files."},
    ]);
    let (out, _) = runtime(&ws, exposed, list(), Decision::Denied).await;
    assert_eq!(out["status"], "ok", "{}", errors(&out));
    assert_eq!(out["success"], true);
    assert_eq!(out["errors"], json!([]));
    assert_eq!(out["result"], Value::Null);
    assert_eq!(names(&out), ["workspace_git", "shell", "lint-md"]);
    let registry = tools(false);
    let functions = out["functions"].as_array().expect("functions");
    for (function, id) in functions.iter().zip([
        "tools/workspace_git",
        "tools/workspace_shell",
        "tools/workspace_markdown",
    ]) {
        let spec = registry.get(id).expect("registered").spec();
        assert_eq!(function["type"], "function");
        assert_eq!(
            function["function"]["parameters"],
            cheng_nodes_runtime::portable(schema::input_schema(spec)),
            "{id}"
        );
        assert_eq!(
            function["function"].as_object().map(|f| f.len()),
            Some(3),
            "name, description, parameters only"
        );
    }
    // Author and engine ports are nowhere in what the agent sees.
    let shell = &functions[1]["function"];
    let params = shell["parameters"]["properties"]
        .as_object()
        .expect("properties");
    for hidden in ["allow_shell_string", "command_whitelist", "sandbox_root"] {
        assert!(!params.contains_key(hidden), "{hidden} must not be offered");
    }
    assert!(params.contains_key("command"));
    // Approval-gated tools say so; read-only ones do not.
    let shell_text = shell["description"].as_str().expect("description");
    assert!(
        shell_text.ends_with("A person approves each call before it runs."),
        "{shell_text}"
    );
    assert!(!functions[0]["function"]["description"]
        .as_str()
        .unwrap_or("")
        .contains("approves"));
    assert_eq!(
        functions[2]["function"]["description"],
        "Lint Markdown files."
    );
}

#[tokio::test]
async fn operation_gated_tools_name_the_operation() {
    let (_d, ws) = temp_workspace();
    let (out, _) = runtime(
        &ws,
        json!([{"type": "tools/workspace_tests"}]),
        list(),
        Decision::Denied,
    )
    .await;
    let text = out["functions"][0]["function"]["description"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(
        text.contains("A person approves each call with operation run"),
        "{text}"
    );
}

#[tokio::test]
async fn a_gated_out_node_is_absent_and_the_error_names_its_variable() {
    let (_d, ws) = temp_workspace();
    let config =
        json!({"exposed_tools": [{"type": "tools/workspace_git"}, {"type": "test/gated"}]});
    let shut = run_with(
        &engine(tools(false)),
        &ws,
        config.clone(),
        list(),
        Recorder::new(Decision::Denied),
        CancellationToken::new(),
    )
    .await;
    let out = shut.outputs;
    assert_eq!(names(&out), ["workspace_git"]);
    assert_eq!(out["status"], "error");
    assert_eq!(out["success"], false);
    assert_eq!(out["terminal"], true);
    assert!(
        errors(&out).contains("exposed_tools[1] (`gated`, test/gated): test/gated is disabled; set CHENG_TEST_RUNTIME_GATE=1 to enable it"),
        "{}",
        errors(&out)
    );

    let open = run_with(
        &engine(tools(true)),
        &ws,
        config,
        list(),
        Recorder::new(Decision::Denied),
        CancellationToken::new(),
    )
    .await;
    let out = open.outputs;
    assert_eq!(out["status"], "ok", "{}", errors(&out));
    assert_eq!(names(&out), ["workspace_git", "gated"]);
}

#[tokio::test]
async fn every_bad_entry_is_reported_and_the_good_ones_still_listed() {
    let (_d, ws) = temp_workspace();
    let exposed = json!([
        {"type": "tools/workspace_git"},
        {"type": "tools/workspace_shell", "cfg": {}},
        {"type": "tools/workspace_shel"},
        {"type": "tools/workspace_shell", "name": "shell", "config": {"command_whitelist": 5}},
        {"type": "tools/workspace_shell", "name": "shell2", "config": {"sandbox_root": "/"}},
        {"type": "tools/workspace_shell", "name": "shell3", "config": {"comand": "ls"}},
        {"type": "tools/workspace_markdown", "name": "workspace_git"},
        {"type": "tools/workspace_markdown", "name": "lint markdown"},
        {"name": "nameless"},
        {"type": "tools/workspace_preview", "description": ""},
        {"type": "tools/workspace_git", "name": "git", "config": {"max_bytes": 0}},
    ]);
    let (out, _) = runtime(&ws, exposed, list(), Decision::Denied).await;
    assert_eq!(out["status"], "error");
    assert_eq!(names(&out), ["workspace_git"]);
    let text = errors(&out);
    for expected in [
        "exposed_tools[1]: unknown key `cfg`",
        "exposed_tools[2] (`workspace_shel`, tools/workspace_shel): unknown node type `tools/workspace_shel`. Did you mean `tools/workspace_shell`?",
        "exposed_tools[3] (`shell`, tools/workspace_shell): config.command_whitelist: expected string, got an integer",
        "exposed_tools[4] (`shell2`, tools/workspace_shell): config.sandbox_root: sandbox_root is engine-injected",
        "exposed_tools[5] (`shell3`, tools/workspace_shell): config.comand: tools/workspace_shell has no input `comand` (set in config). Did you mean `command`?",
        "exposed_tools[6]: function name `workspace_git` is already used by exposed_tools[0]; give this entry a distinct `name`",
        "exposed_tools[7]: function name `lint markdown` contains ' '",
        "exposed_tools[8]: `type` is missing",
        "exposed_tools[9]: `description` is empty",
        "exposed_tools[10] (`git`, tools/workspace_git): config.max_bytes: 0 is below the minimum 1",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    assert_eq!(out["errors"].as_array().map(Vec::len), Some(10), "{text}");
}

#[tokio::test]
async fn the_runtime_cannot_expose_itself() {
    let (_d, ws) = temp_workspace();
    // The inventory registry holds tools/runtime itself (this crate is linked).
    assert!(tools(false).get("tools/runtime").is_some());
    let (out, _) = runtime(
        &ws,
        json!([{"type": "tools/runtime"}, {"type": "tools/workspace_git"}]),
        list(),
        Decision::Denied,
    )
    .await;
    assert_eq!(names(&out), ["workspace_git"]);
    assert!(errors(&out).contains("exposed_tools[0] (`runtime`, tools/runtime): a toolkit cannot expose tools/runtime itself (no recursion)"), "{}", errors(&out));
}

#[tokio::test]
async fn an_empty_toolkit_lists_nothing_and_says_so() {
    let (_d, ws) = temp_workspace();
    let (out, _) = runtime(&ws, json!([]), json!({}), Decision::Denied).await;
    assert_eq!(out["status"], "ok");
    assert_eq!(out["functions"], json!([]));
    assert!(
        warnings(&out).contains("exposed_tools is empty"),
        "{}",
        warnings(&out)
    );
}

#[tokio::test]
async fn switches_the_author_turns_on_are_warned_about() {
    let (_d, ws) = temp_workspace();
    let exposed = json!([
        {"type": "tools/workspace_shell", "config": {"allow_shell_string": true}},
        {"type": "test/echo", "config": {"allow_net": true}},
    ]);
    let (out, _) = runtime(
        &ws,
        exposed,
        json!({"action": "list_tools", "dry_run": true}),
        Decision::Denied,
    )
    .await;
    let text = warnings(&out);
    assert!(
        text.contains("config.allow_shell_string is on for every call of this tool"),
        "{text}"
    );
    assert!(text.contains("config.allow_net is true, so a caller that requests it gets it without a person being asked"), "{text}");
    assert!(
        text.contains("dry_run has no effect on list_tools"),
        "{text}"
    );
}

#[tokio::test]
async fn an_agent_cannot_widen_its_own_toolkit() {
    let (_d, ws) = temp_workspace();
    let engine = engine(tools(false));
    let options = cheng_engine::RunOptions::new(&ws).expect("workspace");
    let input =
        json!({"action": "list_tools", "exposed_tools": [{"type": "tools/workspace_shell"}]});
    let input: Values = input.as_object().cloned().unwrap_or_default();
    let Err(errors) = engine
        .run_node("tools/runtime", Values::new(), input, options)
        .await
    else {
        panic!("exposed_tools in inputs must be refused");
    };
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].kind, ValidationErrorKind::AuthorOnly);
    assert_eq!(errors[0].port.as_deref(), Some("exposed_tools"));
}

#[tokio::test]
async fn entries_that_are_not_objects_are_refused_by_the_engine() {
    let (_d, ws) = temp_workspace();
    let engine = engine(tools(false));
    let options = cheng_engine::RunOptions::new(&ws).expect("workspace");
    let config: Values =
        json!({"exposed_tools": [{"type": "tools/workspace_git"}, "tools/workspace_shell"]})
            .as_object()
            .cloned()
            .unwrap_or_default();
    let Err(errors) = engine
        .run_node("tools/runtime", config, Values::new(), options)
        .await
    else {
        panic!("a string entry must be refused");
    };
    assert!(
        errors[0]
            .to_string()
            .contains("exposed_tools`: expected array<object>, but element 1 is a string"),
        "{errors:?}"
    );
}

#[tokio::test]
async fn a_required_author_port_belongs_in_config_and_a_required_agent_port_does_not() {
    let (_d, ws) = temp_workspace();
    let (out, _) = runtime(
        &ws,
        json!([{"type": "test/strict"}]),
        list(),
        Decision::Denied,
    )
    .await;
    assert_eq!(out["status"], "error");
    assert_eq!(
        errors(&out),
        "exposed_tools[0] (`strict`, test/strict): config.root: required input of test/strict is missing; set it in config"
    );
    let (out, _) = runtime(
        &ws,
        json!([{"type": "test/strict", "config": {"root": "."}}]),
        list(),
        Decision::Denied,
    )
    .await;
    assert_eq!(out["status"], "ok", "{}", errors(&out));
    assert_eq!(
        out["functions"][0]["function"]["parameters"]["required"],
        json!(["text"])
    );
}
