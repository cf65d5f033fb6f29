//! Starting a child from argv and supervising it to the end.
//!
//! - argv only: the program is looked up on the child's own `PATH` (absolute entries only, so a
//!   file in the workspace can never shadow a system program) and executed directly; a shell
//!   runs only when the caller builds `sh -c` itself.
//! - The environment is cleared and set to exactly `spec.env`; stdin is /dev/null unless bytes
//!   are given; the child leads its own process group.
//! - Only stdin, stdout, stderr and `spec.inherit_fds` (at their declared numbers) reach the
//!   child: every other descriptor of cheng's, with or without `FD_CLOEXEC`, is closed first.
//! - Every child runs under its own per-run reaper ([`crate::reaper`]), a child subreaper that
//!   kills and reaps everything the command started (even what left its process group or
//!   session) when the command ends, times out or is cancelled, and reports the command's wait
//!   status and the resource usage of all it reaped. Nothing a command starts outlives its run.
//! - rlimits are applied, and the cgroup v2 group is joined, between clone and exec (only
//!   system calls run there).
//! - Dropping the future returned by [`run`] closes the reaper's control pipe: it kills
//!   everything and is reaped in the background, so an abandoned run leaves nothing behind.

use crate::capture::{self, Live, Stream};
use crate::reaper::{self, Stage, StartError};
use crate::{
    ProcessOutput, ProcessSpec, RawOutput, ResourceUsage, Rlimit, RlimitResource, Termination,
};
use cheng_io::output::OutputStream;
use cheng_io::text::HeadTail;
use std::ffi::{CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio::io::unix::AsyncFd;
use tokio_util::sync::CancellationToken;

/// How long output is still drained after the child's process group is gone, in case a process
/// that left the group (setsid) holds the pipes open.
pub(crate) const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(200);

/// Runs `spec` to completion, timeout or cancellation. Never panics on child behaviour; every
/// failure is described in the returned [`ProcessOutput`].
///
/// Must be called inside a tokio runtime with I/O and time enabled.
pub async fn run(spec: ProcessSpec, cancel: &CancellationToken) -> ProcessOutput {
    run_capturing(spec, cancel, false).await.output
}

/// Like [`run`], and also returns the first `spec.stdout_cap` bytes of stdout exactly as the
/// child wrote them ([`RawOutput::stdout_bytes`]), for output that is not text: NUL-framed
/// records, paths that are not UTF-8. `output.stdout` is the same bounded text [`run`] gives.
/// Costs up to twice `stdout_cap` of memory.
pub async fn run_with_stdout_bytes(spec: ProcessSpec, cancel: &CancellationToken) -> RawOutput {
    run_capturing(spec, cancel, true).await
}

async fn run_capturing(
    spec: ProcessSpec,
    cancel: &CancellationToken,
    keep_bytes: bool,
) -> RawOutput {
    let started = Instant::now();
    if cancel.is_cancelled() {
        return not_started(&spec, Termination::Cancelled, None, started).into();
    }
    let mut child = match start(&spec) {
        Ok(child) => child,
        Err(message) => {
            return not_started(&spec, Termination::SpawnFailed, Some(message), started).into()
        }
    };

    let stop = CancellationToken::new();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let stdin = child.stdin.take();
    let streams = async {
        let (out, err, ()) = tokio::join!(
            async {
                let live = Live::new(spec.output.clone(), OutputStream::Stdout);
                if keep_bytes {
                    capture::drain_with_bytes_live(stdout, spec.stdout_cap, live, &stop).await
                } else {
                    (
                        capture::drain_live(stdout, spec.stdout_cap, live, &stop).await,
                        Vec::new(),
                    )
                }
            },
            capture::drain_live(
                stderr,
                spec.stderr_cap,
                Live::new(spec.output.clone(), OutputStream::Stderr),
                &stop
            ),
            capture::feed(stdin, spec.stdin.clone(), &stop),
        );
        (out, err)
    };
    tokio::pin!(streams);

    let supervise = supervise(&mut child, &spec, cancel);
    tokio::pin!(supervise);
    let mut drained: Option<((HeadTail, Vec<u8>), HeadTail)> = None;
    let (termination, status, usage) = loop {
        tokio::select! {
            outcome = &mut supervise => break outcome,
            streams = &mut streams, if drained.is_none() => drained = Some(streams),
        }
    };
    let duration = started.elapsed();
    let (out, err) = match drained {
        Some(done) => done,
        None => {
            tokio::select! {
                done = &mut streams => done,
                _ = tokio::time::sleep(DRAIN_AFTER_EXIT) => {
                    stop.cancel();
                    streams.await
                }
            }
        }
    };

    let ((out, stdout_bytes), err) = (out, err);
    let (exit_code, signal, termination) = interpret(status, termination);
    let output = ProcessOutput {
        exit_code,
        termination,
        signal,
        duration,
        stdout: out.finish(),
        stderr: err.finish(),
        spawn_error: None,
        usage,
    };
    RawOutput {
        output,
        stdout_bytes,
    }
}

/// Waits for the child, enforcing timeout and cancellation, kills what is left of its group and
/// reaps it. Returns why it ended early (if it did), the wait status and the resource usage.
async fn supervise(
    child: &mut Child,
    spec: &ProcessSpec,
    cancel: &CancellationToken,
) -> (
    Option<Termination>,
    Option<libc::c_int>,
    Option<ResourceUsage>,
) {
    let early = tokio::select! {
        biased;
        _ = child.exited() => None,
        _ = tokio::time::sleep(spec.timeout) => Some(Termination::TimedOut),
        _ = cancel.cancelled() => Some(Termination::Cancelled),
    };
    if early.is_some() {
        child.signal(reaper::SEND_TERM);
        tokio::select! {
            biased;
            _ = child.exited() => {}
            _ = tokio::time::sleep(spec.kill_grace) => {}
        }
        child.signal(reaper::SEND_KILL);
    }
    // The reaper exits once the command has ended and everything it started is gone.
    child.exited().await;
    let (status, usage) = child.reap().await;
    (early, status, usage)
}

/// `(exit_code, signal, termination)` from a wait status and the early-termination reason.
pub(crate) fn interpret(
    status: Option<libc::c_int>,
    early: Option<Termination>,
) -> (Option<i32>, Option<i32>, Termination) {
    let (code, signal) = match status {
        Some(s) if libc::WIFEXITED(s) => (Some(libc::WEXITSTATUS(s)), None),
        Some(s) if libc::WIFSIGNALED(s) => (None, Some(libc::WTERMSIG(s))),
        _ => (None, None),
    };
    let termination = match early {
        Some(reason) => reason,
        None if signal.is_some() => Termination::Signalled,
        None => Termination::Exited,
    };
    (code, signal, termination)
}

fn not_started(
    spec: &ProcessSpec,
    termination: Termination,
    message: Option<String>,
    started: Instant,
) -> ProcessOutput {
    ProcessOutput {
        exit_code: None,
        termination,
        signal: None,
        duration: started.elapsed(),
        stdout: HeadTail::new(spec.stdout_cap).finish(),
        stderr: HeadTail::new(spec.stderr_cap).finish(),
        spawn_error: message,
        usage: None,
    }
}

/// A started run: the per-run reaper ([`crate::reaper`]) that this module alone reaps, and
/// cheng's ends of the command's pipes.
pub(crate) struct Child {
    /// The reaper's pid (the command is its child, not ours).
    pid: i32,
    /// Readable once the reaper exits; `None` on kernels without pidfd (then we poll).
    pidfd: Option<AsyncFd<OwnedFd>>,
    reaped: bool,
    /// Closing it tells the reaper to kill everything and finish.
    control: Option<OwnedFd>,
    report: OwnedFd,
    pub(crate) stdin: Option<OwnedFd>,
    pub(crate) stdout: Option<Stream>,
    pub(crate) stderr: Option<Stream>,
}

/// Spawns the child through its reaper; the error is a sentence naming the program.
pub(crate) fn start(spec: &ProcessSpec) -> Result<Child, String> {
    let shown = spec.program.to_string_lossy().into_owned();
    let path_var = spec
        .env
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_os_str());
    if !spec.cwd.is_dir() {
        return Err(format!(
            "working directory {} does not exist or is not a directory",
            spec.cwd.display()
        ));
    }
    let program = resolve_program(&spec.program, path_var, &spec.cwd)?;
    let inherit: Vec<(RawFd, RawFd)> = spec
        .inherit_fds
        .iter()
        .map(|(fd, to)| (fd.as_raw_fd(), *to))
        .collect();
    check_inherit(&inherit)?;
    let plan = plan(spec, &program, inherit)?;

    let started = reaper::start(plan).map_err(|e| match e {
        StartError::Stage(Stage::Exec, err) => describe_spawn_error(&shown, &program, &err),
        StartError::Stage(stage, err) => {
            format!(
                "program {shown:?} ({}) could not be started: {} failed: {err}",
                program.display(),
                stage.doing()
            )
        }
        StartError::Supervisor(err) => format!(
            "program {shown:?} ({}) could not be started: cannot start its per-run reaper: {err}",
            program.display()
        ),
    })?;
    // From here on the reaper runs: any failure must still end and reap it, which `Child`'s
    // Drop does.
    let mut child = Child {
        pid: started.reaper,
        pidfd: open_pidfd(started.reaper),
        reaped: false,
        control: Some(started.control),
        report: started.report,
        stdin: started.stdin,
        stdout: None,
        stderr: None,
    };
    child.stdout = Some(
        Stream::new(started.stdout)
            .map_err(|e| format!("cannot watch stdout of {shown:?}: {e}"))?,
    );
    child.stderr = Some(
        Stream::new(started.stderr)
            .map_err(|e| format!("cannot watch stderr of {shown:?}: {e}"))?,
    );
    Ok(child)
}

/// Declared descriptors: numbers above 2, each used once.
fn check_inherit(inherit: &[(RawFd, RawFd)]) -> Result<(), String> {
    for (i, (_, to)) in inherit.iter().enumerate() {
        if *to < 3 {
            return Err(format!("inherit_fds: descriptor number {to} is stdin, stdout or stderr (or negative); use 3 or above"));
        }
        if inherit[..i].iter().any(|(_, other)| other == to) {
            return Err(format!(
                "inherit_fds: descriptor number {to} is given twice; each number may be used once"
            ));
        }
    }
    Ok(())
}

/// Everything the reaper needs, as C strings, built before it starts.
fn plan(
    spec: &ProcessSpec,
    program: &Path,
    inherit: Vec<(RawFd, RawFd)>,
) -> Result<reaper::Plan, String> {
    let c = |what: &str, bytes: &[u8]| {
        CString::new(bytes).map_err(|_| {
            format!(
                "{what} {:?} contains a NUL byte",
                String::from_utf8_lossy(bytes)
            )
        })
    };
    let mut argv = vec![c("program", spec.program.as_bytes())?];
    for arg in &spec.args {
        argv.push(c("argument", arg.as_bytes())?);
    }
    let mut envp = Vec::with_capacity(spec.env.len());
    for (name, value) in &spec.env {
        if name.is_empty() || name.as_bytes().contains(&b'=') {
            return Err(format!(
                "environment variable name {:?} is empty or contains '='",
                name.to_string_lossy()
            ));
        }
        let mut entry = name.as_bytes().to_vec();
        entry.push(b'=');
        entry.extend_from_slice(value.as_bytes());
        envp.push(c("environment variable", &entry)?);
    }
    Ok(reaper::Plan {
        program: c("program path", program.as_os_str().as_bytes())?,
        argv,
        envp,
        cwd: c("working directory", spec.cwd.as_os_str().as_bytes())?,
        rlimits: spec
            .rlimits
            .iter()
            .map(|l| {
                let (resource, limit) = raw_rlimit(l);
                (resource as libc::c_int, limit)
            })
            .collect(),
        // The descriptors stay open: `spec` (which owns them) outlives the spawn, and the
        // reaper takes its own copies when it starts.
        cgroup_fd: spec.cgroup_procs.as_ref().map(|fd| fd.as_raw_fd()),
        inherit,
        stdin_pipe: spec.stdin.is_some(),
    })
}

impl Child {
    /// Resolves once the reaper has exited: the command has ended and everything it started
    /// has been killed and reaped. (The reaper stays a zombie until [`Child::reap`].)
    pub(crate) async fn exited(&self) {
        if self.reaped {
            return;
        }
        if let Some(pidfd) = &self.pidfd {
            if pidfd.readable().await.is_ok() {
                return;
            }
        }
        // No pidfd: poll without reaping, backing off to 20 ms.
        let mut delay = Duration::from_micros(200);
        while !self.has_exited() {
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_millis(20));
        }
    }

    /// Whether the reaper has exited, without reaping it.
    fn has_exited(&self) -> bool {
        use rustix::process::{waitid, WaitId, WaitIdOptions};
        let Some(pid) = rustix::process::Pid::from_raw(self.pid) else {
            return true;
        };
        // WNOWAIT only inspects our own child; an error (ECHILD) counts as gone.
        !matches!(
            waitid(
                WaitId::Pid(pid),
                WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT,
            ),
            Ok(None)
        )
    }

    /// A second handle on the control pipe, so the owner of a long-lived process can ask for
    /// SIGKILL synchronously (from a `Drop`) while a task supervises the child.
    pub(crate) fn control_copy(&self) -> Option<OwnedFd> {
        self.control.as_ref().and_then(|c| c.try_clone().ok())
    }

    /// Asks the reaper to send `SIGTERM` ([`reaper::SEND_TERM`]) or `SIGKILL` to the command's group.
    pub(crate) fn signal(&self, byte: u8) {
        if let Some(control) = &self.control {
            reaper::send(control, byte);
        }
    }

    /// Reaps the reaper and returns the command's wait status and the resource usage of
    /// everything the run reaped. Called once the reaper has exited.
    pub(crate) async fn reap(&mut self) -> (Option<libc::c_int>, Option<ResourceUsage>) {
        use rustix::process::{waitpid, Pid, WaitOptions};
        while let Some(pid) = Pid::from_raw(self.pid) {
            match waitpid(Some(pid), WaitOptions::NOHANG) {
                Ok(Some(_)) => break,
                Err(rustix::io::Errno::INTR) => continue,
                // ECHILD: somebody else reaped it; the report may still be in the socket.
                Err(_) => break,
                // Exited per the pidfd but not yet waitable: a tiny window; yield and retry.
                Ok(None) => tokio::time::sleep(Duration::from_micros(100)).await,
            }
        }
        self.reaped = true;
        self.control = None;
        let outcome = reaper::read_outcome(&self.report);
        (outcome.status, outcome.usage)
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if self.reaped {
            return;
        }
        // The run was abandoned (its future dropped): closing the control pipe makes the reaper
        // SIGKILL the command and everything it started, reap them and exit. Reap it off-thread.
        self.control = None;
        let pid = self.pid;
        let reaped = rustix::process::Pid::from_raw(pid)
            .map(|p| rustix::process::waitpid(Some(p), rustix::process::WaitOptions::NOHANG));
        if matches!(reaped, Some(Ok(Some(_)))) {
            return;
        }
        let _ = std::thread::Builder::new()
            .name("cheng-exec-reap".into())
            .spawn(move || reaper::reap_blocking(pid));
    }
}

fn open_pidfd(pid: i32) -> Option<AsyncFd<OwnedFd>> {
    let fd = rustix::process::pidfd_open(
        rustix::process::Pid::from_raw(pid)?,
        rustix::process::PidfdFlags::empty(),
    )
    .ok()?;
    // SAFETY: the AsyncFd owns the descriptor, so it stays open for as long as it is registered.
    unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }.ok()
}

fn raw_rlimit(limit: &Rlimit) -> (libc::__rlimit_resource_t, libc::rlimit) {
    let resource = match limit.resource {
        RlimitResource::AddressSpace => libc::RLIMIT_AS,
        RlimitResource::Nproc => libc::RLIMIT_NPROC,
        RlimitResource::CpuSeconds => libc::RLIMIT_CPU,
        RlimitResource::FileSize => libc::RLIMIT_FSIZE,
        RlimitResource::OpenFiles => libc::RLIMIT_NOFILE,
        RlimitResource::Core => libc::RLIMIT_CORE,
    };
    let value = limit.value as libc::rlim_t;
    (
        resource,
        libc::rlimit {
            rlim_cur: value,
            rlim_max: value,
        },
    )
}

/// Finds the file to execute: a path containing `/` is taken relative to `cwd`; a bare name is
/// searched in the absolute directories of `path_var`.
pub fn resolve_program(
    program: &OsStr,
    path_var: Option<&OsStr>,
    cwd: &Path,
) -> Result<PathBuf, String> {
    let shown = program.to_string_lossy();
    if program.is_empty() {
        return Err("the program name is empty".to_string());
    }
    if program.as_bytes().contains(&0) {
        return Err(format!("program {shown:?} contains a NUL byte"));
    }
    if program.as_bytes().contains(&b'/') {
        let path = cwd.join(program);
        return match std::fs::metadata(&path) {
            Ok(meta) if meta.is_file() => Ok(path),
            Ok(_) => Err(format!("program {shown:?} is not a file")),
            Err(_) => Err(format!(
                "program {shown:?} does not exist (looked in {})",
                cwd.display()
            )),
        };
    }
    let path_var = path_var.unwrap_or_default();
    let mut not_executable = None;
    for dir in std::env::split_paths(path_var).filter(|d| d.is_absolute()) {
        let candidate = dir.join(program);
        match std::fs::metadata(&candidate) {
            Ok(meta) if meta.is_file() && meta.permissions().mode() & 0o111 != 0 => {
                return Ok(candidate)
            }
            Ok(meta) if meta.is_file() => not_executable = not_executable.or(Some(candidate)),
            _ => {}
        }
    }
    let path_text = path_var.to_string_lossy();
    match not_executable {
        Some(found) => Err(format!(
            "program {shown:?} was found at {} but is not executable",
            found.display()
        )),
        None => Err(format!(
            "program {shown:?} was not found on PATH ({path_text}); check the name or install it"
        )),
    }
}

fn describe_spawn_error(shown: &str, program: &Path, e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::PermissionDenied => format!("program {shown:?} ({}) is not executable: {e}", program.display()),
        io::ErrorKind::NotFound => format!(
            "program {shown:?} ({}) could not be executed: {e} (a script's #! interpreter may be missing)",
            program.display()
        ),
        _ => format!("program {shown:?} ({}) could not be started: {e}", program.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_names_are_searched_on_absolute_path_entries_only() {
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("true");
        std::fs::write(&fake, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        // A relative PATH entry pointing at the working directory is ignored.
        let found = resolve_program(
            OsStr::new("true"),
            Some(OsStr::new(".:/usr/bin:/bin")),
            dir.path(),
        )
        .unwrap();
        assert_ne!(found, fake);
        assert!(found.is_absolute());
    }

    #[test]
    fn missing_programs_name_the_program_and_path() {
        let err = resolve_program(
            OsStr::new("no-such-prog-xyz"),
            Some(OsStr::new("/usr/bin")),
            Path::new("/"),
        )
        .unwrap_err();
        assert!(
            err.contains("\"no-such-prog-xyz\" was not found on PATH (/usr/bin)"),
            "{err}"
        );
    }

    #[test]
    fn non_executable_files_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("tool"), "x").unwrap();
        let path = dir.path().to_str().unwrap();
        let err = resolve_program(OsStr::new("tool"), Some(OsStr::new(path)), Path::new("/"))
            .unwrap_err();
        assert!(err.contains("not executable"), "{err}");
    }

    #[test]
    fn paths_are_relative_to_the_working_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("script"), "x").unwrap();
        assert_eq!(
            resolve_program(OsStr::new("./script"), None, dir.path()).unwrap(),
            dir.path().join("./script")
        );
        assert!(resolve_program(OsStr::new("./nope"), None, dir.path())
            .unwrap_err()
            .contains("does not exist"));
        assert!(resolve_program(OsStr::new(""), None, dir.path()).is_err());
    }

    #[test]
    fn wait_statuses_are_interpreted() {
        assert_eq!(
            interpret(Some(3 << 8), None),
            (Some(3), None, Termination::Exited)
        );
        assert_eq!(
            interpret(Some(libc::SIGKILL), None),
            (None, Some(9), Termination::Signalled)
        );
        assert_eq!(
            interpret(Some(libc::SIGTERM), Some(Termination::TimedOut)),
            (None, Some(15), Termination::TimedOut)
        );
    }
}
