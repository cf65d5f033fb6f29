//! Symlink escapes, for every node: a link to a file outside, a link to a directory outside and
//! a dangling link to a path outside; reads and writes. Each test first shows that the plain
//! filesystem call follows the link out (the attack works without the policy).

use super::support::*;
use cheng_node::ScopeKind;
use cheng_nodes_files::{DeletePath, EditFile, ReadFile, WriteFile};
use serde_json::json;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

const OUT: &str = "LOCAL_EXECUTOR_PATH_OUTSIDE_WORKSPACE";

struct Escape {
    _ws_dir: tempfile::TempDir,
    _out_dir: tempfile::TempDir,
    ws: PathBuf,
    out: PathBuf,
}

/// `file_link -> out/secret`, `dir_link -> out/`, `dangling -> out/missing`.
fn escape() -> Escape {
    let (ws_dir, ws) = temp_workspace();
    let (out_dir, out) = temp_workspace();
    std::fs::write(out.join("secret"), "secret\n").unwrap();
    symlink(out.join("secret"), ws.join("file_link")).unwrap();
    symlink(&out, ws.join("dir_link")).unwrap();
    symlink(out.join("missing"), ws.join("dangling")).unwrap();
    Escape {
        _ws_dir: ws_dir,
        _out_dir: out_dir,
        ws,
        out,
    }
}

fn outside_untouched(out: &Path) {
    assert_eq!(
        std::fs::read_to_string(out.join("secret")).unwrap(),
        "secret\n"
    );
    assert!(
        !out.join("missing").exists() && !out.join("new").exists(),
        "nothing created outside"
    );
}

#[test]
fn the_attack_works_without_the_policy() {
    let e = escape();
    assert_eq!(
        std::fs::read_to_string(e.ws.join("file_link")).unwrap(),
        "secret\n"
    );
    std::fs::write(e.ws.join("dangling"), "x").unwrap();
    assert!(
        e.out.join("missing").exists(),
        "a plain write through a dangling link creates the file outside"
    );
}

#[test]
fn read_file_refuses_links_out_and_says_where_they_lead() {
    let e = escape();
    let c = ctx(&ReadFile, &e.ws, ScopeKind::Call);
    for path in ["file_link", "dir_link/secret", "dangling"] {
        let err = fails(&ReadFile, &c, json!({"file_path": path}), OUT);
        assert!(err.contains(&e.out.display().to_string()), "{path}: {err}");
    }
    // With the outside directory as a read-only root, the same links are readable.
    let out = ok(
        &ReadFile,
        &c,
        json!({"file_path": "dir_link/secret", "read_roots": [e.out.to_str().unwrap()]}),
    );
    assert!(out["content"].as_str().unwrap().ends_with("L1: secret"));
}

#[test]
fn write_file_refuses_links_out_file_dir_and_dangling() {
    let e = escape();
    let c = ctx(&WriteFile, &e.ws, ScopeKind::Call);
    for path in ["file_link", "dir_link/new", "dir_link/secret", "dangling"] {
        fails(
            &WriteFile,
            &c,
            json!({"file_path": path, "content": "pwned"}),
            OUT,
        );
    }
    outside_untouched(&e.out);
}

#[test]
fn edit_file_refuses_links_out() {
    let e = escape();
    let c = ctx(&EditFile, &e.ws, ScopeKind::Call);
    for path in ["file_link", "dir_link/secret", "dangling"] {
        fails(
            &EditFile,
            &c,
            json!({"file_path": path, "old": "secret", "new": "pwned"}),
            OUT,
        );
    }
    outside_untouched(&e.out);
}

#[test]
fn delete_path_refuses_links_out_and_never_deletes_through_them() {
    let e = escape();
    let c = ctx(&DeletePath, &e.ws, ScopeKind::Call);
    for path in ["file_link", "dir_link", "dir_link/secret", "dangling"] {
        fails(
            &DeletePath,
            &c,
            json!({"path": path, "recursive": true}),
            OUT,
        );
    }
    outside_untouched(&e.out);
    assert!(std::fs::symlink_metadata(e.ws.join("dir_link")).is_ok());
}

#[test]
fn links_inside_the_workspace_are_followed_for_edits_and_removed_as_links() {
    let (_d, ws) = temp_workspace();
    std::fs::create_dir(ws.join("src")).unwrap();
    std::fs::write(ws.join("src/real.txt"), "one\n").unwrap();
    symlink(ws.join("src/real.txt"), ws.join("alias.txt")).unwrap();
    let c = ctx(&ReadFile, &ws, ScopeKind::Graph);
    ok(&ReadFile, &c, json!({"file_path": "alias.txt"}));
    ok(
        &EditFile,
        &c,
        json!({"file_path": "src/real.txt", "old": "one", "new": "two"}),
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("src/real.txt")).unwrap(),
        "two\n"
    );
    assert!(
        std::fs::symlink_metadata(ws.join("alias.txt"))
            .unwrap()
            .file_type()
            .is_symlink(),
        "the link stays a link"
    );
    let out = ok(&DeletePath, &c, json!({"path": "alias.txt"}));
    assert_eq!(out["kind"], "symlink");
    assert!(
        ws.join("src/real.txt").exists(),
        "deleting a link never deletes its target"
    );
}

#[test]
fn a_link_to_a_protected_directory_is_refused_for_writes() {
    let (_d, ws) = temp_workspace();
    std::fs::create_dir(ws.join(".git")).unwrap();
    symlink(ws.join(".git"), ws.join("meta")).unwrap();
    let c = ctx(&WriteFile, &ws, ScopeKind::Call);
    fails(
        &WriteFile,
        &c,
        json!({"file_path": "meta/config", "content": "[core]"}),
        "LOCAL_EXECUTOR_POLICY_DENIED",
    );
    assert!(!ws.join(".git/config").exists());
}
