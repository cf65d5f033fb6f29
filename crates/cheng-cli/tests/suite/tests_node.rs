//! `cheng run tools/workspace_tests` through the real binary: detect on the fixtures, approval
//! gating of run, and a real runner's counts.
#![allow(unused_imports)]
use super::support::*;

use serde_json::{json, Value};
use std::path::Path;

const NODE: &str = "tools/workspace_tests";

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read fixture dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

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
    let projects = out["detected_project"]["projects"].as_array().cloned().unwrap_or_default();
    let has = |cwd: &str, kind: &str| projects.iter().any(|p| p["cwd"] == cwd && p["type"] == kind);
    for (cwd, kind) in [("cargo", "cargo"), ("python", "python"), ("node", "node"), ("monorepo/packages/calc", "node"), ("monorepo/go", "go")] {
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
        assert!(format!("{out}{stderr}").contains("LOCAL_EXECUTOR_APPROVAL_DENIED"), "{out} {stderr}");
        assert!(!ws.join("ran").exists(), "a denied run must not start");
    }
}

#[test]
fn approved_node_test_run_reports_counts() {
    let (_d, ws) = fixture_workspace();
    let input = json!({"operation": "run", "command": "node", "args": ["--test"], "cwd": "node"});
    let (code, out, stderr) = run_node(NODE, &ws, &input, &["--approve"]);
    if out["termination"] == "spawn_failed" {
        eprintln!("SKIPPED: node is not installed here; CI installs it");
        return;
    }
    assert_eq!(code, 1, "a failing test makes success false: {out} {stderr}");
    assert_eq!(out["passed"], 1);
    assert_eq!(out["failed"], 1);
    assert_eq!(out["failure_summary"][0]["name"], "fails on purpose");
    assert_eq!(out["command_display"], "node --test");
}
