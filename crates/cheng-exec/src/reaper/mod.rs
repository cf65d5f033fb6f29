//! The per-run reaper: a small process between cheng and each command it runs, so that nothing
//! the command starts outlives its run and nothing cheng holds open reaches it.
//!
//! Killing the command's process group is not enough: `setsid -f`, a double fork or `nohup cmd &`
//! leave the group, and their orphans are re-parented to pid 1, where cheng can neither see nor
//! kill them. cheng cannot simply become a child subreaper itself, because one cheng process runs
//! several commands at once (graph nodes in parallel) and an orphan re-parented to cheng carries
//! nothing that says which run it came from. So each run gets its own subreaper.
//!
//! The reaper is an ordinary program: the helper executable beside `cheng`
//! ([`crate::helper::HELPER_NAME`]) in its reaper mode ([`REAPER_ARG`], see [`program`]),
//! started with `std::process::Command` (which uses `posix_spawn`), in a process group of its
//! own so that a Ctrl-C meant for cheng cannot kill it before it has cleaned up. What it gets:
//!
//! - argv: the program to execute, the working directory, the rlimits and the command's argv;
//!   its environment is the command's;
//! - stdout and stderr: the command's pipes;
//! - stdin: a socket to cheng. cheng sends one message on it carrying the descriptors (the
//!   control pipe, the command's stdin, its cgroup, the declared descriptors with their
//!   numbers); the reaper writes its reports back on it.
//!
//! What it does is described in [`program`]. Its reports are fixed-size records (well below
//! the socket's buffer, so each arrives whole): started (with the command's pid), failed
//! (with the stage and errno), done (with the wait status and the resource usage of
//! everything it reaped).

pub mod program;

use std::ffi::{CString, OsStr};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The argv[1] that selects the reaper mode of the helper (or of `cheng`).
pub const REAPER_ARG: &str = "__reaper";

/// What the command's start failed at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    /// The reaper itself could not be set up (subreaper, descriptors, signalfd).
    Reaper = 1,
    ProcessGroup = 2,
    Cgroup = 3,
    Stdio = 4,
    InheritFd = 5,
    Chdir = 6,
    Rlimit = 7,
    Exec = 8,
}

impl Stage {
    fn from_raw(raw: i64) -> Stage {
        match raw {
            2 => Stage::ProcessGroup,
            3 => Stage::Cgroup,
            4 => Stage::Stdio,
            5 => Stage::InheritFd,
            6 => Stage::Chdir,
            7 => Stage::Rlimit,
            8 => Stage::Exec,
            _ => Stage::Reaper,
        }
    }

    /// What was being done, for the error sentence.
    pub(crate) fn doing(self) -> &'static str {
        match self {
            Stage::Reaper => "setting up its per-run reaper",
            Stage::ProcessGroup => "creating its process group",
            Stage::Cgroup => "joining its cgroup",
            Stage::Stdio => "connecting stdin, stdout and stderr",
            Stage::InheritFd => "passing it a declared descriptor",
            Stage::Chdir => "entering its working directory",
            Stage::Rlimit => "setting its resource limits",
            Stage::Exec => "executing it",
        }
    }
}

const KIND_STARTED: i64 = 1;
const KIND_FAILED: i64 = 2;
const KIND_DONE: i64 = 3;

/// One report from the reaper, sent as [`Report::LEN`] little-endian bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Report {
    kind: i64,
    stage: i64,
    errno: i64,
    pid: i64,
    status: i64,
    has_status: i64,
    user_us: i64,
    sys_us: i64,
    maxrss_kb: i64,
}

impl Report {
    const LEN: usize = 9 * 8;

    fn encode(&self) -> [u8; Report::LEN] {
        let mut out = [0u8; Report::LEN];
        let fields = [
            self.kind,
            self.stage,
            self.errno,
            self.pid,
            self.status,
            self.has_status,
            self.user_us,
            self.sys_us,
            self.maxrss_kb,
        ];
        for (chunk, value) in out.chunks_exact_mut(8).zip(fields) {
            chunk.copy_from_slice(&value.to_le_bytes());
        }
        out
    }

    fn decode(bytes: &[u8; Report::LEN]) -> Report {
        let mut fields = bytes
            .chunks_exact(8)
            .map(|c| i64::from_le_bytes(c.try_into().unwrap_or([0; 8])));
        let mut next = || fields.next().unwrap_or(0);
        Report {
            kind: next(),
            stage: next(),
            errno: next(),
            pid: next(),
            status: next(),
            has_status: next(),
            user_us: next(),
            sys_us: next(),
            maxrss_kb: next(),
        }
    }
}

/// Control bytes cheng sends to the reaper.
pub(crate) const SEND_TERM: u8 = b'T';
pub(crate) const SEND_KILL: u8 = b'K';
/// SIGINT to the group (an interrupt, as Ctrl-C would send; the command may survive it).
pub(crate) const SEND_INT: u8 = b'I';

/// What cheng passes in. Descriptors are cheng's and stay open until [`start`] returns.
pub(crate) struct Plan {
    pub program: CString,
    pub argv: Vec<CString>,
    pub envp: Vec<CString>,
    pub cwd: CString,
    pub rlimits: Vec<(libc::c_int, libc::rlimit)>,
    pub cgroup_fd: Option<RawFd>,
    /// `(descriptor here, number in the child)`; numbers are above 2 and distinct.
    pub inherit: Vec<(RawFd, RawFd)>,
    /// Whether stdin is a pipe (bytes will be fed) or /dev/null.
    pub stdin_pipe: bool,
}

/// A started run: the reaper's pid and cheng's ends of the pipes.
pub(crate) struct Started {
    pub reaper: i32,
    pub control: OwnedFd,
    pub report: OwnedFd,
    pub stdin: Option<OwnedFd>,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
}

/// Why nothing started.
#[derive(Debug)]
pub(crate) enum StartError {
    /// cheng could not start the reaper or make its pipes.
    Supervisor(io::Error),
    /// A stage in the reaper or before exec failed with this errno.
    Stage(Stage, io::Error),
}

/// The final word on a run, from the reaper.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Outcome {
    pub status: Option<libc::c_int>,
    pub usage: Option<crate::ResourceUsage>,
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?)
}

/// The reaper programs to try, in order: the helper next to the running binary (or in its
/// parent directory, where cargo puts binaries for the test harnesses in `deps/`), then the
/// running binary itself when it serves the reaper mode (`cheng` does, through
/// [`run_if_requested`]).
fn reaper_programs() -> io::Result<Vec<PathBuf>> {
    let mut programs: Vec<PathBuf> = crate::helper::helper_or_self().into_iter().collect();
    if let Some(me) = crate::helper::self_if_launcher() {
        if !programs.contains(&me) {
            programs.push(me);
        }
    }
    if programs.is_empty() {
        return Err(io::Error::other(format!(
            "the helper program {} was not found next to the running program; install it \
             beside cheng (cargo install --path crates/cheng-cli installs both)",
            crate::helper::HELPER_NAME
        )));
    }
    Ok(programs)
}

/// Set once a helper ended without a word (one that does not know the reaper mode, such as an
/// older install or a stand-in for the init step): later runs go straight to the next program.
static SKIP_HELPER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Call first thing in `main` of a binary that can serve as the reaper: when argv[1] is
/// [`REAPER_ARG`], runs the reaper and exits.
pub fn run_if_requested() {
    if std::env::args_os().nth(1).as_deref() == Some(OsStr::new(REAPER_ARG)) {
        program::main()
    }
}

/// Starts the reaper, which starts the command; returns once the command has been executed (or
/// failed to be).
pub(crate) fn start(plan: Plan) -> Result<Started, StartError> {
    use std::sync::atomic::Ordering;
    let programs = reaper_programs().map_err(StartError::Supervisor)?;
    let last = programs.len() - 1;
    let skip = usize::from(SKIP_HELPER.load(Ordering::Relaxed) && last > 0);
    for (i, program) in programs.iter().enumerate().skip(skip) {
        match start_with(&plan, program) {
            Err(Silent(_)) if i < last => SKIP_HELPER.store(true, Ordering::Relaxed),
            Err(Silent(e)) => return Err(StartError::Supervisor(e)),
            Err(Spoke(e)) => return Err(e),
            Ok(started) => return Ok(started),
        }
    }
    Err(StartError::Supervisor(io::Error::other(
        "no program could serve as the per-run reaper",
    )))
}

/// How a start with one reaper program failed: the program ended without a report (it may not
/// be a reaper at all), or it reported why.
enum Attempt {
    Silent(io::Error),
    Spoke(StartError),
}
use Attempt::{Silent, Spoke};

fn start_with(plan: &Plan, reaper: &std::path::Path) -> Result<Started, Attempt> {
    let sup = |e: io::Error| Spoke(StartError::Supervisor(e));
    let (stdout_r, stdout_w) = pipe().map_err(sup)?;
    let (stderr_r, stderr_w) = pipe().map_err(sup)?;
    let (stdin_r, stdin_w) = if plan.stdin_pipe {
        let (r, w) = pipe().map_err(sup)?;
        (Some(r), Some(w))
    } else {
        (None, None)
    };
    let (control_r, control_w) = pipe().map_err(sup)?;
    let (report, reaper_end) = rustix::net::socketpair(
        rustix::net::AddressFamily::UNIX,
        rustix::net::SocketType::STREAM,
        rustix::net::SocketFlags::CLOEXEC,
        None,
    )
    .map_err(|e| sup(e.into()))?;

    let mut cmd = Command::new(reaper);
    cmd.arg(REAPER_ARG)
        .arg(OsStr::from_bytes(plan.program.as_bytes()))
        .arg(OsStr::from_bytes(plan.cwd.as_bytes()))
        .arg(plan.rlimits.len().to_string());
    for (resource, limit) in &plan.rlimits {
        cmd.arg(resource.to_string())
            .arg(limit.rlim_cur.to_string())
            .arg(limit.rlim_max.to_string());
    }
    cmd.args(plan.argv.iter().map(|a| OsStr::from_bytes(a.as_bytes())));
    cmd.env_clear();
    for entry in &plan.envp {
        let bytes = entry.as_bytes();
        let split = bytes.iter().position(|&b| b == b'=').unwrap_or(bytes.len());
        let (name, value) = bytes.split_at(split);
        cmd.env(
            OsStr::from_bytes(name),
            OsStr::from_bytes(value.get(1..).unwrap_or(&[])),
        );
    }
    cmd.stdin(Stdio::from(reaper_end))
        .stdout(Stdio::from(stdout_w))
        .stderr(Stdio::from(stderr_w))
        .process_group(0);
    let child = cmd.spawn().map_err(sup)?;
    // `cmd` holds the reaper's ends of the pipes: they must close here.
    drop(cmd);
    let pid = child.id() as i32;

    // The descriptors the reaper needs, in the order `program::receive` expects.
    let mut header = vec![
        u8::from(stdin_r.is_some()),
        u8::from(plan.cgroup_fd.is_some()),
    ];
    let mut fds: Vec<BorrowedFd<'_>> = vec![control_r.as_fd()];
    if let Some(fd) = &stdin_r {
        fds.push(fd.as_fd());
    }
    let borrowed = |fd: RawFd| {
        // SAFETY: the plan's descriptors stay open until `start` returns (see `Plan`).
        unsafe { BorrowedFd::borrow_raw(fd) }
    };
    if let Some(fd) = plan.cgroup_fd {
        fds.push(borrowed(fd));
    }
    for (fd, to) in &plan.inherit {
        fds.push(borrowed(*fd));
        header.extend_from_slice(&to.to_le_bytes());
    }
    let sent = send_descriptors(&report, &header, &fds);
    drop((stdin_r, control_r));

    let first = match sent {
        Ok(()) => read_report_blocking(&report),
        Err(_) => None,
    };
    match first {
        Some(r) if r.kind == KIND_STARTED => Ok(Started {
            reaper: pid,
            control: control_w,
            report,
            stdin: stdin_w,
            stdout: stdout_r,
            stderr: stderr_r,
        }),
        other => {
            // The reaper has exited or is about to (it has no children left), or never got
            // its descriptors: closing the control pipe and the socket ends it; reap it.
            drop((control_w, report));
            reap_blocking(pid);
            match other {
                Some(r) if r.kind == KIND_FAILED => Err(Spoke(StartError::Stage(
                    Stage::from_raw(r.stage),
                    io::Error::from_raw_os_error(r.errno as i32),
                ))),
                _ => Err(Silent(match sent {
                    Err(e) => e,
                    Ok(()) => {
                        io::Error::other("the per-run reaper ended before starting the command")
                    }
                })),
            }
        }
    }
}

/// One message: `header` with `fds` attached.
fn send_descriptors(socket: &OwnedFd, header: &[u8], fds: &[BorrowedFd<'_>]) -> io::Result<()> {
    use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
    let mut space =
        vec![std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(fds.len()))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !control.push(SendAncillaryMessage::ScmRights(fds)) {
        return Err(io::Error::other(
            "too many descriptors for the per-run reaper",
        ));
    }
    let len = (header.len() as u32).to_le_bytes();
    let mut message = len.to_vec();
    message.extend_from_slice(header);
    let sent = rustix::net::sendmsg(
        socket,
        &[io::IoSlice::new(&message)],
        &mut control,
        SendFlags::NOSIGNAL,
    )?;
    if sent != message.len() {
        return Err(io::Error::other("short write to the per-run reaper"));
    }
    Ok(())
}

/// Reads the reaper's final report (after it has exited, so it is in the socket or never will be).
pub(crate) fn read_outcome(report: &OwnedFd) -> Outcome {
    match read_report_blocking(report) {
        Some(r) if r.kind == KIND_DONE => Outcome {
            status: (r.has_status != 0).then_some(r.status as libc::c_int),
            usage: Some(crate::ResourceUsage {
                peak_rss_kb: r.maxrss_kb.max(0) as u64,
                cpu_user_ms: (r.user_us.max(0) as u64) / 1000,
                cpu_sys_ms: (r.sys_us.max(0) as u64) / 1000,
            }),
        },
        _ => Outcome {
            status: None,
            usage: None,
        },
    }
}

/// Sends a control byte; a reaper that is already gone is fine.
pub(crate) fn send(control: &OwnedFd, byte: u8) {
    // A closed reader is EPIPE (the Rust runtime ignores SIGPIPE).
    let _ = rustix::io::write(control, &[byte]);
}

fn read_report_blocking(fd: &OwnedFd) -> Option<Report> {
    let mut buf = [0u8; Report::LEN];
    let mut got = 0;
    while got < buf.len() {
        match rustix::io::read(fd, &mut buf[got..]) {
            Ok(0) => return None,
            Ok(n) => got += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return None,
        }
    }
    Some(Report::decode(&buf))
}

/// Waits for the reaper to exit and reaps it.
pub(crate) fn reap_blocking(pid: i32) {
    let Some(pid) = rustix::process::Pid::from_raw(pid) else {
        return;
    };
    while let Err(rustix::io::Errno::INTR) =
        rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty())
    {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_survives_encoding() {
        let report = Report {
            kind: KIND_DONE,
            stage: 3,
            errno: -4,
            pid: 1234,
            status: 9,
            has_status: 1,
            user_us: i64::MAX,
            sys_us: 7,
            maxrss_kb: 8,
        };
        assert_eq!(Report::decode(&report.encode()), report);
    }
}
