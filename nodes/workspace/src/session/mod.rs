//! Process sessions: `tools/exec_command` starts a command that may outlive the call (a dev
//! server, a REPL, a watch build), `tools/write_stdin` writes to it and collects what it printed.
//! From the `:exec` group of ChengOS's agent-tools reference, after Codex CLI's unified exec.
//!
//! Decisions (the reference page's numbers are the defaults):
//!
//! - **The command policy is workspace_shell's**: `cmd` is a shell string under the shell-string
//!   rules (split without a shell unless the author's `allow_shell_string` is on), or `command`
//!   with `args`; `command_whitelist`, the env baseline and the operator's `env_allow`, `workdir`
//!   inside the workspace and the operator policy apply as they do there. Every start and every
//!   write is approval-gated (the card names the session's command).
//! - **Environment**: the minimal host base, then the fixed session environment of the reference page
//!   ([`FIXED_ENV`]: no colour, a dumb terminal, UTF-8, `cat` as pager), then the allowed `env`.
//! - **Pipes, no PTY**; stdout and stderr interleaved as they arrive. Each call returns what
//!   arrived since the last one, at most `max_output_tokens` × 4 bytes (head+tail, the omission
//!   counted); a session retains at most [`RETAINED_CAP`] bytes between calls (head+tail).
//! - **Waiting**: `yield_time_ms` is clamped to [`MIN_YIELD_MS`]–[`MAX_YIELD_MS`]; a call returns
//!   early when the process ends. An empty write is a poll: it waits at least [`MIN_POLL_MS`],
//!   returning as soon as output arrives.
//! - **`"\u0003"` in `chars`** is an interrupt: SIGINT to the session's process group at that
//!   point of the write (the character itself is not written).
//! - **Lifetime**: `max_session_ms` (author/operator-capped) bounds a session; then its group
//!   gets SIGTERM and SIGKILL 500 ms later, and the end reads `timed_out` with exit code 124.
//!   A process killed by a signal reports exit code 128 + signal (termination `signalled`).
//! - **Where sessions live**: a `cheng serve` connection or a graph run keeps them
//!   ([`table::Sessions`] in the scope) until it ends, when each session's process group and
//!   everything it started is killed. A single `cheng run` (or a named CLI session, which cannot
//!   keep a process between invocations) keeps none: exec_command then closes stdin, waits for
//!   the command to exit (bounded by `max_session_ms`) and says so.
//! - **`sandbox`** (author switch): the command runs in code_shell's bubblewrap sandbox (read-only
//!   workspace, no network), failing closed with `LOCAL_EXECUTOR_SANDBOX_UNAVAILABLE`.

pub mod exec_command;
pub mod table;
pub mod write_stdin;

use cheng_exec::live::{Collected, Ended};
use cheng_exec::Termination;
use cheng_node::text::human_bytes;
use cheng_node::{failure, ErrorKind, NodeError, PortSpec, PortType, Values};
use serde_json::json;
use std::time::Duration;

/// The clamp of `yield_time_ms` (the reference page's 250–30000 ms).
pub const MIN_YIELD_MS: u64 = 250;
pub const MAX_YIELD_MS: u64 = 30_000;
/// The least an empty write (a poll) waits, unless output arrives first (the reference page's 5000 ms).
pub const MIN_POLL_MS: u64 = 5_000;
/// Output a session keeps between calls (head+tail).
pub const RETAINED_CAP: usize = 1 << 20;
/// Bytes per token of `max_output_tokens` (the usual estimate of four bytes a token).
pub const BYTES_PER_TOKEN: usize = 4;
/// Largest `max_output_tokens` (the retained output, in tokens).
pub const MAX_OUTPUT_TOKENS: i64 = (RETAINED_CAP / BYTES_PER_TOKEN) as i64;
/// Largest `max_session_ms` (a day).
pub const MAX_SESSION_MS: i64 = 86_400_000;

/// The session environment of the reference page (Codex's unified exec environment): programs print for
/// a reader, not a terminal.
pub const FIXED_ENV: &[(&str, &str)] = &[
    ("NO_COLOR", "1"),
    ("TERM", "dumb"),
    ("LANG", "C.UTF-8"),
    ("LC_CTYPE", "C.UTF-8"),
    ("LC_ALL", "C.UTF-8"),
    ("COLORTERM", ""),
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("GH_PAGER", "cat"),
];

pub(crate) const MAX_OUTPUT_TOKENS_PORT: PortSpec =
    PortSpec::input("max_output_tokens", PortType::Integer, "Most output tokens returned by this call (about 4 bytes each; default 10000). Longer output keeps its head and tail and counts what was omitted.")
        .default("10000")
        .min(1)
        .max(MAX_OUTPUT_TOKENS);

/// The outputs exec_command and write_stdin share.
pub(crate) const OUTPUTS: &[PortSpec] = &[
    failure::success("Whether the session is running or its command exited with code 0"),
    PortSpec::output("summary", PortType::String, "The result for the model: wall time, running session id or exit code, truncation note, output"),
    PortSpec::output("session_id", PortType::Integer, "Id to pass to write_stdin while the process runs (null once it has ended)"),
    PortSpec::output("running", PortType::Boolean, "True while the process is still running"),
    PortSpec::output("exit_code", PortType::Integer, "Exit code once it ended: 128 + signal when killed by one, 124 when max_session_ms ended it (null while running)"),
    PortSpec::output("termination", PortType::String, "running, exited, signalled, timed_out (max_session_ms), or cancelled (its owner ended)"),
    PortSpec::output("wall_time_ms", PortType::Integer, "How long this call waited, in milliseconds"),
    PortSpec::output("yield_time_ms", PortType::Integer, "The wait applied, after clamping (250-30000 ms; an empty write waits at least 5000 ms)"),
    PortSpec::output("output", PortType::String, "Output (stdout and stderr interleaved) since the previous call, head+tail bounded"),
    PortSpec::output("output_truncated", PortType::Boolean, "True when output was cut to max_output_tokens (or to what the session retains)"),
    PortSpec::output("output_bytes", PortType::Integer, "Bytes of output that arrived since the previous call, including any omitted"),
    PortSpec::output("command_display", PortType::String, "Display form of the session's command"),
    PortSpec::output("cwd", PortType::String, "Working directory of the session, relative to the workspace"),
    PortSpec::output("sandboxed", PortType::Boolean, "True when the command runs in the bubblewrap sandbox"),
    failure::ERROR_KIND,
    failure::TERMINAL,
    failure::error("Error message when the session failed"),
];

/// The clamped wait of a call.
pub fn clamp_yield(requested: i64, poll: bool) -> u64 {
    let ms = requested
        .max(0)
        .unsigned_abs()
        .clamp(MIN_YIELD_MS, MAX_YIELD_MS);
    if poll {
        ms.max(MIN_POLL_MS)
    } else {
        ms
    }
}

/// What one call saw, ready to be rendered.
pub(crate) struct Report<'a> {
    pub session_id: Option<i64>,
    pub display: &'a str,
    pub cwd: &'a str,
    pub sandboxed: bool,
    pub collected: Collected,
    pub wall: Duration,
    pub yield_ms: u64,
    pub max_bytes: usize,
    /// A sentence put first in the summary (e.g. why no session was kept).
    pub note: Option<String>,
}

/// The `exit_code` of an ended session: the exit code, 128 + signal, or 124 after the lifetime.
pub fn exit_code(ended: &Ended) -> Option<i32> {
    match ended.termination {
        Termination::TimedOut => Some(124),
        _ => ended.shell_status(),
    }
}

fn termination(ended: Option<&Ended>) -> &'static str {
    match ended {
        None => "running",
        Some(e) if e.termination == Termination::Exited && e.signal.is_some() => "signalled",
        Some(e) => e.termination.as_str(),
    }
}

/// How a session ended, for the table's record: `exited with code 0`.
pub(crate) fn ended_phrase(ended: &Ended) -> String {
    let code = exit_code(ended).map_or_else(|| "unknown".to_string(), |c| c.to_string());
    match termination(Some(ended)) {
        "exited" => format!("exited with code {code}"),
        "signalled" => format!(
            "killed by {} (exit code {code})",
            ended
                .signal
                .map(cheng_exec::signal_name)
                .unwrap_or_else(|| "a signal".into())
        ),
        "timed_out" => "reached max_session_ms (exit code 124)".to_string(),
        _ => "killed because its owner ended".to_string(),
    }
}

/// The failure of an ended session, if any.
fn failure_of(ended: &Ended, display: &str) -> Option<NodeError> {
    let code = exit_code(ended).unwrap_or(-1);
    let (kind, message) = match ended.termination {
        Termination::Exited if ended.exit_code == Some(0) => return None,
        Termination::Exited => (ErrorKind::NonZeroExit, format!("`{display}` exited with code {code}; its output is returned")),
        Termination::Signalled => (
            ErrorKind::Signalled,
            format!("`{display}` was killed by {} (exit code {code})", ended.signal.map(cheng_exec::signal_name).unwrap_or_else(|| "a signal".into())),
        ),
        Termination::TimedOut => (
            ErrorKind::TimedOut,
            format!("`{display}` reached its max_session_ms and its process group was killed (exit code 124); raise max_session_ms (the author's cap applies) if it needs longer"),
        ),
        Termination::Cancelled => (ErrorKind::Cancelled, format!("`{display}` was killed because its owner ended (cancelled run, server shutdown or eviction)")),
        Termination::SpawnFailed => (ErrorKind::SpawnFailed, format!("`{display}` could not be started")),
    };
    Some(NodeError::new(kind, message))
}

impl Report<'_> {
    pub fn outputs(self) -> Values {
        let ended = self.collected.ended;
        let kept = self.collected.output.recap(self.max_bytes);
        let total = kept.total_bytes;
        let truncated = kept.truncated;
        let summary = self.summary(&kept.text, total, kept.omitted_bytes);
        let result = match ended.as_ref().and_then(|e| failure_of(e, self.display)) {
            Some(e) => Err(e),
            None => Ok(()),
        };
        let mut o = Values::new();
        o.insert("success".into(), json!(result.is_ok()));
        o.insert("summary".into(), json!(summary));
        o.insert(
            "session_id".into(),
            json!(if ended.is_none() {
                self.session_id
            } else {
                None
            }),
        );
        o.insert("running".into(), json!(ended.is_none()));
        o.insert(
            "exit_code".into(),
            json!(ended.as_ref().and_then(exit_code)),
        );
        o.insert("termination".into(), json!(termination(ended.as_ref())));
        o.insert(
            "wall_time_ms".into(),
            json!(u64::try_from(self.wall.as_millis()).unwrap_or(u64::MAX)),
        );
        o.insert("yield_time_ms".into(), json!(self.yield_ms));
        o.insert("output".into(), json!(kept.text));
        o.insert("output_truncated".into(), json!(truncated));
        o.insert("output_bytes".into(), json!(total));
        o.insert("command_display".into(), json!(self.display));
        o.insert("cwd".into(), json!(self.cwd));
        o.insert("sandboxed".into(), json!(self.sandboxed));
        failure::fill(&mut o, &result);
        o
    }

    /// The text for the model, laid out as Codex lays out exec output.
    fn summary(&self, output: &str, total: u64, omitted: u64) -> String {
        let mut text = String::new();
        if let Some(note) = &self.note {
            text.push_str(note);
            text.push('\n');
        }
        text.push_str(&format!(
            "Wall time: {:.4} seconds\n",
            self.wall.as_secs_f64()
        ));
        match (&self.collected.ended, self.session_id) {
            (None, Some(id)) => text.push_str(&format!("Process running with session ID {id}\n")),
            (None, None) => text.push_str("Process running\n"),
            (Some(ended), _) => {
                let code =
                    exit_code(ended).map_or_else(|| "unknown".to_string(), |c| c.to_string());
                match termination(Some(ended)) {
                    "exited" => text.push_str(&format!("Process exited with code {code}\n")),
                    "signalled" => text.push_str(&format!(
                        "Process was killed by {} (exit code {code})\n",
                        ended
                            .signal
                            .map(cheng_exec::signal_name)
                            .unwrap_or_else(|| "a signal".into())
                    )),
                    "timed_out" => text.push_str(&format!(
                        "Process reached max_session_ms and was killed (exit code {code})\n"
                    )),
                    _ => text.push_str(&format!(
                        "Process was killed because its owner ended (exit code {code})\n"
                    )),
                }
            }
        }
        if omitted > 0 {
            text.push_str(&format!(
                "Original token count: {}\nOutput truncated: {} of {} omitted from the middle (raise max_output_tokens to see more)\n",
                total.div_ceil(BYTES_PER_TOKEN as u64),
                human_bytes(omitted),
                human_bytes(total)
            ));
        }
        text.push_str("Output:\n");
        text.push_str(output);
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yields_are_clamped_and_polls_have_a_floor() {
        assert_eq!(clamp_yield(0, false), 250);
        assert_eq!(clamp_yield(-5, false), 250);
        assert_eq!(clamp_yield(1000, false), 1000);
        assert_eq!(clamp_yield(600_000, false), 30_000);
        assert_eq!(clamp_yield(250, true), 5_000);
        assert_eq!(clamp_yield(20_000, true), 20_000);
    }

    #[test]
    fn exit_codes_follow_the_shell() {
        let ended = |termination, exit_code, signal| Ended {
            exit_code,
            signal,
            termination,
            duration: Duration::ZERO,
        };
        assert_eq!(
            exit_code(&ended(Termination::Exited, Some(3), None)),
            Some(3)
        );
        assert_eq!(
            exit_code(&ended(Termination::Signalled, None, Some(2))),
            Some(130)
        );
        assert_eq!(
            exit_code(&ended(Termination::TimedOut, None, Some(15))),
            Some(124)
        );
    }
}
