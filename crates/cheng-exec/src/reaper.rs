//! The per-run reaper: a small process between cheng and each command it runs, so that nothing
//! the command starts outlives its run and nothing cheng holds open reaches it.
//!
//! Killing the command's process group is not enough: `setsid -f`, a double fork or `nohup cmd &`
//! leave the group, and their orphans are re-parented to pid 1, where cheng can neither see nor
//! kill them. cheng cannot simply become a child subreaper itself, because one cheng process runs
//! several commands at once (graph nodes in parallel) and an orphan re-parented to cheng carries
//! nothing that says which run it came from. So each run gets its own subreaper:
//!
//! 1. cheng forks the reaper. The reaper blocks every signal (it reacts to SIGCHLD through a
//!    signalfd; terminal signals meant for cheng's process group must not kill it before it has
//!    cleaned up), makes itself a child subreaper (`PR_SET_CHILD_SUBREAPER`), moves the
//!    descriptors the command needs above the numbers they will take and closes every other
//!    descriptor it inherited from cheng (other runs' pipes included).
//! 2. It starts the command with `clone(CLONE_VM | CLONE_VFORK)` (what `posix_spawn` does: no copy
//!    of the address space). Between clone and exec the command resets SIGPIPE and the signal
//!    mask, leads a new process group, joins its cgroup, takes stdin/stdout/stderr and the
//!    declared descriptors at their numbers, closes everything else, changes directory and sets
//!    its rlimits. A failure there is reported with its stage and errno.
//! 3. While the command runs, orphans that end are reaped as they exit. cheng asks for SIGTERM
//!    or SIGKILL to the group through a control pipe; the end of that pipe (cheng gone, or the
//!    run abandoned) means kill everything now.
//! 4. When the command exits: SIGKILL to its group while the leader is still an unreaped zombie
//!    (so the group id cannot have been reused), reap it, then SIGKILL every remaining child of
//!    the reaper and reap it, until it has no children left. Orphans come back to the reaper
//!    (the nearest subreaper) as their parents die, so this reaches every descendant, including
//!    those that left the group or the session.
//! 5. It writes the command's wait status and the resource usage of everything it reaped (the
//!    command and its escaped descendants) to cheng, and exits.
//!
//! Everything the reaper and the command's pre-exec step need is allocated before the fork; after
//! it only raw system calls on prepared memory and stack buffers run (the parent is
//! multi-threaded, so allocation or locks there could deadlock).

use crate::fds;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Stack for the command between clone and exec (it only makes system calls).
const CHILD_STACK: usize = 64 * 1024;

/// What the command's step between clone and exec failed at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    /// The reaper itself could not be set up (subreaper, descriptors, signalfd, clone).
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
    fn from_raw(raw: i32) -> Stage {
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

const KIND_STARTED: i32 = 1;
const KIND_FAILED: i32 = 2;
const KIND_DONE: i32 = 3;

/// What the reaper writes to cheng: one fixed-size record per message (well below PIPE_BUF, so
/// each write is atomic).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct Report {
    kind: i32,
    stage: i32,
    errno: i32,
    pid: i32,
    status: i32,
    has_status: i32,
    user_us: i64,
    sys_us: i64,
    maxrss_kb: i64,
}

/// Control bytes cheng sends to the reaper.
pub(crate) const SEND_TERM: u8 = b'T';
pub(crate) const SEND_KILL: u8 = b'K';

/// What cheng passes in; the descriptors stay owned by the caller (they are only read).
pub(crate) struct Plan<'a> {
    pub program: CString,
    pub argv: Vec<CString>,
    pub envp: Vec<CString>,
    pub cwd: CString,
    pub rlimits: Vec<(libc::__rlimit_resource_t, libc::rlimit)>,
    pub cgroup_fd: Option<RawFd>,
    /// `(descriptor here, number in the child)`; numbers are above 2 and distinct.
    pub inherit: &'a [(RawFd, RawFd)],
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
    /// cheng could not fork the reaper or make its pipes.
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
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 fills two new descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are new and owned here.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Everything the forked reaper and the command's pre-exec step read; built before the fork.
struct Prepared<'a> {
    plan: &'a Plan<'a>,
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
    /// Descriptors the reaper keeps (filled in the reaper, capacity reserved here).
    keep: Vec<RawFd>,
    /// Where the inherited descriptors' sources end up in the reaper.
    inherit_moved: Vec<(RawFd, RawFd)>,
    stack: Vec<u8>,
    stdin_r: Option<RawFd>,
    stdout_w: RawFd,
    stderr_w: RawFd,
    control_r: RawFd,
    report_w: RawFd,
}

/// Forks the reaper, which starts the command; returns once the command has been executed (or
/// failed to be).
pub(crate) fn start(plan: &Plan<'_>) -> Result<Started, StartError> {
    let sup = StartError::Supervisor;
    let (stdout_r, stdout_w) = pipe().map_err(sup)?;
    let (stderr_r, stderr_w) = pipe().map_err(sup)?;
    let (stdin_r, stdin_w) = if plan.stdin_pipe {
        let (r, w) = pipe().map_err(sup)?;
        (Some(r), Some(w))
    } else {
        (None, None)
    };
    let (control_r, control_w) = pipe().map_err(sup)?;
    let (report_r, report_w) = pipe().map_err(sup)?;

    let mut argv: Vec<*const libc::c_char> = plan.argv.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    let mut envp: Vec<*const libc::c_char> = plan.envp.iter().map(|a| a.as_ptr()).collect();
    envp.push(std::ptr::null());
    let mut prepared = Prepared {
        plan,
        argv,
        envp,
        keep: Vec::with_capacity(8 + plan.inherit.len()),
        inherit_moved: Vec::with_capacity(plan.inherit.len()),
        stack: vec![0u8; CHILD_STACK],
        stdin_r: stdin_r.as_ref().map(|fd| fd.as_raw_fd()),
        stdout_w: stdout_w.as_raw_fd(),
        stderr_w: stderr_w.as_raw_fd(),
        control_r: control_r.as_raw_fd(),
        report_w: report_w.as_raw_fd(),
    };

    // SAFETY: the child only runs `reaper_main`, which makes raw system calls on memory prepared
    // above and on its own stack, and never returns (it ends in _exit).
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(sup(io::Error::last_os_error()));
    }
    if pid == 0 {
        // SAFETY: in the freshly forked child; see `reaper_main`.
        unsafe { reaper_main(&mut prepared) }
    }
    // The reaper holds its own copies now.
    drop((stdout_w, stderr_w, stdin_r, control_r, report_w));

    let first = read_report_blocking(&report_r);
    match first {
        Some(r) if r.kind == KIND_STARTED => {
            Ok(Started { reaper: pid, control: control_w, report: report_r, stdin: stdin_w, stdout: stdout_r, stderr: stderr_r })
        }
        other => {
            // The reaper has exited or is about to: reap it here (it has no children left).
            reap_blocking(pid);
            Err(match other {
                Some(r) if r.kind == KIND_FAILED => {
                    StartError::Stage(Stage::from_raw(r.stage), io::Error::from_raw_os_error(r.errno))
                }
                _ => StartError::Supervisor(io::Error::other("the per-run reaper ended before starting the command")),
            })
        }
    }
}

/// Reads the reaper's final report (after it has exited, so it is in the pipe or never will be).
pub(crate) fn read_outcome(report: &OwnedFd) -> Outcome {
    match read_report_blocking(report) {
        Some(r) if r.kind == KIND_DONE => Outcome {
            status: (r.has_status != 0).then_some(r.status),
            usage: Some(crate::ResourceUsage {
                peak_rss_kb: r.maxrss_kb.max(0) as u64,
                cpu_user_ms: (r.user_us.max(0) as u64) / 1000,
                cpu_sys_ms: (r.sys_us.max(0) as u64) / 1000,
            }),
        },
        _ => Outcome { status: None, usage: None },
    }
}

/// Sends a control byte; a reaper that is already gone is fine.
pub(crate) fn send(control: &OwnedFd, byte: u8) {
    // SAFETY: writing one byte from a valid buffer to our own pipe (SIGPIPE is ignored by the
    // Rust runtime, so a closed reader is EPIPE).
    unsafe { libc::write(control.as_raw_fd(), [byte].as_ptr().cast(), 1) };
}

fn read_report_blocking(fd: &OwnedFd) -> Option<Report> {
    let mut buf = [0u8; std::mem::size_of::<Report>()];
    let mut got = 0;
    while got < buf.len() {
        // SAFETY: reading into the unfilled part of a valid buffer.
        let n = unsafe { libc::read(fd.as_raw_fd(), buf[got..].as_mut_ptr().cast(), buf.len() - got) };
        if n > 0 {
            got += n as usize;
        } else if n == 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return None;
        }
    }
    // SAFETY: Report is plain old data of exactly this size; any bit pattern is valid.
    Some(unsafe { std::ptr::read_unaligned(buf.as_ptr().cast::<Report>()) })
}

fn reap_blocking(pid: i32) {
    let mut status = 0;
    // SAFETY: waiting on our own child.
    while unsafe { libc::waitpid(pid, &mut status, 0) } < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {}
}

// ---- Below: runs in the forked reaper and in the command before exec. Async-signal-safe only:
// ---- no allocation, no locks, no panics.

fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

/// Writes one report, ignoring failure (cheng may be gone).
fn write_report(fd: RawFd, report: &Report) {
    // SAFETY: writing a plain struct from a valid reference.
    unsafe { libc::write(fd, (report as *const Report).cast(), std::mem::size_of::<Report>()) };
}

fn fail(report_fd: RawFd, stage: Stage, errno: i32) -> ! {
    write_report(report_fd, &Report { kind: KIND_FAILED, stage: stage as i32, errno, ..Report::default() });
    // SAFETY: _exit ends the reaper without running anything of the parent's.
    unsafe { libc::_exit(0) }
}

/// `fcntl(F_DUPFD_CLOEXEC)`: a copy of `fd` at `base` or above.
fn move_above(fd: RawFd, base: RawFd, report_fd: RawFd) -> RawFd {
    // SAFETY: duplicating a descriptor of this process.
    let moved = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, base) };
    if moved < 0 {
        fail(report_fd, Stage::Reaper, errno());
    }
    moved
}

/// What the command's pre-exec step reads, and where it reports a failure.
struct ChildArgs<'a> {
    prepared: &'a Prepared<'a>,
    stdin: RawFd,
    stdout: RawFd,
    stderr: RawFd,
    cgroup: Option<RawFd>,
    first_free: RawFd,
    failed_stage: i32,
    failed_errno: i32,
}

/// The reaper. Never returns.
///
/// # Safety
/// Must run in a child just forked from cheng, with `p` prepared by [`start`].
unsafe fn reaper_main(p: &mut Prepared<'_>) -> ! {
    let mut report_fd = p.report_w;

    // Signals: all blocked (SIGCHLD is read from a signalfd). SIGCHLD must not be ignored, or
    // the kernel would reap children before we could.
    let mut all: libc::sigset_t = std::mem::zeroed();
    libc::sigfillset(&mut all);
    libc::sigprocmask(libc::SIG_SETMASK, &all, std::ptr::null_mut());
    let mut default: libc::sigaction = std::mem::zeroed();
    default.sa_sigaction = libc::SIG_DFL;
    libc::sigaction(libc::SIGCHLD, &default, std::ptr::null_mut());

    if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0 {
        fail(report_fd, Stage::Reaper, errno());
    }

    // Descriptors: what the command needs moves above every number it will take, then
    // everything else inherited from cheng is closed.
    let base = p.plan.inherit.iter().map(|(_, to)| *to + 1).fold(3, RawFd::max);
    report_fd = move_above(report_fd, base, report_fd);
    let control = move_above(p.control_r, base, report_fd);
    let stdout = move_above(p.stdout_w, base, report_fd);
    let stderr = move_above(p.stderr_w, base, report_fd);
    let stdin = match p.stdin_r {
        Some(fd) => move_above(fd, base, report_fd),
        None => {
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
            if null < 0 {
                fail(report_fd, Stage::Stdio, errno());
            }
            let moved = move_above(null, base, report_fd);
            libc::close(null);
            moved
        }
    };
    let cgroup = p.plan.cgroup_fd.map(|fd| move_above(fd, base, report_fd));
    for &(from, to) in p.plan.inherit {
        let moved = move_above(from, base, report_fd);
        p.inherit_moved.push((moved, to));
    }
    p.keep.extend([report_fd, control, stdout, stderr, stdin]);
    p.keep.extend(cgroup);
    for i in 0..p.inherit_moved.len() {
        let moved = p.inherit_moved[i].0;
        p.keep.push(moved);
    }
    fds::close_all_except(&mut p.keep);

    let mut chld: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut chld);
    libc::sigaddset(&mut chld, libc::SIGCHLD);
    let sigfd = libc::signalfd(-1, &chld, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
    if sigfd < 0 {
        fail(report_fd, Stage::Reaper, errno());
    }

    // The command.
    let mut args = ChildArgs {
        prepared: p,
        stdin,
        stdout,
        stderr,
        cgroup,
        first_free: base,
        failed_stage: 0,
        failed_errno: 0,
    };
    let stack_top = {
        let top = args.prepared.stack.as_ptr() as usize + args.prepared.stack.len();
        (top & !15) as *mut libc::c_void
    };
    let args_ptr: *mut ChildArgs<'_> = &mut args;
    let pid = libc::clone(
        child_main,
        stack_top,
        libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
        args_ptr.cast(),
    );
    if pid < 0 {
        fail(report_fd, Stage::Reaper, errno());
    }
    // CLONE_VFORK: we resume once the command has executed or exited; a failure before exec was
    // written into `args` through the shared memory.
    let failed_stage = std::ptr::read_volatile(&(*args_ptr).failed_stage);
    let failed_errno = std::ptr::read_volatile(&(*args_ptr).failed_errno);
    if failed_stage != 0 {
        let mut status = 0;
        libc::waitpid(pid, &mut status, 0);
        fail(report_fd, Stage::from_raw(failed_stage), failed_errno);
    }
    // The command has its own copies; the pipes must reach end-of-file when it is done.
    libc::close(stdin);
    libc::close(stdout);
    libc::close(stderr);
    if let Some(fd) = cgroup {
        libc::close(fd);
    }
    write_report(report_fd, &Report { kind: KIND_STARTED, pid, ..Report::default() });

    let status = supervise(pid, control, sigfd);
    kill_all_children();

    let mut usage: libc::rusage = std::mem::zeroed();
    libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
    let us = |tv: libc::timeval| tv.tv_sec as i64 * 1_000_000 + tv.tv_usec as i64;
    write_report(
        report_fd,
        &Report {
            kind: KIND_DONE,
            pid,
            status,
            has_status: 1,
            user_us: us(usage.ru_utime),
            sys_us: us(usage.ru_stime),
            maxrss_kb: usage.ru_maxrss as i64,
            ..Report::default()
        },
    );
    libc::_exit(0)
}

/// Waits for the command, following cheng's control bytes and reaping orphans that exit on the
/// way. Returns the command's wait status once it is reaped (its group killed first).
///
/// # Safety
/// Reaper only.
unsafe fn supervise(command: i32, control: RawFd, sigfd: RawFd) -> libc::c_int {
    let mut abandoned = false;
    loop {
        let mut polls = [
            libc::pollfd { fd: control, events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: sigfd, events: libc::POLLIN, revents: 0 },
        ];
        // Once abandoned, only the command's end matters.
        let watched = if abandoned { &mut polls[1..] } else { &mut polls[..] };
        if libc::poll(watched.as_mut_ptr(), watched.len() as libc::nfds_t, -1) < 0 {
            if errno() == libc::EINTR {
                continue;
            }
            // Cannot wait: kill everything and collect the command.
            kill_command(command, libc::SIGKILL);
            return reap_command(command);
        }
        if !abandoned && polls[0].revents != 0 {
            let mut byte = 0u8;
            let n = libc::read(control, (&mut byte as *mut u8).cast(), 1);
            match n {
                1 if byte == SEND_TERM => kill_command(command, libc::SIGTERM),
                1 if byte == SEND_KILL => kill_command(command, libc::SIGKILL),
                1 => {}
                n if n < 0 && (errno() == libc::EINTR || errno() == libc::EAGAIN) => {}
                _ => {
                    // cheng is gone or dropped the run: nothing may keep running.
                    abandoned = true;
                    kill_command(command, libc::SIGKILL);
                    kill_all_children_once();
                }
            }
        }
        // Drain the signalfd (SIGCHLD coalesces) and look at every child that has exited.
        let mut info = [0u8; 128];
        while libc::read(sigfd, info.as_mut_ptr().cast(), info.len()) > 0 {}
        loop {
            let mut si: libc::siginfo_t = std::mem::zeroed();
            let rc = libc::waitid(libc::P_ALL, 0, &mut si, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT | libc::__WALL);
            if rc < 0 {
                if errno() == libc::EINTR {
                    continue;
                }
                break;
            }
            let pid = si.si_pid();
            if pid == 0 {
                break;
            }
            if pid == command {
                return reap_command(command);
            }
            // An orphan that ended during the run.
            let mut status = 0;
            libc::waitpid(pid, &mut status, libc::WNOHANG | libc::__WALL);
        }
    }
}

/// SIGKILLs the rest of the command's group while it is an unreaped zombie (the zombie keeps the
/// group id from being reused), then reaps it.
///
/// # Safety
/// Reaper only; `command` has exited or has just been SIGKILLed.
unsafe fn reap_command(command: i32) -> libc::c_int {
    libc::kill(-command, libc::SIGKILL);
    let mut status = 0;
    loop {
        let rc = libc::waitpid(command, &mut status, libc::__WALL);
        if rc == command {
            return status;
        }
        if rc < 0 && errno() != libc::EINTR {
            return status;
        }
    }
}

/// `signal` to the command's group and to the command itself (in case it left its group).
///
/// # Safety
/// Reaper only, while `command` is not yet reaped.
unsafe fn kill_command(command: i32, signal: libc::c_int) {
    libc::kill(-command, signal);
    libc::kill(command, signal);
}

/// SIGKILLs and reaps every child of the reaper until none is left. Orphans come back to the
/// reaper as their parents die, so this ends with every descendant gone.
///
/// # Safety
/// Reaper only, after the command has been reaped.
unsafe fn kill_all_children() {
    loop {
        if !kill_all_children_once() {
            // The children cannot be listed (no /proc): collect what has already ended.
            let mut status = 0;
            while libc::waitpid(-1, &mut status, libc::WNOHANG | libc::__WALL) > 0 {}
            return;
        }
        let mut status = 0;
        let rc = libc::waitpid(-1, &mut status, libc::__WALL);
        if rc < 0 && errno() != libc::EINTR {
            // ECHILD: nothing left.
            return;
        }
    }
}

/// SIGKILLs every current child of the reaper. `false` when they cannot be listed.
///
/// # Safety
/// Reaper only.
unsafe fn kill_all_children_once() -> bool {
    for_each_child(|pid| {
        libc::kill(pid, libc::SIGKILL);
    })
}

/// Calls `f` with the pid of every child of this (single-threaded) process: from
/// /proc/thread-self/children, or by scanning /proc/*/stat for our pid as parent when the kernel
/// lacks that file. `false` when neither can be read.
///
/// # Safety
/// Async-signal-safe; reaper only.
unsafe fn for_each_child(mut f: impl FnMut(i32)) -> bool {
    let fd = libc::open(c"/proc/thread-self/children".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
    if fd >= 0 {
        let mut buf = [0u8; 1024];
        let mut value: i32 = 0;
        let mut in_number = false;
        loop {
            let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
            if n < 0 && errno() == libc::EINTR {
                continue;
            }
            if n <= 0 {
                break;
            }
            for &b in &buf[..n as usize] {
                if b.is_ascii_digit() {
                    value = value.saturating_mul(10).saturating_add((b - b'0') as i32);
                    in_number = true;
                } else if in_number {
                    f(value);
                    value = 0;
                    in_number = false;
                }
            }
        }
        if in_number {
            f(value);
        }
        libc::close(fd);
        return true;
    }
    scan_proc_for_children(&mut f)
}

/// The fallback of [`for_each_child`]: every /proc/<pid>/stat whose parent field is our pid.
///
/// # Safety
/// Async-signal-safe; reaper only.
unsafe fn scan_proc_for_children(f: &mut impl FnMut(i32)) -> bool {
    let me = libc::getpid();
    let dir = libc::open(c"/proc".as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC);
    if dir < 0 {
        return false;
    }
    let mut entries = [0u8; 4096];
    loop {
        let n = libc::syscall(libc::SYS_getdents64, dir, entries.as_mut_ptr(), entries.len());
        if n <= 0 {
            break;
        }
        let n = n as usize;
        let mut offset = 0usize;
        while offset + 19 < n {
            let reclen = u16::from_ne_bytes([entries[offset + 16], entries[offset + 17]]) as usize;
            if reclen == 0 || offset + reclen > n {
                break;
            }
            let name = &entries[offset + 19..offset + reclen];
            if let Some(pid) = digits(name) {
                if parent_of(pid) == Some(me) {
                    f(pid);
                }
            }
            offset += reclen;
        }
    }
    libc::close(dir);
    true
}

/// A NUL-terminated decimal name as a number.
fn digits(name: &[u8]) -> Option<i32> {
    let mut value: i32 = 0;
    let mut any = false;
    for &b in name {
        match b {
            0 => break,
            b'0'..=b'9' => {
                value = value.checked_mul(10)?.checked_add((b - b'0') as i32)?;
                any = true;
            }
            _ => return None,
        }
    }
    any.then_some(value)
}

/// The parent pid from /proc/<pid>/stat (the field after the state, after the last `)`).
///
/// # Safety
/// Async-signal-safe.
unsafe fn parent_of(pid: i32) -> Option<i32> {
    // "/proc/" + up to 10 digits + "/stat" + NUL.
    let mut path = [0u8; 32];
    let prefix = b"/proc/";
    path[..prefix.len()].copy_from_slice(prefix);
    let mut len = prefix.len();
    let mut tmp = [0u8; 10];
    let mut t = 0;
    let mut v = pid;
    loop {
        tmp[t] = b'0' + (v % 10) as u8;
        t += 1;
        v /= 10;
        if v == 0 || t == tmp.len() {
            break;
        }
    }
    while t > 0 {
        t -= 1;
        path[len] = tmp[t];
        len += 1;
    }
    let suffix = b"/stat\0";
    path[len..len + suffix.len()].copy_from_slice(suffix);
    let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return None;
    }
    let mut buf = [0u8; 512];
    let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
    libc::close(fd);
    if n <= 0 {
        return None;
    }
    let text = &buf[..n as usize];
    let close = text.iter().rposition(|&b| b == b')')?;
    // ") S 1234 ..." : skip the state, then parse the parent.
    let mut fields = text[close + 1..].split(|&b| b == b' ').filter(|f| !f.is_empty());
    let _state = fields.next()?;
    let ppid = fields.next()?;
    let mut value: i32 = 0;
    for &b in ppid {
        if !b.is_ascii_digit() {
            return None;
        }
        value = value.checked_mul(10)?.checked_add((b - b'0') as i32)?;
    }
    Some(value)
}

/// The command between clone and exec. Shares the reaper's memory (CLONE_VM) while the reaper
/// waits (CLONE_VFORK); reports a failure through `ChildArgs` and exits 127.
extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` points at the reaper's ChildArgs, alive and untouched while we run
    // (CLONE_VFORK suspends the reaper until exec or exit). Only raw system calls follow.
    unsafe {
        let args = &mut *(arg as *mut ChildArgs<'_>);
        let p = args.prepared;
        unsafe fn fail(args: &mut ChildArgs<'_>, stage: Stage) -> ! {
            let e = errno();
            std::ptr::write_volatile(&mut args.failed_errno, e);
            std::ptr::write_volatile(&mut args.failed_stage, stage as i32);
            libc::_exit(127)
        }
        // The Rust runtime ignores SIGPIPE; programs expect the default.
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        libc::sigaction(libc::SIGPIPE, &default, std::ptr::null_mut());
        if libc::setpgid(0, 0) != 0 {
            fail(args, Stage::ProcessGroup);
        }
        if let Some(fd) = args.cgroup {
            // "0" moves the writing process into the group of that cgroup.procs.
            if libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                fail(args, Stage::Cgroup);
            }
        }
        for (from, to) in [(args.stdin, 0), (args.stdout, 1), (args.stderr, 2)] {
            if libc::dup2(from, to) < 0 {
                fail(args, Stage::Stdio);
            }
        }
        // Sources sit above every target, so no dup2 here overwrites a source still needed.
        for &(from, to) in &p.inherit_moved {
            if libc::dup2(from, to) < 0 {
                fail(args, Stage::InheritFd);
            }
        }
        // Everything above the declared numbers is close-on-exec already; close it now anyway.
        libc::syscall(libc::SYS_close_range, args.first_free as libc::c_uint, libc::c_uint::MAX, 0 as libc::c_uint);
        if libc::chdir(p.plan.cwd.as_ptr()) != 0 {
            fail(args, Stage::Chdir);
        }
        for (resource, limit) in &p.plan.rlimits {
            if libc::setrlimit(*resource, limit) != 0 {
                fail(args, Stage::Rlimit);
            }
        }
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
        libc::execve(p.plan.program.as_ptr(), p.argv.as_ptr(), p.envp.as_ptr());
        fail(args, Stage::Exec)
    }
}
