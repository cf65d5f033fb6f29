//! `tools/workspace_shell`: run a workspace command with policy checks, bounded output, timeout
//! and cancellation. Every run is approval-gated.
//!
//! Decisions where the reference page is silent:
//!
//! - **Exactly one of `command` or `shell_string`.** An empty `command` (its default) counts as
//!   unset, as does a `shell_string` of only whitespace. `args` go with `command` only.
//! - **`command` is one program name or path**, never a command line: whitespace in it is
//!   rejected with a hint to use `args`. Without a whitelist a path (`./gradlew`) runs relative to
//!   `cwd`. Bare names are looked up on the host `PATH`'s absolute directories only, so a file in
//!   the workspace can never shadow a system program.
//! - **`shell_string` without `allow_shell_string`** is split into argv when it is *simple*:
//!   words, spaces/tabs, single and double quotes and backslashes, with POSIX `sh` meaning
//!   (single quotes are literal; in double quotes a backslash escapes only `"` `\` `$` and
//!   `` ` ``; outside quotes a backslash makes the next character literal). Not simple, and denied
//!   as `LOCAL_EXECUTOR_POLICY_DENIED`: unquoted `| & ; < > ( ) * ? { } ~`, `$` or `` ` `` anywhere
//!   outside single quotes, newlines, a word starting with `#` (a comment in sh) and a leading
//!   `NAME=value` (an assignment; use `env`). The resulting argv is exactly what `sh` would have
//!   produced, except that nothing is ever globbed (`[` stays literal). An unterminated quote is
//!   `LOCAL_EXECUTOR_INVALID_INPUT`.
//! - **With `allow_shell_string` on** (and no whitelist) the string runs as `sh -c <string>`.
//! - **`command_whitelist`**: one program name per line, trimmed; blank lines and lines starting
//!   with `#` are ignored. When non-empty, only listed names run; a command containing `/` is
//!   denied; every `shell_string` is denied (the reference page: "shell strings are denied"), even a
//!   simple one naming a listed program and even with `allow_shell_string` on. A line holding a path or several words is
//!   a configuration error (`LOCAL_EXECUTOR_INVALID_INPUT` naming the line). Whitelisting a
//!   program that runs other programs (`sh`, `env`, `xargs`, `make`) lets it run anything.
//! - **`cwd`** goes through `cheng_node::paths::resolve_existing` (relative, no `..` above the
//!   root, symlinks resolved and kept inside) and must be a directory.
//! - **`env`** goes through `cheng_exec::env::build`: the minimal host base plus these
//!   variables; loader, shell and interpreter hooks (`LD_*`, `BASH_ENV`, `GIT_*`, `PATH`, …) are
//!   `LOCAL_EXECUTOR_INVALID_INPUT` naming the variable, whatever any list says. Then every name
//!   must be on [`ENV_BASELINE`] (locale, time zone, terminal, colour, CI) or on the operator's
//!   `env_allow` for this node (docs/guides/policy.md); anything else is
//!   `LOCAL_EXECUTOR_INVALID_INPUT` naming the name and the line that would allow it.
//! - **Limits**: `timeout_ms` defaults to 60000 (max 600000). Output is captured head+tail with
//!   [`STDOUT_CAP`] (1 MiB) for stdout and [`STDERR_CAP`] (256 KiB) for stderr; the totals are
//!   reported in `summary`. On timeout or cancellation the whole process group gets SIGTERM, then
//!   SIGKILL after 500 ms.
//! - **Result**: `success` is exit code 0. A non-zero exit, timeout, signal or spawn failure is
//!   still a full output object (`success:false`, `error_kind`, `terminal`, `error`) with stdout
//!   and stderr intact; only validation and policy failures are returned as errors.

pub(crate) mod argv;
pub(crate) mod split;

use argv::argv_from_input;
use cheng_exec::{ProcessOutput, ProcessSpec};
use cheng_node::text::human_duration_ms;
use cheng_node::{
    failure, input, paths, ApprovalRequest, ApprovalRule, Audience, Control, Effects, ErrorKind,
    Node, NodeError, NodeSpec, PortSpec, PortType, RunContext, Values,
};
use serde_json::{json, Value};
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// Per-run stdout capture cap (head+tail).
pub const STDOUT_CAP: usize = 1 << 20;
/// Per-run stderr capture cap (head+tail).
pub const STDERR_CAP: usize = 256 << 10;
use crate::program::MAX_TIMEOUT_MS;

/// `timeout_ms`: the spec is the only place its default (60000) and range live.
const TIMEOUT_MS: PortSpec = crate::program::timeout_ms(
    "Wall-clock budget in ms (default 60000, max 600000).",
    "60000",
);
pub(crate) const ALLOW_SHELL_STRING: PortSpec = PortSpec::input("allow_shell_string", PortType::Boolean, "Static opt-in for raw shell strings (author-only; default off). Raw shell syntax (pipes, redirection, variables) is disabled unless this is on.")
    .default("false")
    .audience(Audience::Author)
    .control(Control::Switch)
    .capability(&cheng_node::capability::SHELL_SYNTAX);

pub struct WorkspaceShell;

static STRING: PortType = PortType::String;

pub static SPEC: NodeSpec = NodeSpec {
    id: "tools/workspace_shell",
    title: "Workspace Shell",
    description: "Run workspace commands (build/test/lint/diagnostics) with policy checks, bounded output, timeout, and cancellation. Structured command form preferred; shell strings are opt-in and high risk.",
    category: "workspace",
    inputs: &[
        PortSpec::input("command", PortType::String, "Executable program to run, e.g. \"ls\", \"cargo\", \"pnpm\", \"pytest\". This is NOT the tool name.").default("\"\""),
        PortSpec::input("args", PortType::Array(&STRING), "Literal arguments for command, e.g. command=\"ls\", args=[\"-la\"]. No shell syntax.").default("[]"),
        PortSpec::input("shell_string", PortType::String, "Compatibility input for simple commands. Shell syntax disabled by default.").default("null"),
        PortSpec::input("cwd", PortType::String, "Working directory relative to the workspace root. Omit for the root itself.").default("null"),
        PortSpec::input("env", PortType::Object, "Extra environment variables (subject to allowlist).").default("{}"),
        TIMEOUT_MS,
        PortSpec::input("purpose", PortType::String, "One sentence explaining why this command is needed; shown on the approval card.").default("null"),
        PortSpec::sandbox_root(),
        ALLOW_SHELL_STRING,
        PortSpec::input("command_whitelist", PortType::String, "User-configured command whitelist. One program name per line. When non-empty, only listed programs are allowed and shell strings are denied.")
            .default("\"\"")
            .audience(Audience::Author)
            .control(Control::Textarea),
    ],
    outputs: &[
        failure::success("Whether the command succeeded (exit code 0)"),
        PortSpec::output("summary", PortType::String, "Human-readable summary of the command result"),
        PortSpec::output("command_display", PortType::String, "Display form of the executed command"),
        PortSpec::output("cwd", PortType::String, "Working directory used for the command"),
        PortSpec::output("exit_code", PortType::Integer, "Process exit code (None when the process did not exit normally)"),
        PortSpec::output("termination", PortType::String, "Termination reason: exited, timed_out, cancelled, signalled, or spawn_failed"),
        PortSpec::output("duration_ms", PortType::Integer, "Wall-clock duration of the command in milliseconds"),
        PortSpec::output("stdout", PortType::String, "Capped stdout text (head+tail truncated when over the cap)"),
        PortSpec::output("stdout_truncated", PortType::Boolean, "True when stdout was head+tail truncated due to byte cap"),
        PortSpec::output("stderr", PortType::String, "Capped stderr text (head+tail truncated when over the cap)"),
        PortSpec::output("stderr_truncated", PortType::Boolean, "True when stderr was head+tail truncated due to byte cap"),
        failure::ERROR_KIND,
        failure::TERMINAL,
        failure::error("Error message when the command failed"),
    ],
    gate: None,
    effects: Effects::Approval(ApprovalRule::Always),
};

cheng_node::inventory::submit! { cheng_node::NodeRegistration::new(&WorkspaceShell) }

#[cheng_node::async_trait]
impl Node for WorkspaceShell {
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
        request.purpose = plan.purpose.clone();
        Ok(request)
    }

    async fn run(&self, ctx: &RunContext, input: Values) -> Result<Values, NodeError> {
        let plan = Plan::from_input(ctx, &input)?;
        let spec = ProcessSpec::new(&plan.argv[0], &plan.argv[1..], plan.cwd.clone())
            .env(plan.env.clone())
            .timeout(plan.timeout)
            .caps(STDOUT_CAP, STDERR_CAP)
            .output(ctx.output.clone());
        let out = cheng_exec::run(spec, &ctx.cancel).await;
        Ok(plan.outputs(out))
    }
}

/// A validated request: what to run, where, with what, for how long. Built once per call by
/// both `approval_request` and `run`, so the approved command is the one that runs.
#[derive(Debug)]
struct Plan {
    /// Program then arguments (`sh`, `-c`, string when a shell was allowed).
    argv: Vec<String>,
    display: String,
    cwd: PathBuf,
    cwd_display: String,
    env: Vec<(OsString, OsString)>,
    timeout: Duration,
    timeout_ms: i64,
    purpose: Option<String>,
}

/// Environment names an agent may always set in `env`: locale, time zone, terminal and colour
/// hints, CI markers. Anything else needs the operator's `env_allow` (policy file).
pub const ENV_BASELINE: &[&str] = &[
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TZ",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "COLUMNS",
    "LINES",
    "CI",
    "SOURCE_DATE_EPOCH",
];

fn env_name_matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    }
}

/// Every name in `env` must be on the baseline or on the operator's `env_allow` for this node.
/// (Loader and hook variables were refused before this, whatever any list says.)
pub(crate) fn check_env_allowed<'a>(
    ctx: &RunContext,
    names: impl Iterator<Item = &'a String>,
) -> Result<(), NodeError> {
    let (policy, node_type) = (ctx.policy(), ctx.node_type);
    let (allowed, source) = policy.env_allow(node_type);
    for name in names {
        let listed = ENV_BASELINE.iter().any(|p| env_name_matches(p, name))
            || allowed.iter().any(|p| env_name_matches(p, name));
        if !listed {
            let file = policy.path().map_or_else(
                || cheng_node::policy::SYSTEM_PATH.to_string(),
                |p| p.display().to_string(),
            );
            return Err(NodeError::invalid_input(format!(
                "env.{name} is not an allowed variable name: only the safe baseline ({}) and the operator's env_allow ({source}: {}) may be set; \
                 the machine's operator can allow it by adding \"{name}\" to env_allow under [nodes.\"{node_type}\"] in {file}",
                ENV_BASELINE.join(", "),
                if allowed.is_empty() { "none".to_string() } else { allowed.join(", ") },
            )));
        }
    }
    Ok(())
}

impl Plan {
    fn from_input(ctx: &RunContext, input: &Values) -> Result<Plan, NodeError> {
        let argv = argv_from_input(input)?;
        let display = cheng_node::text::command_display(argv.iter().map(AsRef::<str>::as_ref));

        // The run's context is the one source of the root (never the injected port's text).
        let root = &ctx.workspace;
        let cwd = crate::program::resolve_cwd(root, input)?;
        let cwd_display = paths::display_relative(root, &cwd);

        let env = match input.get("env") {
            None | Some(Value::Null) => cheng_exec::env::base(),
            Some(Value::Object(vars)) => {
                let env = cheng_exec::env::build(vars)?;
                check_env_allowed(ctx, vars.keys())?;
                env
            }
            Some(_) => {
                return Err(NodeError::invalid_input(
                    "env must be an object of NAME: \"value\" strings",
                ))
            }
        };

        let timeout_ms = input::int(input, &TIMEOUT_MS)?;

        Ok(Plan {
            argv,
            display,
            cwd,
            cwd_display,
            env,
            timeout: Duration::from_millis(timeout_ms.unsigned_abs()),
            timeout_ms,
            purpose: input::non_empty_str(input, "purpose").map(str::to_string),
        })
    }

    /// The node's output object for a finished (or unstartable) process.
    fn outputs(&self, out: ProcessOutput) -> Values {
        let result = match out.error_kind() {
            None => Ok(()),
            Some(kind) => Err(NodeError::new(kind, self.error_message(kind, &out))),
        };
        let mut o = Values::new();
        o.insert("success".into(), json!(out.success()));
        o.insert("summary".into(), json!(out.summary(&self.display)));
        o.insert("command_display".into(), json!(self.display));
        o.insert("cwd".into(), json!(self.cwd_display));
        o.insert("exit_code".into(), json!(out.exit_code));
        o.insert("termination".into(), json!(out.termination.as_str()));
        o.insert("duration_ms".into(), json!(out.duration_ms()));
        o.insert("stdout".into(), json!(out.stdout.text));
        o.insert("stdout_truncated".into(), json!(out.stdout.truncated));
        o.insert("stderr".into(), json!(out.stderr.text));
        o.insert("stderr_truncated".into(), json!(out.stderr.truncated));
        failure::fill(&mut o, &result);
        o
    }

    fn error_message(&self, kind: ErrorKind, out: &ProcessOutput) -> String {
        let shown = &self.display;
        match kind {
            ErrorKind::NonZeroExit => format!(
                "`{shown}` exited with status {}; its stdout and stderr are returned",
                out.exit_code.unwrap_or(-1)
            ),
            ErrorKind::TimedOut => format!(
                "`{shown}` did not finish within {} (timeout_ms {}); its process group was killed. Raise timeout_ms (max {MAX_TIMEOUT_MS}) if it needs longer",
                human_duration_ms(self.timeout_ms.unsigned_abs()),
                self.timeout_ms
            ),
            ErrorKind::Cancelled => format!("the run was cancelled; `{shown}` and its process group were killed"),
            ErrorKind::Signalled => format!(
                "`{shown}` was killed by {}",
                out.signal.map(cheng_exec::signal_name).unwrap_or_else(|| "a signal".into())
            ),
            ErrorKind::SpawnFailed => out.spawn_error.clone().unwrap_or_else(|| format!("`{shown}` could not be started")),
            other => format!("`{shown}` failed: {}", other.code()),
        }
    }
}

#[cfg(test)]
mod tests {
    //! What needs the node's private plan; every other workspace_shell test is in the crate's
    //! integration suite (tests/suite/shell.rs).
    use super::*;
    use cheng_node::Decision;

    #[test]
    fn an_unset_timeout_is_the_spec_default() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = RunContext::for_workspace(
            SPEC.id,
            dir.path().canonicalize().unwrap(),
            Decision::Approved,
        );
        let input = json!({"command": "true"});
        let plan = Plan::from_input(&ctx, input.as_object().unwrap()).unwrap();
        assert_eq!(plan.timeout, Duration::from_millis(60_000));
        assert_eq!(
            SPEC.input("timeout_ms").and_then(|p| p.default_value()),
            Some(json!(60_000))
        );
    }
}
