//! A process that outlives the call that started it: a dev server, a REPL, a watch build.
//!
//! [`LiveProcess::start`] runs a [`ProcessSpec`] under the same per-run reaper as [`crate::run`]
//! (its own process group, descriptor hygiene, nothing it starts outliving it), with a stdin pipe
//! that stays open. A tokio task supervises it: stdout and stderr are read as they arrive into one
//! pending buffer (interleaved as they come, head+tail bounded at `spec.stdout_cap`, the omission
//! counted), `spec.timeout` bounds its whole lifetime (SIGTERM to the group, SIGKILL after
//! `spec.kill_grace`), and the given cancellation token kills it. Callers take what arrived with
//! [`LiveProcess::collect`], write with [`LiveProcess::write`] and interrupt with
//! [`LiveProcess::interrupt`] (SIGINT to the group). Each chunk also goes to `spec.output` as it
//! is read, for an owner that shows it live.
//!
//! Dropping the handle kills the process group and everything it started, synchronously asked of
//! the reaper (SIGKILL) before the supervising task reaps it; if the runtime is gone too, the
//! reaper sees its control pipe close and kills everything itself. Nothing outlives the owner.

use crate::capture::{Stream, MAX_READ_BUFFER};
use crate::reaper;
use crate::spawn::{self, Child};
use crate::{ProcessSpec, Termination};
use cheng_io::output::{Output, OutputStream};
use cheng_io::text::{Bounded, HeadTail};
use std::io;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::unix::pipe;
use tokio::sync::{mpsc, Notify};
use tokio_util::sync::CancellationToken;

/// How a live process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ended {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// `Exited`, `Signalled`, `TimedOut` (its lifetime bound), or `Cancelled` (killed by its owner).
    pub termination: Termination,
    /// From start to the end of the process.
    pub duration: Duration,
}

impl Ended {
    /// The shell's convention for one number: the exit code, or 128 + the signal that ended it.
    pub fn shell_status(&self) -> Option<i32> {
        self.exit_code.or(self.signal.map(|s| 128 + s))
    }
}

/// What one [`LiveProcess::collect`] returns.
#[derive(Debug, Clone)]
pub struct Collected {
    /// The output that arrived since the last collect (stdout and stderr interleaved), bounded.
    pub output: Bounded,
    /// Set once the process has ended and all its output has been read.
    pub ended: Option<Ended>,
}

#[derive(Debug)]
struct State {
    pending: HeadTail,
    cap: usize,
    ended: Option<Ended>,
    /// Every byte read since the start.
    total: u64,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    changed: Notify,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A poisoned lock only means a reader panicked; the buffer is intact.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A running process with writable stdin. See the module documentation.
pub struct LiveProcess {
    shared: Arc<Shared>,
    stdin: tokio::sync::Mutex<Option<pipe::Sender>>,
    signals: mpsc::UnboundedSender<u8>,
    /// Cancelled on drop: the supervising task kills and reaps.
    kill: CancellationToken,
    /// A copy of the reaper's control pipe, to ask for SIGKILL from `Drop` without the task.
    control: Option<OwnedFd>,
    started: Instant,
}

impl std::fmt::Debug for LiveProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveProcess")
            .field("started", &self.started)
            .finish_non_exhaustive()
    }
}

impl LiveProcess {
    /// Starts `spec` (its `stdin` bytes, if any, are written first; the pipe stays open).
    /// `spec.timeout` is the lifetime bound, `spec.stdout_cap` the pending-output bound;
    /// `cancel` kills it (the owner ended). Needs a tokio runtime with I/O and time enabled.
    /// The error is a sentence naming the program.
    pub fn start(mut spec: ProcessSpec, cancel: CancellationToken) -> Result<LiveProcess, String> {
        let first = spec.stdin.take().unwrap_or_default();
        spec.stdin = Some(Vec::new());
        let mut child = spawn::start(&spec)?;
        let started = Instant::now();
        let stdin = match child.stdin.take() {
            Some(fd) => Some(
                pipe::Sender::from_owned_fd(fd)
                    .map_err(|e| format!("cannot watch the stdin of the process: {e}"))?,
            ),
            None => None,
        };
        let control = child.control_copy();
        let cap = spec.stdout_cap.max(1);
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                pending: HeadTail::new(cap),
                cap,
                ended: None,
                total: 0,
            }),
            changed: Notify::new(),
        });
        let (signals, signal_rx) = mpsc::unbounded_channel();
        let kill = CancellationToken::new();
        let task = Supervisor {
            shared: Arc::clone(&shared),
            live: spec.output.clone(),
            signals: signal_rx,
            kill: kill.clone(),
            owner: cancel,
            lifetime: spec.timeout,
            grace: spec.kill_grace,
            started,
        };
        tokio::spawn(task.run(child));
        let live = LiveProcess {
            shared,
            stdin: tokio::sync::Mutex::new(stdin),
            signals,
            kill,
            control,
            started,
        };
        if !first.is_empty() {
            let _ = live.try_write_now(&first);
        }
        Ok(live)
    }

    fn try_write_now(&self, bytes: &[u8]) -> io::Result<usize> {
        match self.stdin.try_lock() {
            Ok(guard) => match guard.as_ref() {
                Some(tx) => tx.try_write(bytes),
                None => Ok(0),
            },
            Err(_) => Ok(0),
        }
    }

    /// When it started.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// Whether it has ended (all its output read).
    pub fn ended(&self) -> Option<Ended> {
        self.shared.lock().ended
    }

    /// Bytes of output read since the start.
    pub fn total_output(&self) -> u64 {
        self.shared.lock().total
    }

    /// Writes `bytes` to stdin, waiting at most until `deadline` for the pipe to take them.
    /// Returns how many were written; an error when stdin is closed (the process ended or closed
    /// it).
    pub async fn write(&self, bytes: &[u8], deadline: Instant) -> io::Result<usize> {
        let mut guard = self.stdin.lock().await;
        let Some(tx) = guard.as_mut() else {
            return Err(io::Error::new(io::ErrorKind::BrokenPipe, "stdin is closed"));
        };
        let mut written = 0;
        while written < bytes.len() {
            let ready = tokio::select! {
                ready = tx.writable() => ready,
                () = tokio::time::sleep_until(deadline.into()) => return Ok(written),
            };
            ready?;
            match tx.try_write(&bytes[written..]) {
                Ok(n) => written += n,
                Err(e)
                    if e.kind() == io::ErrorKind::WouldBlock
                        || e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    if e.kind() == io::ErrorKind::BrokenPipe {
                        *guard = None;
                    }
                    return Err(e);
                }
            }
        }
        Ok(written)
    }

    /// Closes stdin (the process reads end of file).
    pub async fn close_stdin(&self) {
        *self.stdin.lock().await = None;
    }

    /// SIGINT to the process group (what Ctrl-C in a terminal sends).
    pub fn interrupt(&self) {
        let _ = self.signals.send(reaper::SEND_INT);
    }

    /// Waits until `deadline`, until the process has ended, or (with `return_on_output`) until
    /// some output is pending, and takes the pending output.
    pub async fn collect(&self, deadline: Instant, return_on_output: bool) -> Collected {
        loop {
            let notified = self.shared.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let state = self.shared.lock();
                if state.ended.is_some() || (return_on_output && state.pending.total_bytes() > 0) {
                    break;
                }
            }
            if Instant::now() >= deadline {
                break;
            }
            tokio::select! {
                () = &mut notified => {}
                () = tokio::time::sleep_until(deadline.into()) => {}
            }
        }
        let mut state = self.shared.lock();
        let fresh = HeadTail::new(state.cap);
        let output = std::mem::replace(&mut state.pending, fresh).finish();
        Collected {
            output,
            ended: state.ended,
        }
    }
}

impl Drop for LiveProcess {
    fn drop(&mut self) {
        if self.ended().is_none() {
            if let Some(control) = &self.control {
                reaper::send(control, reaper::SEND_KILL);
            }
        }
        self.kill.cancel();
    }
}

struct Supervisor {
    shared: Arc<Shared>,
    live: Output,
    signals: mpsc::UnboundedReceiver<u8>,
    kill: CancellationToken,
    owner: CancellationToken,
    lifetime: Duration,
    grace: Duration,
    started: Instant,
}

/// Why the supervisor stopped waiting.
enum Stop {
    Exited,
    Lifetime,
    Killed,
}

impl Supervisor {
    async fn run(mut self, mut child: Child) {
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        let mut reader = Reader {
            shared: Arc::clone(&self.shared),
            buf: vec![0u8; 16 * 1024],
            live: self.live.clone(),
            offsets: [0, 0],
        };
        let (mut out_open, mut err_open) = (stdout.is_some(), stderr.is_some());
        let lifetime = tokio::time::sleep(self.lifetime);
        tokio::pin!(lifetime);
        let stop = loop {
            tokio::select! {
                biased;
                () = self.kill.cancelled() => break Stop::Killed,
                () = self.owner.cancelled() => break Stop::Killed,
                () = &mut lifetime => break Stop::Lifetime,
                Some(byte) = self.signals.recv() => child.signal(byte),
                ready = readable(&stdout), if out_open => out_open = ready && reader.read(stdout.as_ref(), OutputStream::Stdout),
                ready = readable(&stderr), if err_open => err_open = ready && reader.read(stderr.as_ref(), OutputStream::Stderr),
                () = child.exited() => break Stop::Exited,
            }
        };
        let early = match stop {
            Stop::Exited => None,
            Stop::Lifetime => {
                child.signal(reaper::SEND_TERM);
                tokio::select! {
                    biased;
                    () = child.exited() => {}
                    () = tokio::time::sleep(self.grace) => {}
                }
                child.signal(reaper::SEND_KILL);
                Some(Termination::TimedOut)
            }
            Stop::Killed => {
                child.signal(reaper::SEND_KILL);
                Some(Termination::Cancelled)
            }
        };
        child.exited().await;
        // The reaper has killed everything the command started: read what the pipes still hold.
        let drain_until = tokio::time::Instant::now() + spawn::DRAIN_AFTER_EXIT;
        while out_open || err_open {
            tokio::select! {
                ready = readable(&stdout), if out_open => out_open = ready && reader.read(stdout.as_ref(), OutputStream::Stdout),
                ready = readable(&stderr), if err_open => err_open = ready && reader.read(stderr.as_ref(), OutputStream::Stderr),
                () = tokio::time::sleep_until(drain_until) => break,
            }
        }
        let (status, _usage) = child.reap().await;
        let (exit_code, signal, termination) = spawn::interpret(status, early);
        let ended = Ended {
            exit_code,
            signal,
            termination,
            duration: self.started.elapsed(),
        };
        self.shared.lock().ended = Some(ended);
        self.shared.changed.notify_waiters();
    }
}

/// Resolves when the stream is readable: `false` on a reactor error (treat as closed).
async fn readable(stream: &Option<Stream>) -> bool {
    match stream {
        Some(s) => s.receiver().readable().await.is_ok(),
        None => std::future::pending().await,
    }
}

struct Reader {
    shared: Arc<Shared>,
    buf: Vec<u8>,
    /// The owner's live output (`spec.output`): each chunk is also passed on as it is read.
    live: Output,
    /// Bytes of stdout and stderr passed on so far.
    offsets: [u64; 2],
}

impl Reader {
    /// Reads what the pipe holds into the pending buffer; `false` at end of file or on an error.
    fn read(&mut self, stream: Option<&Stream>, which: OutputStream) -> bool {
        let Some(stream) = stream else { return false };
        let mut open = true;
        let mut got = false;
        loop {
            match stream.receiver().try_read(&mut self.buf) {
                Ok(0) => {
                    open = false;
                    break;
                }
                Ok(n) => {
                    let offset = &mut self.offsets[usize::from(which == OutputStream::Stderr)];
                    self.live.chunk(which, &self.buf[..n], *offset);
                    *offset += n as u64;
                    let mut state = self.shared.lock();
                    state.pending.push(&self.buf[..n]);
                    state.total += n as u64;
                    got = true;
                    if n == self.buf.len() && self.buf.len() < MAX_READ_BUFFER {
                        drop(state);
                        self.buf.resize(MAX_READ_BUFFER, 0);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    open = false;
                    break;
                }
            }
        }
        if got {
            self.shared.changed.notify_waiters();
        }
        open
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    fn far() -> Instant {
        Instant::now() + Duration::from_secs(30)
    }

    #[test]
    fn a_cat_session_echoes_each_write() {
        rt().block_on(async {
            let live = LiveProcess::start(
                ProcessSpec::new("cat", Vec::<String>::new(), "/"),
                CancellationToken::new(),
            )
            .unwrap();
            for word in ["one\n", "two\n"] {
                assert_eq!(
                    live.write(word.as_bytes(), far()).await.unwrap(),
                    word.len()
                );
                let got = live.collect(far(), true).await;
                assert_eq!(got.output.text, word);
                assert!(got.ended.is_none());
            }
        });
    }

    #[test]
    fn an_exit_is_reported_with_all_output() {
        rt().block_on(async {
            let spec = ProcessSpec::new("sh", ["-c", "echo out; echo err >&2; exit 3"], "/");
            let live = LiveProcess::start(spec, CancellationToken::new()).unwrap();
            let got = live.collect(far(), false).await;
            let ended = got.ended.unwrap();
            assert_eq!(ended.exit_code, Some(3));
            assert_eq!(ended.termination, Termination::Exited);
            assert!(
                got.output.text.contains("out\n") && got.output.text.contains("err\n"),
                "{}",
                got.output.text
            );
        });
    }

    #[test]
    fn an_interrupt_reaches_the_group() {
        rt().block_on(async {
            let spec = ProcessSpec::new("sleep", ["30"], "/");
            let live = LiveProcess::start(spec, CancellationToken::new()).unwrap();
            live.interrupt();
            let ended = live.collect(far(), false).await.ended.unwrap();
            assert_eq!(ended.signal, Some(libc::SIGINT));
            assert_eq!(ended.shell_status(), Some(130));
        });
    }

    #[test]
    fn the_lifetime_bound_kills_it() {
        rt().block_on(async {
            let spec = ProcessSpec::new("sleep", ["30"], "/").timeout(Duration::from_millis(100));
            let live = LiveProcess::start(spec, CancellationToken::new()).unwrap();
            let ended = live.collect(far(), false).await.ended.unwrap();
            assert_eq!(ended.termination, Termination::TimedOut);
        });
    }

    #[test]
    fn pending_output_stays_bounded() {
        rt().block_on(async {
            let spec = ProcessSpec::new(
                "sh",
                [
                    "-c",
                    "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo end",
                ],
                "/",
            )
            .caps(4096, 4096);
            let live = LiveProcess::start(spec, CancellationToken::new()).unwrap();
            let got = live.collect(far(), false).await;
            assert!(got.ended.is_some());
            assert!(got.output.truncated);
            assert!(got.output.text.len() < 4200, "{}", got.output.text.len());
            assert!(got.output.text.ends_with("end\n"));
            assert_eq!(live.total_output(), 3_000_005);
        });
    }

    #[test]
    fn dropping_the_handle_kills_the_group() {
        rt().block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let pidfile = dir.path().join("pid");
            let script = format!("sleep 30 & echo $! > {}; wait", pidfile.display());
            let live = LiveProcess::start(
                ProcessSpec::new("sh", ["-c", script.as_str()], "/"),
                CancellationToken::new(),
            )
            .unwrap();
            let mut pid = String::new();
            for _ in 0..200 {
                pid = std::fs::read_to_string(&pidfile).unwrap_or_default();
                if pid.ends_with('\n') {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            let pid: i32 = pid.trim().parse().unwrap();
            assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
            drop(live);
            let mut gone = false;
            for _ in 0..500 {
                let state =
                    std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                if state.is_empty() || state.contains(") Z") {
                    gone = true;
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            assert!(
                gone,
                "the background sleep {pid} outlived the dropped session"
            );
        });
    }
}
