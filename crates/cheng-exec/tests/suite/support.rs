//! Helpers shared by the process tests.
#![allow(dead_code)]

use cheng_exec::{ProcessOutput, ProcessSpec};
pub use cheng_test_support::eventually;
use tokio_util::sync::CancellationToken;

/// A multi-threaded runtime like the CLI's.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// Runs `spec` to completion with a fresh (never cancelled) token.
pub fn run(spec: ProcessSpec) -> ProcessOutput {
    runtime().block_on(cheng_exec::run(spec, &CancellationToken::new()))
}

/// Runs `spec` to completion on a thread of its own, failing the test when it is not over within
/// `limit` (polled with [`eventually`]): for runs that must not wait for a process they leave
/// behind. `limit` is when the test gives up, not a speed claim, so it is generous; a run that
/// did wait would take its leftover's whole (much longer) life.
pub fn run_within(limit: std::time::Duration, spec: ProcessSpec) -> ProcessOutput {
    let handle = std::thread::spawn(move || run(spec));
    assert!(
        eventually(limit, || handle.is_finished()),
        "the run was not over after {limit:?}: it waited for something"
    );
    handle.join().expect("the run's thread")
}

/// `sh -c script` in the system temp directory.
pub fn sh(script: &str) -> ProcessSpec {
    ProcessSpec::new("sh", ["-c", script], std::env::temp_dir())
}

/// Whether process `pid` exists and is not a zombie.
pub fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rsplit(')')
                .next()
                .map(|rest| rest.trim_start().chars().next())
        })
        .flatten()
        .is_some_and(|state| state != 'Z' && state != 'X')
}

/// A shell loop that burns CPU until the shell itself has used at least two clock ticks
/// (utime + stime in /proc/$$/stat, 10-20 ms): a fixed iteration count can finish inside one tick
/// on a fast machine and be reported as 0 ms.
pub const BURN_CPU: &str = "while :; do read -r _ _ _ _ _ _ _ _ _ _ _ _ _ u s _ < /proc/$$/stat; [ $((u + s)) -ge 2 ] && break; done";
