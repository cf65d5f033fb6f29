//! `tools/workspace_shell`: run a workspace command with policy checks, bounded output, timeout
//! and cancellation. Every run is approval-gated.
//!
//! Decisions where the seed is silent:
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
//!   denied; a simple `shell_string` is split and checked like `command`; anything needing a
//!   shell is denied even with `allow_shell_string` on. A line holding a path or several words is
//!   a configuration error (`LOCAL_EXECUTOR_INVALID_INPUT` naming the line). Whitelisting a
//!   program that runs other programs (`sh`, `env`, `xargs`, `make`) lets it run anything.
//! - **`cwd`** goes through `cheng_node::paths::resolve_existing` (relative, no `..` above the
//!   root, symlinks resolved and kept inside) and must be a directory.
//! - **`env`** goes through `cheng_exec::env::build`: the minimal host base plus these
//!   variables; loader, shell and interpreter hooks (`LD_*`, `BASH_ENV`, `GIT_*`, …) are
//!   `LOCAL_EXECUTOR_INVALID_INPUT` naming the variable.
//! - **Limits**: `timeout_ms` defaults to 60000 (max 600000). Output is captured head+tail with
//!   [`STDOUT_CAP`] (1 MiB) for stdout and [`STDERR_CAP`] (256 KiB) for stderr; the totals are
//!   reported in `summary`. On timeout or cancellation the whole process group gets SIGTERM, then
//!   SIGKILL after 500 ms.
//! - **Result**: `success` is exit code 0. A non-zero exit, timeout, signal or spawn failure is
//!   still a full output object (`success:false`, `error_kind`, `terminal`, `error`) with stdout
//!   and stderr intact; only validation and policy failures are returned as errors.

use cheng_exec::{ProcessOutput, ProcessSpec};
use cheng_node::text::human_duration_ms;
use cheng_node::{
    failure, input, paths, ApprovalRequest, ApprovalRule, Audience, Control, Effects, ErrorKind, Node, NodeError, NodeSpec,
    PortSpec, PortType, RunContext, Values,
};
use serde_json::{json, Value};
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// Per-run stdout capture cap (head+tail).
pub const STDOUT_CAP: usize = 1 << 20;
/// Per-run stderr capture cap (head+tail).
pub const STDERR_CAP: usize = 256 << 10;
/// Largest `timeout_ms` (the spec's max).
pub const MAX_TIMEOUT_MS: i64 = 600_000;

/// `timeout_ms`: the spec is the only place its default (60000) and range live.
const TIMEOUT_MS: PortSpec =
    PortSpec::input("timeout_ms", PortType::Integer, "Wall-clock budget in ms (default 60000, max 600000).")
        .default("60000")
        .min(1)
        .max(MAX_TIMEOUT_MS);
const ALLOW_SHELL_STRING: PortSpec = PortSpec::input("allow_shell_string", PortType::Boolean, "Static opt-in for raw shell strings (author-only; default off). Raw shell syntax (pipes, redirection, variables) is disabled unless this is on.")
    .default("false")
    .audience(Audience::Author)
    .control(Control::Switch);

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

    fn approval_request(&self, ctx: &RunContext, input: &Values) -> Result<ApprovalRequest, NodeError> {
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
            .caps(STDOUT_CAP, STDERR_CAP);
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

impl Plan {
    fn from_input(ctx: &RunContext, input: &Values) -> Result<Plan, NodeError> {
        let argv = argv_from_input(input)?;
        let display = cheng_node::text::command_display(argv.iter().map(AsRef::<str>::as_ref));

        // The run's context is the one source of the root (never the injected port's text).
        let root = &ctx.workspace;
        let cwd = paths::resolve_existing(root, input::opt_str(input, "cwd"), "cwd")?;
        if !cwd.is_dir() {
            return Err(NodeError::invalid_input(format!(
                "cwd {:?} is a file, not a directory; name a directory relative to the workspace root",
                input::opt_str(input, "cwd").unwrap_or("")
            )));
        }
        let cwd_display = paths::display_relative(root, &cwd);

        let env = match input.get("env") {
            None | Some(Value::Null) => cheng_exec::env::base(),
            Some(Value::Object(vars)) => cheng_exec::env::build(vars)?,
            Some(_) => return Err(NodeError::invalid_input("env must be an object of NAME: \"value\" strings")),
        };

        let timeout_ms = input::int(input, &TIMEOUT_MS)?;

        Ok(Plan {
            argv,
            display,
            cwd,
            cwd_display,
            env,
            timeout: Duration::from_millis(timeout_ms as u64),
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
                human_duration_ms(self.timeout_ms as u64),
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

/// Applies the command / shell_string / whitelist rules and returns the argv to run.
fn argv_from_input(input: &Values) -> Result<Vec<String>, NodeError> {
    let command = input::non_empty_str(input, "command");
    let shell_string = input::opt_str(input, "shell_string").filter(|s| !s.trim().is_empty());
    let args = input::string_list(input, "args")?;
    let whitelist = parse_whitelist(input::opt_str(input, "command_whitelist").unwrap_or(""))?;
    let allow_shell = input::boolean(input, &ALLOW_SHELL_STRING)?;

    let argv = match (command, shell_string) {
        (None, None) => {
            return Err(NodeError::invalid_input(
                "set exactly one of command or shell_string; neither was given (e.g. command=\"cargo\", args=[\"test\"])",
            ))
        }
        (Some(_), Some(_)) => {
            return Err(NodeError::invalid_input(
                "set exactly one of command or shell_string, not both; prefer command with args",
            ))
        }
        (Some(command), None) => {
            check_command(command)?;
            let mut argv = vec![command.to_string()];
            for (i, arg) in args.iter().enumerate() {
                if arg.contains('\0') {
                    return Err(NodeError::invalid_input(format!("args[{i}] contains a NUL byte")));
                }
            }
            argv.extend(args);
            argv
        }
        (None, Some(script)) => {
            if !args.is_empty() {
                return Err(NodeError::invalid_input(
                    "args go with command; shell_string carries its own arguments (or use command with args)",
                ));
            }
            if script.contains('\0') {
                return Err(NodeError::invalid_input("shell_string contains a NUL byte"));
            }
            match split_simple(script) {
                Ok(words) if !whitelist.is_empty() || !allow_shell => words,
                Ok(_) => vec!["sh".into(), "-c".into(), script.to_string()],
                Err(Split::Unterminated(quote)) => {
                    return Err(NodeError::invalid_input(format!(
                        "shell_string has an unterminated {quote} quote; close it or use command with args"
                    )))
                }
                Err(Split::Syntax(what)) if !whitelist.is_empty() => {
                    return Err(NodeError::policy_denied(format!(
                        "shell_string uses shell syntax ({what}); this node has a command_whitelist, so raw shell syntax is denied even with allow_shell_string on. Pass command and args instead"
                    )))
                }
                Err(Split::Syntax(what)) if !allow_shell => {
                    return Err(NodeError::policy_denied(format!(
                        "shell_string uses shell syntax ({what}) and allow_shell_string is off; pass command and args instead (e.g. command=\"ls\", args=[\"-la\"]), or ask the node's author to enable allow_shell_string"
                    )))
                }
                Err(Split::Syntax(_)) => vec!["sh".into(), "-c".into(), script.to_string()],
            }
        }
    };
    match argv.first() {
        Some(program) if !program.is_empty() => {}
        _ => return Err(NodeError::invalid_input("shell_string has no program to run")),
    }
    if !whitelist.is_empty() {
        check_whitelisted(&argv[0], &whitelist)?;
    }
    Ok(argv)
}

/// A program name or path, not a command line.
fn check_command(command: &str) -> Result<(), NodeError> {
    if command.contains('\0') {
        return Err(NodeError::invalid_input("command contains a NUL byte"));
    }
    if command.chars().any(char::is_whitespace) {
        let mut words = command.split_whitespace();
        let program = words.next().unwrap_or("");
        let rest: Vec<String> = words.map(|w| format!("{w:?}")).collect();
        return Err(NodeError::invalid_input(format!(
            "command {command:?} contains whitespace; command is one program, its arguments go in args (command={program:?}, args=[{}])",
            rest.join(", ")
        )));
    }
    Ok(())
}

/// Program names from the author's whitelist text.
fn parse_whitelist(text: &str) -> Result<Vec<String>, NodeError> {
    let mut names = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let name = line.trim();
        if name.is_empty() || name.starts_with('#') {
            continue;
        }
        if name.contains('/') || name.chars().any(char::is_whitespace) {
            return Err(NodeError::invalid_input(format!(
                "command_whitelist line {} ({name:?}) must be a single program name without '/' or arguments; fix the node's config",
                index + 1
            )));
        }
        names.push(name.to_string());
    }
    Ok(names)
}

fn check_whitelisted(program: &str, whitelist: &[String]) -> Result<(), NodeError> {
    let allowed = whitelist.join(", ");
    if program.contains('/') {
        return Err(NodeError::policy_denied(format!(
            "command {program:?} is a path; this node's command_whitelist allows only these program names, run from PATH: {allowed}"
        )));
    }
    if !whitelist.iter().any(|w| w == program) {
        return Err(NodeError::policy_denied(format!(
            "command {program:?} is not on this node's command_whitelist (allowed: {allowed}); ask the node's author to add it"
        )));
    }
    Ok(())
}

/// Why a shell string is not simple.
#[derive(Debug, PartialEq)]
enum Split {
    /// Shell syntax, described for the user (`` `|` at character 4 ``).
    Syntax(String),
    /// A quote that is never closed (`single` or `double`).
    Unterminated(&'static str),
}

/// Characters that mean shell syntax when unquoted.
const METACHARACTERS: &[char] = &['|', '&', ';', '<', '>', '(', ')', '*', '?', '{', '}', '~', '$', '`'];

/// Splits a simple shell string into the argv `sh` would produce, or says why it is not simple.
fn split_simple(text: &str) -> Result<Vec<String>, Split> {
    #[derive(PartialEq)]
    enum Quote {
        None,
        Single,
        Double,
    }
    // Positions are reported in characters, counted from 1.
    let syntax = |c: char, at: usize| Split::Syntax(format!("{c:?} at character {}", text[..at].chars().count() + 1));
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    // Byte offset where the current word starts, when inside a word.
    let mut word_start: Option<usize> = None;
    let mut quote = Quote::None;
    let mut chars = text.char_indices();

    while let Some((i, c)) = chars.next() {
        if c == '\n' || c == '\r' {
            return Err(Split::Syntax("a newline".into()));
        }
        match quote {
            Quote::Single => {
                if c == '\'' {
                    quote = Quote::None;
                } else {
                    word.push(c);
                }
            }
            Quote::Double => match c {
                '"' => quote = Quote::None,
                '$' | '`' => return Err(syntax(c, i)),
                '\\' => match chars.next() {
                    Some((_, next @ ('"' | '\\' | '$' | '`'))) => word.push(next),
                    Some((_, '\n' | '\r')) => return Err(Split::Syntax("a newline".into())),
                    Some((_, next)) => {
                        word.push('\\');
                        word.push(next);
                    }
                    None => return Err(Split::Unterminated("double")),
                },
                _ => word.push(c),
            },
            Quote::None => {
                if c == ' ' || c == '\t' {
                    if let Some(start) = word_start.take() {
                        end_word(&mut words, &mut word, &text[start..i])?;
                    }
                    continue;
                }
                if word_start.is_none() {
                    if c == '#' {
                        return Err(Split::Syntax(format!(
                            "'#' at character {} starts a comment",
                            text[..i].chars().count() + 1
                        )));
                    }
                    word_start = Some(i);
                }
                match c {
                    '\'' => quote = Quote::Single,
                    '"' => quote = Quote::Double,
                    '\\' => match chars.next() {
                        Some((_, '\n' | '\r')) => return Err(Split::Syntax("a newline".into())),
                        Some((_, next)) => word.push(next),
                        None => return Err(Split::Syntax("a trailing backslash".into())),
                    },
                    c if METACHARACTERS.contains(&c) => return Err(syntax(c, i)),
                    c => word.push(c),
                }
            }
        }
    }
    match quote {
        Quote::Single => Err(Split::Unterminated("single")),
        Quote::Double => Err(Split::Unterminated("double")),
        Quote::None => {
            if let Some(start) = word_start {
                end_word(&mut words, &mut word, &text[start..])?;
            }
            Ok(words)
        }
    }
}

/// Moves the finished `word` (whose source text is `raw`) into `words`.
fn end_word(words: &mut Vec<String>, word: &mut String, raw: &str) -> Result<(), Split> {
    if words.is_empty() && is_assignment(raw) {
        return Err(Split::Syntax(format!("a variable assignment {raw:?}; pass variables in env")));
    }
    words.push(std::mem::take(word));
    Ok(())
}

/// `NAME=...` with an unquoted valid name: an assignment in sh, not a program.
fn is_assignment(raw: &str) -> bool {
    let Some((name, _)) = raw.split_once('=') else { return false };
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}



#[cfg(test)]
mod tests {
    use super::*;
    use cheng_node::{Decision, PortType};
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;

    struct Ws {
        _dir: tempfile::TempDir,
        root: PathBuf,
        ctx: RunContext,
    }

    fn workspace() -> Ws {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("sub/deeper")).unwrap();
        let ctx = RunContext::for_workspace(SPEC.id, root.clone(), Decision::Approved);
        Ws { _dir: dir, root, ctx }
    }

    /// The engine's view of an input: spec defaults, then `given`, then the injected root.
    fn input(ws: &Ws, given: Value) -> Values {
        let mut values = Values::new();
        for port in SPEC.inputs {
            values.insert(port.name.into(), port.default_value().unwrap_or(Value::Null));
        }
        if let Value::Object(given) = given {
            values.extend(given);
        }
        values.insert("sandbox_root".into(), json!(ws.root.to_str().unwrap()));
        values
    }

    async fn run(ws: &Ws, given: Value) -> Result<Values, NodeError> {
        WorkspaceShell.run(&ws.ctx, input(ws, given)).await
    }

    async fn ok(ws: &Ws, given: Value) -> Values {
        match run(ws, given.clone()).await {
            Ok(out) => out,
            Err(e) => panic!("{given} failed validation: {e}"),
        }
    }

    async fn err(ws: &Ws, given: Value) -> NodeError {
        match run(ws, given.clone()).await {
            Ok(out) => panic!("{given} was accepted: {out:?}"),
            Err(e) => e,
        }
    }

    fn executable(path: &Path, script: &str) {
        std::fs::write(path, script).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    // ---- spec ------------------------------------------------------------------------------

    #[test]
    fn ports_match_the_seed_table() {
        let inputs: Vec<_> = SPEC.inputs.iter().map(|p| (p.name, p.ty.display(), p.default.unwrap_or("-"))).collect();
        assert_eq!(
            inputs,
            [
                ("command", "string".to_string(), "\"\""),
                ("args", "array<string>".to_string(), "[]"),
                ("shell_string", "string".to_string(), "null"),
                ("cwd", "string".to_string(), "null"),
                ("env", "object".to_string(), "{}"),
                ("timeout_ms", "integer".to_string(), "60000"),
                ("purpose", "string".to_string(), "null"),
                ("sandbox_root", "string".to_string(), "null"),
                ("allow_shell_string", "boolean".to_string(), "false"),
                ("command_whitelist", "string".to_string(), "\"\""),
            ]
        );
        let timeout = SPEC.input("timeout_ms").unwrap();
        assert_eq!((timeout.min, timeout.max), (Some(1), Some(600_000)));
        assert_eq!(SPEC.input("sandbox_root").unwrap().audience, Audience::Engine);
        let switch = SPEC.input("allow_shell_string").unwrap();
        assert_eq!((switch.audience, switch.control), (Audience::Author, Some(Control::Switch)));
        let list = SPEC.input("command_whitelist").unwrap();
        assert_eq!((list.audience, list.control), (Audience::Author, Some(Control::Textarea)));
        for name in ["command", "args", "shell_string", "cwd", "env", "timeout_ms", "purpose"] {
            assert_eq!(SPEC.input(name).unwrap().audience, Audience::Llm, "{name}");
            assert!(!SPEC.input(name).unwrap().required, "{name}");
        }
        let outputs: Vec<_> = SPEC.outputs.iter().map(|p| p.name).collect();
        assert_eq!(
            outputs,
            [
                "success", "summary", "command_display", "cwd", "exit_code", "termination", "duration_ms", "stdout",
                "stdout_truncated", "stderr", "stderr_truncated", "error_kind", "terminal", "error"
            ]
        );
        assert!(matches!(SPEC.output("exit_code").unwrap().ty, PortType::Integer));
        assert_eq!(SPEC.effects, Effects::Approval(ApprovalRule::Always));
        assert_eq!(SPEC.category, "workspace");
    }

    // ---- running -----------------------------------------------------------------------------

    #[tokio::test]
    async fn runs_command_with_args_and_reports_every_output() {
        let ws = workspace();
        let out = ok(&ws, json!({"command": "echo", "args": ["hello", "a b"]})).await;
        assert_eq!(out["success"], true);
        assert_eq!(out["stdout"], "hello a b\n");
        assert_eq!(out["exit_code"], 0);
        assert_eq!(out["termination"], "exited");
        assert_eq!(out["command_display"], "echo hello 'a b'");
        assert_eq!(out["cwd"], ".");
        assert_eq!(out["error_kind"], Value::Null);
        assert_eq!(out["error"], Value::Null);
        assert_eq!(out["terminal"], false);
        assert_eq!(out["stdout_truncated"], false);
        assert!(out["duration_ms"].is_u64());
        let summary = out["summary"].as_str().unwrap();
        assert!(summary.starts_with("echo hello 'a b' exited 0 after "), "{summary}");
        assert!(summary.ends_with("; stdout 10 B"), "{summary}");
        for port in SPEC.outputs {
            assert!(out.contains_key(port.name), "missing output {}", port.name);
        }
    }

    #[tokio::test]
    async fn non_zero_exit_keeps_output_and_is_not_terminal() {
        let ws = workspace();
        let out = ok(&ws, json!({"command": "sh", "args": ["-c", "echo out; echo err >&2; exit 3"]})).await;
        assert_eq!(out["success"], false);
        assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_NON_ZERO_EXIT");
        assert_eq!(out["terminal"], false);
        assert_eq!(out["exit_code"], 3);
        assert_eq!(out["stdout"], "out\n");
        assert_eq!(out["stderr"], "err\n");
        assert!(out["error"].as_str().unwrap().contains("exited with status 3"));
        let summary = out["summary"].as_str().unwrap();
        assert!(summary.contains("exited 3 after"), "{summary}");
        assert!(summary.contains("stderr 4 B"), "{summary}");
    }

    #[tokio::test]
    async fn timeout_kills_and_reports_timed_out() {
        let ws = workspace();
        let out = ok(&ws, json!({"command": "sh", "args": ["-c", "echo $$; sleep 1000 & echo $!; sleep 1000"], "timeout_ms": 300})).await;
        assert_eq!(out["success"], false);
        assert_eq!(out["termination"], "timed_out");
        assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_TIMED_OUT");
        assert_eq!(out["terminal"], false);
        assert_eq!(out["exit_code"], Value::Null);
        assert!(out["error"].as_str().unwrap().contains("timeout_ms 300"), "{}", out["error"]);
        let pids: Vec<i32> = out["stdout"].as_str().unwrap().lines().filter_map(|l| l.parse().ok()).collect();
        for pid in pids {
            let gone = (0..250).any(|_| {
                let alive = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .map(|s| !s.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'))
                    .unwrap_or(false);
                if alive {
                    std::thread::sleep(Duration::from_millis(20));
                }
                !alive
            });
            assert!(gone, "background sleep {pid} survived the timeout");
        }
    }

    #[tokio::test]
    async fn cancellation_reports_cancelled_and_is_terminal() {
        let ws = workspace();
        let cancel = ws.ctx.cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            cancel.cancel();
        });
        let out = ok(&ws, json!({"command": "sleep", "args": ["1000"]})).await;
        assert_eq!(out["termination"], "cancelled");
        assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_CANCELLED");
        assert_eq!(out["terminal"], true);
        assert_eq!(out["success"], false);
    }

    #[tokio::test]
    async fn a_missing_program_is_spawn_failed() {
        let ws = workspace();
        let out = ok(&ws, json!({"command": "no-such-program-cheng"})).await;
        assert_eq!(out["termination"], "spawn_failed");
        assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_SPAWN_FAILED");
        assert!(out["error"].as_str().unwrap().contains("\"no-such-program-cheng\" was not found on PATH"));
        assert!(out["summary"].as_str().unwrap().contains("could not start"));
    }

    #[tokio::test]
    async fn output_floods_are_bounded_and_stderr_floods_do_not_deadlock() {
        let ws = workspace();
        let out = ok(&ws, json!({"command": "head", "args": ["-c", "20000000", "/dev/zero"]})).await;
        assert_eq!(out["success"], true);
        assert_eq!(out["stdout_truncated"], true);
        assert!(out["stdout"].as_str().unwrap().len() <= STDOUT_CAP + 64);
        assert!(out["summary"].as_str().unwrap().contains("stdout 19.1 MiB (truncated)"), "{}", out["summary"]);

        let script = "head -c 20000000 /dev/zero >&2; echo done";
        let out = ok(&ws, json!({"command": "sh", "args": ["-c", script], "timeout_ms": 120000})).await;
        assert_eq!(out["termination"], "exited");
        assert_eq!(out["stdout"], "done\n");
        assert_eq!(out["stderr_truncated"], true);
        assert!(out["stderr"].as_str().unwrap().len() <= STDERR_CAP + 64);
    }

    // ---- command / shell_string ---------------------------------------------------------------

    #[tokio::test]
    async fn exactly_one_of_command_or_shell_string() {
        let ws = workspace();
        for given in [json!({}), json!({"command": "", "shell_string": "  "}), json!({"command": "ls", "shell_string": "ls"})] {
            let e = err(&ws, given.clone()).await;
            assert_eq!(e.kind, ErrorKind::InvalidInput, "{given}");
            assert!(e.message.contains("command") && e.message.contains("shell_string"), "{}", e.message);
        }
        let e = err(&ws, json!({"shell_string": "ls", "args": ["-la"]})).await;
        assert_eq!(e.kind, ErrorKind::InvalidInput);
        assert!(e.message.contains("args"));
    }

    #[tokio::test]
    async fn a_command_line_in_command_is_rejected_with_a_hint() {
        let ws = workspace();
        let e = err(&ws, json!({"command": "ls -la"})).await;
        assert_eq!(e.kind, ErrorKind::InvalidInput);
        assert!(e.message.contains("command=\"ls\", args=[\"-la\"]"), "{}", e.message);
    }

    #[tokio::test]
    async fn a_simple_shell_string_runs_as_argv_without_a_shell() {
        let ws = workspace();
        let out = ok(&ws, json!({"shell_string": r#"echo 'a;b|c' "d * e" f\ g"#})).await;
        assert_eq!(out["stdout"], "a;b|c d * e f g\n");
        assert_eq!(out["command_display"], "echo 'a;b|c' 'd * e' 'f g'");
        let e = err(&ws, json!({"shell_string": r#"echo "d $ e""#})).await;
        assert_eq!(e.kind, ErrorKind::PolicyDenied, "$ in double quotes expands in sh");
    }

    #[tokio::test]
    async fn shell_syntax_is_denied_when_the_switch_is_off_and_nothing_runs() {
        let ws = workspace();
        for script in [
            "touch pwned;id", "touch pwned | cat", "touch pwned && id", "touch pwned & id", "touch $HOME",
            "touch `id`", "touch $(id)", "cat < /etc/passwd", "touch pwned > out", "touch *", "touch pw?ned",
            "touch {a,b}", "touch ~", "touch pwned\nid", "(touch pwned)", "A=1 touch pwned", "touch # comment",
        ] {
            let e = err(&ws, json!({"shell_string": script})).await;
            assert_eq!(e.kind, ErrorKind::PolicyDenied, "{script:?}: {}", e.message);
            assert!(e.terminal);
            assert!(e.message.contains("allow_shell_string"), "{}", e.message);
            assert!(e.message.contains("command and args"), "{}", e.message);
        }
        assert!(!ws.root.join("pwned").exists());
        assert!(!ws.root.join("out").exists());
    }

    #[tokio::test]
    async fn with_the_switch_on_shell_strings_run_under_sh() {
        let ws = workspace();
        let out = ok(&ws, json!({"shell_string": "echo a | tr a b; echo $((1+2))", "allow_shell_string": true})).await;
        assert_eq!(out["stdout"], "b\n3\n");
        assert_eq!(out["command_display"], "sh -c 'echo a | tr a b; echo $((1+2))'");
    }

    #[tokio::test]
    async fn unterminated_quotes_are_invalid_input() {
        let ws = workspace();
        let e = err(&ws, json!({"shell_string": "echo 'abc"})).await;
        assert_eq!(e.kind, ErrorKind::InvalidInput);
        assert!(e.message.contains("unterminated single quote"), "{}", e.message);
    }

    // ---- whitelist ----------------------------------------------------------------------------

    fn whitelisted(extra: Value) -> Value {
        let mut given = json!({"command_whitelist": "# build tools\n\n  echo  \nls\n"});
        if let (Value::Object(base), Value::Object(extra)) = (&mut given, extra) {
            base.extend(extra);
        }
        given
    }

    #[tokio::test]
    async fn whitelisted_programs_run_and_others_are_denied() {
        let ws = workspace();
        let out = ok(&ws, whitelisted(json!({"command": "echo", "args": ["; id"]}))).await;
        assert_eq!(out["stdout"], "; id\n");
        let e = err(&ws, whitelisted(json!({"command": "id"}))).await;
        assert_eq!(e.kind, ErrorKind::PolicyDenied);
        assert!(e.message.contains("echo, ls"), "{}", e.message);
        let e = err(&ws, whitelisted(json!({"command": "LS"}))).await;
        assert_eq!(e.kind, ErrorKind::PolicyDenied);
    }

    #[tokio::test]
    async fn whitelist_bypass_through_paths_is_denied() {
        let ws = workspace();
        // A workspace file named like a whitelisted program.
        executable(&ws.root.join("ls"), "#!/bin/sh\ntouch pwned\n");
        for command in ["/bin/ls", "./ls", "sub/../ls", "/usr/bin/echo"] {
            let e = err(&ws, whitelisted(json!({"command": command}))).await;
            assert_eq!(e.kind, ErrorKind::PolicyDenied, "{command}");
            assert!(e.message.contains("path"), "{}", e.message);
        }
        // The bare name runs the system program, never the workspace file.
        let out = ok(&ws, whitelisted(json!({"command": "ls"}))).await;
        assert_eq!(out["success"], true);
        assert!(!ws.root.join("pwned").exists());
    }

    #[tokio::test]
    async fn whitelist_denies_shell_syntax_even_with_the_switch_on() {
        let ws = workspace();
        for script in ["ls;id", "ls | id", "echo $(id)", "ls && touch pwned"] {
            let e = err(&ws, whitelisted(json!({"shell_string": script, "allow_shell_string": true}))).await;
            assert_eq!(e.kind, ErrorKind::PolicyDenied, "{script}");
            assert!(e.message.contains("command_whitelist"), "{}", e.message);
        }
        for script in ["/bin/ls", "./ls", "id", "'/bin/ls' -la"] {
            let e = err(&ws, whitelisted(json!({"shell_string": script, "allow_shell_string": true}))).await;
            assert_eq!(e.kind, ErrorKind::PolicyDenied, "{script}");
        }
        let out = ok(&ws, whitelisted(json!({"shell_string": "echo 'x y'", "allow_shell_string": true}))).await;
        assert_eq!(out["stdout"], "x y\n");
        assert_eq!(out["command_display"], "echo 'x y'", "a simple string runs as argv, not under sh");
        assert!(!ws.root.join("pwned").exists());
    }

    #[tokio::test]
    async fn malformed_whitelist_lines_name_the_line() {
        let ws = workspace();
        for list in ["ls\n/usr/bin/ls", "ls\ncargo test"] {
            let e = err(&ws, json!({"command": "ls", "command_whitelist": list})).await;
            assert_eq!(e.kind, ErrorKind::InvalidInput);
            assert!(e.message.contains("command_whitelist line 2"), "{}", e.message);
        }
    }

    // ---- cwd ----------------------------------------------------------------------------------

    #[tokio::test]
    async fn cwd_is_resolved_inside_the_workspace() {
        let ws = workspace();
        let out = ok(&ws, json!({"command": "pwd", "cwd": "sub/deeper"})).await;
        assert_eq!(out["stdout"].as_str().unwrap().trim_end(), ws.root.join("sub/deeper").to_str().unwrap());
        assert_eq!(out["cwd"], "sub/deeper");
    }

    #[tokio::test]
    async fn cwd_escapes_are_refused() {
        let ws = workspace();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.root.join("link")).unwrap();
        for cwd in ["..", "sub/../..", "/etc", "/", "link", "link/.", ws.root.parent().unwrap().to_str().unwrap()] {
            let e = err(&ws, json!({"command": "touch", "args": ["pwned"], "cwd": cwd})).await;
            assert_eq!(e.kind, ErrorKind::PathOutsideWorkspace, "{cwd}: {}", e.message);
            assert!(e.message.contains("cwd"));
        }
        assert!(!outside.path().join("pwned").exists());
        let e = err(&ws, json!({"command": "ls", "cwd": "missing"})).await;
        assert_eq!(e.kind, ErrorKind::NotFound);
        std::fs::write(ws.root.join("file.txt"), "x").unwrap();
        let e = err(&ws, json!({"command": "ls", "cwd": "file.txt"})).await;
        assert_eq!(e.kind, ErrorKind::InvalidInput);
    }

    // ---- env and limits -------------------------------------------------------------------------

    #[tokio::test]
    async fn env_adds_variables_and_refuses_hooks() {
        let ws = workspace();
        let out = ok(&ws, json!({"command": "sh", "args": ["-c", "echo $GREETING"], "env": {"GREETING": "hi"}})).await;
        assert_eq!(out["stdout"], "hi\n");
        let hook = ws.root.join("hook.sh");
        executable(&hook, "touch pwned\n");
        for (name, value) in [("LD_PRELOAD", "/tmp/x.so"), ("BASH_ENV", hook.to_str().unwrap()), ("PATH", ".")] {
            let e = err(&ws, json!({"command": "bash", "args": ["-c", "true"], "env": { name: value }})).await;
            assert_eq!(e.kind, ErrorKind::InvalidInput, "{name}");
            assert!(e.message.contains(name), "{}", e.message);
        }
        assert!(!ws.root.join("pwned").exists());
        let e = err(&ws, json!({"command": "true", "env": {"PORT": 80}})).await;
        assert!(e.message.contains("env.PORT must be a string"), "{}", e.message);
    }

    #[tokio::test]
    async fn a_sandbox_root_in_the_input_cannot_move_the_workspace() {
        // A direct call (no engine) that puts "/" in sandbox_root: the root is the run's context,
        // so `cwd: "etc"` names <workspace>/etc, which does not exist, never the host's /etc.
        let ws = workspace();
        let mut given = input(&ws, json!({"command": "true", "cwd": "etc"}));
        given.insert("sandbox_root".into(), json!("/"));
        let e = WorkspaceShell.run(&ws.ctx, given).await.expect_err("host /etc");
        assert_eq!(e.kind, ErrorKind::NotFound, "{}", e.message);
        std::fs::create_dir(ws.root.join("etc")).unwrap();
        let mut given = input(&ws, json!({"command": "pwd", "cwd": "etc"}));
        given.insert("sandbox_root".into(), json!("/"));
        let out = WorkspaceShell.run(&ws.ctx, given).await.unwrap();
        assert_eq!(out["stdout"].as_str().unwrap().trim(), ws.root.join("etc").to_str().unwrap());
    }

    #[tokio::test]
    async fn an_unset_timeout_is_the_spec_default() {
        let ws = workspace();
        let mut given = input(&ws, json!({"command": "true"}));
        given.remove("timeout_ms");
        let plan = Plan::from_input(&ws.ctx, &given).unwrap();
        assert_eq!(plan.timeout, Duration::from_millis(60_000));
        assert_eq!(SPEC.input("timeout_ms").and_then(|p| p.default_value()), Some(json!(60_000)));
    }

    #[tokio::test]
    async fn timeout_ms_out_of_range_names_the_limit() {
        let ws = workspace();
        for ms in [0, 700_000, -5] {
            let e = err(&ws, json!({"command": "true", "timeout_ms": ms})).await;
            assert_eq!(e.kind, ErrorKind::InvalidInput);
            assert!(e.message.contains("600000"), "{}", e.message);
        }
    }

    // ---- approval -------------------------------------------------------------------------------

    #[test]
    fn approval_request_shows_command_cwd_and_purpose() {
        let ws = workspace();
        let given = json!({"command": "cargo", "args": ["test", "--no-fail-fast"], "cwd": "sub", "purpose": "Check the fix"});
        let request = WorkspaceShell.approval_request(&ws.ctx, &input(&ws, given)).unwrap();
        assert_eq!(request.command_display, "cargo test --no-fail-fast");
        assert_eq!(request.cwd, "sub");
        assert_eq!(request.purpose.as_deref(), Some("Check the fix"));
        assert_eq!(request.node_type, "tools/workspace_shell");
    }

    #[test]
    fn approval_is_never_asked_for_a_request_that_would_be_refused() {
        let ws = workspace();
        let e = WorkspaceShell.approval_request(&ws.ctx, &input(&ws, json!({"shell_string": "ls;id"}))).unwrap_err();
        assert_eq!(e.kind, ErrorKind::PolicyDenied);
        let e = WorkspaceShell.approval_request(&ws.ctx, &input(&ws, json!({"command": "ls", "cwd": ".."}))).unwrap_err();
        assert_eq!(e.kind, ErrorKind::PathOutsideWorkspace);
    }

    // ---- splitting and quoting --------------------------------------------------------------------

    fn words(text: &str) -> Vec<String> {
        match split_simple(text) {
            Ok(words) => words,
            Err(e) => panic!("{text:?}: {e:?}"),
        }
    }

    #[test]
    fn splitting_follows_sh_quoting() {
        assert_eq!(words("ls -la  src"), ["ls", "-la", "src"]);
        assert_eq!(words("\tgrep -n 'a b' \"c d\""), ["grep", "-n", "a b", "c d"]);
        assert_eq!(words(r#"echo a\ b 'it'\''s' "say \"hi\"" "back\\slash" "keep\n""#), ["echo", "a b", "it's", "say \"hi\"", "back\\slash", "keep\\n"]);
        assert_eq!(words(r#"echo '' "" x"#), ["echo", "", "", "x"]);
        assert_eq!(words(r#"echo 'a|b;c$d`e*f' "g|h*i?j{k}~l""#), ["echo", "a|b;c$d`e*f", "g|h*i?j{k}~l"]);
        assert_eq!(words("echo a=b x#y [ab]"), ["echo", "a=b", "x#y", "[ab]"]);
        assert_eq!(words("'A=1' x"), ["A=1", "x"]);
        assert_eq!(words("échø 😀"), ["échø", "😀"]);
    }

    #[test]
    fn shell_syntax_is_recognised() {
        for (text, what) in [
            ("ls;id", "';' at character 3"),
            ("ls | wc", "'|' at character 4"),
            ("echo \"$HOME\"", "'$' at character 7"),
            ("é;", "';' at character 2"),
            ("ls\nid", "a newline"),
            ("echo 'a\nb'", "a newline"),
            ("echo \\", "a trailing backslash"),
            ("A=1 ls", "a variable assignment"),
            ("ls #x", "comment"),
        ] {
            match split_simple(text) {
                Err(Split::Syntax(message)) => assert!(message.contains(what), "{text:?}: {message}"),
                other => panic!("{text:?}: {other:?}"),
            }
        }
        assert_eq!(split_simple("echo \"abc"), Err(Split::Unterminated("double")));
        assert_eq!(split_simple("echo \"abc\\"), Err(Split::Unterminated("double")));
    }

    #[test]
    fn display_quoting_round_trips_through_the_splitter() {
        for argv in [vec!["echo", "a b", "it's", "", "x=y", "$HOME;`id`"], vec!["ls", "-la", "src/main.rs"]] {
            let display = cheng_node::text::command_display(argv.iter().map(AsRef::<str>::as_ref));
            assert_eq!(words(&display), argv, "{display}");
        }
    }
}
