//! `tools/workspace_tests`: detect a workspace's test setup (read-only) and run an explicit test
//! command (approval-gated) with structured pass/fail counts.
//!
//! - **detect** walks the workspace (see [`detect`]) and never executes anything. Each suggested
//!   command is a `{command, args, cwd}` object that `run` accepts unchanged.
//! - **run** needs `command`: it is never inferred from detect. `args` are literal (no shell),
//!   `cwd` is resolved inside the workspace with the shared resolver, the environment is the
//!   minimal base environment of cheng-exec, `timeout_ms` defaults to 300 000 (max 600 000), and
//!   the whole process group is killed on timeout or cancel. stdout and stderr are each captured
//!   up to 4 MiB for parsing and returned head+tail truncated to 256 KiB.
//! - Counts come from [`parsers`] (cargo test summed over every `test result:` line, cargo
//!   nextest, pytest, jest, vitest, go test, node --test, mocha, TAP, and a plain
//!   `N passed, N failed` line). Output no parser recognises gives `passed`/`failed` null and a
//!   summary that says so; a count summed over many lines is withheld (null) when the output was
//!   truncated, since the dropped middle could hold more of them.
//! - `success` is true when the command exited 0 and no failed test was counted.
//! - `failure_summary` is best effort ([`failures`]): up to 50 `{name, file, line, message}`.

mod detect;
mod failures;
pub(crate) mod parsers;

use detect::DEFAULT_LIMITS;

use crate::program::{check_args, check_program, resolve_cwd};
use cheng_exec::{ProcessOutput, ProcessSpec, Termination};
use cheng_node::input::{non_empty_str, string_list};
use cheng_node::paths::display_relative;
use cheng_node::text::Bounded;
use cheng_node::{
    async_trait, failure, input, ApprovalRequest, ApprovalRule, Effects, ErrorKind, Node,
    NodeError, NodeSpec, PortSpec, PortType, RunContext, Values,
};
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `timeout_ms`: the spec is the only place its default (300000) and range live.
const TIMEOUT_MS: PortSpec = crate::program::timeout_ms(
    "For run: wall-clock budget in ms (default 300000, max 600000)",
    "300000",
);
/// Bytes of each stream kept for parsing.
pub const CAPTURE_CAP: usize = 4 << 20;
/// Bytes of each stream returned in `stdout` / `stderr`.
pub const OUTPUT_CAP: usize = 256 << 10;

const OPERATIONS: &[&str] = &["detect", "run"];

static SPEC: NodeSpec = NodeSpec {
    id: "tools/workspace_tests",
    title: "Workspace Tests",
    description: "Detect the project's toolchain and test commands (read-only) and run explicit test commands with structured pass/fail summaries, timeout, and cancellation.",
    category: "workspace",
    inputs: &[
        PortSpec::input(
            "operation",
            PortType::String,
            "detect = read-only project inspection; run = execute an explicit test command (approval-gated)",
        )
        .required()
        .choices(OPERATIONS),
        PortSpec::input("command", PortType::String, "Test program for run operation (e.g. \"cargo\", \"pnpm\").").default("null"),
        PortSpec::input(
            "args",
            PortType::Array(&PortType::String),
            "For run: literal command arguments, e.g. [\"test\", \"--no-fail-fast\"]",
        )
        .default("[]"),
        PortSpec::input("cwd", PortType::String, "Directory relative to the workspace root (project subdirectory in a monorepo)")
            .default("null"),
        TIMEOUT_MS,
        PortSpec::sandbox_root(),
    ],
    outputs: &[
        PortSpec::output("operation", PortType::String, "Test operation that was executed (detect or run)"),
        failure::success("Whether the operation succeeded"),
        PortSpec::output("summary", PortType::String, "Human-readable summary of the test result"),
        PortSpec::output(
            "detected_project",
            PortType::Any,
            "Detected project types, package manager, suggested commands, confidence, and evidence (detect only)",
        ),
        PortSpec::output("command_display", PortType::String, "Display form of the executed test command (run only)"),
        PortSpec::output("passed", PortType::Integer, "Number of passed tests (run only)"),
        PortSpec::output("failed", PortType::Integer, "Number of failed tests (run only)"),
        PortSpec::output("duration_ms", PortType::Integer, "Wall-clock duration of the test run in milliseconds (run only)"),
        PortSpec::output("failure_summary", PortType::Any, "Failure hints (name/file/line/message), best effort (run only)"),
        PortSpec::output(
            "termination",
            PortType::String,
            "Termination reason: exited, timed_out, cancelled, signalled, or spawn_failed (run only)",
        ),
        PortSpec::output("stdout", PortType::String, "Capped stdout text (head+tail truncated when over the cap)"),
        PortSpec::output("stdout_truncated", PortType::Boolean, "True when stdout was head+tail truncated due to byte cap"),
        PortSpec::output("stderr", PortType::String, "Capped stderr text (head+tail truncated when over the cap)"),
        PortSpec::output("stderr_truncated", PortType::Boolean, "True when stderr was head+tail truncated due to byte cap"),
        failure::ERROR_KIND,
        failure::TERMINAL,
        failure::ERROR,
    ],
    gate: None,
    effects: Effects::Approval(ApprovalRule::Operations(&["run"])),
};

/// The `tools/workspace_tests` node.
pub struct WorkspaceTests;

cheng_node::inventory::submit! { cheng_node::NodeRegistration::new(&WorkspaceTests) }

/// A validated `run` request.
struct RunRequest {
    command: String,
    args: Vec<String>,
    cwd: PathBuf,
    timeout: Duration,
}

#[async_trait]
impl Node for WorkspaceTests {
    fn spec(&self) -> &'static NodeSpec {
        &SPEC
    }

    fn approval_request(
        &self,
        ctx: &RunContext,
        input: &Values,
    ) -> Result<ApprovalRequest, NodeError> {
        let request = run_request(ctx, input)?;
        let mut approval =
            ApprovalRequest::new(ctx, command_display(&request.command, &request.args));
        approval.cwd = cheng_node::paths::display_relative(&ctx.workspace, &request.cwd);
        Ok(approval)
    }

    async fn run(&self, ctx: &RunContext, input: Values) -> Result<Values, NodeError> {
        match operation(&input)? {
            "detect" => detect_operation(ctx, &input).await,
            _ => run_operation(ctx, &input).await,
        }
    }
}

fn operation(input: &Values) -> Result<&'static str, NodeError> {
    let choices = OPERATIONS.join(", ");
    match non_empty_str(input, "operation") {
        None => Err(NodeError::invalid_input(format!(
            "operation is required; choose one of: {choices}"
        ))),
        Some(op) => OPERATIONS
            .iter()
            .copied()
            .find(|o| *o == op)
            .ok_or_else(|| {
                NodeError::invalid_input(format!(
                    "operation {op:?} is not available; choose one of: {choices}"
                ))
            }),
    }
}

fn run_request(ctx: &RunContext, input: &Values) -> Result<RunRequest, NodeError> {
    let command = non_empty_str(input, "command").ok_or_else(|| {
        NodeError::invalid_input(
            "command is required for run and is never inferred; pick one of detect's suggested commands, e.g. command \"cargo\" with args [\"test\"]",
        )
    })?;
    check_program(command)?;
    let args = string_list(input, "args")?;
    check_args(&args)?;
    let timeout_ms = input::int(input, &TIMEOUT_MS)?;
    let cwd = resolve_cwd(&ctx.workspace, input)?;
    Ok(RunRequest {
        command: command.to_string(),
        args,
        cwd,
        timeout: Duration::from_millis(timeout_ms.unsigned_abs()),
    })
}

/// Every output port, null, with `operation` set.
fn blank_outputs(operation: &str) -> Values {
    let mut out = Values::new();
    for port in SPEC.outputs {
        out.insert(port.name.into(), Value::Null);
    }
    out.insert("operation".into(), json!(operation));
    out
}

async fn detect_operation(ctx: &RunContext, input: &Values) -> Result<Values, NodeError> {
    let start = resolve_cwd(&ctx.workspace, input)?;
    let workspace = ctx.workspace.clone();
    let walk_start = start.clone();
    let detection = tokio::task::spawn_blocking(move || {
        detect::detect(&workspace, &walk_start, DEFAULT_LIMITS)
    })
    .await
    .map_err(|e| NodeError::internal(format!("project detection stopped unexpectedly: {e}")))?;
    let start_rel = display_relative(&ctx.workspace, &start);
    let mut types: Vec<&str> = detection
        .projects
        .iter()
        .filter_map(|p| p["type"].as_str())
        .collect();
    types.sort_unstable();
    types.dedup();
    let mut summary = if detection.projects.is_empty() {
        format!(
            "No test setup found under {start_rel} ({} entries scanned)",
            detection.entries
        )
    } else {
        let listed: Vec<String> = detection.projects.iter().map(describe_project).collect();
        let noun = if detection.projects.len() == 1 {
            "project"
        } else {
            "projects"
        };
        format!(
            "{} {noun} under {start_rel}: {}",
            detection.projects.len(),
            listed.join("; ")
        )
    };
    if detection.truncated {
        summary.push_str(&format!(
            " (walk stopped after {} entries; narrow cwd to see deeper projects)",
            DEFAULT_LIMITS.max_entries
        ));
    }
    let mut out = blank_outputs("detect");
    failure::fill::<()>(&mut out, &Ok(()));
    out.insert("summary".into(), json!(summary));
    out.insert(
        "detected_project".into(),
        json!({
            "cwd": start_rel,
            "project_types": types,
            "projects": detection.projects,
            "entries_scanned": detection.entries,
            "truncated": detection.truncated,
            "limits": {"max_entries": DEFAULT_LIMITS.max_entries, "max_depth": DEFAULT_LIMITS.max_depth},
        }),
    );
    Ok(out)
}

/// `node (pnpm, vitest) at web`.
fn describe_project(p: &Value) -> String {
    let mut parts: Vec<&str> = Vec::new();
    if p["workspace"] == true {
        parts.push("workspace");
    }
    for key in ["package_manager", "test_runner"] {
        if let Some(v) = p[key].as_str() {
            if !parts.contains(&v) && Some(v) != p["type"].as_str() {
                parts.push(v);
            }
        }
    }
    let kind = p["type"].as_str().unwrap_or("?");
    let cwd = p["cwd"].as_str().unwrap_or(".");
    if parts.is_empty() {
        format!("{kind} at {cwd}")
    } else {
        format!("{kind} ({}) at {cwd}", parts.join(", "))
    }
}

async fn run_operation(ctx: &RunContext, input: &Values) -> Result<Values, NodeError> {
    let request = run_request(ctx, input)?;
    let display = command_display(&request.command, &request.args);
    let env = cheng_exec::env::build(&Map::new())?;
    let spec = ProcessSpec::new(
        request.command.as_str(),
        request.args.iter().map(String::as_str),
        request.cwd.clone(),
    )
    .env(env)
    .timeout(request.timeout)
    .caps(CAPTURE_CAP, CAPTURE_CAP)
    .output(ctx.output.clone());
    let proc = cheng_exec::run(spec, &ctx.cancel).await;
    Ok(run_outputs(&ctx.workspace, &request.cwd, &display, &proc))
}

/// Builds the run outputs from what the process did.
fn run_outputs(workspace: &Path, cwd: &Path, display: &str, proc: &ProcessOutput) -> Values {
    let mut out = blank_outputs("run");
    out.insert("command_display".into(), json!(display));
    out.insert("duration_ms".into(), json!(proc.duration_ms()));
    out.insert("termination".into(), json!(proc.termination.as_str()));
    let (stdout, stdout_cut) = recap(&proc.stdout, OUTPUT_CAP);
    let (stderr, stderr_cut) = recap(&proc.stderr, OUTPUT_CAP);
    out.insert("stdout".into(), json!(stdout));
    out.insert("stdout_truncated".into(), json!(stdout_cut));
    out.insert("stderr".into(), json!(stderr));
    out.insert("stderr_truncated".into(), json!(stderr_cut));

    let ran = !matches!(proc.termination, Termination::SpawnFailed);
    let truncated = proc.stdout.truncated || proc.stderr.truncated;
    let counts = if ran {
        parsers::parse(&proc.stdout.text, &proc.stderr.text)
    } else {
        None
    };
    let counts = counts.map(|c| {
        if truncated && c.summed {
            parsers::Counts {
                passed: None,
                failed: None,
                ..c
            }
        } else {
            c
        }
    });
    let text = parsers::strip_ansi(&format!("{}\n{}", proc.stdout.text, proc.stderr.text));
    let failures: Vec<Value> = failures::extract(&text)
        .into_iter()
        .map(|mut f| {
            f.file = f.file.map(|file| relative_file(workspace, cwd, &file));
            f.to_json()
        })
        .collect();

    let failed = counts.as_ref().and_then(|c| c.failed);
    out.insert(
        "passed".into(),
        json!(counts.as_ref().and_then(|c| c.passed)),
    );
    out.insert("failed".into(), json!(failed));
    out.insert("failure_summary".into(), json!(failures));

    let exited_zero = proc.success();
    let success = exited_zero && failed.unwrap_or(0) == 0;

    let outcome = proc.summary(display);
    let counted = match &counts {
        Some(c) => {
            let n = |v: Option<u64>| v.map_or("an unknown number of".to_string(), |v| v.to_string());
            let mut s = format!("{}: {} passed, {} failed", c.runner, n(c.passed), n(c.failed));
            if c.skipped > 0 {
                s.push_str(&format!(", {} skipped", c.skipped));
            }
            if truncated && c.summed {
                s.push_str(" (output exceeded the capture cap, so the summed counts are withheld)");
            } else if c.passed.is_none() {
                s.push_str(" (this output format does not report passing tests; go test needs -v or -json)");
            }
            s
        }
        None if ran => "No test summary recognised in the output (tried cargo test, cargo nextest, pytest, jest, vitest, go test, node --test, mocha, TAP and 'N passed, N failed'); passed and failed are unknown".to_string(),
        None => "The test command did not start".to_string(),
    };
    out.insert("summary".into(), json!(format!("{counted} — {outcome}")));

    let result = if success {
        Ok(())
    } else {
        let tests = |n: u64| {
            if n == 1 {
                "1 test failed".to_string()
            } else {
                format!("{n} tests failed")
            }
        };
        let error = match (proc.error_kind(), failed) {
            (Some(ErrorKind::SpawnFailed), _) => {
                NodeError::new(ErrorKind::SpawnFailed, outcome.clone())
            }
            (Some(kind), Some(n)) if n > 0 => {
                NodeError::new(kind, format!("{}; {outcome}", tests(n)))
            }
            (Some(kind), _) => NodeError::new(kind, outcome.clone()),
            // The runner reported failed tests but exited 0: the tests' own error, not the exit.
            (None, Some(n)) => NodeError::new(
                ErrorKind::ScriptError,
                format!("{} although the command exited 0", tests(n)),
            ),
            (None, None) => NodeError::new(ErrorKind::NonZeroExit, outcome.clone()),
        };
        Err(error)
    };
    failure::fill(&mut out, &result);
    out
}

/// A runner's file path relative to the workspace root where it lies inside it.
fn relative_file(workspace: &Path, cwd: &Path, file: &str) -> String {
    let path = Path::new(file);
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    };
    match absolute.strip_prefix(workspace) {
        Ok(rel) => rel.display().to_string(),
        Err(_) => file.to_string(),
    }
}

/// Re-caps captured text to `cap` bytes (head+tail); the marker counts bytes of the whole stream
/// (the captured text is lossy, so its length is not what it stands for).
fn recap(bounded: &Bounded, cap: usize) -> (String, bool) {
    let out = bounded.recap(cap);
    (out.text, out.truncated)
}

/// `cargo test --no-fail-fast 'a b'`: arguments quoted only where a shell would need it.
pub fn command_display(command: &str, args: &[String]) -> String {
    cheng_node::text::command_display(
        std::iter::once(command).chain(args.iter().map(String::as_str)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn proc(stdout: &str, stderr: &str, code: i32) -> ProcessOutput {
        ProcessOutput {
            exit_code: Some(code),
            termination: Termination::Exited,
            signal: None,
            duration: Duration::from_millis(1200),
            stdout: cheng_node::text::head_tail(stdout.as_bytes(), CAPTURE_CAP),
            stderr: cheng_node::text::head_tail(stderr.as_bytes(), CAPTURE_CAP),
            spawn_error: None,
            usage: None,
        }
    }

    #[test]
    fn run_outputs_carry_counts_failures_and_every_port() {
        let ws = Path::new("/ws");
        let out = run_outputs(
            ws,
            ws,
            "cargo test",
            &proc(
                parsers::samples::CARGO_STDOUT,
                parsers::samples::CARGO_STDERR,
                101,
            ),
        );
        for port in SPEC.outputs {
            assert!(out.contains_key(port.name), "{}", port.name);
        }
        assert_eq!(out["passed"], 1);
        assert_eq!(out["failed"], 1);
        assert_eq!(out["success"], false);
        assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_NON_ZERO_EXIT");
        assert_eq!(out["failure_summary"][0]["file"], "tests/check.rs");
        assert!(out["summary"]
            .as_str()
            .unwrap_or_default()
            .starts_with("cargo test: 1 passed, 1 failed"));
    }

    #[test]
    fn unrecognised_output_gives_null_counts_and_says_so() {
        let ws = Path::new("/ws");
        let out = run_outputs(ws, ws, "make check", &proc("compiling...\ndone\n", "", 0));
        assert_eq!(out["passed"], Value::Null);
        assert_eq!(out["failed"], Value::Null);
        assert_eq!(out["success"], true);
        assert!(out["summary"]
            .as_str()
            .unwrap_or_default()
            .contains("No test summary recognised"));
    }

    #[test]
    fn summed_counts_are_withheld_when_the_middle_was_dropped() {
        let ws = Path::new("/ws");
        let mut p = proc(parsers::samples::CARGO_STDOUT, "", 0);
        p.stdout.truncated = true;
        let out = run_outputs(ws, ws, "cargo test", &p);
        assert_eq!(out["passed"], Value::Null);
        assert!(out["summary"]
            .as_str()
            .unwrap_or_default()
            .contains("withheld"));
    }

    #[test]
    fn success_needs_exit_zero_and_no_failed_test() {
        let ws = Path::new("/ws");
        let out = run_outputs(
            ws,
            ws,
            "runner",
            &proc("Results: 3 passed, 1 failed\n", "", 0),
        );
        assert_eq!(out["failed"], 1);
        assert_eq!(
            out["success"], false,
            "a counted failure fails the run even with exit 0"
        );
        assert!(
            out["error"]
                .as_str()
                .unwrap_or_default()
                .contains("although the command exited 0"),
            "{out:?}"
        );
        let out = run_outputs(
            ws,
            ws,
            "runner",
            &proc("Results: 3 passed, 0 failed\n", "", 1),
        );
        assert_eq!(
            out["success"], false,
            "a non-zero exit fails the run with no failed test"
        );
        let out = run_outputs(
            ws,
            ws,
            "runner",
            &proc("Results: 3 passed, 0 failed\n", "", 0),
        );
        assert_eq!(out["success"], true);
    }

    #[test]
    fn timeout_defaults_to_300000_and_is_capped_at_600000() {
        let dir = std::env::temp_dir()
            .canonicalize()
            .unwrap_or_else(|_| PathBuf::from("/tmp"));
        let ctx = RunContext::for_workspace(SPEC.id, dir, cheng_node::Decision::Approved);
        let input = |v: Value| v.as_object().cloned().unwrap_or_default();
        let request = run_request(&ctx, &input(json!({"command": "true"}))).expect("request");
        assert_eq!(request.timeout, Duration::from_millis(300_000));
        let request = run_request(
            &ctx,
            &input(json!({"command": "true", "timeout_ms": 600_000})),
        )
        .expect("request");
        assert_eq!(request.timeout, Duration::from_millis(600_000));
        let err = run_request(
            &ctx,
            &input(json!({"command": "true", "timeout_ms": 600_001})),
        )
        .err()
        .expect("over the max");
        assert!(err.message.contains("600000"), "{}", err.message);
        assert_eq!(SPEC.input("timeout_ms").and_then(|p| p.max), Some(600_000));
    }

    #[test]
    fn run_cwd_must_be_a_directory_before_anybody_is_asked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        std::fs::write(root.join("Cargo.toml"), "[package]\n").expect("write");
        let ctx = RunContext::for_workspace(SPEC.id, root, cheng_node::Decision::Approved);
        let input = json!({"operation": "run", "command": "true", "cwd": "Cargo.toml"});
        let input = input.as_object().cloned().unwrap_or_default();
        let err = WorkspaceTests
            .approval_request(&ctx, &input)
            .expect_err("a file is no cwd");
        assert_eq!(err.kind, ErrorKind::InvalidInput);
        assert!(err.message.contains("not a directory"), "{}", err.message);
    }

    #[test]
    fn the_card_names_the_cwd_relative_to_the_workspace_named_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        std::fs::create_dir(root.join("sub")).expect("mkdir");
        let ctx = RunContext::for_workspace(SPEC.id, root.clone(), cheng_node::Decision::Approved);
        let input = json!({"operation": "run", "command": "true", "cwd": "sub"});
        let card = WorkspaceTests
            .approval_request(&ctx, &input.as_object().cloned().unwrap_or_default())
            .expect("card");
        assert_eq!(card.cwd, "sub");
        assert_eq!(card.workspace, root.display().to_string());
        let input = json!({"operation": "run", "command": "true"});
        let card = WorkspaceTests
            .approval_request(&ctx, &input.as_object().cloned().unwrap_or_default())
            .expect("card");
        assert_eq!(card.cwd, ".");
    }

    #[test]
    fn recap_keeps_head_tail_and_the_true_byte_count() {
        let text = "a".repeat(1000) + &"b".repeat(1000);
        let bounded = cheng_node::text::head_tail(text.as_bytes(), 1 << 20);
        let (out, cut) = recap(&bounded, 100);
        assert!(cut);
        assert!(out.starts_with(&"a".repeat(50)));
        assert!(out.ends_with(&"b".repeat(50)));
        assert!(out.contains("omitted 1900 bytes"), "{out}");
    }

    #[test]
    fn display_quotes_only_where_needed() {
        let args = vec!["test".to_string(), "a b".to_string(), "it's".to_string()];
        assert_eq!(
            command_display("cargo", &args),
            "cargo test 'a b' 'it'\\''s'"
        );
    }

    #[test]
    fn operation_must_be_a_listed_choice() {
        let err = operation(&Values::new()).unwrap_err();
        assert!(err.message.contains("detect, run"), "{}", err.message);
        let mut input = Values::new();
        input.insert("operation".into(), json!("install"));
        assert!(operation(&input).is_err());
    }

    #[test]
    fn spec_is_gated_for_run_only() {
        let run = json!({"operation": "run"});
        let detect = json!({"operation": "detect"});
        assert!(SPEC
            .effects
            .requires_approval(run.as_object().unwrap_or(&Values::new())));
        assert!(!SPEC
            .effects
            .requires_approval(detect.as_object().unwrap_or(&Values::new())));
        assert_eq!(SPEC.input("timeout_ms").and_then(|p| p.max), Some(600_000));
    }
}
