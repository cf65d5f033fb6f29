//! `cheng run tools/workspace_markdown` through the real binary: the four operations on the
//! checked-in fixtures, edits that apply, and the error codes.
#![allow(unused_imports)]
use super::support::*;

use serde_json::{json, Value};
use std::path::Path;

const NODE: &str = "tools/workspace_markdown";

fn markdown(ws: &Path, input: Value) -> (i32, Value, String) {
    run_node(NODE, ws, &input, &[])
}

/// The `LOCAL_EXECUTOR_*` code of a failed run, from the output object or from stderr.
fn failure(code: i32, out: &Value, stderr: &str) -> String {
    assert_ne!(code, 0, "expected a failure; stdout {out}, stderr {stderr}");
    if let Some(kind) = out.get("error_kind").and_then(Value::as_str) {
        assert_eq!(out["success"], false, "{out}");
        return kind.to_string();
    }
    let start = stderr
        .find("LOCAL_EXECUTOR_")
        .unwrap_or_else(|| panic!("no error code in stderr: {stderr}"));
    stderr[start..]
        .chars()
        .take_while(|c| c.is_ascii_uppercase() || *c == '_')
        .collect()
}

fn md_fixtures() -> std::path::PathBuf {
    fixtures().join("markdown")
}

#[test]
fn outline_of_a_fixture() {
    let (code, out, stderr) = markdown(
        &md_fixtures(),
        json!({"operation": "outline", "path": "headings.md"}),
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out["success"], true);
    assert_eq!(out["operation"], "outline");
    assert_eq!(out["path"], "headings.md");
    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(md_fixtures().join("headings.expected.json")).expect("expected"),
    )
    .expect("json");
    assert_eq!(out["outline"], expected["outline"]);
    assert_eq!(out["diagnostics"], Value::Null);
    assert_eq!(out["suggested_edits"], Value::Null);
}

#[test]
fn diagnostics_match_the_checked_in_expectations() {
    for name in ["headings", "whitespace", "links", "clean", "edge"] {
        let (code, out, stderr) = markdown(
            &md_fixtures(),
            json!({"operation": "diagnostics", "path": format!("{name}.md")}),
        );
        assert_eq!(code, 0, "{name}: {stderr}");
        let expected: Value = serde_json::from_str(
            &std::fs::read_to_string(md_fixtures().join(format!("{name}.expected.json")))
                .expect("expected"),
        )
        .expect("json");
        assert_eq!(out["diagnostics"], expected["diagnostics"], "{name}");
    }
}

#[test]
fn suggested_edits_apply_cleanly_and_fix_their_findings() {
    let (_d, ws) = temp_workspace();
    let original = std::fs::read_to_string(md_fixtures().join("whitespace.md")).expect("fixture");
    std::fs::write(ws.join("doc.md"), &original).expect("copy");
    let (code, out, stderr) = markdown(
        &ws,
        json!({"operation": "format_suggestions", "path": "doc.md"}),
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        std::fs::read_to_string(ws.join("doc.md")).expect("read"),
        original,
        "the node never writes"
    );
    let edits = out["suggested_edits"].as_array().expect("edits").clone();
    assert!(!edits.is_empty());
    let mut text = original.clone();
    for edit in &edits {
        let old = edit["old_string"].as_str().expect("old_string");
        assert_eq!(text.matches(old).count(), 1, "{edit}");
        text = text.replacen(old, edit["new_string"].as_str().expect("new_string"), 1);
    }
    std::fs::write(ws.join("doc.md"), &text).expect("write fixed");
    let (_, out, _) = markdown(&ws, json!({"operation": "diagnostics", "path": "doc.md"}));
    let left: Vec<&Value> = out["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .filter(|d| edits.iter().any(|e| e["rule"] == d["rule"]))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn link_check_on_the_site_fixture() {
    let site = md_fixtures().join("site");
    let (code, out, stderr) = markdown(
        &site,
        json!({"operation": "link_check_local", "path": "index.md"}),
    );
    assert_eq!(code, 0, "{stderr}");
    let rules: Vec<&str> = out["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .filter_map(|d| d["rule"].as_str())
        .collect();
    for rule in [
        "broken-local-link",
        "outside-workspace",
        "broken-link-fragment",
        "undefined-reference",
        "skipped-external",
    ] {
        assert!(rules.contains(&rule), "{rule} missing from {rules:?}");
    }
    assert!(
        out["summary"].as_str().is_some_and(|s| s.contains("9 ok")),
        "{}",
        out["summary"]
    );
}

#[test]
fn errors_carry_stable_codes() {
    let (_d, ws) = temp_workspace();
    std::fs::create_dir(ws.join("dir")).expect("dir");
    let cases = [
        (json!({"path": "a.md"}), "LOCAL_EXECUTOR_INVALID_INPUT"),
        (
            json!({"operation": "outline", "path": "missing.md"}),
            "LOCAL_EXECUTOR_NOT_FOUND",
        ),
        (
            json!({"operation": "outline", "path": "../../etc/passwd"}),
            "LOCAL_EXECUTOR_PATH_OUTSIDE_WORKSPACE",
        ),
        (
            json!({"operation": "outline", "path": "dir"}),
            "LOCAL_EXECUTOR_INVALID_INPUT",
        ),
    ];
    for (input, expected) in cases {
        let (code, out, stderr) = markdown(&ws, input.clone());
        assert_eq!(failure(code, &out, &stderr), expected, "{input}");
    }
}

/// sandbox_root is engine-injected: neither `--input` nor `--config` may set it. The smuggled
/// root holds the file asked for and the real workspace does not, so honouring it (or ignoring
/// it and failing on the missing file, exit 1) cannot pass for the rejection (exit 2).
#[test]
fn a_smuggled_sandbox_root_is_rejected() {
    let (_d, ws) = temp_workspace();
    let (_o, elsewhere) = temp_workspace();
    std::fs::write(elsewhere.join("doc.md"), "# Elsewhere\n").expect("write");
    let root = elsewhere.to_str().expect("utf-8").to_string();
    // Control: the same request is a plain NOT_FOUND in the workspace, and works where the file is.
    let (code, out, stderr) = markdown(&ws, json!({"operation": "outline", "path": "doc.md"}));
    assert_eq!(failure(code, &out, &stderr), "LOCAL_EXECUTOR_NOT_FOUND");
    let (code, out, stderr) = markdown(
        &elsewhere,
        json!({"operation": "outline", "path": "doc.md"}),
    );
    assert_eq!(code, 0, "{out} {stderr}");
    let (code, out, stderr) = markdown(
        &ws,
        json!({"operation": "outline", "path": "doc.md", "sandbox_root": root}),
    );
    assert_eq!(code, 2, "{out} {stderr}");
    assert!(
        stderr.contains("sandbox_root") && stderr.contains("engine-injected"),
        "{stderr}"
    );
    assert_eq!(out, Value::Null, "nothing ran, so no output object: {out}");
    let config = json!({"sandbox_root": root}).to_string();
    let (code, out, stderr) = run_node(
        NODE,
        &ws,
        &json!({"operation": "outline", "path": "doc.md"}),
        &["--config", &config],
    );
    assert_eq!(code, 2, "{out} {stderr}");
    assert!(
        stderr.contains("sandbox_root") && stderr.contains("engine-injected"),
        "{stderr}"
    );
}

/// The run-time route: an edge carrying another node's output into `sandbox_root`. The graph is
/// rejected before anything runs (the feeding node would leave a marker), by `graph check` and
/// `graph run` alike; the same graph feeding `path` instead is valid and runs.
#[test]
fn an_edge_into_sandbox_root_is_rejected_before_anything_runs() {
    let (_d, ws) = temp_workspace();
    let (_o, elsewhere) = temp_workspace();
    std::fs::write(elsewhere.join("doc.md"), "# Elsewhere\n").expect("write");
    std::fs::write(ws.join("doc.md"), "# Workspace\n").expect("write");
    let graph = |target: &str| {
        let graph = json!({"version": 1, "nodes": [
            {"id": "src", "type": "tools/workspace_shell",
             "inputs": {"command": "sh", "args": ["-c", format!("touch ran; printf %s '{}'", if target == "path" { "doc.md" } else { elsewhere.to_str().unwrap_or_default() })]}},
            {"id": "md", "type": NODE, "inputs": if target == "path" { json!({"operation": "outline"}) } else { json!({"operation": "outline", "path": "doc.md"}) }}],
            "edges": [{"from": "src.stdout", "to": format!("md.{target}")}]});
        let file = ws.join(format!("graph-{target}.json"));
        std::fs::write(&file, graph.to_string()).expect("write graph");
        file.to_str().expect("utf-8").to_string()
    };
    let smuggling = graph("sandbox_root");
    let ws_arg = ws.to_str().expect("utf-8");
    for args in [
        vec!["graph", "check", smuggling.as_str()],
        vec![
            "graph",
            "run",
            smuggling.as_str(),
            "--workspace",
            ws_arg,
            "--approve",
        ],
    ] {
        let out = run_cheng(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("node `md`, port `sandbox_root`"),
            "{args:?}: {stderr}"
        );
        assert!(
            stderr.contains("engine-injected; no edge may feed it"),
            "{args:?}: {stderr}"
        );
        assert!(
            !ws.join("ran").exists(),
            "{args:?}: a node ran although the graph was rejected"
        );
    }
    // Control: the same shape feeding an ordinary port is valid, runs, and sees the workspace.
    let valid = graph("path");
    let out = run_cheng(&["graph", "check", &valid]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run_cheng(&["graph", "run", &valid, "--workspace", ws_arg, "--approve"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    assert!(ws.join("ran").exists());
    assert_eq!(
        result["nodes"]["md"]["outputs"]["outline"][0]["text"], "Workspace",
        "{result}"
    );
}
