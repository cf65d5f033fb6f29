//! Helpers shared by cheng's test suites and benchmarks (a dev-dependency only): hermetic git
//! fixtures, temporary workspaces and a no-op node.
//!
//! Everything here panics on failure: a fixture that cannot be built is a broken test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use cheng_node::{async_trait, Effects, Node, NodeError, NodeSpec, PortSpec, PortType, RunContext, Values};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A fresh canonical temporary workspace (keep the `TempDir` alive while it is used).
pub fn temp_workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical tempdir");
    (dir, root)
}

/// Runs `git` in `dir` for fixture building: host configuration ignored, a fixed identity.
/// Returns stdout; panics (with git's stderr) when git fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "Fixture")
        .env("GIT_AUTHOR_EMAIL", "fixture@example.invalid")
        .env("GIT_COMMITTER_NAME", "Fixture")
        .env("GIT_COMMITTER_EMAIL", "fixture@example.invalid")
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Plain git in `dir` as any user would run it (the repository's own configuration applies;
/// only host configuration is ignored), to show what an attack does without cheng's
/// protections. Never panics on git's exit status; panics only when git cannot start.
pub fn plain_git(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("git runs")
}

/// A repository at `dir` with `main` checked out and `files` (path, content) committed.
pub fn init_repo(dir: &Path, files: &[(&str, &str)]) {
    std::fs::create_dir_all(dir).expect("mkdir");
    git(dir, &["-c", "init.defaultBranch=main", "init", "-q", "."]);
    for (name, content) in files {
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(path, content).expect("write");
    }
    if !files.is_empty() {
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-qm", "initial commit"]);
    }
}

/// `bench/noop`: returns its input port `x` unchanged (the cheapest node the engine can run).
pub struct Noop;

pub static NOOP: NodeSpec = NodeSpec {
    id: "bench/noop",
    title: "No-op",
    description: "Returns its input port `x` unchanged.",
    category: "bench",
    inputs: &[PortSpec::input("x", PortType::Any, "Anything").default("null"), PortSpec::sandbox_root()],
    outputs: &[PortSpec::output("x", PortType::Any, "The same value")],
    gate: None,
    effects: Effects::ReadOnly,
};

#[async_trait]
impl Node for Noop {
    fn spec(&self) -> &'static NodeSpec {
        &NOOP
    }
    async fn run(&self, _ctx: &RunContext, mut input: Values) -> Result<Values, NodeError> {
        let x = input.remove("x").unwrap_or(Value::Null);
        Ok(Values::from_iter([("x".to_string(), x)]))
    }
}
