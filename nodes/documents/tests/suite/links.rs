//! link_check_local attacks and edge cases in a temporary workspace.

use super::support::*;
use cheng_nodes_documents::WorkspaceMarkdown;
use serde_json::{json, Value};

fn rules_and_targets(out: &Value) -> Vec<(String, String)> {
    out["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .map(|d| (d["rule"].as_str().unwrap_or("").to_string(), d["target"].as_str().unwrap_or("").to_string()))
        .collect()
}

#[test]
fn symlinks_and_dot_dot_out_of_the_workspace_are_reported_not_followed() {
    let (_outer, outer) = temp_workspace();
    let root = outer.join("ws");
    std::fs::create_dir_all(root.join("docs")).expect("mkdir");
    std::fs::write(outer.join("secret.md"), "# Secret heading\n").expect("secret");
    std::os::unix::fs::symlink(outer.join("secret.md"), root.join("docs/escape.md")).expect("symlink");
    std::os::unix::fs::symlink(&outer, root.join("up")).expect("dir symlink");
    std::fs::write(
        root.join("docs/a.md"),
        "# A\n\n[s](escape.md#secret-heading) [u](../up/secret.md) [d](../../secret.md) [r](/../secret.md) [ok](a.md#a)\n",
    )
    .expect("a.md");
    let out = run(&WorkspaceMarkdown, &root, json!({"operation": "link_check_local", "path": "docs/a.md"})).expect("runs");
    let out = Value::Object(out);
    assert_eq!(
        rules_and_targets(&out),
        [
            ("outside-workspace".to_string(), "escape.md#secret-heading".to_string()),
            ("outside-workspace".to_string(), "../up/secret.md".to_string()),
            ("outside-workspace".to_string(), "../../secret.md".to_string()),
            ("outside-workspace".to_string(), "/../secret.md".to_string()),
        ]
    );
    assert!(out["summary"].as_str().is_some_and(|s| s.contains("1 ok") && s.contains("4 outside")), "{}", out["summary"]);
}

#[test]
fn reference_links_images_and_anchors_in_other_files() {
    let (_d, root) = temp_workspace();
    std::fs::create_dir_all(root.join("img")).expect("mkdir");
    std::fs::write(root.join("img/a.png"), b"png").expect("png");
    std::fs::write(root.join("other.md"), "# Other\n\n## Part Two\n\n<div id=\"custom\"></div>\n").expect("other");
    std::fs::write(
        root.join("main.md"),
        "# Main\n\n[one][r1] [two][r2] ![pic](img/a.png) ![gone](img/b.png) [c](other.md#custom) [case](other.md#Part-Two)\n\n[r1]: other.md#part-two\n[r2]: other.md#part-three\n",
    )
    .expect("main");
    let out = Value::Object(run(&WorkspaceMarkdown, &root, json!({"operation": "link_check_local", "path": "main.md"})).expect("runs"));
    let found = rules_and_targets(&out);
    assert_eq!(
        found,
        [
            ("broken-link-fragment".to_string(), "other.md#part-three".to_string()),
            ("broken-local-link".to_string(), "img/b.png".to_string()),
            ("broken-link-fragment".to_string(), "other.md#Part-Two".to_string()),
        ]
    );
    let first = &out["diagnostics"][0];
    assert_eq!(first["line"], 3, "reported where the reference is used");
    assert_eq!(first["column"], 11);
    assert_eq!(first["alias"], Value::Null, "cross-file fragments are not markdownlint's MD051");
}

#[test]
fn external_links_are_listed_never_fetched() {
    let (_d, root) = temp_workspace();
    std::fs::write(root.join("x.md"), "[a](https://198.51.100.1/unroutable) <https://b.example> [m](mailto:x@y.example) [f](file:///etc/passwd)\n").expect("x");
    let out = Value::Object(run(&WorkspaceMarkdown, &root, json!({"operation": "link_check_local", "path": "x.md"})).expect("runs"));
    let found = rules_and_targets(&out);
    assert_eq!(found.len(), 4);
    assert!(found.iter().all(|(rule, _)| rule == "skipped-external"), "{found:?}");
    assert!(out["diagnostics"].as_array().is_some_and(|d| d.iter().all(|d| d["severity"] == "info")));
}
