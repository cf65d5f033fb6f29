//! `cheng run tools/list_dir`, `tools/glob` and `tools/grep` through the real binary: outputs,
//! exit codes, validation of the limits, and symlinks leading out of the workspace.
use super::support::*;

use serde_json::{json, Value};
use std::path::Path;

fn failure(code: i32, out: &Value, stderr: &str) -> String {
    assert_ne!(code, 0, "expected a failure; stdout {out}, stderr {stderr}");
    assert_eq!(out["success"], false, "{out} {stderr}");
    out["error_kind"].as_str().unwrap_or_default().to_string()
}

fn names(out: &Value, key: &str) -> Vec<String> {
    out[key]
        .as_array()
        .unwrap_or_else(|| panic!("{key}: {out}"))
        .iter()
        .map(|v| v.as_str().unwrap_or_default().to_string())
        .collect()
}

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

#[test]
fn grep_never_reads_through_a_link_leaving_the_workspace() {
    let (_d, ws) = temp_workspace();
    let (_o, outside) = temp_workspace();
    write(&outside, "secret.txt", "TOPSECRET outside\n");
    write(&ws, "inside.txt", "TOPSECRET inside\n");
    std::os::unix::fs::symlink(outside.join("secret.txt"), ws.join("leak.txt")).expect("symlink");
    std::os::unix::fs::symlink(&outside, ws.join("leakdir")).expect("symlink");
    // The attack: plain ripgrep-style following finds the outside file through the link.
    assert!(std::fs::read_to_string(ws.join("leakdir/secret.txt"))
        .expect("read")
        .contains("TOPSECRET"));

    let (code, out, stderr) = run_node("tools/grep", &ws, &json!({"pattern": "TOPSECRET"}), &[]);
    assert_eq!(code, 0, "{out} {stderr}");
    assert_eq!(names(&out, "files"), ["inside.txt"]);
    assert_eq!(out["content"], "inside.txt");
    let links: Vec<(String, String)> = out["links"]
        .as_array()
        .expect("links")
        .iter()
        .map(|l| {
            (
                l["path"].as_str().unwrap_or_default().to_string(),
                l["link"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert_eq!(
        links,
        [
            ("leak.txt".to_string(), "outside".to_string()),
            ("leakdir".to_string(), "outside".to_string())
        ]
    );
    assert!(!out.to_string().contains("TOPSECRET outside"), "{out}");

    let (code, out, stderr) = run_node(
        "tools/grep",
        &ws,
        &json!({"pattern": "TOPSECRET", "path": "leakdir"}),
        &[],
    );
    assert_eq!(
        failure(code, &out, &stderr),
        "LOCAL_EXECUTOR_PATH_OUTSIDE_WORKSPACE"
    );
    assert_eq!(out["terminal"], true);
}

#[test]
fn list_dir_and_glob_through_the_binary() {
    let (_d, ws) = temp_workspace();
    write(&ws, "src/main.rs", "fn main() {}\n");
    write(&ws, "lib.rs", "\n");
    write(&ws, ".gitignore", "target/\n");
    write(&ws, "target/gen.rs", "\n");
    let (code, out, stderr) = run_node("tools/list_dir", &ws, &json!({"depth": 1}), &[]);
    assert_eq!(code, 0, "{out} {stderr}");
    assert_eq!(
        out["content"],
        format!(
            "Absolute path: {}\n.gitignore\nlib.rs\nsrc/\ntarget/",
            ws.display()
        )
    );
    let (code, out, stderr) = run_node("tools/glob", &ws, &json!({"pattern": "**/*.rs"}), &[]);
    assert_eq!(code, 0, "{out} {stderr}");
    assert_eq!(names(&out, "files"), ["lib.rs", "src/main.rs"]);
    assert_eq!(out["total"], 2);
}

#[test]
fn bad_patterns_and_limits_name_the_port() {
    let (_d, ws) = temp_workspace();
    write(&ws, "a.txt", "x\n");
    let (code, out, stderr) = run_node("tools/glob", &ws, &json!({"pattern": "[oops"}), &[]);
    assert_eq!(failure(code, &out, &stderr), "LOCAL_EXECUTOR_INVALID_INPUT");
    assert!(
        out["error"]
            .as_str()
            .unwrap_or_default()
            .starts_with("pattern \"[oops\" is not a valid glob"),
        "{out}"
    );
    let (code, out, stderr) = run_node("tools/grep", &ws, &json!({"pattern": "(oops"}), &[]);
    assert_eq!(failure(code, &out, &stderr), "LOCAL_EXECUTOR_INVALID_INPUT");
    assert!(
        out["error"]
            .as_str()
            .unwrap_or_default()
            .starts_with("pattern \"(oops\" is not a valid regular expression"),
        "{out}"
    );
    // Out-of-range limits are refused by validation before the node runs.
    for (node, input) in [
        ("tools/grep", json!({"pattern": "x", "limit": 2001})),
        ("tools/glob", json!({"pattern": "*", "limit": 2001})),
        ("tools/list_dir", json!({"limit": 2001})),
    ] {
        let (code, out, stderr) = run_node(node, &ws, &input, &[]);
        assert_eq!(code, 2, "{node}: {out} {stderr}");
        assert!(
            stderr.contains("limit") && stderr.contains("2000"),
            "{node}: {stderr}"
        );
    }
}
