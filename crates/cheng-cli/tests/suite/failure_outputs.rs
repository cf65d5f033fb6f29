//! Every registered node: its spec has no problems (engine ports the engine fills, defaults its
//! own ranges accept, the failure outputs declared once in `cheng_node::failure`), and the four
//! failure outputs carry the same values on one success and one failure.

use super::support::*;
use cheng_node::{failure, ErrorKind, Registry};
use serde_json::{json, Value};
use std::path::Path;

// Linked so their `inventory` registrations are present in this test binary.
use cheng_nodes_code as _;
use cheng_nodes_documents as _;
use cheng_nodes_files as _;
use cheng_nodes_memory as _;
use cheng_nodes_runtime as _;
use cheng_nodes_web as _;
use cheng_nodes_workspace as _;

/// Every compiled-in node, gates ignored.
fn all_nodes() -> Registry {
    Registry::from_inventory_with(|_| true)
}

#[test]
fn every_registered_spec_is_sound() {
    let registry = all_nodes();
    assert!(registry.len() >= 9, "{:?}", registry.ids());
    let problems: Vec<String> = registry.specs().flat_map(|spec| spec.problems()).collect();
    assert!(problems.is_empty(), "{problems:#?}");
    for spec in registry.specs() {
        for name in failure::NAMES {
            assert!(
                spec.output(name).is_some(),
                "{} does not declare the failure output `{name}`",
                spec.id
            );
        }
        let declared = |name: &str| spec.output(name).map(|p| (p.ty, p.description));
        assert_eq!(
            declared("error_kind"),
            Some((failure::ERROR_KIND.ty, failure::ERROR_KIND.description)),
            "{}",
            spec.id
        );
        assert_eq!(
            declared("terminal"),
            Some((failure::TERMINAL.ty, failure::TERMINAL.description)),
            "{}",
            spec.id
        );
    }
}

/// One run that succeeds and one that fails, per node id: `(config, success input, failure input)`.
/// A node without a case fails the test: every new node must show its failure outputs here.
fn cases(id: &str, ws: &Path) -> Option<(Value, Value, Value)> {
    let none = json!({});
    let notes = json!({"notes_dir": ws.join("notes")});
    Some(match id {
        "tools/workspace_shell" => (
            none,
            json!({"command": "true"}),
            json!({"command": "false"}),
        ),
        "tools/workspace_git" => (
            none,
            json!({"operation": "status"}),
            json!({"operation": "show", "revision": "no-such-branch"}),
        ),
        "tools/workspace_tests" => (
            none,
            json!({"operation": "detect"}),
            json!({"operation": "run", "command": "false"}),
        ),
        "tools/workspace_markdown" => (
            none,
            json!({"operation": "outline", "path": "README.md"}),
            json!({"operation": "outline", "path": "missing.md"}),
        ),
        "tools/workspace_preview" => (
            none,
            json!({"operation": "markdown", "content": "# hi"}),
            json!({"operation": "markdown", "path": "missing.md"}),
        ),
        "tools/list_dir" => (
            none,
            json!({"dir_path": "."}),
            json!({"dir_path": "missing"}),
        ),
        "tools/glob" => (
            none,
            json!({"pattern": "*.md"}),
            json!({"pattern": "[unclosed"}),
        ),
        "tools/grep" => (
            none,
            json!({"pattern": "Title"}),
            json!({"pattern": "(unclosed"}),
        ),
        "tools/read_file" => (
            none,
            json!({"file_path": "README.md"}),
            json!({"file_path": "missing.md"}),
        ),
        "tools/write_file" => (
            none,
            json!({"file_path": "new.txt", "content": "x"}),
            json!({"file_path": ".git/x", "content": "x"}),
        ),
        "tools/edit_file" => (
            none,
            json!({"file_path": "README.md", "old": "Text.", "new": "Words."}),
            json!({"file_path": "README.md", "old": "absent", "new": "x"}),
        ),
        "tools/delete_path" => (
            none,
            json!({"path": "scratch.txt"}),
            json!({"path": "missing.txt"}),
        ),
        "tools/code_shell" => (
            none,
            json!({"script": "echo 1"}),
            json!({"script": "exit 3"}),
        ),
        // Raw shell: the policy these runs get allows it for run_command (and changes nothing
        // else); under the built-in default every call is refused (suite/run_command.rs).
        "tools/run_command" => (
            none,
            json!({"command": "true | cat"}),
            json!({"command": "exit 3"}),
        ),
        "tools/exec_command" => (
            none,
            json!({"command": "true"}),
            json!({"command": "false"}),
        ),
        // A single run keeps no sessions, so it cannot succeed here (a null success case; the
        // sessions suite covers its successes through `cheng serve`): every id is unknown.
        "tools/write_stdin" => (none, Value::Null, json!({"session_id": 1, "chars": ""})),
        "tools/apply_patch" => (
            none,
            json!({"input": "*** Begin Patch\n*** Add File: added-by-patch.txt\n+hi\n*** End Patch\n"}),
            json!({"input": "*** Begin Patch\n*** Update File: missing.txt\n@@\n-a\n+b\n*** End Patch\n"}),
        ),
        "tools/code_python" => (
            none,
            json!({"script": "result = 1"}),
            json!({"script": "raise ValueError('no')"}),
        ),
        "tools/code_js" => (
            none,
            json!({"script": "1 + 1"}),
            json!({"script": "throw new Error('no')"}),
        ),
        // tools/skill and the notes tools (the skill and the note are made by the test).
        "tools/skill" => (
            json!({"skill_dirs": [ws.join("skills")]}),
            json!({"name": "deploy"}),
            json!({"name": "no-such-skill"}),
        ),
        // No agent input, so one config cannot both succeed and fail: a relative notes
        // directory shows the failure; skill_notes.rs shows its successes.
        "tools/notes_list" => (json!({"notes_dir": "notes"}), Value::Null, none),
        "tools/notes_read" => (notes, json!({"name": "setup"}), json!({"name": "../x"})),
        "tools/notes_write" => (
            notes,
            json!({"name": "learned", "content": "x"}),
            json!({"name": ".hidden", "content": "x"}),
        ),
        // A success needs a server to fetch from: web_fetch.rs serves one on loopback.
        "tools/web_fetch" => (
            json!({"sensitive": false}),
            Value::Null,
            json!({"url": "ftp://example.com/file"}),
        ),
        "tools/runtime" => (
            json!({"exposed_tools": [{"type": "tools/workspace_markdown"}]}),
            json!({"action": "list_tools"}),
            json!({"action": "execute", "tool_call": {"name": "no_such_tool", "arguments": {}}}),
        ),
        _ => return None,
    })
}

/// Whether `id` can run here (the sandboxed executors need bubblewrap; python needs python3).
fn runnable(id: &str) -> bool {
    match id {
        "tools/code_shell" => bwrap_works(),
        "tools/code_python" => bwrap_works() && require_or_skip("python3"),
        "tools/workspace_git" => require_or_skip("git"),
        _ => true,
    }
}

/// `policy`: the operator's policy of every run (raw shell allowed for run_command only).
fn run(id: &str, ws: &Path, policy: &Path, config: &Value, input: &Value) -> Value {
    let out = cheng()
        .env("CHENG_POLICY", policy)
        .env("CHENG_ENABLE_CODE_PYTHON", "1")
        .env("CHENG_ENABLE_CODE_JS", "1")
        .args([
            "run",
            id,
            "--workspace",
            ws.to_str().expect("utf-8"),
            "--approve",
        ])
        .args([
            "--config",
            &config.to_string(),
            "--input",
            &input.to_string(),
        ])
        .output()
        .expect("cheng runs");
    match serde_json::from_slice(&out.stdout) {
        Ok(value) => value,
        Err(e) => panic!(
            "{id} {input}: no JSON output ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

#[test]
fn every_node_fills_the_failure_outputs_the_same_way() {
    let (_dir, ws) = temp_workspace();
    let (_p, policy_dir) = temp_workspace();
    let policy = policy_dir.join("policy.toml");
    std::fs::write(
        &policy,
        "[nodes.\"tools/run_command\"]\nshell_syntax = true\n",
    )
    .expect("write policy");
    std::fs::write(ws.join("README.md"), "# Title\n\nText.\n").expect("write");
    std::fs::write(ws.join("scratch.txt"), "delete me\n").expect("write");
    std::fs::create_dir_all(ws.join("skills/deploy")).expect("mkdir");
    std::fs::write(ws.join("skills/deploy/SKILL.md"), "# Deploy\n").expect("write");
    std::fs::create_dir_all(ws.join("notes")).expect("mkdir");
    std::fs::write(ws.join("notes/setup.md"), "how\n").expect("write");
    if on_path("git") {
        git(&ws, &["init", "-q"]);
    }
    for id in all_nodes().ids() {
        let Some((config, ok, bad)) = cases(id, &ws) else {
            panic!("{id} has no success/failure case in tests/suite/failure_outputs.rs; add one");
        };
        if !runnable(id) {
            continue;
        }
        if !ok.is_null() {
            let out = run(id, &ws, &policy, &config, &ok);
            let four = |out: &Value| {
                [
                    &out["success"],
                    &out["error_kind"],
                    &out["terminal"],
                    &out["error"],
                ]
                .map(Value::clone)
            };
            assert_eq!(
                four(&out),
                [json!(true), Value::Null, json!(false), Value::Null],
                "{id} success: {out}"
            );
        }

        let out = run(id, &ws, &policy, &config, &bad);
        assert_eq!(out["success"], false, "{id} failure: {out}");
        let code = out["error_kind"].as_str().unwrap_or_default();
        let kind = ErrorKind::from_code(code).unwrap_or_else(|| {
            panic!("{id}: error_kind {code:?} is no LOCAL_EXECUTOR_* code: {out}")
        });
        assert_eq!(
            out["terminal"],
            kind.terminal(),
            "{id}: terminal follows the kind: {out}"
        );
        assert!(
            out["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{id}: error names what went wrong: {out}"
        );
    }
}
