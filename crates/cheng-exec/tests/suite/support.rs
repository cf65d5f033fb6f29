//! Helpers shared by the process tests.
#![allow(dead_code)]

use cheng_exec::{ProcessOutput, ProcessSpec};
use cheng_node::CancellationToken;
use std::time::Duration;

/// A multi-threaded runtime like the CLI's.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime")
}

/// Runs `spec` to completion with a fresh (never cancelled) token.
pub fn run(spec: ProcessSpec) -> ProcessOutput {
    runtime().block_on(cheng_exec::run(spec, &CancellationToken::new()))
}

/// `sh -c script` in the system temp directory.
pub fn sh(script: &str) -> ProcessSpec {
    ProcessSpec::new("sh", ["-c", script], std::env::temp_dir())
}

/// Waits up to `limit` for `cond`, polling; for facts that settle asynchronously (a process
/// that was SIGKILLed disappearing from /proc).
pub fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < limit {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    cond()
}

/// Whether process `pid` exists and is not a zombie.
pub fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| stat.rsplit(')').next().map(|rest| rest.trim_start().chars().next()))
        .flatten()
        .is_some_and(|state| state != 'Z' && state != 'X')
}
