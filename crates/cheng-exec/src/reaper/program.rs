//! The reaper process itself (the helper's reaper mode; see [`super`] for how cheng starts it).
//!
//! 1. It blocks every signal (it reads SIGCHLD from a signalfd), receives its descriptors from
//!    cheng, makes itself a child subreaper (`PR_SET_CHILD_SUBREAPER`), moves what it keeps
//!    above the numbers the command will take and closes every other descriptor it has.
//! 2. It puts the declared descriptors at their numbers, enters the working directory and
//!    starts the command with `std::process::Command`: a new process group, the command's
//!    stdio, and (between fork and exec) its cgroup and rlimits. Which step failed reaches
//!    cheng with its errno.
//! 3. While the command runs, orphans that end are reaped as they exit. cheng asks for SIGTERM,
//!    SIGINT or SIGKILL to the group through the control pipe; the end of that pipe (cheng
//!    gone, or the run abandoned) means kill everything now.
//! 4. When the command exits: SIGKILL to its group while the leader is still an unreaped zombie
//!    (so the group id cannot have been reused), reap it, then SIGKILL every remaining child of
//!    the reaper and reap it, until it has no children left. Orphans come back to the reaper
//!    (the nearest subreaper) as their parents die, so this reaches every descendant, including
//!    those that left the group or the session.
//! 5. It reports the command's wait status and the resource usage of everything it reaped,
//!    and exits.

use super::{Report, Stage, KIND_DONE, KIND_FAILED, KIND_STARTED};
use super::{SEND_INT, SEND_KILL, SEND_TERM};
use crate::fds;
use rustix::io::{Errno, FdFlags};
use rustix::process::{Pid, Resource, Signal, WaitOptions};
use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

/// A failure to report: the stage and the errno.
type Failure = (Stage, i32);

fn errno(e: impl Into<std::io::Error>) -> i32 {
    e.into().raw_os_error().unwrap_or(libc::EIO)
}

/// The reaper mode's `main`: argv is `<binary> __reaper PROGRAM CWD N (RESOURCE CUR MAX)*N
/// ARGV...`, stdin the socket to cheng. Never returns.
pub fn main() -> ! {
    let sigchld = match block_signals_and_watch_sigchld() {
        Ok(fd) => fd,
        Err(e) => {
            eprintln!("cheng reaper: cannot watch SIGCHLD: {e}");
            std::process::exit(126)
        }
    };
    let mut report = match rustix::io::fcntl_dupfd_cloexec(std::io::stdin().as_fd(), 3) {
        Ok(fd) => fd,
        Err(e) => {
            eprintln!("cheng reaper: stdin must be the socket to cheng: {e}");
            std::process::exit(126)
        }
    };
    let args: Vec<OsString> = std::env::args_os().skip(2).collect();
    match run(&args, &mut report, sigchld) {
        Ok(done) => write_report(&report, &done),
        Err((stage, errno)) => write_report(
            &report,
            &Report {
                kind: KIND_FAILED,
                stage: stage as i64,
                errno: errno as i64,
                ..Report::default()
            },
        ),
    }
    std::process::exit(0)
}

fn write_report(socket: &OwnedFd, report: &Report) {
    // cheng may be gone; there is nobody else to tell.
    let _ = rustix::net::send(socket, &report.encode(), rustix::net::SendFlags::NOSIGNAL);
}

/// What the argv says.
struct Args<'a> {
    program: &'a OsStr,
    cwd: &'a OsStr,
    rlimits: Vec<(Resource, rustix::process::Rlimit)>,
    argv: &'a [OsString],
}

fn parse(args: &[OsString]) -> Option<Args<'_>> {
    let number = |s: &OsString| s.to_str()?.parse::<u64>().ok();
    let program = args.first()?;
    let cwd = args.get(1)?;
    let count = number(args.get(2)?)? as usize;
    let mut rlimits = Vec::new();
    for i in 0..count {
        let at = 3 + 3 * i;
        let resource = resource(number(args.get(at)?)? as libc::c_int)?;
        let limit = |v: u64| (v != libc::RLIM_INFINITY).then_some(v);
        rlimits.push((
            resource,
            rustix::process::Rlimit {
                current: limit(number(args.get(at + 1)?)?),
                maximum: limit(number(args.get(at + 2)?)?),
            },
        ));
    }
    let argv = args.get(3 + 3 * count..)?;
    (!argv.is_empty()).then_some(Args {
        program,
        cwd,
        rlimits,
        argv,
    })
}

fn resource(raw: libc::c_int) -> Option<Resource> {
    Some(match raw as libc::__rlimit_resource_t {
        libc::RLIMIT_AS => Resource::As,
        libc::RLIMIT_NPROC => Resource::Nproc,
        libc::RLIMIT_CPU => Resource::Cpu,
        libc::RLIMIT_FSIZE => Resource::Fsize,
        libc::RLIMIT_NOFILE => Resource::Nofile,
        libc::RLIMIT_CORE => Resource::Core,
        _ => return None,
    })
}

/// Descriptors from cheng, in the order [`super::start`] sends them.
struct Received {
    control: OwnedFd,
    stdin: Option<OwnedFd>,
    cgroup: Option<OwnedFd>,
    inherit: Vec<(OwnedFd, RawFd)>,
}

fn receive(socket: &OwnedFd) -> Result<Received, Failure> {
    use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
    let bad = (Stage::Reaper, libc::EPROTO);
    let mut buf = vec![0u8; 4 + 2 + 4 * 253];
    let mut space = vec![std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(253))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let got = rustix::net::recvmsg(
        socket,
        &mut [std::io::IoSliceMut::new(&mut buf)],
        &mut control,
        RecvFlags::CMSG_CLOEXEC,
    )
    .map_err(|e| (Stage::Reaper, errno(e)))?;
    let mut fds: Vec<OwnedFd> = Vec::new();
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(received) = message {
            fds.extend(received);
        }
    }
    let message = buf.get(..got.bytes).ok_or(bad)?;
    let (len, header) = message.split_at_checked(4).ok_or(bad)?;
    let len = u32::from_le_bytes(len.try_into().map_err(|_| bad)?) as usize;
    if header.len() != len || len < 2 {
        return Err(bad);
    }
    let (flags, targets) = header.split_at(2);
    let mut fds = fds.into_iter();
    let control_fd = fds.next().ok_or(bad)?;
    let stdin = if flags[0] != 0 {
        Some(fds.next().ok_or(bad)?)
    } else {
        None
    };
    let cgroup = if flags[1] != 0 {
        Some(fds.next().ok_or(bad)?)
    } else {
        None
    };
    let mut inherit = Vec::new();
    for target in targets.chunks_exact(4) {
        let to = RawFd::from_le_bytes(target.try_into().map_err(|_| bad)?);
        inherit.push((fds.next().ok_or(bad)?, to));
    }
    Ok(Received {
        control: control_fd,
        stdin,
        cgroup,
        inherit,
    })
}

/// `fd` moved to `base` or above (close-on-exec); the original is closed.
fn above(fd: impl AsFd, base: RawFd) -> Result<OwnedFd, Failure> {
    rustix::io::fcntl_dupfd_cloexec(fd, base).map_err(|e| (Stage::Reaper, errno(e)))
}

fn run(args: &[OsString], report: &mut OwnedFd, sigchld: OwnedFd) -> Result<Report, Failure> {
    let args = parse(args).ok_or((Stage::Reaper, libc::EINVAL))?;
    let received = receive(report)?;
    rustix::process::set_child_subreaper(Some(rustix::process::getpid()))
        .map_err(|e| (Stage::Reaper, errno(e)))?;

    // Everything kept moves above every number the command will take; the rest is closed.
    let base = received
        .inherit
        .iter()
        .fold(3, |base, (_, to)| base.max(to.saturating_add(1)));
    // Replaced in place: `main` writes the last report through it.
    *report = above(&*report, base)?;
    let sigchld = above(sigchld, base)?;
    let control = above(&received.control, base)?;
    let stdout = above(std::io::stdout(), base)?;
    let stderr = above(std::io::stderr(), base)?;
    let stdin = match &received.stdin {
        Some(fd) => above(fd, base)?,
        None => above(
            std::fs::File::open("/dev/null").map_err(|e| (Stage::Stdio, errno(e)))?,
            base,
        )?,
    };
    let cgroup = match &received.cgroup {
        Some(fd) => Some(above(fd, base)?),
        None => None,
    };
    let mut inherit = Vec::with_capacity(received.inherit.len());
    for (fd, to) in &received.inherit {
        inherit.push((above(fd, base)?, *to));
    }
    drop(received);
    let mut keep: Vec<RawFd> = [&*report, &sigchld, &control, &stdout, &stderr, &stdin]
        .iter()
        .map(|fd| fd.as_raw_fd())
        .chain(cgroup.iter().map(|fd| fd.as_raw_fd()))
        .chain(inherit.iter().map(|(fd, _)| fd.as_raw_fd()))
        .collect();
    fds::close_all_except(&mut keep);
    // Our own stdio must not hold the command's pipes open once it is done.
    let null = std::fs::File::open("/dev/null").map_err(|e| (Stage::Stdio, errno(e)))?;
    for dup in [
        rustix::stdio::dup2_stdin,
        rustix::stdio::dup2_stdout,
        rustix::stdio::dup2_stderr,
    ] {
        dup(&null).map_err(|e| (Stage::Stdio, errno(e)))?;
    }
    drop(null);

    // The declared descriptors at their numbers: everything from 3 to `base` is free now.
    let mut placed = Vec::with_capacity(inherit.len());
    for (fd, to) in &inherit {
        let at =
            rustix::io::fcntl_dupfd_cloexec(fd, *to).map_err(|e| (Stage::InheritFd, errno(e)))?;
        if at.as_raw_fd() != *to {
            return Err((Stage::InheritFd, libc::EBUSY));
        }
        rustix::io::fcntl_setfd(&at, FdFlags::empty()).map_err(|e| (Stage::InheritFd, errno(e)))?;
        placed.push(at);
    }
    drop(inherit);
    std::env::set_current_dir(args.cwd).map_err(|e| (Stage::Chdir, errno(e)))?;

    let pid = spawn(&args, stdin, stdout, stderr, cgroup)?;
    drop(placed);
    write_report(
        report,
        &Report {
            kind: KIND_STARTED,
            pid: pid.as_raw_nonzero().get() as i64,
            ..Report::default()
        },
    );

    let status = supervise(pid, &control, &sigchld);
    kill_all_children();
    let usage = children_usage();
    Ok(Report {
        kind: KIND_DONE,
        pid: pid.as_raw_nonzero().get() as i64,
        status: status as i64,
        has_status: 1,
        ..usage
    })
}

/// Starts the command. Between fork and exec it writes each step's [`Stage`] to a pipe before
/// taking it, so a failure names the step.
fn spawn(
    args: &Args<'_>,
    stdin: OwnedFd,
    stdout: OwnedFd,
    stderr: OwnedFd,
    cgroup: Option<OwnedFd>,
) -> Result<Pid, Failure> {
    let (stage_r, stage_w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
        .map_err(|e| (Stage::Reaper, errno(e)))?;
    let (argv0, rest) = args.argv.split_first().ok_or((Stage::Exec, libc::EINVAL))?;
    let mut cmd = Command::new(args.program);
    cmd.arg0(argv0)
        .args(rest)
        .stdin(Stdio::from(stdin))
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::from(stderr))
        .process_group(0);
    let rlimits = args.rlimits.clone();
    let step = move |stage: Stage| {
        let _ = rustix::io::write(&stage_w, &[stage as u8]);
    };
    let pre_exec = move || -> std::io::Result<()> {
        if let Some(fd) = &cgroup {
            step(Stage::Cgroup);
            // "0" moves the writing process into the cgroup of that cgroup.procs.
            if rustix::io::write(fd, b"0")? != 1 {
                return Err(std::io::Error::from_raw_os_error(libc::EIO));
            }
        }
        step(Stage::Rlimit);
        for (resource, limit) in &rlimits {
            rustix::process::setrlimit(*resource, *limit)?;
        }
        // The reaper blocks every signal; the command starts with none blocked.
        // SAFETY: an empty sigset_t (plain data, filled by sigemptyset) for this process's own
        // mask; both calls are async-signal-safe.
        unsafe {
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        }
        step(Stage::Exec);
        Ok(())
    };
    // SAFETY: the closure makes only system calls (write, setrlimit) on memory prepared before
    // the fork: no allocation, no locks. The reaper is single-threaded anyway.
    unsafe { cmd.pre_exec(pre_exec) };
    let spawned = cmd.spawn();
    // The parent's copies of the write end and of the command's stdio go now.
    drop(cmd);
    match spawned {
        Ok(child) => Pid::from_raw(child.id() as i32).ok_or((Stage::Reaper, libc::ESRCH)),
        Err(e) => {
            let mut stages = [0u8; 8];
            let n = rustix::io::read(&stage_r, &mut stages).unwrap_or(0);
            let stage = stages
                .get(..n)
                .and_then(|s| s.last())
                .map_or(Stage::ProcessGroup, |&s| Stage::from_raw(s as i64));
            Err((stage, errno(e)))
        }
    }
}

/// Blocks every signal in this process and returns a signalfd for SIGCHLD.
fn block_signals_and_watch_sigchld() -> std::io::Result<OwnedFd> {
    // SAFETY: sigset_t is plain data, filled by sigfillset/sigemptyset before use; the mask
    // changed is this single-threaded process's own.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        if libc::pthread_sigmask(libc::SIG_SETMASK, &all, std::ptr::null_mut()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut chld: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut chld);
        libc::sigaddset(&mut chld, libc::SIGCHLD);
        let fd = libc::signalfd(-1, &chld, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(OwnedFd::from_raw_fd(fd))
    }
}

fn signal(byte: u8) -> Option<Signal> {
    match byte {
        SEND_TERM => Some(Signal::TERM),
        SEND_KILL => Some(Signal::KILL),
        SEND_INT => Some(Signal::INT),
        _ => None,
    }
}

/// Waits for the command, following cheng's control bytes and reaping orphans that exit on the
/// way. Returns the command's wait status once it is reaped (its group killed first).
fn supervise(command: Pid, control: &OwnedFd, sigchld: &OwnedFd) -> i32 {
    use rustix::event::{PollFd, PollFlags};
    let mut abandoned = false;
    loop {
        let mut polls = vec![PollFd::new(sigchld, PollFlags::IN)];
        // Once abandoned, only the command's end matters.
        if !abandoned {
            polls.push(PollFd::new(control, PollFlags::IN));
        }
        match rustix::event::poll(&mut polls, None) {
            Ok(_) | Err(Errno::INTR) => {}
            Err(_) => {
                // Cannot wait: kill everything and collect the command.
                kill_command(command, Signal::KILL);
                return reap_command(command);
            }
        }
        let control_ready = polls.get(1).is_some_and(|p| !p.revents().is_empty());
        drop(polls);
        if control_ready {
            let mut byte = [0u8];
            match rustix::io::read(control, &mut byte) {
                Ok(1) => {
                    if let Some(sig) = signal(byte[0]) {
                        kill_command(command, sig);
                    }
                }
                Err(Errno::INTR | Errno::AGAIN) => {}
                _ => {
                    // cheng is gone or dropped the run: nothing may keep running.
                    abandoned = true;
                    kill_command(command, Signal::KILL);
                    kill_all_children_once();
                }
            }
        }
        // Drain the signalfd (SIGCHLD coalesces), then look at every child that has exited.
        let mut info = [0u8; 128];
        while rustix::io::read(sigchld, &mut info).is_ok_and(|n| n > 0) {}
        let exited = rustix::process::waitid(
            rustix::process::WaitId::Pid(command),
            rustix::process::WaitIdOptions::EXITED
                | rustix::process::WaitIdOptions::NOHANG
                | rustix::process::WaitIdOptions::NOWAIT,
        );
        if matches!(exited, Ok(Some(_))) {
            return reap_command(command);
        }
        // Orphans that ended during the run.
        for_each_child(|pid| {
            if pid != command {
                let _ = rustix::process::waitpid(Some(pid), WaitOptions::NOHANG);
            }
        });
    }
}

/// SIGKILLs the rest of the command's group while it is an unreaped zombie (the zombie keeps the
/// group id from being reused), then reaps it.
fn reap_command(command: Pid) -> i32 {
    let _ = rustix::process::kill_process_group(command, Signal::KILL);
    loop {
        match rustix::process::waitpid(Some(command), WaitOptions::empty()) {
            Ok(Some((_, status))) => return status.as_raw(),
            Err(Errno::INTR) => {}
            _ => return 0,
        }
    }
}

/// `signal` to the command's group and to the command itself (in case it left its group).
/// Only while the command is not yet reaped.
fn kill_command(command: Pid, signal: Signal) {
    let _ = rustix::process::kill_process_group(command, signal);
    let _ = rustix::process::kill_process(command, signal);
}

/// SIGKILLs and reaps every child of the reaper until none is left. Orphans come back to the
/// reaper as their parents die, so this ends with every descendant gone.
fn kill_all_children() {
    loop {
        if !kill_all_children_once() {
            // The children cannot be listed (no /proc): collect what has already ended.
            while let Ok(Some(_)) = rustix::process::wait(WaitOptions::NOHANG) {}
            return;
        }
        match rustix::process::wait(WaitOptions::empty()) {
            Ok(_) | Err(Errno::INTR) => {}
            // ECHILD: nothing left.
            Err(_) => return,
        }
    }
}

/// SIGKILLs every current child of the reaper. `false` when they cannot be listed.
fn kill_all_children_once() -> bool {
    for_each_child(|pid| {
        let _ = rustix::process::kill_process(pid, Signal::KILL);
    })
}

/// Calls `f` with the pid of every child of this (single-threaded) process: from
/// /proc/thread-self/children, or by scanning /proc/*/stat for our pid as parent when the kernel
/// lacks that file. `false` when neither can be read.
fn for_each_child(mut f: impl FnMut(Pid)) -> bool {
    let listed = match std::fs::read_to_string("/proc/thread-self/children") {
        Ok(text) => text
            .split_ascii_whitespace()
            .filter_map(|n| n.parse().ok())
            .collect(),
        Err(_) => match scan_proc_for_children() {
            Some(pids) => pids,
            None => return false,
        },
    };
    for pid in listed.into_iter().filter_map(Pid::from_raw) {
        f(pid);
    }
    true
}

/// The fallback of [`for_each_child`]: every /proc/<pid>/stat whose parent field is our pid.
fn scan_proc_for_children() -> Option<Vec<i32>> {
    let me = rustix::process::getpid().as_raw_nonzero().get();
    let entries = std::fs::read_dir("/proc").ok()?;
    Some(
        entries
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| parent_of(*pid) == Some(me))
            .collect(),
    )
}

/// The parent pid from /proc/<pid>/stat (the field after the state, after the last `)`).
fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    let close = stat.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(stat.get(close + 1..)?).ok()?;
    rest.split_ascii_whitespace().nth(1)?.parse().ok()
}

/// The resource usage of everything this process reaped.
fn children_usage() -> Report {
    // SAFETY: rusage is plain data; getrusage fills it.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage
    };
    // timeval's field types differ between architectures.
    #[allow(clippy::unnecessary_cast)]
    let us = |tv: libc::timeval| {
        (tv.tv_sec as i64)
            .saturating_mul(1_000_000)
            .saturating_add(tv.tv_usec as i64)
    };
    Report {
        user_us: us(usage.ru_utime),
        sys_us: us(usage.ru_stime),
        maxrss_kb: usage.ru_maxrss as i64,
        ..Report::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_argv_names_program_directory_limits_and_command() {
        let args: Vec<OsString> = ["/bin/sh", "/tmp", "1", "7", "10", "20", "sh", "-c", "true"]
            .iter()
            .map(OsString::from)
            .collect();
        let parsed = parse(&args).unwrap();
        assert_eq!(parsed.program, "/bin/sh");
        assert_eq!(parsed.cwd, "/tmp");
        assert_eq!(parsed.rlimits.len(), 1);
        assert_eq!(parsed.argv.len(), 3);
        // No command, or a limit count the argv does not hold: refused.
        assert!(parse(&args[..6]).is_none());
        assert!(parse(&args[..3]).is_none());
    }
}
