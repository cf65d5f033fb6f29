//! cheng's side of the JavaScript workers: a small pool of jailed worker processes
//! (`super::worker`), one job at a time each.
//!
//! A call takes an idle worker (or starts one, and one spare beside it, when none is idle),
//! sets the worker's RLIMIT_AS and RLIMIT_CPU for its limits, sends the job and reads the
//! answer, passing console chunks on as they come. The worker goes back to the pool only after
//! a complete, well-formed answer; after a crash, a timeout, a cancellation, a memory kill or a
//! malformed answer it is killed and the call gets a clear error: nothing the script does can
//! end more than its own call. Its pipes are registered with the calling runtime's reactor
//! for the call only, so the pool serves any runtime.

use std::os::fd::OwnedFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use cheng_node::output::OutputStream;
use cheng_node::{ErrorKind, NodeError};
use rustix::process::{Pid, Resource, Rlimit};
use tokio::net::unix::pipe;

use super::engine::{Failure, Limits};
use super::wire;

/// Idle workers kept; one more is started in the background when a call takes the last.
const IDLE_WORKERS: usize = 2;
/// How long a new worker has to jail itself and say it is ready.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// Address space beyond twice `memory_mb` (QuickJS's count is of its own allocations; the
/// result's conversion to JSON and the allocator's slack live outside it).
const ADDRESS_SPACE_HEADROOM: u64 = 256 * 1024 * 1024;

static IDLE: Mutex<Vec<Worker>> = Mutex::new(Vec::new());
static STARTING_SPARE: AtomicBool = AtomicBool::new(false);
static EXECUTABLE: OnceLock<PathBuf> = OnceLock::new();

fn idle() -> std::sync::MutexGuard<'static, Vec<Worker>> {
    // A panic while holding this lock cannot leave the list inconsistent: keep using it.
    IDLE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Use `path` as the worker executable (it must call `worker::run_if_requested` first thing);
/// for binaries that are not next to one, such as tests and benchmarks. The first call wins.
pub fn use_executable(path: impl Into<PathBuf>) {
    let _ = EXECUTABLE.set(path.into());
}

/// The helper next to the running binary (or the one named by [`use_executable`]).
fn executable() -> Result<PathBuf, NodeError> {
    if let Some(path) = EXECUTABLE.get() {
        return Ok(path.clone());
    }
    static FOUND: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let exe = std::env::current_exe()
                .and_then(|p| p.canonicalize())
                .map_err(|e| format!("the running binary's path is unknown ({e})"))?;
            let dir = exe.parent().unwrap_or(&exe).to_path_buf();
            let helper = dir.join(cheng_exec::helper::HELPER_NAME);
            if helper.is_file() {
                Ok(helper)
            } else {
                Err(format!("{} is not in {}", cheng_exec::helper::HELPER_NAME, dir.display()))
            }
        })
        .clone()
        .map_err(|why| {
            NodeError::new(
                ErrorKind::SandboxUnavailable,
                format!(
                    "code_js runs scripts in a jailed worker process (`{} {}`), and {why}; nothing ran. \
                     Install it beside cheng (`cargo install --path crates/cheng-cli` installs both)",
                    cheng_exec::helper::HELPER_NAME,
                    super::worker::ARG
                ),
            )
        })
}

/// A started, jailed worker waiting for a job.
pub struct Worker {
    child: Option<Child>,
    pid: Pid,
    to: Option<OwnedFd>,
    from: Option<OwnedFd>,
    /// The jail's layers, as the worker reported them.
    pub layers: Arc<Vec<String>>,
    /// The process id, as `metrics.worker.pid` reports it.
    pub pid_number: i32,
    cpu_ns: u64,
}

impl Drop for Worker {
    /// A worker leaving the pool or a call dies with it, and is reaped off the caller's thread.
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = std::thread::Builder::new()
                .name("cheng-js-reap".into())
                .spawn(move || child.wait());
        }
    }
}

/// An idle worker, or a new one; when it was the last idle one, a spare is started behind it.
pub async fn take() -> Result<Worker, NodeError> {
    let (taken, now_empty) = {
        let mut idle = idle();
        let taken = idle.pop();
        (taken, idle.is_empty())
    };
    if now_empty && !STARTING_SPARE.swap(true, Ordering::AcqRel) {
        tokio::spawn(async {
            if let Ok(spare) = start().await {
                give_back(spare);
            }
            STARTING_SPARE.store(false, Ordering::Release);
        });
    }
    match taken {
        Some(worker) => Ok(worker),
        None => start().await,
    }
}

/// Back to the pool after a complete answer (beyond [`IDLE_WORKERS`], it ends).
pub fn give_back(worker: Worker) {
    let mut idle = idle();
    if idle.len() < IDLE_WORKERS {
        idle.push(worker);
    }
}

fn unavailable(message: String) -> NodeError {
    NodeError::new(ErrorKind::SandboxUnavailable, message)
}

async fn start() -> Result<Worker, NodeError> {
    let exe = executable()?;
    let mut cmd = Command::new(&exe);
    cmd.arg(super::worker::ARG)
        .env_clear()
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        // Out of the terminal's process group: a Ctrl-C is cheng's to handle.
        .process_group(0);
    if let Some(switch) = std::env::var_os(cheng_sandbox::jail::WITHOUT_ENV) {
        cmd.env(cheng_sandbox::jail::WITHOUT_ENV, switch);
    }
    cheng_exec::fds::close_inherited_on_exec(&mut cmd);
    let mut child = cmd.spawn().map_err(|e| {
        unavailable(format!(
            "the JavaScript worker {} could not be started: {e}; nothing ran",
            exe.display()
        ))
    })?;
    let pid = Pid::from_child(&child);
    let to = child.stdin.take().map(OwnedFd::from);
    let from = child.stdout.take().map(OwnedFd::from);
    let mut worker = Worker {
        child: Some(child),
        pid,
        to,
        from,
        layers: Arc::new(Vec::new()),
        pid_number: pid.as_raw_nonzero().get(),
        cpu_ns: 0,
    };
    let from = worker
        .from
        .take()
        .ok_or_else(|| unavailable("the JavaScript worker has no output pipe".into()))?;
    let reader = pipe::Receiver::from_owned_fd(from)
        .map_err(|e| unavailable(format!("the JavaScript worker's pipe: {e}")))?;
    let frame = tokio::time::timeout(START_TIMEOUT, read_frame(&reader)).await;
    worker.from = Some(
        reader
            .into_nonblocking_fd()
            .map_err(|e| unavailable(format!("the JavaScript worker's pipe: {e}")))?,
    );
    match frame {
        Ok(Ok((wire::TAG_READY, payload))) => {
            let ready: wire::Ready = serde_json::from_slice(&payload).map_err(|e| {
                unavailable(format!(
                    "the JavaScript worker's ready message is malformed: {e}"
                ))
            })?;
            worker.layers = Arc::new(ready.layers);
            worker.cpu_ns = ready.cpu_ns;
            Ok(worker)
        }
        Ok(Ok((wire::TAG_UNAVAILABLE, payload))) => {
            let reason = serde_json::from_slice::<wire::Unavailable>(&payload)
                .map(|u| u.reason)
                .unwrap_or_else(|e| format!("(its message is malformed: {e})"));
            Err(unavailable(format!(
                "the JavaScript worker cannot be jailed, so no script runs: {reason}"
            )))
        }
        Ok(Ok((tag, _))) => Err(unavailable(format!(
            "the JavaScript worker began with an unexpected message (tag {tag})"
        ))),
        Ok(Err(e)) => Err(unavailable(format!(
            "the JavaScript worker {} ended before it was ready ({e}); nothing ran",
            exe.display()
        ))),
        Err(_) => Err(unavailable(format!(
            "the JavaScript worker was not ready within {} s; nothing ran",
            START_TIMEOUT.as_secs()
        ))),
    }
}

/// How a call with a worker ended without an answer.
pub enum Broken {
    /// The pipes failed or the worker sent something that is not the protocol.
    Malformed(String),
    /// The worker's output ended: it exited or was killed.
    Ended,
}

impl std::fmt::Display for Broken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Broken::Malformed(why) => f.write_str(why),
            Broken::Ended => f.write_str("its output ended"),
        }
    }
}

impl Worker {
    /// Sets RLIMIT_AS (its address space now, plus twice `memory_mb` and headroom) and
    /// RLIMIT_CPU (its CPU time so far plus the timeout and two seconds) for the next job.
    pub fn limit(&self, limits: &Limits) -> Result<(), NodeError> {
        let now = std::fs::read_to_string(format!("/proc/{}/statm", self.pid.as_raw_nonzero()))
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
            .map_or(0, |pages| pages * rustix::param::page_size() as u64);
        let address_space = now + 2 * limits.memory_bytes as u64 + ADDRESS_SPACE_HEADROOM;
        let cpu = self.cpu_ns / 1_000_000_000 + limits.timeout.as_secs() + 3;
        for (resource, value, what) in [
            (Resource::As, address_space, "RLIMIT_AS"),
            (Resource::Cpu, cpu, "RLIMIT_CPU"),
        ] {
            let current = rustix::process::getrlimit(resource);
            let value = current.maximum.map_or(value, |max| value.min(max));
            rustix::process::prlimit(
                Some(self.pid),
                resource,
                Rlimit {
                    current: Some(value),
                    maximum: current.maximum,
                },
            )
            .map_err(|e| {
                unavailable(format!(
                    "could not set the JavaScript worker's {what}: {e}; nothing ran"
                ))
            })?;
        }
        Ok(())
    }

    /// Sends `job` and reads the answer, passing console chunks to `output`.
    pub async fn exchange(
        &mut self,
        job: &[u8],
        output: &cheng_node::Output,
    ) -> Result<wire::Done, Broken> {
        let (Some(to), Some(from)) = (self.to.take(), self.from.take()) else {
            return Err(Broken::Malformed("the worker's pipes are gone".into()));
        };
        let writer =
            pipe::Sender::from_owned_fd(to).map_err(|e| Broken::Malformed(e.to_string()))?;
        let reader =
            pipe::Receiver::from_owned_fd(from).map_err(|e| Broken::Malformed(e.to_string()))?;
        let answer = async {
            let header = wire::header(wire::TAG_JOB, job.len())
                .map_err(|e| Broken::Malformed(e.to_string()))?;
            write_all(&writer, &header).await?;
            write_all(&writer, job).await?;
            let mut offsets = [0u64; 2];
            loop {
                let (tag, payload) = read_frame(&reader).await?;
                let stream = match tag {
                    wire::TAG_DONE => {
                        return serde_json::from_slice::<wire::Done>(&payload).map_err(|e| {
                            Broken::Malformed(format!("its answer is not the protocol: {e}"))
                        })
                    }
                    wire::TAG_STDOUT => OutputStream::Stdout,
                    wire::TAG_STDERR => OutputStream::Stderr,
                    other => return Err(Broken::Malformed(format!("unknown message tag {other}"))),
                };
                let at = usize::from(stream == OutputStream::Stderr);
                output.chunk(stream, &payload, offsets[at]);
                offsets[at] += payload.len() as u64;
            }
        }
        .await;
        let done = answer?;
        self.to = Some(
            writer
                .into_nonblocking_fd()
                .map_err(|e| Broken::Malformed(e.to_string()))?,
        );
        self.from = Some(
            reader
                .into_nonblocking_fd()
                .map_err(|e| Broken::Malformed(e.to_string()))?,
        );
        self.cpu_ns = done.cpu_ns;
        Ok(done)
    }

    /// The worker's exit status once its output ended (it is exiting), then reaped; killed
    /// first when it does not end within half a second (the status is then not its own).
    pub async fn end(mut self) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        let pid = self.pid;
        let waited = tokio::task::spawn_blocking(move || child.wait());
        tokio::pin!(waited);
        match tokio::time::timeout(Duration::from_millis(500), &mut waited).await {
            Ok(Ok(Ok(status))) => Some(status),
            Ok(_) => None,
            Err(_) => {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                let _ = waited.await;
                None
            }
        }
    }
}

/// Why a worker ended without an answer, as the call's failure.
pub fn ended(status: Option<ExitStatus>, limits: &Limits) -> Failure {
    const SIGKILL: i32 = 9;
    const SIGXCPU: i32 = 24;
    match status.and_then(|s| s.signal()) {
        Some(SIGXCPU) => Failure::new(
            ErrorKind::TimedOut,
            format!(
                "the script used more CPU time than timeout_ms={} allows (RLIMIT_CPU) and its worker was stopped; \
                 raise timeout_ms (at most 300000) or do less work",
                limits.timeout.as_millis()
            ),
        ),
        Some(SIGKILL) => Failure::new(
            ErrorKind::Signalled,
            "the JavaScript worker running the script was killed (SIGKILL, from outside cheng or by the kernel \
             when memory ran out); the call did not finish. Run it again: the next call gets a new worker",
        ),
        Some(signal) => Failure::new(
            ErrorKind::Signalled,
            format!(
                "the JavaScript worker crashed (signal {signal}) while running the script; nothing else was \
                 affected and the next call gets a new worker. If the same script crashes it again, report it"
            ),
        ),
        None => Failure::new(
            ErrorKind::Internal,
            format!(
                "the JavaScript worker ended without an answer ({}); the next call gets a new worker",
                status.map_or("its status is unknown".to_string(), |s| s.to_string())
            ),
        ),
    }
}

async fn read_frame(reader: &pipe::Receiver) -> Result<(u8, Vec<u8>), Broken> {
    let mut header = [0u8; 5];
    read_exact(reader, &mut header).await?;
    let (tag, len) = wire::parse_header(header).map_err(|e| Broken::Malformed(e.to_string()))?;
    let mut payload = vec![0u8; len];
    read_exact(reader, &mut payload).await?;
    Ok((tag, payload))
}

/// Reads at once, and waits for the reactor only when the pipe is empty.
async fn read_exact(reader: &pipe::Receiver, buf: &mut [u8]) -> Result<(), Broken> {
    let mut at = 0;
    while at < buf.len() {
        match reader.try_read(&mut buf[at..]) {
            Ok(0) => return Err(Broken::Ended),
            Ok(n) => at += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => reader
                .readable()
                .await
                .map_err(|e| Broken::Malformed(e.to_string()))?,
            Err(e) => return Err(Broken::Malformed(e.to_string())),
        }
    }
    Ok(())
}

async fn write_all(writer: &pipe::Sender, mut buf: &[u8]) -> Result<(), Broken> {
    while !buf.is_empty() {
        match writer.try_write(buf) {
            Ok(0) => return Err(Broken::Ended),
            Ok(n) => buf = &buf[n..],
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => writer
                .writable()
                .await
                .map_err(|e| Broken::Malformed(e.to_string()))?,
            // The worker is gone (its end of the pipe closed).
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Err(Broken::Ended),
            Err(e) => return Err(Broken::Malformed(e.to_string())),
        }
    }
    Ok(())
}
