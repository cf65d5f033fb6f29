//! delete_path: files; directories only with `recursive`; never the root, never protected names
//! (a directory with a `.git` anywhere inside is refused whole); a symlink is removed as a link.

use super::support::*;
use cheng_node::ScopeKind;
use cheng_nodes_files::DeletePath;
use serde_json::json;

#[test]
fn files_and_directories_only_with_recursive() {
    let (_d, ws) = temp_workspace();
    std::fs::write(ws.join("f.txt"), "12345").unwrap();
    std::fs::create_dir_all(ws.join("build/sub")).unwrap();
    std::fs::write(ws.join("build/a"), "abc").unwrap();
    std::fs::write(ws.join("build/sub/b"), "de").unwrap();
    let c = ctx(&DeletePath, &ws, ScopeKind::Call);
    let out = ok(&DeletePath, &c, json!({"path": "f.txt"}));
    assert_eq!((&out["kind"], &out["bytes"]), (&json!("file"), &json!(5)));
    assert!(!ws.join("f.txt").exists());
    let err = fails(
        &DeletePath,
        &c,
        json!({"path": "build"}),
        "LOCAL_EXECUTOR_INVALID_INPUT",
    );
    assert!(
        err.contains("2 file(s), 5 bytes") && err.contains("recursive"),
        "{err}"
    );
    assert!(ws.join("build/sub/b").exists());
    let card = card(&DeletePath, &c, json!({"path": "build", "recursive": true})).unwrap();
    assert_eq!(
        card.command_display,
        "delete_path: delete build/ (directory: 2 file(s), 5 B)"
    );
    let out = ok(&DeletePath, &c, json!({"path": "build", "recursive": true}));
    assert_eq!((&out["files"], &out["bytes"]), (&json!(2), &json!(5)));
    assert!(!ws.join("build").exists());
    fails(
        &DeletePath,
        &c,
        json!({"path": "build"}),
        "LOCAL_EXECUTOR_NOT_FOUND",
    );
}

#[test]
fn never_the_root_nor_protected_names_at_any_depth() {
    let (_d, ws) = temp_workspace();
    std::fs::create_dir_all(ws.join("vendor/lib/.git")).unwrap();
    std::fs::write(ws.join("vendor/lib/.git/config"), "[core]").unwrap();
    std::fs::write(ws.join("vendor/keep.txt"), "k").unwrap();
    let c = ctx(&DeletePath, &ws, ScopeKind::Call);
    for root in [".", "", "sub/..", ws.to_str().unwrap()] {
        let out = call(&DeletePath, &c, json!({"path": root, "recursive": true}));
        assert_eq!(out["success"], false, "{root}: {out:#?}");
    }
    let err = fails(
        &DeletePath,
        &c,
        json!({"path": "vendor", "recursive": true}),
        "LOCAL_EXECUTOR_POLICY_DENIED",
    );
    assert!(err.contains(".git"), "{err}");
    fails(
        &DeletePath,
        &c,
        json!({"path": "vendor/lib/.git", "recursive": true}),
        "LOCAL_EXECUTOR_POLICY_DENIED",
    );
    assert!(
        ws.join("vendor/keep.txt").exists() && ws.join("vendor/lib/.git/config").exists(),
        "nothing was deleted"
    );
}
