//! Running processes for cheng nodes.
//!
//! One module per concern: `env` (allowlisted base environment, denylisted user variables),
//! `capture` (head+tail bounded stdout/stderr), `kill` (process-group termination), `fds`
//! (closing inherited descriptors), `reaper` (the per-run child subreaper), `spawn`
//! (argv only, never a shell unless the caller builds `sh -c` itself, supervision to the end),
//! `live` (a process that outlives the call that started it, with writable stdin) and `helper`
//! (finding the helper program the reaper runs as). The sandbox for the code executors
//! (bubblewrap, limits, Landlock, seccomp, the init step) is the `cheng-sandbox` crate, built on
//! this one.
//!
//! The public API (stable; other crates build on it):
//!
//! ```ignore
//! let spec = ProcessSpec::new("cargo", ["test"], workspace_dir)
//!     .env(env::build(&user_env)?)
//!     .timeout(Duration::from_secs(60))
//!     .caps(1 << 20, 1 << 20);
//! let out: ProcessOutput = run(spec, &cancel_token).await;
//! // Output that is not text (NUL-framed records, non-UTF-8 paths): the same, plus the first
//! // `stdout_cap` bytes of stdout unaltered.
//! let raw: RawOutput = run_with_stdout_bytes(spec, &cancel_token).await;
//! // Live output: each chunk also goes to the node's handle as it is read.
//! let spec = spec.output(ctx.output.clone());
//! ```
//!
//! An example. Every run starts a per-run reaper, the `cheng-sandbox-init` helper's `__reaper`
//! mode, so the program needs that helper beside it (as `cargo install` puts it beside `cheng`)
//! or named with [`helper::use_helper`]; without one, `run` fails closed with
//! `Termination::SpawnFailed` rather than run a command nothing could clean up after. The doc
//! tests compile it but cannot run it (rustdoc's binary has no helper beside it); the CLI tests
//! run the same calls through the installed layout.
//!
//! ```no_run
//! use cheng_exec::{run, ProcessSpec, Termination};
//! use tokio_util::sync::CancellationToken;
//!
//! let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
//! let spec = ProcessSpec::new("echo", ["hello"], std::env::temp_dir());
//! let out = rt.block_on(run(spec, &CancellationToken::new()));
//! assert_eq!(out.termination, Termination::Exited);
//! assert_eq!(out.exit_code, Some(0));
//! assert_eq!(out.stdout.text, "hello\n");
//! ```
//!
//! Invariants `run` keeps: the child never inherits the host environment (only `spec.env`), stdin
//! is /dev/null unless bytes are given, only stdin/stdout/stderr and `spec.inherit_fds` reach it
//! (every other descriptor is closed before exec), the child leads its own process group, nothing
//! it starts outlives the run (a per-run reaper kills the group and every escaped descendant when
//! the child exits, times out, is cancelled, the future is dropped or cheng dies), and memory
//! stays bounded by the caps whatever the child writes.

pub mod capture;
pub mod env;
pub mod fds;
pub mod flock;
pub mod helper;
pub mod kill;
pub mod live;
pub mod reaper;
pub mod session;
pub mod spawn;

pub use spawn::{run, run_with_stdout_bytes};

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use cheng_io::text::{human_bytes, human_duration_ms};
use cheng_io::ErrorKind;

pub use cheng_io::text::Bounded;

/// Default per-stream capture cap (1 MiB).
pub const DEFAULT_STREAM_CAP: usize = 1 << 20;
/// Time between SIGTERM and SIGKILL when a process group must die.
pub const DEFAULT_KILL_GRACE: Duration = Duration::from_millis(500);

/// What to run. Built by nodes, consumed by [`run`].
#[derive(Debug, Clone)]
pub struct ProcessSpec {
    pub program: OsString,
    pub args: Vec<OsString>,
    pub cwd: PathBuf,
    /// The complete environment of the child (nothing is inherited beyond this).
    pub env: Vec<(OsString, OsString)>,
    /// Bytes written to stdin, then closed; `None` means stdin is /dev/null.
    pub stdin: Option<Vec<u8>>,
    pub timeout: Duration,
    pub kill_grace: Duration,
    pub stdout_cap: usize,
    pub stderr_cap: usize,
    /// Resource limits applied in the child before exec (setrlimit).
    pub rlimits: Vec<Rlimit>,
    /// An open cgroup v2 `cgroup.procs` file: the child writes "0" to it before exec, joining
    /// that group before it runs anything. If the write fails the spawn fails (nothing runs
    /// outside the group it was meant to be in). `None`: the child stays in cheng's group.
    pub cgroup_procs: Option<std::sync::Arc<std::os::fd::OwnedFd>>,
    /// Descriptors the child inherits, each as `(source, number in the child)`. Apart from
    /// these and stdin/stdout/stderr, no descriptor of cheng's reaches the child. Numbers start
    /// at 3 and must be distinct (e.g. bwrap's `--seccomp 3`).
    pub inherit_fds: Vec<(std::sync::Arc<std::os::fd::OwnedFd>, std::os::fd::RawFd)>,
    /// Live output: every chunk of stdout and stderr is passed here as it is read (stream,
    /// bytes, byte offset), besides the bounded capture. Off by default.
    pub output: cheng_io::Output,
}

/// One setrlimit applied to the child (soft = hard = value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rlimit {
    pub resource: RlimitResource,
    pub value: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RlimitResource {
    AddressSpace,
    Nproc,
    CpuSeconds,
    FileSize,
    OpenFiles,
    Core,
}

/// How a process ended; rendered as the reference page's `termination` strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Termination {
    Exited,
    TimedOut,
    Cancelled,
    Signalled,
    SpawnFailed,
}

impl Termination {
    pub fn as_str(&self) -> &'static str {
        match self {
            Termination::Exited => "exited",
            Termination::TimedOut => "timed_out",
            Termination::Cancelled => "cancelled",
            Termination::Signalled => "signalled",
            Termination::SpawnFailed => "spawn_failed",
        }
    }
}

/// What happened. Always returned, even when the process could not be started.
#[derive(Debug, Clone)]
pub struct ProcessOutput {
    pub exit_code: Option<i32>,
    pub termination: Termination,
    pub signal: Option<i32>,
    pub duration: Duration,
    pub stdout: Bounded,
    pub stderr: Bounded,
    /// Why the spawn failed (with `Termination::SpawnFailed`).
    pub spawn_error: Option<String>,
    /// Resource usage of the child (and its reaped descendants), where the OS reports it.
    pub usage: Option<ResourceUsage>,
}

/// What [`run_with_stdout_bytes`] returns: the usual output plus stdout's exact bytes.
#[derive(Debug, Clone)]
pub struct RawOutput {
    pub output: ProcessOutput,
    /// The first `stdout_cap` bytes of stdout, unaltered (`output.stdout.truncated` says whether
    /// more followed). Empty when the process did not start.
    pub stdout_bytes: Vec<u8>,
}

impl From<ProcessOutput> for RawOutput {
    fn from(output: ProcessOutput) -> Self {
        RawOutput {
            output,
            stdout_bytes: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResourceUsage {
    pub peak_rss_kb: u64,
    pub cpu_user_ms: u64,
    pub cpu_sys_ms: u64,
}

impl ProcessSpec {
    /// A spec with the defaults: the minimal host environment ([`env::base`]), stdin /dev/null,
    /// a 60 s timeout, [`DEFAULT_KILL_GRACE`], [`DEFAULT_STREAM_CAP`] per stream, no rlimits.
    pub fn new<P, I, A>(program: P, args: I, cwd: impl Into<PathBuf>) -> Self
    where
        P: Into<OsString>,
        I: IntoIterator<Item = A>,
        A: Into<OsString>,
    {
        ProcessSpec {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            cwd: cwd.into(),
            env: env::base(),
            stdin: None,
            timeout: Duration::from_secs(60),
            kill_grace: DEFAULT_KILL_GRACE,
            stdout_cap: DEFAULT_STREAM_CAP,
            stderr_cap: DEFAULT_STREAM_CAP,
            rlimits: Vec::new(),
            cgroup_procs: None,
            inherit_fds: Vec::new(),
            output: cheng_io::Output::off(),
        }
    }

    /// Passes stdout and stderr chunks to `output` as they are read (see [`capture::Live`]).
    pub fn output(mut self, output: cheng_io::Output) -> Self {
        self.output = output;
        self
    }

    /// Replaces the child's complete environment.
    pub fn env(mut self, env: Vec<(OsString, OsString)>) -> Self {
        self.env = env;
        self
    }

    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    pub fn kill_grace(mut self, grace: Duration) -> Self {
        self.kill_grace = grace;
        self
    }

    /// Per-stream capture caps in bytes (stdout, stderr).
    pub fn caps(mut self, stdout_cap: usize, stderr_cap: usize) -> Self {
        self.stdout_cap = stdout_cap;
        self.stderr_cap = stderr_cap;
        self
    }

    /// Bytes written to the child's stdin, which is then closed.
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(bytes.into());
        self
    }

    pub fn rlimit(mut self, resource: RlimitResource, value: u64) -> Self {
        self.rlimits.push(Rlimit { resource, value });
        self
    }
}

impl ProcessOutput {
    /// Exited with status 0.
    pub fn success(&self) -> bool {
        self.termination == Termination::Exited && self.exit_code == Some(0)
    }

    /// The failure class, `None` on success.
    pub fn error_kind(&self) -> Option<ErrorKind> {
        match self.termination {
            Termination::Exited if self.exit_code == Some(0) => None,
            Termination::Exited => Some(ErrorKind::NonZeroExit),
            Termination::TimedOut => Some(ErrorKind::TimedOut),
            Termination::Cancelled => Some(ErrorKind::Cancelled),
            Termination::Signalled => Some(ErrorKind::Signalled),
            Termination::SpawnFailed => Some(ErrorKind::SpawnFailed),
        }
    }

    pub fn duration_ms(&self) -> u64 {
        u64::try_from(self.duration.as_millis()).unwrap_or(u64::MAX)
    }

    /// One line a person reads: `cargo test exited 101 after 3.2 s; stderr 4.1 KiB`.
    ///
    /// `display` is the command as shown to the user; long commands are shortened.
    pub fn summary(&self, display: &str) -> String {
        let display = shorten(display, 80);
        let took = human_duration_ms(self.duration_ms());
        let mut line = match self.termination {
            Termination::Exited => match self.exit_code {
                Some(code) => format!("{display} exited {code} after {took}"),
                None => format!("{display} exited after {took}"),
            },
            Termination::TimedOut => {
                format!("{display} timed out after {took}; its process group was killed")
            }
            Termination::Cancelled => {
                format!("{display} was cancelled after {took}; its process group was killed")
            }
            Termination::Signalled => match self.signal {
                Some(sig) => format!("{display} was killed by {} after {took}", signal_name(sig)),
                None => format!("{display} was killed by a signal after {took}"),
            },
            Termination::SpawnFailed => {
                return format!(
                    "{display} could not start: {}",
                    self.spawn_error.as_deref().unwrap_or("unknown error")
                )
            }
        };
        for (name, stream) in [("stdout", &self.stdout), ("stderr", &self.stderr)] {
            if stream.total_bytes > 0 {
                line.push_str(&format!("; {name} {}", human_bytes(stream.total_bytes)));
                if stream.truncated {
                    line.push_str(" (truncated)");
                }
            }
        }
        line
    }
}

/// `SIGKILL (9)` for the common signals, `signal 42` otherwise.
pub fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGSYS => "SIGSYS",
        _ => return format!("signal {sig}"),
    };
    format!("{name} ({sig})")
}

/// At most `max` characters, with `…` when cut.
fn shorten(text: &str, max: usize) -> String {
    let first_line = text.lines().next().unwrap_or("");
    if first_line.chars().count() <= max && first_line.len() == text.len() {
        return text.to_string();
    }
    let mut out: String = first_line.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output(termination: Termination, exit_code: Option<i32>) -> ProcessOutput {
        ProcessOutput {
            exit_code,
            termination,
            signal: None,
            duration: Duration::from_millis(3200),
            stdout: cheng_io::text::head_tail(b"", 10),
            stderr: cheng_io::text::head_tail(&[b'x'; 4198], 1 << 20),
            spawn_error: None,
            usage: None,
        }
    }

    #[test]
    fn summary_reads_like_a_sentence() {
        let out = output(Termination::Exited, Some(101));
        assert_eq!(
            out.summary("cargo test"),
            "cargo test exited 101 after 3.2 s; stderr 4.1 KiB"
        );
        assert_eq!(out.error_kind(), Some(ErrorKind::NonZeroExit));
        assert!(!out.success());
    }

    #[test]
    fn summary_shortens_long_and_multi_line_commands() {
        let out = output(Termination::TimedOut, None);
        let line = out.summary(&"x".repeat(200));
        assert!(
            line.starts_with(&format!("{}… timed out", "x".repeat(79))),
            "{line}"
        );
        let line = out.summary("sh -c 'a\nb'");
        assert!(!line.contains('\n'));
    }

    #[test]
    fn success_is_exit_zero_only() {
        assert!(output(Termination::Exited, Some(0)).success());
        assert_eq!(output(Termination::Exited, Some(0)).error_kind(), None);
        assert_eq!(
            output(Termination::Cancelled, None).error_kind(),
            Some(ErrorKind::Cancelled)
        );
        assert_eq!(signal_name(9), "SIGKILL (9)");
    }

    #[test]
    fn the_process_layer_depends_on_neither_the_node_api_nor_the_sandbox() {
        let manifest = include_str!("../Cargo.toml");
        let deps = manifest
            .split("\n[dependencies]\n")
            .nth(1)
            .and_then(|rest| rest.split("\n[").next())
            .unwrap();
        // The control: the section read is the real one.
        assert!(deps.contains("cheng-io.workspace"), "{deps}");
        for crate_name in ["cheng-node", "cheng-sandbox"] {
            assert!(!deps.contains(crate_name), "{crate_name} in {deps}");
        }
    }
}
