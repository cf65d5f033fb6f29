//! tools/workspace_tests against the fixture projects in fixtures/workspaces, with the real runners.

use super::common::*;
use cheng_node::{Decision, Node, RunContext};
use cheng_nodes_workspace::WorkspaceTests;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Copies `fixtures/workspaces/<name>` into a fresh temporary workspace (build output stays there).
fn fixture_workspace(name: &str) -> (tempfile::TempDir, PathBuf) {
    let (dir, root) = temp_workspace();
    copy_dir(&fixtures().join("workspaces").join(name), &root.join(name));
    (dir, root)
}

/// Whether `program args` runs successfully; missing is a skip, or a failure in CI.
fn available(program: &str, args: &[&str]) -> bool {
    let ok = Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    require_or_skip_that(&format!("`{program} {}`", args.join(" ")), ok)
}

fn projects(out: &cheng_node::Values) -> Vec<Value> {
    out["detected_project"]["projects"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn project<'a>(list: &'a [Value], cwd: &str, kind: &str) -> &'a Value {
    list.iter()
        .find(|p| p["cwd"] == cwd && p["type"] == kind)
        .unwrap_or_else(|| panic!("no {kind} project at {cwd}: {list:#?}"))
}

/// Runs `command` exactly as detect suggested it.
async fn run_suggested(ws: &Path, command: &Value) -> cheng_node::Values {
    let mut input = command.as_object().cloned().expect("command object");
    input.insert("operation".into(), json!("run"));
    run(&WorkspaceTests, ws, Value::Object(input))
        .await
        .expect("run")
}

fn assert_one_pass_one_fail(out: &cheng_node::Values, runner: &str) {
    assert_eq!(out["passed"], 1, "{runner}: {out:#?}");
    assert_eq!(out["failed"], 1, "{runner}: {out:#?}");
    assert_eq!(out["success"], false);
    assert_eq!(out["termination"], "exited");
    assert!(
        out["summary"]
            .as_str()
            .unwrap_or_default()
            .starts_with(runner),
        "{}",
        out["summary"]
    );
}

#[tokio::test]
async fn detect_finds_every_fixture_project_without_running_anything() {
    let (_dir, ws) = temp_workspace();
    copy_dir(&fixtures().join("workspaces"), &ws);
    let out = run(&WorkspaceTests, &ws, json!({"operation": "detect"}))
        .await
        .expect("detect");
    assert_eq!(out["success"], true);
    let list = projects(&out);
    let cargo = project(&list, "cargo", "cargo");
    assert_eq!(
        cargo["commands"],
        json!([{"command": "cargo", "args": ["test", "--workspace"], "cwd": "cargo"}])
    );
    let python = project(&list, "python", "python");
    assert_eq!(python["confidence"], "high");
    assert_eq!(python["evidence"][0]["file"], "python/pyproject.toml");
    assert_eq!(python["evidence"][0]["key"], "[tool.pytest.ini_options]");
    let node = project(&list, "node", "node");
    assert_eq!(node["package_manager"], "npm");
    assert_eq!(node["test_runner"], "node --test");
    assert_eq!(
        node["commands"][0],
        json!({"command": "npm", "args": ["test"], "cwd": "node"})
    );

    let mono = project(&list, "monorepo", "node");
    assert_eq!(mono["workspace"], true);
    let calc = project(&list, "monorepo/packages/calc", "node");
    assert_eq!(
        calc["package_manager"], "npm",
        "lockfile found at the monorepo root"
    );
    let rust = project(&list, "monorepo/rust", "cargo");
    assert_eq!(rust["members"], json!(["monorepo/rust/calc"]));
    project(&list, "monorepo/services/api", "python");
    project(&list, "monorepo/go", "go");
    let make = project(&list, "monorepo", "make");
    assert_eq!(make["evidence"][0]["line"], 4);
    assert!(
        !list.iter().any(|p| p["cwd"] == "monorepo/rust/calc"),
        "cargo members are not separate projects"
    );
    // Nothing ran: no build output appeared.
    assert!(!ws.join("cargo/target").exists() && !ws.join("python/.pytest_cache").exists());

    // detect narrowed to a subdirectory.
    let out = run(
        &WorkspaceTests,
        &ws,
        json!({"operation": "detect", "cwd": "monorepo/services"}),
    )
    .await
    .expect("detect");
    let list = projects(&out);
    assert_eq!(list.len(), 1, "{list:#?}");
    assert_eq!(list[0]["cwd"], "monorepo/services/api");
}

#[tokio::test]
async fn cargo_fixture_counts_every_test_binary() {
    let (_dir, ws) = fixture_workspace("cargo");
    let out = run(
        &WorkspaceTests,
        &ws,
        json!({"operation": "detect", "cwd": "cargo"}),
    )
    .await
    .expect("detect");
    let command = projects(&out)[0]["commands"][0].clone();
    let out = run_suggested(&ws, &command).await;
    assert_one_pass_one_fail(&out, "cargo test");
    assert_eq!(out["command_display"], "cargo test --workspace");
    let failure = &out["failure_summary"][0];
    assert_eq!(failure["name"], "fails_on_purpose");
    assert_eq!(failure["file"], "cargo/tests/check.rs");
    assert_eq!(failure["line"], 4);
    assert!(failure["message"]
        .as_str()
        .unwrap_or_default()
        .contains("two and two make four"));
}

#[tokio::test]
async fn pytest_fixture_reports_counts_and_the_failing_line() {
    if !available("python3", &["-m", "pytest", "--version"]) {
        return;
    }
    let (_dir, ws) = fixture_workspace("python");
    let out = run(
        &WorkspaceTests,
        &ws,
        json!({"operation": "detect", "cwd": "python"}),
    )
    .await
    .expect("detect");
    let command = projects(&out)[0]["commands"][0].clone();
    assert_eq!(
        command,
        json!({"command": "python3", "args": ["-m", "pytest"], "cwd": "python"})
    );
    let out = run_suggested(&ws, &command).await;
    assert_one_pass_one_fail(&out, "pytest");
    let failure = &out["failure_summary"][0];
    assert_eq!(failure["name"], "tests/test_calc.py::test_fails_on_purpose");
    assert_eq!(failure["file"], "python/tests/test_calc.py");
    assert_eq!(failure["line"], 9);
    assert_eq!(failure["message"], "assert 4 == 5");
}

#[tokio::test]
async fn node_fixture_with_node_test_and_npm() {
    if !available("node", &["--version"]) {
        return;
    }
    let (_dir, ws) = fixture_workspace("node");
    let out = run(
        &WorkspaceTests,
        &ws,
        json!({"operation": "run", "command": "node", "args": ["--test"], "cwd": "node"}),
    )
    .await
    .expect("run");
    assert_one_pass_one_fail(&out, "node --test");
    let failure = &out["failure_summary"][0];
    assert_eq!(failure["name"], "fails on purpose");
    assert_eq!(failure["file"], "node/test/calc.test.js");
    assert_eq!(failure["line"], 9);
    assert!(failure["message"]
        .as_str()
        .unwrap_or_default()
        .contains("4 !== 5"));

    // npm's half runs wherever npm is (CI installs it).
    if available("npm", &["--version"]) {
        let out = run(
            &WorkspaceTests,
            &ws,
            json!({"operation": "detect", "cwd": "node"}),
        )
        .await
        .expect("detect");
        let command = projects(&out)[0]["commands"][0].clone();
        let out = run_suggested(&ws, &command).await;
        assert_one_pass_one_fail(&out, "node --test");
    }
}

#[tokio::test]
async fn monorepo_subproject_runs_from_its_own_cwd() {
    if !available("node", &["--version"]) {
        return;
    }
    let (_dir, ws) = fixture_workspace("monorepo");
    let out = run(&WorkspaceTests, &ws, json!({"operation": "detect"}))
        .await
        .expect("detect");
    let list = projects(&out);
    let calc = project(&list, "monorepo/packages/calc", "node");
    let mut command = calc["commands"][0].clone();
    // Run the runner itself (npm may be absent); cwd comes from detect.
    command["command"] = json!("node");
    command["args"] = json!(["--test"]);
    let out = run_suggested(&ws, &command).await;
    assert_one_pass_one_fail(&out, "node --test");
}

#[tokio::test]
async fn run_failures_are_reported_with_stable_codes() {
    let (_dir, ws) = temp_workspace();
    // No command: never inferred.
    let err = run(&WorkspaceTests, &ws, json!({"operation": "run"}))
        .await
        .expect_err("command required");
    assert_eq!(err.kind.code(), "LOCAL_EXECUTOR_INVALID_INPUT");
    assert!(
        err.message.contains("command is required"),
        "{}",
        err.message
    );
    // Empty operation lists the choices.
    let err = run(&WorkspaceTests, &ws, json!({"operation": ""}))
        .await
        .expect_err("operation required");
    assert!(err.message.contains("detect, run"));
    // cwd outside the workspace.
    let out = run(
        &WorkspaceTests,
        &ws,
        json!({"operation": "run", "command": "true", "cwd": "../.."}),
    )
    .await;
    assert_eq!(error_code(&out), "LOCAL_EXECUTOR_PATH_OUTSIDE_WORKSPACE");
    // A program that does not exist.
    let out = run(
        &WorkspaceTests,
        &ws,
        json!({"operation": "run", "command": "no-such-test-runner-xyz"}),
    )
    .await
    .expect("run");
    assert_eq!(out["termination"], "spawn_failed");
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_SPAWN_FAILED");
    assert_eq!(out["passed"], Value::Null);
    // A timeout kills it.
    let out = run(
        &WorkspaceTests,
        &ws,
        json!({"operation": "run", "command": "sleep", "args": ["30"], "timeout_ms": 300}),
    )
    .await
    .expect("run");
    assert_eq!(out["termination"], "timed_out");
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_TIMED_OUT");
    // Output that no parser knows: counts are null and the summary says so.
    let out = run(
        &WorkspaceTests,
        &ws,
        json!({"operation": "run", "command": "echo", "args": ["all good"]}),
    )
    .await
    .expect("run");
    assert_eq!(out["success"], true);
    assert_eq!(out["passed"], Value::Null);
    assert_eq!(out["failed"], Value::Null);
    assert!(out["summary"]
        .as_str()
        .unwrap_or_default()
        .contains("No test summary recognised"));
    // Args are literal: no shell ever sees them.
    let out = run(&WorkspaceTests, &ws, json!({"operation": "run", "command": "echo", "args": ["$(touch pwned)", ";", "touch", "pwned"]}))
        .await
        .expect("run");
    assert_eq!(out["stdout"], "$(touch pwned) ; touch pwned\n");
    assert!(!ws.join("pwned").exists());
}

#[tokio::test]
async fn approval_card_shows_command_and_resolved_cwd() {
    let (_dir, ws) = fixture_workspace("cargo");
    let ctx = RunContext::for_workspace("tools/workspace_tests", ws.clone(), Decision::Approved);
    let input = json!({"operation": "run", "command": "cargo", "args": ["test", "--no-fail-fast"], "cwd": "cargo"});
    let input = input.as_object().cloned().unwrap_or_default();
    assert!(WorkspaceTests.spec().effects.requires_approval(&input));
    let card = WorkspaceTests.approval_request(&ctx, &input).expect("card");
    assert_eq!(card.command_display, "cargo test --no-fail-fast");
    // One form on every card: relative to the workspace, which the card names once.
    assert_eq!(card.cwd, "cargo");
    assert_eq!(card.workspace, ws.display().to_string());
    assert_eq!(card.purpose, None);
    let detect = json!({"operation": "detect"});
    assert!(!WorkspaceTests
        .spec()
        .effects
        .requires_approval(detect.as_object().unwrap_or(&cheng_node::Values::new())));
}

#[tokio::test]
async fn detect_reads_manifests_and_never_runs_what_they_name() {
    let (_dir, ws) = temp_workspace();
    let outside = tempfile::tempdir().expect("tempdir");
    let marker = outside.path().join("ran");
    let touch = format!("touch {}", marker.display());
    let files = [
        ("Makefile", format!("test:\n\t{touch}\n")),
        (
            "package.json",
            format!(
                r#"{{"scripts": {{"test": "{touch}", "pretest": "{touch}", "prepare": "{touch}"}}}}"#
            ),
        ),
        ("conftest.py", format!("import os\nos.system({touch:?})\n")),
        ("setup.py", format!("import os\nos.system({touch:?})\n")),
        ("gradlew", format!("#!/bin/sh\n{touch}\n")),
        ("settings.gradle", String::new()),
    ];
    for (name, text) in &files {
        std::fs::write(ws.join(name), text).expect("write");
    }
    let out = run(&WorkspaceTests, &ws, json!({"operation": "detect"}))
        .await
        .expect("detect");
    let list = projects(&out);
    for kind in ["make", "node", "python", "gradle"] {
        project(&list, ".", kind);
    }
    assert!(
        !marker.exists(),
        "detect executed something a manifest named"
    );
}
