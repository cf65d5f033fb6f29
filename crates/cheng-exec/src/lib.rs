//! Running processes for cheng nodes.
//!
//! One module per concern: `env` (allowlisted base environment, denylisted user variables),
//! `capture` (head+tail bounded stdout/stderr), `kill` (process-group termination), `spawn`
//! (argv only, never a shell unless the caller builds `sh -c` itself), and later `bwrap`,
//! `limits` and `landlock` for the sandboxed executors.
//!
//! The public API (stable; other crates build on it):
//!
//! ```ignore
//! let spec = ProcessSpec::new("cargo", ["test"], workspace_dir)
//!     .env(env::build(&user_env)?)
//!     .timeout(Duration::from_secs(60))
//!     .caps(1 << 20, 1 << 20);
//! let out: ProcessOutput = run(spec, &cancel_token).await;
//! ```

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

pub use cheng_node::text::Bounded;

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

/// How a process ended; rendered as the seed's `termination` strings.
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

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResourceUsage {
    pub peak_rss_kb: u64,
    pub cpu_user_ms: u64,
    pub cpu_sys_ms: u64,
}
