//! The search nodes and the author's read-only roots (`read_roots`): a root named there is
//! searched by its absolute path; without it the same path is refused.

use super::search_support::*;
use cheng_node::ErrorKind;
use serde_json::json;

#[test]
fn read_roots_open_a_directory_outside_the_workspace_for_searching() {
    let (_d, root) = temp_workspace();
    let outside = outside_dir();
    let abs = outside.path().canonicalize().unwrap();
    let abs_str = abs.to_str().unwrap();
    let roots = json!([abs_str]);

    // Without the root: refused by every node.
    fails(
        &Grep,
        &root,
        json!({"pattern": "TOPSECRET", "path": abs_str}),
        ErrorKind::PathOutsideWorkspace,
    );
    fails(
        &Glob,
        &root,
        json!({"pattern": "**/*.txt", "path": abs_str}),
        ErrorKind::PathOutsideWorkspace,
    );
    fails(
        &ListDir,
        &root,
        json!({"dir_path": abs_str}),
        ErrorKind::PathOutsideWorkspace,
    );

    let out = ok(
        &Grep,
        &root,
        json!({"pattern": "TOPSECRET", "path": abs_str, "read_roots": roots}),
    );
    let mut found = strings(&out, "files");
    found.sort();
    assert_eq!(
        found,
        [
            abs.join("inner/leak.txt").display().to_string(),
            abs.join("secret.txt").display().to_string()
        ]
    );
    let out = ok(
        &Glob,
        &root,
        json!({"pattern": "*.txt", "path": abs_str, "read_roots": roots}),
    );
    assert_eq!(
        strings(&out, "files"),
        [abs.join("secret.txt").display().to_string()]
    );
    let out = ok(
        &ListDir,
        &root,
        json!({"dir_path": abs_str, "read_roots": roots}),
    );
    assert_eq!(
        text(&out, "content"),
        format!("Absolute path: {abs_str}\ninner/\n  leak.txt\nsecret.txt")
    );

    // A link from the workspace into the read root is readable, still never followed by a walk.
    symlink(&abs, root.join("docs"));
    let out = ok(
        &Grep,
        &root,
        json!({"pattern": "TOPSECRET", "read_roots": roots}),
    );
    assert_eq!(out["files"], json!([]));
    assert_eq!(
        out["links"],
        json!([]),
        "a link into a read root does not leave what the node may read"
    );
    let out = ok(&Grep, &root, json!({"pattern": "TOPSECRET"}));
    assert_eq!(links(&out), [("docs".to_string(), "outside".to_string())]);
    // A read root that does not exist is an error naming it.
    let message = fails(
        &Grep,
        &root,
        json!({"pattern": "x", "read_roots": ["/no/such/root"]}),
        ErrorKind::InvalidInput,
    );
    assert!(message.starts_with("read_roots"), "{message}");
}
