//! The JavaScript worker process: `cheng-sandbox-init __js-worker`, started by cheng's pool
//! (`super::workers`) with its stdin and stdout as pipes to cheng.
//!
//! It prepares the first QuickJS runtime, jails itself (`cheng_sandbox::jail`: no
//! filesystem, no network, a system call allowlist) and says so ([`wire::Ready`] with the
//! jail's layers), then runs one job after another, each on a fresh runtime
//! (`super::engine`), until its stdin closes. Everything a script could reach through a bug in
//! QuickJS is this process: the parent kills and replaces it after a crash, a timeout or a
//! memory kill, and its rlimits are set from outside per job.

use std::ffi::OsStr;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use cheng_node::output::{OutputSink, OutputStream};

use super::engine::{self, Limits};
use super::wire;

/// The argv[1] that selects the worker.
pub const ARG: &str = "__js-worker";
/// How long the worker leaves the processors to others after an answer.
const SETTLE: Duration = Duration::from_millis(1);

/// Call first thing in the helper's `main`: when argv[1] is [`ARG`], serves as a worker and
/// exits; otherwise returns.
pub fn run_if_requested() {
    if std::env::args_os().nth(1).as_deref() == Some(OsStr::new(ARG)) {
        std::process::exit(serve())
    }
}

fn serve() -> i32 {
    ensure_stack();
    // What needs more of the system than the jail allows happens before it: the first runtime.
    engine::prepare_spare();
    let mut input = std::io::stdin().lock();
    let ready = match cheng_sandbox::jail::enter() {
        Ok(layers) => wire::Ready {
            layers,
            cpu_ns: cpu_ns(),
        },
        Err(reason) => {
            let unavailable = serde_json::to_vec(&wire::Unavailable { reason });
            if let Ok(payload) = unavailable {
                let _ = wire::write_frame(
                    &mut std::io::stdout().lock(),
                    wire::TAG_UNAVAILABLE,
                    &payload,
                );
            }
            return 3;
        }
    };
    if send(wire::TAG_READY, &ready).is_err() {
        return 2;
    }
    loop {
        let job = match wire::read_frame(&mut input) {
            Ok(None) => return 0,
            Ok(Some((wire::TAG_JOB, payload))) => {
                match serde_json::from_slice::<wire::Job>(&payload) {
                    Ok(job) => job,
                    Err(_) => return 2,
                }
            }
            Ok(Some(_)) | Err(_) => return 2,
        };
        if send(wire::TAG_DONE, &run(job)).is_err() {
            return 2;
        }
        // The answer goes out first (cheng's reply, the client reading it): on a busy machine
        // that work would otherwise wait for this. Then, unless a job came meanwhile (it runs
        // without a spare), free the last runtime and make the next one.
        if !job_within(SETTLE) {
            engine::between_runs();
        }
    }
}

fn run(job: wire::Job) -> wire::Done {
    let output = if job.live {
        cheng_node::Output::new(Arc::new(Chunks))
    } else {
        cheng_node::Output::off()
    };
    let outcome = engine::run(engine::Job {
        script: Arc::new(job.script),
        input_json: job.input_json,
        limits: Limits {
            timeout: Duration::from_millis(job.timeout_ms),
            memory_bytes: job.memory_bytes,
            max_stack_bytes: job.max_stack_bytes,
        },
        output,
    });
    let metrics = outcome.metrics_json();
    wire::Done {
        result: outcome
            .result
            .map_err(|f| (f.kind.code().to_string(), f.message)),
        stdout: outcome.stdout.text,
        stderr: outcome.stderr.text,
        metrics,
        warnings: outcome.warnings,
        cpu_ns: cpu_ns(),
    }
}

fn send(tag: u8, message: &impl serde::Serialize) -> std::io::Result<()> {
    let payload = serde_json::to_vec(message)?;
    wire::write_frame(&mut std::io::stdout().lock(), tag, &payload)
}

/// Whether the next job arrives within `wait` (cheng sends one only after the last answer, so
/// nothing of it sits in stdin's buffer yet).
fn job_within(wait: Duration) -> bool {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let stdin = std::io::stdin();
    let mut fds = [PollFd::new(&stdin, PollFlags::IN)];
    let timeout = Timespec {
        tv_sec: 0,
        tv_nsec: i64::from(wait.subsec_nanos()),
    };
    poll(&mut fds, Some(&timeout)).is_ok_and(|n| n > 0)
}

/// Console output passed on live, as chunk frames between the job and its answer.
struct Chunks;

impl OutputSink for Chunks {
    fn chunk(&self, stream: OutputStream, bytes: &[u8], _offset: u64) {
        let tag = match stream {
            OutputStream::Stdout => wire::TAG_STDOUT,
            OutputStream::Stderr => wire::TAG_STDERR,
        };
        let mut out = std::io::stdout().lock();
        for piece in bytes.chunks(wire::CHUNK_BYTES) {
            // A closed pipe means cheng is gone; the next read ends the worker.
            if wire::write_frame(&mut out, tag, piece).is_err() {
                return;
            }
        }
        let _ = out.flush();
    }
}

/// The main thread runs the scripts: its stack must hold QuickJS's limit and the Rust around it.
fn ensure_stack() {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut limit = getrlimit(Resource::Stack);
    let needed = engine::THREAD_STACK_BYTES as u64;
    if limit.current.is_some_and(|c| c < needed) {
        limit.current = Some(limit.maximum.map_or(needed, |m| m.min(needed)));
        let _ = setrlimit(Resource::Stack, limit);
    }
}

/// The process's CPU time so far.
fn cpu_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(t.tv_nsec).unwrap_or(0)
}
