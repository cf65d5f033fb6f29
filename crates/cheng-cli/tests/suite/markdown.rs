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
    let start = stderr.find("LOCAL_EXECUTOR_").unwrap_or_else(|| panic!("no error code in stderr: {stderr}"));
    stderr[start..].chars().take_while(|c| c.is_ascii_uppercase() || *c == '_').collect()
}

fn md_fixtures() -> std::path::PathBuf {
    fixtures().join("markdown")
}

#[test]
fn outline_of_a_fixture() {
    let (code, out, stderr) = markdown(&md_fixtures(), json!({"operation": "outline", "path": "headings.md"}));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out["success"], true);
    assert_eq!(out["operation"], "outline");
    assert_eq!(out["path"], "headings.md");
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(md_fixtures().join("headings.expected.json")).expect("expected")).expect("json");
    assert_eq!(out["outline"], expected["outline"]);
    assert_eq!(out["diagnostics"], Value::Null);
    assert_eq!(out["suggested_edits"], Value::Null);
}

#[test]
fn diagnostics_match_the_checked_in_expectations() {
    for name in ["headings", "whitespace", "links", "clean", "edge"] {
        let (code, out, stderr) = markdown(&md_fixtures(), json!({"operation": "diagnostics", "path": format!("{name}.md")}));
        assert_eq!(code, 0, "{name}: {stderr}");
        let expected: Value = serde_json::from_str(
            &std::fs::read_to_string(md_fixtures().join(format!("{name}.expected.json"))).expect("expected"),
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
    let (code, out, stderr) = markdown(&ws, json!({"operation": "format_suggestions", "path": "doc.md"}));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(std::fs::read_to_string(ws.join("doc.md")).expect("read"), original, "the node never writes");
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
    let (code, out, stderr) = markdown(&site, json!({"operation": "link_check_local", "path": "index.md"}));
    assert_eq!(code, 0, "{stderr}");
    let rules: Vec<&str> = out["diagnostics"].as_array().expect("diagnostics").iter().filter_map(|d| d["rule"].as_str()).collect();
    for rule in ["broken-local-link", "outside-workspace", "broken-link-fragment", "undefined-reference", "skipped-external"] {
        assert!(rules.contains(&rule), "{rule} missing from {rules:?}");
    }
    assert!(out["summary"].as_str().is_some_and(|s| s.contains("9 ok")), "{}", out["summary"]);
}

#[test]
fn errors_carry_stable_codes() {
    let (_d, ws) = temp_workspace();
    std::fs::create_dir(ws.join("dir")).expect("dir");
    let cases = [
        (json!({"path": "a.md"}), "LOCAL_EXECUTOR_INVALID_INPUT"),
        (json!({"operation": "outline", "path": "missing.md"}), "LOCAL_EXECUTOR_NOT_FOUND"),
        (json!({"operation": "outline", "path": "../../etc/passwd"}), "LOCAL_EXECUTOR_PATH_OUTSIDE_WORKSPACE"),
        (json!({"operation": "outline", "path": "dir"}), "LOCAL_EXECUTOR_INVALID_INPUT"),
    ];
    for (input, expected) in cases {
        let (code, out, stderr) = markdown(&ws, input.clone());
        assert_eq!(failure(code, &out, &stderr), expected, "{input}");
    }
    // sandbox_root is engine-injected: an agent cannot point the node elsewhere.
    let (code, out, stderr) = markdown(&ws, json!({"operation": "outline", "path": "x.md", "sandbox_root": "/"}));
    assert_ne!(code, 0, "{out} {stderr}");
}
