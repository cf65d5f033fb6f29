//! write_file: create (parents only when asked), replace (only what the model has read; format
//! kept), protected names refused at any depth, the syntax gate.

use super::support::*;
use cheng_node::ScopeKind;
use cheng_nodes_files::{ReadFile, WriteFile};
use serde_json::json;

#[test]
fn creates_files_and_parent_directories_only_when_asked() {
    let (_d, ws) = temp_workspace();
    let c = ctx(&WriteFile, &ws, ScopeKind::Graph);
    let out = ok(
        &WriteFile,
        &c,
        json!({"file_path": "new.txt", "content": "hello"}),
    );
    assert_eq!(out["created"], true);
    assert_eq!(out["tag"], "4F9F2CAB");
    assert_eq!(out["bytes"], 5);
    assert_eq!(
        std::fs::read_to_string(ws.join("new.txt")).unwrap(),
        "hello"
    );
    let err = fails(
        &WriteFile,
        &c,
        json!({"file_path": "a/b/c.txt", "content": "x"}),
        "LOCAL_EXECUTOR_NOT_FOUND",
    );
    assert!(err.contains("create_parents"), "{err}");
    assert!(!ws.join("a").exists());
    ok(
        &WriteFile,
        &c,
        json!({"file_path": "a/b/c.txt", "content": "x", "create_parents": true}),
    );
    assert_eq!(std::fs::read_to_string(ws.join("a/b/c.txt")).unwrap(), "x");
}

#[test]
fn replacing_needs_a_fresh_read_and_keeps_bom_and_crlf() {
    let (_d, ws) = temp_workspace();
    std::fs::write(ws.join("w.txt"), b"\xEF\xBB\xBFold\r\ntext\r\n").unwrap();
    let c = ctx(&WriteFile, &ws, ScopeKind::Graph);
    let err = fails(
        &WriteFile,
        &c,
        json!({"file_path": "w.txt", "content": "new\n"}),
        "LOCAL_EXECUTOR_FILE_CHANGED",
    );
    assert!(err.contains("never read"), "{err}");
    ok(&ReadFile, &c, json!({"file_path": "w.txt"}));
    let out = ok(
        &WriteFile,
        &c,
        json!({"file_path": "w.txt", "content": "new\nlines\n"}),
    );
    assert_eq!(out["created"], false);
    assert_eq!(
        std::fs::read(ws.join("w.txt")).unwrap(),
        b"\xEF\xBB\xBFnew\r\nlines\r\n"
    );
}

#[test]
fn protected_names_are_refused_at_any_depth_and_nothing_is_created() {
    let (_d, ws) = temp_workspace();
    let c = ctx(&WriteFile, &ws, ScopeKind::Graph);
    for path in [
        ".git/hooks/pre-commit",
        "sub/.git/config",
        ".agents/x.md",
        ".codex/config.toml",
        ".aws/credentials",
        "deep/er/.cheng/a.json",
        ".github/workflows/ci.yml",
    ] {
        let err = fails(
            &WriteFile,
            &c,
            json!({"file_path": path, "content": "x", "create_parents": true}),
            "LOCAL_EXECUTOR_POLICY_DENIED",
        );
        assert!(err.contains("protected"), "{path}: {err}");
    }
    assert_eq!(
        std::fs::read_dir(&ws).unwrap().count(),
        0,
        "nothing was created"
    );
    fails(
        &WriteFile,
        &c,
        json!({"file_path": "../escape.txt", "content": "x"}),
        "LOCAL_EXECUTOR_PATH_OUTSIDE_WORKSPACE",
    );
    fails(
        &WriteFile,
        &c,
        json!({"file_path": "/tmp/escape.txt", "content": "x"}),
        "LOCAL_EXECUTOR_PATH_OUTSIDE_WORKSPACE",
    );
}

#[test]
fn other_tools_config_and_credentials_are_refused_in_any_case() {
    let (_d, ws) = temp_workspace();
    let c = ctx(&WriteFile, &ws, ScopeKind::Graph);
    let paths = OTHER_TOOLS_PROTECTED
        .iter()
        .flat_map(|p| in_any_case(p))
        .chain(GIT_HOOK_SPELLINGS.iter().map(|p| p.to_string()));
    for path in paths {
        let err = fails(
            &WriteFile,
            &c,
            json!({"file_path": path, "content": "x", "create_parents": true}),
            "LOCAL_EXECUTOR_POLICY_DENIED",
        );
        assert!(err.contains("protected"), "{path}: {err}");
    }
    assert_eq!(
        std::fs::read_dir(&ws).unwrap().count(),
        0,
        "nothing was created"
    );
    // Control: the same files under names that are not protected are written.
    for path in [
        "hg/hgrc",
        ".kubex/config",
        ".cargo/notes.txt",
        "GIT/hooks/pre-commit",
    ] {
        ok(
            &WriteFile,
            &c,
            json!({"file_path": path, "content": "x", "create_parents": true}),
        );
    }
}

#[test]
fn a_new_file_that_does_not_parse_is_refused_unchecked_kinds_are_not() {
    let (_d, ws) = temp_workspace();
    let c = ctx(&WriteFile, &ws, ScopeKind::Graph);
    for (name, bad) in [
        ("a.json", "{"),
        ("a.toml", "a = "),
        ("a.yaml", "a: [1"),
        ("a.xml", "<a><b></a>"),
    ] {
        let err = fails(
            &WriteFile,
            &c,
            json!({"file_path": name, "content": bad}),
            "LOCAL_EXECUTOR_SYNTAX_WORSE",
        );
        assert!(err.contains(name), "{err}");
        assert!(!ws.join(name).exists());
    }
    ok(
        &WriteFile,
        &c,
        json!({"file_path": "a.rs", "content": "fn {"}),
    );
    let out = ok(
        &WriteFile,
        &c,
        json!({"file_path": "ok.json", "content": "{}"}),
    );
    assert!(out["success"] == true);
}

#[test]
fn the_card_names_path_sizes_and_diff_and_the_syntax_result() {
    let (_d, ws) = temp_workspace();
    let c = ctx(&WriteFile, &ws, ScopeKind::Graph);
    let card = card(
        &WriteFile,
        &c,
        json!({"file_path": "cfg.json", "content": "{\"a\": 1}\n"}),
    )
    .unwrap();
    assert_eq!(card.command_display, "write_file: create cfg.json (9 B)");
    let details = card.details.unwrap();
    assert!(
        details.contains("--- /dev/null\n+++ b/cfg.json\n") && details.contains("+{\"a\": 1}"),
        "{details}"
    );
    assert!(
        details.contains("JSON syntax after the change: no problems"),
        "{details}"
    );
    assert!(!ws.join("cfg.json").exists());
}
