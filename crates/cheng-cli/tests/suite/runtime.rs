//! tools/runtime through the real binary: listing, gates, execution, approval, author ports.

use super::support::*;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

const RUNTIME: &str = "tools/runtime";

fn config(exposed: Value) -> String {
    json!({ "exposed_tools": exposed }).to_string()
}

/// `cheng run tools/runtime` with `vars` set (gates are cleared first by `cheng()`).
fn run_runtime(
    ws: &Path,
    exposed: Value,
    input: Value,
    extra: &[&str],
    vars: &[(&str, &str)],
) -> (i32, Value, String) {
    let mut cmd: Command = cheng();
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let config = config(exposed);
    let input = input.to_string();
    cmd.args([
        "run",
        RUNTIME,
        "--workspace",
        ws.to_str().expect("utf-8 path"),
        "--config",
        &config,
        "--input",
        &input,
    ]);
    cmd.args(extra);
    let out = cmd.output().expect("cheng runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (
        out.status.code().unwrap_or(-1),
        serde_json::from_str(&stdout).unwrap_or(Value::Null),
        stderr,
    )
}

fn names(out: &Value) -> Vec<String> {
    out["functions"]
        .as_array()
        .map(|fs| {
            fs.iter()
                .filter_map(|f| f["function"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn errors(out: &Value) -> String {
    out["errors"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

#[test]
fn list_tools_matches_the_committed_input_schemas() {
    let (_d, ws) = temp_workspace();
    let exposed =
        json!([{"type": "tools/workspace_git", "name": "git"}, {"type": "tools/workspace_shell"}]);
    let (code, out, stderr) = run_runtime(&ws, exposed, json!({"action": "list_tools"}), &[], &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out["status"], "ok");
    assert_eq!(names(&out), ["git", "workspace_shell"]);
    for (i, file) in ["workspace_git.json", "workspace_shell.json"]
        .iter()
        .enumerate()
    {
        let text =
            std::fs::read_to_string(repo_root().join("schemas").join(file)).expect("schema file");
        let schema: Value = serde_json::from_str(&text).expect("schema JSON");
        // The committed input schema, in the portable subset models are given.
        assert_eq!(
            out["functions"][i]["function"]["parameters"],
            cheng_nodes_runtime::portable(schema["input"].clone()),
            "{file}"
        );
    }
}

#[test]
fn code_js_is_listed_only_when_its_gate_is_set() {
    let (_d, ws) = temp_workspace();
    let exposed = json!([{"type": "tools/workspace_git"}, {"type": "tools/code_js", "name": "js"}]);
    let (code, out, stderr) = run_runtime(
        &ws,
        exposed.clone(),
        json!({"action": "list_tools"}),
        &[],
        &[],
    );
    assert_eq!(code, 1, "a broken curation reports success:false: {stderr}");
    assert_eq!(out["status"], "error");
    assert_eq!(names(&out), ["workspace_git"]);
    assert!(
        errors(&out).contains("tools/code_js is disabled; set CHENG_ENABLE_CODE_JS=1 to enable it"),
        "{}",
        errors(&out)
    );

    let (code, out, stderr) = run_runtime(
        &ws,
        exposed,
        json!({"action": "list_tools"}),
        &[],
        &[("CHENG_ENABLE_CODE_JS", "1")],
    );
    assert_eq!(code, 0, "{stderr} {out}");
    assert_eq!(out["status"], "ok");
    assert_eq!(names(&out), ["workspace_git", "js"]);
}

#[test]
fn execute_runs_git_status_in_the_workspace() {
    let (_d, ws) = temp_workspace();
    git(&ws, &["-c", "init.defaultBranch=main", "init", "-q", "."]);
    std::fs::write(ws.join("new.txt"), "x\n").expect("write");
    let input = json!({"action": "execute", "tool_call": {"name": "git", "arguments": {"operation": "status"}}});
    let (code, out, stderr) = run_runtime(
        &ws,
        json!([{"type": "tools/workspace_git", "name": "git"}]),
        input,
        &[],
        &[],
    );
    assert_eq!(code, 0, "{stderr} {out}");
    assert_eq!(out["status"], "ok");
    assert!(
        out["result"]["files"].to_string().contains("new.txt"),
        "{out}"
    );
}

#[test]
fn execute_of_a_gated_tool_follows_approve_and_deny() {
    let (_d, ws) = temp_workspace();
    let exposed = json!([{"type": "tools/workspace_shell", "name": "shell"}]);
    let input = json!({"action": "execute", "tool_call": {"name": "shell", "arguments": {"command": "touch", "args": ["approved-file"]}}});
    let (code, out, stderr) = run_runtime(&ws, exposed.clone(), input.clone(), &["--deny"], &[]);
    assert_eq!(code, 1, "{stderr} {out}");
    assert_eq!(out["status"], "denied");
    assert!(!ws.join("approved-file").exists());
    let (code, out, stderr) = run_runtime(&ws, exposed, input, &["--approve"], &[]);
    assert_eq!(code, 0, "{stderr} {out}");
    assert_eq!(out["status"], "ok");
    assert!(ws.join("approved-file").exists());
}

#[test]
fn author_switches_cannot_come_from_the_tool_call_or_the_input() {
    let (_d, ws) = temp_workspace();
    let exposed = json!([{"type": "tools/workspace_shell", "name": "shell"}]);
    let input = json!({"action": "execute", "tool_call": {"name": "shell",
        "arguments": {"shell_string": "touch pwned; true", "allow_shell_string": true}}});
    let (code, out, stderr) = run_runtime(&ws, exposed, input, &["--approve"], &[]);
    assert_eq!(code, 1, "{stderr} {out}");
    assert_eq!(out["status"], "invalid");
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_POLICY_DENIED");
    assert!(
        errors(&out).contains("`allow_shell_string` is author-only"),
        "{}",
        errors(&out)
    );
    assert!(!ws.join("pwned").exists());

    // The toolkit itself is the author's: an agent cannot widen it through --input.
    let input =
        json!({"action": "list_tools", "exposed_tools": [{"type": "tools/workspace_shell"}]});
    let (code, _out, stderr) = run_node(RUNTIME, &ws, &input, &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("exposed_tools is author-only"), "{stderr}");
}

#[test]
fn dry_run_through_the_cli_runs_nothing() {
    let (_d, ws) = temp_workspace();
    let exposed = json!([{"type": "tools/workspace_shell", "name": "shell"}]);
    let input = json!({"action": "execute", "dry_run": true,
        "tool_call": {"name": "shell", "arguments": {"command": "touch", "args": ["dry-file"]}}});
    let (code, out, stderr) = run_runtime(&ws, exposed, input, &["--approve"], &[]);
    assert_eq!(code, 0, "{stderr} {out}");
    assert_eq!(out["status"], "validated");
    assert_eq!(out["result"]["requires_approval"], true);
    assert!(!ws.join("dry-file").exists());
}
