//! `tools/run_command`: one shell command line through `sh -c`, with the output levels of the
//! command runner's design (its RunCommand tool). Every run is approval-gated.
//!
//! Where the ports come from (the design's parameter table, verbatim names and defaults):
//! `command` (required), `working_dir` (default: the workspace root), `timeout_secs` (the
//! input's value, else the author's configured default, else 30 s: in cheng the input, then the
//! node's config, then the spec default, which is exactly the engine's order), `output_level`
//! (`error` | `warning` | `info` default | `all`). `scope_policy` is the design's
//! `ScopePolicy` (`DenyOutside` / `ApproveOutside`), chosen by the author; cheng ships
//! `deny_outside`.
//!
//! Decisions where the design is silent or cheng differs:
//!
//! - **Raw shell is what this node is**, so the operator's `shell_syntax` rule governs it:
//!   without `shell_syntax = true` under `[nodes."tools/run_command"]` (or `[all]`) every call is
//!   `LOCAL_EXECUTOR_POLICY_DENIED`, naming the rule and the file, before any card is shown.
//! - **working_dir**: absolute as given, relative joined to the workspace root, empty or `.` the
//!   root; then symlinks are resolved and it must be an existing directory. The resolved path is
//!   labelled `workspace` or `outside_workspace` (`scope`); cheng always has a workspace, so
//!   `none` (the design's "no scope configured") is never produced. Outside the workspace,
//!   `deny_outside` refuses (`LOCAL_EXECUTOR_PATH_OUTSIDE_WORKSPACE`) and `approve_outside`
//!   shows the absolute directory on the approval card with a line saying it is outside.
//! - **Environment and process control** are workspace_shell's: the minimal host environment,
//!   stdin /dev/null, its own process group under a per-run reaper, SIGTERM then SIGKILL on
//!   timeout or cancellation. Only the output shaping (shape.rs) is this node's.
//! - **Result**: the design returns success for any exit code and an error on a timeout; here
//!   every run returns the full output object, `success` is exit code 0 and anything else has
//!   `error_kind` (`NON_ZERO_EXIT`, `TIMED_OUT`, …) and `error`, with the streams intact.
//!   `exit_code` is -1 when the command could not start or did not exit by itself (timeout,
//!   cancellation, signal). Fields the design leaves out at a level are `null`.

mod shape;

use cheng_exec::{ProcessOutput, ProcessSpec};
use cheng_node::policy::Policy;
use cheng_node::{
    failure, input, paths, ApprovalRequest, ApprovalRule, Audience, Control, Effects, ErrorKind,
    Node, NodeError, NodeSpec, Output, PortSpec, PortType, RunContext, Values,
};
use serde_json::{json, Value};
use shape::{Level, Report, Shaper};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use shape::{
    MAX_ERROR, MAX_STDERR_ALL, MAX_STDERR_INFO, MAX_STDOUT_ALL, MAX_STDOUT_INFO, MAX_WARNING_STDOUT,
};

/// Largest `timeout_secs` (workspace_shell's ten minutes).
pub const MAX_TIMEOUT_SECS: i64 = 600;
/// The kernel's limit for one argument (MAX_ARG_STRLEN, with its NUL).
pub const MAX_COMMAND_BYTES: usize = 128 * 1024 - 1;
/// cheng_exec's own head+tail capture is not what the model gets (the shaper is); kept small.
const CAPTURE_CAP: usize = 4096;

const TIMEOUT_SECS: PortSpec = PortSpec::input(
    "timeout_secs",
    PortType::Integer,
    "Timeout in seconds for this call. Unset: the node's configured default, else 30. Max 600.",
)
.default("30")
.min(1)
.max(MAX_TIMEOUT_SECS);

const OUTPUT_LEVEL: PortSpec = PortSpec::input(
    "output_level",
    PortType::String,
    "Output granularity: \"error\" (stderr only, last 100KB), \"warning\" (stdout lines containing warn + stderr), \"info\" (default: last 500KB of stdout, 100KB of stderr, with a truncation_note when cut) or \"all\" (first 1MB of stdout, 500KB of stderr).",
)
.default("\"info\"")
.choices(Level::NAMES);

const SCOPE_POLICY: PortSpec = PortSpec::input(
    "scope_policy",
    PortType::String,
    "What a working_dir outside the workspace does (author-only): \"deny_outside\" (default) refuses it, \"approve_outside\" runs it once a person approves the card that says so.",
)
.default("\"deny_outside\"")
.choices(&["deny_outside", "approve_outside"])
.audience(Audience::Author)
.control(Control::Select);

pub struct RunCommand;

pub static SPEC: NodeSpec = NodeSpec {
    id: "tools/run_command",
    title: "Run Command",
    description: "Executes a shell command via sh -c on Unix (Linux/macOS). Use POSIX shell syntax: ls, rm, grep, |, >, &&, $VAR. For scripts, write the interpreter explicitly: python3 script.py. stdin is /dev/null, so interactive commands (read, sudo prompts) cannot get input. output_level chooses what comes back (error, warning, info by default, all); a non-zero exit code is reported with the output. Every run is approval-gated.",
    category: "workspace",
    inputs: &[
        PortSpec::input("command", PortType::String, "The shell command line to run via sh -c (POSIX sh: pipes |, redirection > and 2>&1, &&, ||, $VAR expansion, $(...)).").required(),
        PortSpec::input("working_dir", PortType::String, "Working directory: absolute, or relative to the workspace root. Default: the workspace root.").default("null"),
        TIMEOUT_SECS,
        OUTPUT_LEVEL,
        PortSpec::sandbox_root(),
        SCOPE_POLICY,
    ],
    outputs: &[
        failure::success("Whether the command exited with code 0"),
        PortSpec::output("stdout", PortType::String, "info: the last 500KB of stdout (\"...[omitted N bytes]\\n\" in front when cut); all: the first 1MB (\"...[truncated, N bytes total]\" after it when cut); null at error and warning"),
        PortSpec::output("stderr", PortType::String, "stderr: the last 100KB at error, warning and info, the first 500KB at all (same markers)"),
        PortSpec::output("exit_code", PortType::Integer, "The command's exit code; -1 when it could not start or did not exit by itself (timeout, cancellation, signal)"),
        PortSpec::output("scope", PortType::String, "Where working_dir is: workspace or outside_workspace (none: no workspace, never in cheng)"),
        PortSpec::output("stdout_truncated", PortType::Boolean, "Whether stdout (at warning: the warning lines) was cut; null at error"),
        PortSpec::output("stdout_bytes_total", PortType::Integer, "Bytes the command wrote to stdout; null at error"),
        PortSpec::output("stderr_truncated", PortType::Boolean, "Whether stderr was cut"),
        PortSpec::output("stderr_bytes_total", PortType::Integer, "Bytes the command wrote to stderr"),
        PortSpec::output("truncation_note", PortType::String, "info only, when something was cut: how to get errors only or the full output; else null"),
        PortSpec::output("warning_count", PortType::Integer, "warning only: how many stdout lines contain warn (any case); else null"),
        PortSpec::output("stdout_warnings", PortType::String, "warning only: those lines joined with \\n, the last 200KB; else null"),
        failure::ERROR_KIND,
        failure::TERMINAL,
        failure::error("Why the run failed: a non-zero exit, a timeout, a signal, or the command could not start"),
    ],
    gate: None,
    effects: Effects::Approval(ApprovalRule::Always),
};

cheng_node::inventory::submit! { cheng_node::NodeRegistration::new(&RunCommand) }

#[cheng_node::async_trait]
impl Node for RunCommand {
    fn spec(&self) -> &'static NodeSpec {
        &SPEC
    }

    fn approval_request(
        &self,
        ctx: &RunContext,
        input: &Values,
    ) -> Result<ApprovalRequest, NodeError> {
        let plan = Plan::from_input(ctx, input)?;
        let mut request = ApprovalRequest::new(ctx, plan.display.clone());
        request.cwd = plan.cwd_display.clone();
        if plan.scope == Scope::OutsideWorkspace {
            request.details = Some(format!(
                "working_dir {} is outside the workspace (scope_policy approve_outside): the command runs there",
                plan.cwd.display()
            ));
        }
        Ok(request)
    }

    async fn run(&self, ctx: &RunContext, input: Values) -> Result<Values, NodeError> {
        let plan = Plan::from_input(ctx, &input)?;
        let shaper = Arc::new(Shaper::new(plan.level, ctx.output.clone()));
        let spec = ProcessSpec::new("sh", ["-c", plan.command.as_str()], plan.cwd.clone())
            .timeout(Duration::from_secs(plan.timeout_secs))
            .caps(CAPTURE_CAP, CAPTURE_CAP)
            .output(Output::new(shaper.clone()));
        let out = cheng_exec::run(spec, &ctx.cancel).await;
        Ok(plan.outputs(&out, &shaper.finish()))
    }
}

/// The operator's `shell_syntax` rule for this node, under the run's policy.
fn check_shell_syntax(ctx: &RunContext) -> Result<(), NodeError> {
    shell_syntax_rule(ctx.policy(), ctx.node_type)
}

fn shell_syntax_rule(policy: &Policy, node_type: &str) -> Result<(), NodeError> {
    let (setting, source) = policy.setting(node_type, cheng_node::capability::SHELL_SYNTAX.key);
    if setting == cheng_node::capability::Setting::Grant {
        return Ok(());
    }
    let file = policy.path().map_or_else(
        || cheng_node::policy::SYSTEM_PATH.to_string(),
        |p| p.display().to_string(),
    );
    Err(NodeError::policy_denied(format!(
        "{node_type} runs raw shell command lines (sh -c), and the operator's policy does not allow raw shell syntax ({source}); \
         nothing ran. The machine's operator can allow it with `shell_syntax = true` under [nodes.\"{node_type}\"] in {file}"
    )))
}

/// Where the working directory is, as the design labels it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    Workspace,
    OutsideWorkspace,
}

impl Scope {
    fn as_str(self) -> &'static str {
        match self {
            Scope::Workspace => "workspace",
            Scope::OutsideWorkspace => "outside_workspace",
        }
    }
}

/// A validated call, built by both `approval_request` and `run` so the approved command is the
/// one that runs.
#[derive(Debug)]
struct Plan {
    command: String,
    display: String,
    cwd: PathBuf,
    cwd_display: String,
    scope: Scope,
    timeout_secs: u64,
    level: Level,
}

impl Plan {
    fn from_input(ctx: &RunContext, input: &Values) -> Result<Plan, NodeError> {
        let command = input::opt_str(input, "command")
            .filter(|c| !c.trim().is_empty())
            .ok_or_else(|| {
                NodeError::invalid_input(
                    "command is required: one shell command line, e.g. \"cargo test 2>&1 | tail -n 20\"",
                )
            })?;
        if command.contains('\0') {
            return Err(NodeError::invalid_input("command contains a NUL byte"));
        }
        if command.len() > MAX_COMMAND_BYTES {
            return Err(NodeError::invalid_input(format!(
                "command is {} bytes; at most {MAX_COMMAND_BYTES} are accepted (the kernel's limit for one argument); put a long script in a file and run it",
                command.len()
            )));
        }
        check_shell_syntax(ctx)?;
        let level_name = input::opt_str(input, "output_level").unwrap_or("info");
        let level = Level::parse(level_name).ok_or_else(|| {
            NodeError::invalid_input(format!(
                "output_level {level_name:?} is not one of {}",
                Level::NAMES.join(", ")
            ))
        })?;
        let timeout_secs = input::int(input, &TIMEOUT_SECS)?.unsigned_abs();
        let approve_outside = match input::opt_str(input, "scope_policy") {
            None | Some("deny_outside") => false,
            Some("approve_outside") => true,
            Some(other) => {
                return Err(NodeError::invalid_input(format!(
                    "scope_policy {other:?} in the node's config is not deny_outside or approve_outside"
                )))
            }
        };
        let given = input::opt_str(input, "working_dir");
        let (cwd, scope) = resolve_working_dir(&ctx.workspace, given)?;
        if scope == Scope::OutsideWorkspace && !approve_outside {
            return Err(NodeError::new(
                ErrorKind::PathOutsideWorkspace,
                format!(
                    "working_dir {:?} is {}, outside the workspace; this node's scope_policy is deny_outside (the default): use a directory inside the workspace, or ask the node's author for approve_outside",
                    given.unwrap_or(""),
                    cwd.display()
                ),
            ));
        }
        Ok(Plan {
            command: command.to_string(),
            display: cheng_node::text::command_display(["sh", "-c", command]),
            cwd_display: paths::display_relative(&ctx.workspace, &cwd),
            cwd,
            scope,
            timeout_secs,
            level,
        })
    }

    /// The node's output object for a finished (or unstartable) process.
    fn outputs(&self, out: &ProcessOutput, report: &Report) -> Values {
        let result = match out.error_kind() {
            None => Ok(()),
            Some(kind) => Err(NodeError::new(kind, self.error_message(kind, out))),
        };
        let (stdout, stdout_truncated, stdout_total, warnings) =
            match (&report.stdout, report.level) {
                (None, _) => (Value::Null, Value::Null, Value::Null, Value::Null),
                (Some(s), Level::Warning) => (
                    Value::Null,
                    json!(s.truncated),
                    json!(report.stdout_total),
                    json!(s.text),
                ),
                (Some(s), _) => (
                    json!(s.text),
                    json!(s.truncated),
                    json!(report.stdout_total),
                    Value::Null,
                ),
            };
        let exit_code = match (out.termination, out.exit_code) {
            (cheng_exec::Termination::Exited, Some(code)) => code,
            _ => -1,
        };
        let mut o = Values::new();
        o.insert("success".into(), json!(out.success()));
        o.insert("stdout".into(), stdout);
        o.insert("stderr".into(), json!(report.stderr.text));
        o.insert("exit_code".into(), json!(exit_code));
        o.insert("scope".into(), json!(self.scope.as_str()));
        o.insert("stdout_truncated".into(), stdout_truncated);
        o.insert("stdout_bytes_total".into(), stdout_total);
        o.insert("stderr_truncated".into(), json!(report.stderr.truncated));
        o.insert("stderr_bytes_total".into(), json!(report.stderr_total));
        o.insert("truncation_note".into(), json!(report.truncation_note()));
        o.insert("warning_count".into(), json!(report.warning_count));
        o.insert("stdout_warnings".into(), warnings);
        failure::fill(&mut o, &result);
        o
    }

    fn error_message(&self, kind: ErrorKind, out: &ProcessOutput) -> String {
        let shown = &self.display;
        match kind {
            ErrorKind::NonZeroExit => format!(
                "`{shown}` exited with status {}; its output is returned",
                out.exit_code.unwrap_or(-1)
            ),
            ErrorKind::TimedOut => format!(
                "`{shown}` timed out after {} seconds; its process group was killed. Raise timeout_secs (max {MAX_TIMEOUT_SECS}) if it needs longer",
                self.timeout_secs
            ),
            ErrorKind::Cancelled => {
                format!("the run was cancelled; `{shown}` and its process group were killed")
            }
            ErrorKind::Signalled => format!(
                "`{shown}` was killed by {}",
                out.signal
                    .map(cheng_exec::signal_name)
                    .unwrap_or_else(|| "a signal".into())
            ),
            ErrorKind::SpawnFailed => out
                .spawn_error
                .clone()
                .unwrap_or_else(|| format!("`{shown}` could not be started")),
            other => format!("`{shown}` failed: {}", other.code()),
        }
    }
}

/// The design's `resolve_working_dir`, then symlinks resolved, and the scope label.
fn resolve_working_dir(root: &Path, given: Option<&str>) -> Result<(PathBuf, Scope), NodeError> {
    let joined = match given {
        None | Some("" | ".") => root.to_path_buf(),
        Some(p) if p.contains('\0') => {
            return Err(NodeError::invalid_input("working_dir contains a NUL byte"))
        }
        Some(p) if Path::new(p).is_absolute() => PathBuf::from(p),
        Some(p) => root.join(p),
    };
    let shown = given.unwrap_or("");
    let real = joined.canonicalize().map_err(|e| {
        let kind = if e.kind() == std::io::ErrorKind::NotFound {
            ErrorKind::NotFound
        } else {
            ErrorKind::InvalidInput
        };
        NodeError::new(kind, format!("working_dir {shown:?} cannot be used: {e}"))
    })?;
    if !real.is_dir() {
        return Err(NodeError::invalid_input(format!(
            "working_dir {shown:?} is not a directory"
        )));
    }
    let scope = if real.starts_with(root) {
        Scope::Workspace
    } else {
        Scope::OutsideWorkspace
    };
    Ok((real, scope))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_operator_rule_is_off_by_default_and_says_how_to_turn_it_on() {
        let e = shell_syntax_rule(&Policy::builtin(), SPEC.id).unwrap_err();
        assert_eq!(e.kind, ErrorKind::PolicyDenied);
        assert!(e.message.contains("built-in default"), "{}", e.message);
        assert!(
            e.message
                .contains("`shell_syntax = true` under [nodes.\"tools/run_command\"]"),
            "{}",
            e.message
        );
        let allowed = Policy::from_toml_str(
            "[nodes.\"tools/run_command\"]\nshell_syntax = true\n",
            "/p.toml",
        )
        .unwrap();
        assert!(shell_syntax_rule(&allowed, SPEC.id).is_ok());
    }

    #[test]
    fn working_dirs_are_labelled_by_where_they_resolve() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap().join("ws");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::os::unix::fs::symlink("..", root.join("up")).unwrap();
        std::fs::write(root.join("file"), "").unwrap();
        let label = |given: Option<&str>| resolve_working_dir(&root, given);
        assert_eq!(label(None).unwrap(), (root.clone(), Scope::Workspace));
        assert_eq!(label(Some(".")).unwrap(), (root.clone(), Scope::Workspace));
        assert_eq!(
            label(Some("sub")).unwrap(),
            (root.join("sub"), Scope::Workspace)
        );
        let abs = root.join("sub");
        assert_eq!(
            label(abs.to_str()).unwrap().1,
            Scope::Workspace,
            "an absolute path inside is inside"
        );
        assert_eq!(label(Some("..")).unwrap().1, Scope::OutsideWorkspace);
        assert_eq!(
            label(Some("up")).unwrap().1,
            Scope::OutsideWorkspace,
            "a symlink leading out is outside"
        );
        assert_eq!(label(Some("/")).unwrap().1, Scope::OutsideWorkspace);
        assert_eq!(
            label(Some("missing")).unwrap_err().kind,
            ErrorKind::NotFound
        );
        assert_eq!(
            label(Some("file")).unwrap_err().kind,
            ErrorKind::InvalidInput
        );
    }
}
