//! `cheng run tools/workspace_preview` through the real binary.
#![allow(unused_imports)]
use super::support::*;

use serde_json::{json, Value};
use std::path::Path;

const NODE: &str = "tools/workspace_preview";

fn preview(ws: &Path, input: Value) -> (i32, Value, String) {
    run_node(NODE, ws, &input, &[])
}

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

#[test]
fn markdown_preview_is_sanitised() {
    let (_d, ws) = temp_workspace();
    let content = "# Hi\n\n<script>alert(1)</script>\n\n[x](javascript:alert(1)) <img src=x onerror=alert(1)> [ok](https://e.example)\n";
    let (code, out, stderr) = preview(&ws, json!({"operation": "markdown", "content": content}));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out["format"], "html");
    let html = out["preview"].as_str().expect("preview");
    for bad in ["<script", "alert(1)</script>", "javascript:", "onerror"] {
        assert!(!html.contains(bad), "{bad} in {html}");
    }
    assert!(html.contains("rel=\"noopener noreferrer\""), "{html}");
    assert_eq!(out["source_path"], Value::Null);
    assert_eq!(out["source_bytes"], content.len());
}

#[test]
fn artifact_summary_of_a_fixture_image() {
    let site = fixtures().join("markdown/site");
    let (code, out, stderr) = preview(
        &site,
        json!({"operation": "artifact_summary", "path": "img/logo.png"}),
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out["format"], "metadata");
    assert_eq!(out["source_path"], "img/logo.png");
    let meta = &out["metadata"];
    assert_eq!(meta["mime"], "image/png");
    assert_eq!(meta["image"], json!({"width": 16, "height": 8}));
    assert_eq!(meta["sha256"].as_str().map(str::len), Some(64));
}

#[test]
fn html_summary_and_truncation() {
    let (_d, ws) = temp_workspace();
    let body: String = (0..3000).map(|i| format!("<p>Line {i}</p>")).collect();
    std::fs::write(
        ws.join("p.html"),
        format!("<html><head><title>T</title></head><body>{body}</body></html>"),
    )
    .expect("write");
    let (code, out, stderr) = preview(
        &ws,
        json!({"operation": "html", "path": "p.html", "max_bytes": 2000}),
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out["format"], "text");
    assert_eq!(out["preview_truncated"], true);
    let text = out["preview"].as_str().expect("preview");
    assert!(text.starts_with("Title: T"), "{text}");
    assert!(text.contains("Line 2999"), "the tail is kept");
}

#[test]
fn input_errors() {
    let (_d, ws) = temp_workspace();
    let (code, out, stderr) = preview(&ws, json!({"operation": "markdown"}));
    assert_eq!(failure(code, &out, &stderr), "LOCAL_EXECUTOR_INVALID_INPUT");
    let (code, out, stderr) = preview(&ws, json!({"operation": "markdown", "path": "../x.md"}));
    assert_eq!(
        failure(code, &out, &stderr),
        "LOCAL_EXECUTOR_PATH_OUTSIDE_WORKSPACE"
    );
    let (code, out, stderr) = preview(
        &ws,
        json!({"operation": "markdown", "content": "x", "max_bytes": 524_289}),
    );
    assert_ne!(code, 0, "{out}");
    assert!(
        stderr.contains("max_bytes") || out.to_string().contains("max_bytes"),
        "{stderr} {out}"
    );
    assert_eq!(failure(code, &out, &stderr), "LOCAL_EXECUTOR_INVALID_INPUT");
    assert!(
        stderr.contains("524288") || out.to_string().contains("524288"),
        "the limit is named: {stderr} {out}"
    );
    // The maximum itself is accepted.
    let (code, out, stderr) = preview(
        &ws,
        json!({"operation": "markdown", "content": "x", "max_bytes": 524_288}),
    );
    assert_eq!(code, 0, "{stderr} {out}");
    // Neither path nor content (null counts as unset).
    let (code, out, stderr) = preview(
        &ws,
        json!({"operation": "html", "path": null, "content": null}),
    );
    assert_eq!(failure(code, &out, &stderr), "LOCAL_EXECUTOR_INVALID_INPUT");
    assert!(
        stderr.contains("content") || out.to_string().contains("content"),
        "{stderr} {out}"
    );
    // Outside the workspace even when content is also given: path wins, and is refused.
    let (code, out, stderr) = preview(
        &ws,
        json!({"operation": "markdown", "path": "../../etc/passwd", "content": "# fine"}),
    );
    assert_eq!(
        failure(code, &out, &stderr),
        "LOCAL_EXECUTOR_PATH_OUTSIDE_WORKSPACE"
    );
}

#[test]
fn path_wins_over_content() {
    let (_d, ws) = temp_workspace();
    std::fs::write(ws.join("a.md"), "# From file\n").expect("write");
    let (code, out, stderr) = preview(
        &ws,
        json!({"operation": "markdown", "path": "a.md", "content": "# From content\n"}),
    );
    assert_eq!(code, 0, "{stderr}");
    let html = out["preview"].as_str().expect("preview");
    assert!(
        html.contains(r#"<h1 id="user-content-from-file">From file</h1>"#),
        "{html}"
    );
    assert!(!html.contains("From content"), "{html}");
    assert_eq!(out["source_path"], "a.md");
    assert_eq!(out["source_bytes"], 12);
    assert_eq!(out["preview_truncated"], false);
}
