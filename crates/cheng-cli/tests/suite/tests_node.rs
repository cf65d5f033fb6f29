//! `cheng run tools/workspace_tests` through the real binary: detect needs no approval, run does,
//! and every suggestion detect makes passes the engine's validation and runs, exiting 1 when a
//! test fails. Parsing, counts and each runner's details: nodes/workspace/tests/suite/workspace_tests.rs.
#![allow(unused_imports)]
use super::support::*;

use serde_json::{json, Value};
use std::path::Path;

const NODE: &str = "tools/workspace_tests";

fn fixture_workspace() -> (tempfile::TempDir, std::path::PathBuf) {
    let (dir, ws) = temp_workspace();
    copy_dir(&fixtures().join("workspaces"), &ws);
    (dir, ws)
}

#[test]
fn detect_lists_the_fixture_projects_without_approval() {
    let (_d, ws) = fixture_workspace();
    let (code, out, stderr) = run_node(NODE, &ws, &json!({"operation": "detect"}), &["--deny"]);
    assert_eq!(code, 0, "detect is read-only and never asks: {stderr}");
    let projects = out["detected_project"]["projects"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let has = |cwd: &str, kind: &str| {
        projects
            .iter()
            .any(|p| p["cwd"] == cwd && p["type"] == kind)
    };
    for (cwd, kind) in [
        ("cargo", "cargo"),
        ("python", "python"),
        ("node", "node"),
        ("monorepo/packages/calc", "node"),
        ("monorepo/go", "go"),
    ] {
        assert!(has(cwd, kind), "{kind} at {cwd}: {projects:#?}");
    }
}

#[test]
fn run_is_denied_without_approval_and_nothing_runs() {
    let (_d, ws) = temp_workspace();
    let input = json!({"operation": "run", "command": "touch", "args": ["ran"]});
    for extra in [&["--deny"][..], &[]] {
        let (code, out, stderr) = run_node(NODE, &ws, &input, extra);
        assert_ne!(code, 0);
        assert!(
            format!("{out}{stderr}").contains("LOCAL_EXECUTOR_APPROVAL_DENIED"),
            "{out} {stderr}"
        );
        assert!(!ws.join("ran").exists(), "a denied run must not start");
    }
}

/// Every command detect suggests on the monorepo fixture is accepted by run exactly as given;
/// those whose runner is installed here report the fixture's one pass and one failure.
#[test]
fn every_monorepo_suggestion_runs_unchanged_through_the_cli() {
    let (_d, ws) = fixture_workspace();
    let (code, out, stderr) = run_node(
        NODE,
        &ws,
        &json!({"operation": "detect", "cwd": "monorepo"}),
        &["--deny"],
    );
    assert_eq!(code, 0, "{stderr}");
    let projects = out["detected_project"]["projects"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let suggestions: Vec<Value> = projects
        .iter()
        .flat_map(|p| p["commands"].as_array().cloned().unwrap_or_default())
        .collect();
    let shown: Vec<String> = suggestions
        .iter()
        .map(|c| format!("{} {}", c["command"], c["args"]))
        .collect();
    // cargo workspace, python, npm workspace root, npm package, go module, make.
    assert!(suggestions.len() >= 6, "{shown:#?}");
    let mut ran = Vec::new();
    for suggestion in &suggestions {
        let mut input = suggestion
            .as_object()
            .cloned()
            .expect("a {command, args, cwd} object");
        assert_eq!(
            input.len(),
            3,
            "exactly command, args and cwd: {suggestion}"
        );
        input.insert("operation".into(), json!("run"));
        let (code, out, stderr) = run_node(NODE, &ws, &Value::Object(input), &["--approve"]);
        assert_ne!(
            code, 2,
            "run rejected detect's suggestion {suggestion}: {stderr}"
        );
        let program = suggestion["command"].as_str().unwrap_or_default();
        // CI installs every runner but Go (a toolchain too large for what one fixture test
        // shows); a missing one must have failed to spawn, which is checked.
        let required = program != "go";
        if !(if required {
            require_or_skip(program)
        } else {
            on_path(program)
        }) {
            assert_eq!(out["termination"], "spawn_failed", "{suggestion}: {out}");
            eprintln!("skipping the run of {suggestion}: {program} missing");
            continue;
        }
        assert_eq!(
            code, 1,
            "{suggestion}: the fixture's failing test fails the run: {out} {stderr}"
        );
        assert_eq!(out["passed"], 1, "{suggestion}: {out}");
        assert_eq!(out["failed"], 1, "{suggestion}: {out}");
        assert_eq!(out["success"], false);
        ran.push(program.to_string());
    }
    for runner in ["cargo", "python3", "npm", "make"] {
        if require_or_skip(runner) {
            assert!(
                ran.iter().any(|r| r == runner),
                "{runner} is installed but no suggestion used it: {shown:#?}"
            );
        }
    }
}
