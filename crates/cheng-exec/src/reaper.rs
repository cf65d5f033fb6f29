//! The per-run reaper: a small process between cheng and each command it runs, so that nothing
//! the command starts outlives its run and nothing cheng holds open reaches it.
//!
//! Killing the command's process group is not enough: `setsid -f`, a double fork or `nohup cmd &`
//! leave the group, and their orphans are re-parented to pid 1, where cheng can neither see nor
//! kill them. cheng cannot simply become a child subreaper itself, because one cheng process runs
//! several commands at once (graph nodes in parallel) and an orphan re-parented to cheng carries
//! nothing that says which run it came from. So each run gets its own subreaper:
//!
//! 1. cheng starts the reaper with `clone(CLONE_VM)`: a process of its own (own pid, descriptor
//!    table, signal state) that shares cheng's memory, so starting it costs about as much as
//!    starting a thread instead of a `fork` of cheng (measured: a fork-based reaper made a run of
//!    `true` 2-3x as slow as `std::process::Command`, this one about 1.1x). It starts with every
//!    signal blocked (it reads SIGCHLD from a signalfd; a Ctrl-C meant for cheng's process group
//!    must not kill it before it has cleaned up), makes itself a child subreaper
//!    (`PR_SET_CHILD_SUBREAPER`), moves the descriptors the command needs above the numbers they
//!    will take and closes every other descriptor it inherited (other runs' pipes included).
//! 2. It starts the command with `clone(CLONE_VM | CLONE_VFORK)` (what `posix_spawn` does).
//!    Between clone and exec the command resets signal handlers to their defaults (SIGPIPE too,
//!    which the Rust runtime ignores), leads a new process group, joins its cgroup, takes
//!    stdin/stdout/stderr and the declared descriptors at their numbers, closes everything else,
//!    changes directory, sets its rlimits and unblocks signals. A failure there is reported with
//!    its stage and errno.
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
//! Because the reaper and the command's pre-exec step share cheng's memory while cheng's threads
//! keep running, they use only [`crate::sys`] (raw system calls that write no `errno` or other
//! thread-local state) on memory prepared before the clone and owned by the run until the reaper
//! has been reaped: no allocation, no locks, no panics. On architectures without those raw calls
//! the reaper is forked instead (same code, its own copy of the memory).

use crate::{fds, sys};
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;

/// Stack of the reaper (only system calls and small buffers; generous for debug builds).
const REAPER_STACK: usize = 256 * 1024;
/// Stack of the command between clone and exec.
const COMMAND_STACK: usize = 128 * 1024;
/// Guard pages below each stack.
const GUARD: usize = 64 * 1024;

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

/// A started run: the reaper's pid, cheng's ends of the pipes, and the memory the reaper runs on.
pub(crate) struct Started {
    pub reaper: i32,
    pub control: OwnedFd,
    pub report: OwnedFd,
    pub stdin: Option<OwnedFd>,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
    pub memory: ReaperMemory,
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
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 fills two new descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are new and owned here.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Both stacks, each above a guard page, in one private anonymous mapping.
struct Stacks {
    base: *mut u8,
    len: usize,
}

impl Stacks {
    fn new() -> io::Result<Stacks> {
        let len = GUARD + COMMAND_STACK + GUARD + REAPER_STACK;
        // SAFETY: a new private anonymous mapping; nothing else refers to it.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let stacks = Stacks {
            base: base.cast(),
            len,
        };
        for guard in [0, GUARD + COMMAND_STACK] {
            // SAFETY: the range lies inside the mapping made above.
            if unsafe { libc::mprotect(stacks.base.add(guard).cast(), GUARD, libc::PROT_NONE) } != 0
            {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(stacks)
    }

    fn command_top(&self) -> *mut u8 {
        // SAFETY: inside the mapping; page aligned, so 16-byte aligned.
        unsafe { self.base.add(GUARD + COMMAND_STACK) }
    }

    fn reaper_top(&self) -> *mut u8 {
        // SAFETY: the end of the mapping; page aligned.
        unsafe { self.base.add(self.len) }
    }
}

impl Drop for Stacks {
    fn drop(&mut self) {
        // SAFETY: unmapping the mapping this value owns; nothing runs on it any more (see
        // `ReaperMemory`).
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// Everything the reaper and the command's pre-exec step read or write, built before the clone.
/// The reaper gets a raw pointer to it; cheng does not touch it again until the reaper has been
/// reaped.
struct Shared {
    plan: Plan,
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
    stacks: Stacks,
    /// cheng's descriptor numbers (copied into the reaper's table by the clone).
    stdin_r: Option<RawFd>,
    stdout_w: RawFd,
    stderr_w: RawFd,
    control_r: RawFd,
    report_w: RawFd,
    /// Filled in by the reaper, within the capacity reserved here.
    keep: Vec<RawFd>,
    inherit_moved: Vec<(RawFd, RawFd)>,
    /// The reaper's descriptor numbers the command takes.
    stdin: RawFd,
    stdout: RawFd,
    stderr: RawFd,
    cgroup: Option<RawFd>,
    first_free: RawFd,
    /// A failure before exec, written by the command (the reaper waits: CLONE_VFORK).
    failed_stage: i32,
    failed_errno: i32,
}

/// The memory a reaper runs on. Must outlive the reaper: free it (drop it) only once the reaper
/// has been reaped, or leak it.
pub(crate) struct ReaperMemory(NonNull<Shared>);

// SAFETY: the pointer is owned (a leaked Box); the run that holds it is the only owner, and the
// reaper using it is another process, not a thread of ours.
unsafe impl Send for ReaperMemory {}
// SAFETY: it offers no access to what it points at; only dropping it touches the memory.
unsafe impl Sync for ReaperMemory {}

impl Drop for ReaperMemory {
    fn drop(&mut self) {
        // SAFETY: made by Box::into_raw in `start`; the owner drops this only after the reaper
        // has exited (see the type's contract).
        drop(unsafe { Box::from_raw(self.0.as_ptr()) });
    }
}

/// Starts the reaper, which starts the command; returns once the command has been executed (or
/// failed to be).
pub(crate) fn start(plan: Plan) -> Result<Started, StartError> {
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
    let inherit_count = plan.inherit.len();
    let shared = Box::new(Shared {
        plan,
        argv,
        envp,
        stacks: Stacks::new().map_err(sup)?,
        stdin_r: stdin_r.as_ref().map(|fd| fd.as_raw_fd()),
        stdout_w: stdout_w.as_raw_fd(),
        stderr_w: stderr_w.as_raw_fd(),
        control_r: control_r.as_raw_fd(),
        report_w: report_w.as_raw_fd(),
        keep: Vec::with_capacity(8 + inherit_count),
        inherit_moved: Vec::with_capacity(inherit_count),
        stdin: -1,
        stdout: -1,
        stderr: -1,
        cgroup: None,
        first_free: 3,
        failed_stage: 0,
        failed_errno: 0,
    });
    let top = shared.stacks.reaper_top();
    let memory = ReaperMemory(NonNull::from(Box::leak(shared)));

    let flags = if sys::SHARED_MEMORY_REAPER {
        libc::CLONE_VM
    } else {
        0
    } | libc::SIGCHLD;
    // The reaper starts with every signal blocked: block them here around the clone.
    // SAFETY: sigset_t is plain data; sigfillset and pthread_sigmask fill and read it.
    let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut previous: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid sigset pointers; only this thread's mask changes, and it is restored below.
    unsafe {
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut previous);
    }
    // SAFETY: the reaper runs `reaper_entry` on its own stack inside `memory`, which this run
    // keeps alive until the reaper is reaped; it only makes raw system calls (see the module
    // documentation).
    let pid = unsafe {
        sys::clone_run(
            flags as usize,
            top,
            reaper_entry,
            memory.0.as_ptr() as usize,
        )
    };
    // SAFETY: restoring this thread's mask saved above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &previous, std::ptr::null_mut()) };
    if pid < 0 {
        return Err(sup(io::Error::from_raw_os_error(-pid as i32)));
    }
    let pid = pid as i32;
    // The reaper holds its own copies now.
    drop((stdout_w, stderr_w, stdin_r, control_r, report_w));

    match read_report_blocking(&report_r) {
        Some(r) if r.kind == KIND_STARTED => Ok(Started {
            reaper: pid,
            control: control_w,
            report: report_r,
            stdin: stdin_w,
            stdout: stdout_r,
            stderr: stderr_r,
            memory,
        }),
        other => {
            // The reaper has exited or is about to (it has no children left): reap it, then
            // its memory may go.
            reap_blocking(pid);
            drop(memory);
            Err(match other {
                Some(r) if r.kind == KIND_FAILED => StartError::Stage(
                    Stage::from_raw(r.stage),
                    io::Error::from_raw_os_error(r.errno),
                ),
                _ => StartError::Supervisor(io::Error::other(
                    "the per-run reaper ended before starting the command",
                )),
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
        _ => Outcome {
            status: None,
            usage: None,
        },
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
        let n = unsafe {
            libc::read(
                fd.as_raw_fd(),
                buf[got..].as_mut_ptr().cast(),
                buf.len() - got,
            )
        };
        if n > 0 {
            got += n as usize;
        } else if n == 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return None;
        }
    }
    // SAFETY: Report is plain old data of exactly this size; any bit pattern is valid.
    Some(unsafe { std::ptr::read_unaligned(buf.as_ptr().cast::<Report>()) })
}

/// Waits for the reaper to exit and reaps it.
pub(crate) fn reap_blocking(pid: i32) {
    let mut status = 0;
    // SAFETY: waiting on our own child.
    while unsafe { libc::waitpid(pid, &mut status, libc::__WALL) } < 0
        && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted
    {}
}

// ---- Below: runs in the reaper and in the command before exec, which share cheng's memory.
// ---- Only `sys` calls on prepared memory and stack buffers: no allocation, no locks, no
// ---- errno, no panics (no indexing that could fail, no overflowing arithmetic).

/// Writes one report, ignoring failure (cheng may be gone).
fn write_report(fd: RawFd, report: &Report) {
    // SAFETY: writing a plain struct from a valid reference.
    unsafe {
        sys::write(
            fd,
            (report as *const Report).cast(),
            std::mem::size_of::<Report>(),
        )
    };
}

fn fail(report_fd: RawFd, stage: Stage, rc: isize) -> ! {
    let errno = if rc < 0 {
        rc.wrapping_neg() as i32
    } else {
        libc::EIO
    };
    write_report(
        report_fd,
        &Report {
            kind: KIND_FAILED,
            stage: stage as i32,
            errno,
            ..Report::default()
        },
    );
    // SAFETY: ends the reaper (its own thread group only).
    unsafe { sys::exit_group(0) }
}

/// A copy of `fd` at `base` or above, close-on-exec.
fn move_above(fd: RawFd, base: RawFd, report_fd: RawFd) -> RawFd {
    // SAFETY: duplicating a descriptor of this process.
    let moved = unsafe { sys::dupfd_cloexec(fd, base) };
    if moved < 0 {
        fail(report_fd, Stage::Reaper, moved);
    }
    moved as RawFd
}

fn push<T>(v: &mut Vec<T>, item: T) {
    // Capacity was reserved before the clone; never grow (that would allocate).
    if v.len() < v.capacity() {
        v.push(item);
    }
}

extern "C" fn reaper_entry(arg: usize) -> i32 {
    // SAFETY: `arg` is the `Shared` prepared by `start`, kept alive until this process has been
    // reaped and not touched by cheng meanwhile.
    unsafe { reaper_main(&mut *(arg as *mut Shared)) }
}

/// The reaper. Never returns.
///
/// # Safety
/// Only as the entry of the process started by [`start`], with every signal blocked.
unsafe fn reaper_main(s: &mut Shared) -> ! {
    let mut report_fd = s.report_w;
    // SIGCHLD must not be ignored, or the kernel would reap children before we could.
    let default = sys::KernelSigaction {
        handler: 0,
        flags: 0,
        restorer: 0,
        mask: 0,
    };
    // SAFETY: setting a disposition in this process's own copy of the handler table.
    unsafe { sys::sigaction(libc::SIGCHLD, &default, std::ptr::null_mut()) };
    // SAFETY: a prctl with integer arguments.
    let rc = unsafe { sys::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) };
    if rc != 0 {
        fail(report_fd, Stage::Reaper, rc);
    }

    // Descriptors: what the command needs moves above every number it will take, then
    // everything else inherited from cheng is closed.
    let base = s
        .plan
        .inherit
        .iter()
        .fold(3, |base, (_, to)| base.max(to.saturating_add(1)));
    report_fd = move_above(report_fd, base, report_fd);
    let control = move_above(s.control_r, base, report_fd);
    s.stdout = move_above(s.stdout_w, base, report_fd);
    s.stderr = move_above(s.stderr_w, base, report_fd);
    s.stdin = match s.stdin_r {
        Some(fd) => move_above(fd, base, report_fd),
        None => {
            // SAFETY: opening with a static NUL-terminated path.
            let null =
                unsafe { sys::openat(c"/dev/null".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
            if null < 0 {
                fail(report_fd, Stage::Stdio, null);
            }
            let moved = move_above(null as RawFd, base, report_fd);
            // SAFETY: closing the descriptor opened above.
            unsafe { sys::close(null as RawFd) };
            moved
        }
    };
    s.cgroup = s.plan.cgroup_fd.map(|fd| move_above(fd, base, report_fd));
    for i in 0..s.plan.inherit.len() {
        if let Some(&(from, to)) = s.plan.inherit.get(i) {
            let moved = move_above(from, base, report_fd);
            push(&mut s.inherit_moved, (moved, to));
        }
    }
    for fd in [report_fd, control, s.stdout, s.stderr, s.stdin] {
        push(&mut s.keep, fd);
    }
    if let Some(fd) = s.cgroup {
        push(&mut s.keep, fd);
    }
    for i in 0..s.inherit_moved.len() {
        if let Some(&(moved, _)) = s.inherit_moved.get(i) {
            push(&mut s.keep, moved);
        }
    }
    fds::close_all_except(&mut s.keep);
    s.first_free = base;

    let chld: u64 = 1 << (libc::SIGCHLD - 1);
    // SAFETY: a signalfd for SIGCHLD (blocked in this process since its start).
    let sigfd = unsafe { sys::signalfd(&chld, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK) };
    if sigfd < 0 {
        fail(report_fd, Stage::Reaper, sigfd);
    }
    let sigfd = sigfd as RawFd;

    // The command.
    let top = s.stacks.command_top();
    let shared: *mut Shared = s;
    // SAFETY: the command runs `command_entry` on its own stack in memory this run keeps alive;
    // CLONE_VFORK suspends us until it has executed or exited.
    let pid = unsafe {
        sys::clone_run(
            (libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD) as usize,
            top,
            command_entry,
            shared as usize,
        )
    };
    if pid < 0 {
        fail(report_fd, Stage::Reaper, pid);
    }
    let pid = pid as i32;
    // A failure before exec was written through the shared memory.
    // SAFETY: reading fields of `Shared` the command may have written before it exited.
    let (failed_stage, failed_errno) = unsafe {
        (
            std::ptr::read_volatile(&(*shared).failed_stage),
            std::ptr::read_volatile(&(*shared).failed_errno),
        )
    };
    if failed_stage != 0 {
        let mut status = 0;
        // SAFETY: reaping our own child, which has exited.
        unsafe { sys::wait4(pid, &mut status, libc::__WALL) };
        fail(
            report_fd,
            Stage::from_raw(failed_stage),
            -(failed_errno as isize),
        );
    }
    // The command has its own copies; the pipes must reach end-of-file when it is done.
    // SAFETY: closing descriptors of this process that it no longer needs.
    unsafe {
        sys::close(s.stdin);
        sys::close(s.stdout);
        sys::close(s.stderr);
        if let Some(fd) = s.cgroup {
            sys::close(fd);
        }
    }
    write_report(
        report_fd,
        &Report {
            kind: KIND_STARTED,
            pid,
            ..Report::default()
        },
    );

    let status = supervise(pid, control, sigfd);
    kill_all_children();

    // SAFETY: rusage is plain data; getrusage fills it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { sys::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    // timeval's field types differ between architectures.
    #[allow(clippy::unnecessary_cast)]
    let us = |tv: libc::timeval| {
        (tv.tv_sec as i64)
            .saturating_mul(1_000_000)
            .saturating_add(tv.tv_usec as i64)
    };
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
    // SAFETY: ends the reaper (its own thread group only).
    unsafe { sys::exit_group(0) }
}

/// Waits for the command, following cheng's control bytes and reaping orphans that exit on the
/// way. Returns the command's wait status once it is reaped (its group killed first).
fn supervise(command: i32, control: RawFd, sigfd: RawFd) -> libc::c_int {
    let mut abandoned = false;
    loop {
        let mut polls = [
            libc::pollfd {
                fd: sigfd,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: control,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // Once abandoned, only the command's end matters.
        let watched = if abandoned { 1 } else { 2 };
        // SAFETY: polling descriptors of this process with a valid array.
        let rc = unsafe { sys::ppoll(polls.as_mut_ptr(), watched) };
        if rc < 0 && rc != -(libc::EINTR as isize) {
            // Cannot wait: kill everything and collect the command.
            kill_command(command, libc::SIGKILL);
            return reap_command(command);
        }
        if !abandoned && polls[1].revents != 0 {
            let mut byte = 0u8;
            // SAFETY: reading one byte into a valid buffer.
            let n = unsafe { sys::read(control, &mut byte, 1) };
            match n {
                1 if byte == SEND_TERM => kill_command(command, libc::SIGTERM),
                1 if byte == SEND_KILL => kill_command(command, libc::SIGKILL),
                1 if byte == SEND_INT => kill_command(command, libc::SIGINT),
                1 => {}
                n if n == -(libc::EINTR as isize) || n == -(libc::EAGAIN as isize) => {}
                _ => {
                    // cheng is gone or dropped the run: nothing may keep running.
                    abandoned = true;
                    kill_command(command, libc::SIGKILL);
                    kill_all_children_once();
                }
            }
        }
        // Drain the signalfd (SIGCHLD coalesces), then look at every child that has exited.
        let mut info = [0u8; 128];
        // SAFETY: reading into a valid buffer.
        while unsafe { sys::read(sigfd, info.as_mut_ptr(), info.len()) } > 0 {}
        loop {
            // SAFETY: siginfo_t is plain data; waitid fills it.
            let mut si: libc::siginfo_t = unsafe { std::mem::zeroed() };
            // SAFETY: peeking at our own children without reaping them.
            let rc = unsafe {
                sys::waitid(
                    libc::P_ALL,
                    0,
                    &mut si,
                    libc::WEXITED | libc::WNOHANG | libc::WNOWAIT | libc::__WALL,
                )
            };
            if rc == -(libc::EINTR as isize) {
                continue;
            }
            // SAFETY: si_pid is valid to read after waitid (zero when nothing is waitable).
            let pid = if rc < 0 { 0 } else { unsafe { si.si_pid() } };
            if pid == 0 {
                break;
            }
            if pid == command {
                return reap_command(command);
            }
            // An orphan that ended during the run.
            let mut status = 0;
            // SAFETY: reaping our own child, which has exited.
            unsafe { sys::wait4(pid, &mut status, libc::WNOHANG | libc::__WALL) };
        }
    }
}

/// SIGKILLs the rest of the command's group while it is an unreaped zombie (the zombie keeps the
/// group id from being reused), then reaps it.
fn reap_command(command: i32) -> libc::c_int {
    // SAFETY: signalling the command's group; the leader is not reaped yet.
    unsafe { sys::kill(command.wrapping_neg(), libc::SIGKILL) };
    let mut status = 0;
    loop {
        // SAFETY: waiting on our own child.
        let rc = unsafe { sys::wait4(command, &mut status, libc::__WALL) };
        if rc == command as isize || (rc < 0 && rc != -(libc::EINTR as isize)) {
            return status;
        }
    }
}

/// `signal` to the command's group and to the command itself (in case it left its group).
/// Only while the command is not yet reaped.
fn kill_command(command: i32, signal: libc::c_int) {
    // SAFETY: signalling our own unreaped child and its group.
    unsafe {
        sys::kill(command.wrapping_neg(), signal);
        sys::kill(command, signal);
    }
}

/// SIGKILLs and reaps every child of the reaper until none is left. Orphans come back to the
/// reaper as their parents die, so this ends with every descendant gone.
fn kill_all_children() {
    loop {
        let mut status = 0;
        if !kill_all_children_once() {
            // The children cannot be listed (no /proc): collect what has already ended.
            // SAFETY: reaping our own children without blocking.
            while unsafe { sys::wait4(-1, &mut status, libc::WNOHANG | libc::__WALL) } > 0 {}
            return;
        }
        // SAFETY: waiting for any child of ours; each one listed was just SIGKILLed.
        let rc = unsafe { sys::wait4(-1, &mut status, libc::__WALL) };
        if rc < 0 && rc != -(libc::EINTR as isize) {
            // ECHILD: nothing left.
            return;
        }
    }
}

/// SIGKILLs every current child of the reaper. `false` when they cannot be listed.
fn kill_all_children_once() -> bool {
    for_each_child(|pid| {
        // SAFETY: signalling a child of ours.
        unsafe { sys::kill(pid, libc::SIGKILL) };
    })
}

/// Calls `f` with the pid of every child of this (single-threaded) process: from
/// /proc/thread-self/children, or by scanning /proc/*/stat for our pid as parent when the kernel
/// lacks that file. `false` when neither can be read.
fn for_each_child(mut f: impl FnMut(i32)) -> bool {
    // SAFETY: opening with a static NUL-terminated path.
    let fd = unsafe {
        sys::openat(
            c"/proc/thread-self/children".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return scan_proc_for_children(&mut f);
    }
    let fd = fd as RawFd;
    let mut buf = [0u8; 1024];
    let mut value: i32 = 0;
    let mut in_number = false;
    loop {
        // SAFETY: reading into a valid buffer.
        let n = unsafe { sys::read(fd, buf.as_mut_ptr(), buf.len()) };
        if n == -(libc::EINTR as isize) {
            continue;
        }
        if n <= 0 {
            break;
        }
        for &b in buf.iter().take(n as usize) {
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
    // SAFETY: closing the descriptor opened above.
    unsafe { sys::close(fd) };
    true
}

/// The fallback of [`for_each_child`]: every /proc/<pid>/stat whose parent field is our pid.
fn scan_proc_for_children(f: &mut impl FnMut(i32)) -> bool {
    // SAFETY: getpid cannot fail.
    let me = unsafe { sys::getpid() };
    // SAFETY: opening with a static NUL-terminated path.
    let dir = unsafe {
        sys::openat(
            c"/proc".as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if dir < 0 {
        return false;
    }
    let dir = dir as RawFd;
    let mut entries = [0u8; 4096];
    loop {
        // SAFETY: getdents64 writes at most the buffer's length.
        let n = unsafe { sys::getdents64(dir, entries.as_mut_ptr(), entries.len()) };
        if n <= 0 {
            break;
        }
        fds::for_each_name(entries.get(..n as usize).unwrap_or(&[]), |name| {
            if let Some(pid) = fds::parse_fd(name) {
                if parent_of(pid) == Some(me) {
                    f(pid);
                }
            }
        });
    }
    // SAFETY: closing the directory opened above.
    unsafe { sys::close(dir) };
    true
}

/// The parent pid from /proc/<pid>/stat (the field after the state, after the last `)`).
fn parent_of(pid: i32) -> Option<i32> {
    // "/proc/" + up to 10 digits + "/stat" + NUL.
    let mut path = [0u8; 32];
    let mut len = 0usize;
    let mut put = |b: u8| {
        if let Some(slot) = path.get_mut(len) {
            *slot = b;
            len += 1;
        }
    };
    for &b in b"/proc/" {
        put(b);
    }
    let mut digits = [0u8; 10];
    let mut count = 0usize;
    let mut v = pid.max(0) as u32;
    loop {
        if let Some(slot) = digits.get_mut(count) {
            *slot = b'0' + (v % 10) as u8;
            count += 1;
        }
        v /= 10;
        if v == 0 || count == digits.len() {
            break;
        }
    }
    for &b in digits.iter().take(count).rev() {
        put(b);
    }
    for &b in b"/stat\0" {
        put(b);
    }
    // SAFETY: `path` is NUL-terminated (32 bytes hold the longest path).
    let fd = unsafe { sys::openat(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    let mut buf = [0u8; 512];
    // SAFETY: reading into a valid buffer, then closing the descriptor opened above.
    let n = unsafe {
        let n = sys::read(fd as RawFd, buf.as_mut_ptr(), buf.len());
        sys::close(fd as RawFd);
        n
    };
    let text = buf.get(..usize::try_from(n).ok()?)?;
    let close = text.iter().rposition(|&b| b == b')')?;
    // ") S 1234 ..." : skip the state, then parse the parent.
    let mut fields = text
        .get(close + 1..)?
        .split(|&b| b == b' ')
        .filter(|f| !f.is_empty());
    let _state = fields.next()?;
    let mut value: i32 = 0;
    for &b in fields.next()? {
        if !b.is_ascii_digit() {
            return None;
        }
        value = value.checked_mul(10)?.checked_add((b - b'0') as i32)?;
    }
    Some(value)
}

/// The command between clone and exec; shares the reaper's memory while the reaper waits
/// (CLONE_VFORK). Reports a failure through `Shared` and exits 127.
extern "C" fn command_entry(arg: usize) -> i32 {
    // SAFETY: `arg` is the reaper's `Shared`, alive and untouched while we run.
    let s = unsafe { &mut *(arg as *mut Shared) };
    let fail = |s: &mut Shared, stage: Stage, rc: isize| -> i32 {
        // SAFETY: plain writes the reaper reads after we exit; then exit this process only.
        unsafe {
            std::ptr::write_volatile(
                &mut s.failed_errno,
                if rc < 0 {
                    rc.wrapping_neg() as i32
                } else {
                    libc::EIO
                },
            );
            std::ptr::write_volatile(&mut s.failed_stage, stage as i32);
            sys::exit_group(127)
        }
    };
    // Signal handlers: cheng's (copied by the clone) must not run here, nor SIGPIPE stay ignored.
    let default = sys::KernelSigaction {
        handler: 0,
        flags: 0,
        restorer: 0,
        mask: 0,
    };
    for sig in 1..=64 {
        if sig == libc::SIGKILL || sig == libc::SIGSTOP {
            continue;
        }
        let mut old = sys::KernelSigaction {
            handler: 0,
            flags: 0,
            restorer: 0,
            mask: 0,
        };
        // SAFETY: reading and setting dispositions in this process's own handler table.
        unsafe {
            if sys::sigaction(sig, std::ptr::null(), &mut old) == 0
                && (old.handler > 1 || sig == libc::SIGPIPE)
            {
                sys::sigaction(sig, &default, std::ptr::null_mut());
            }
        }
    }
    // SAFETY: system calls on this process and on memory prepared before the clone.
    unsafe {
        let rc = sys::setpgid(0, 0);
        if rc != 0 {
            return fail(s, Stage::ProcessGroup, rc);
        }
        if let Some(fd) = s.cgroup {
            // "0" moves the writing process into the group of that cgroup.procs.
            let rc = sys::write(fd, b"0".as_ptr(), 1);
            if rc != 1 {
                return fail(s, Stage::Cgroup, rc);
            }
        }
        for (from, to) in [(s.stdin, 0), (s.stdout, 1), (s.stderr, 2)] {
            let rc = sys::dup3(from, to);
            if rc < 0 {
                return fail(s, Stage::Stdio, rc);
            }
        }
        // Sources sit above every target, so no dup3 here overwrites a source still needed.
        for i in 0..s.inherit_moved.len() {
            if let Some(&(from, to)) = s.inherit_moved.get(i) {
                let rc = sys::dup3(from, to);
                if rc < 0 {
                    return fail(s, Stage::InheritFd, rc);
                }
            }
        }
        // Everything from `first_free` up is close-on-exec already; close it now anyway.
        sys::close_range(s.first_free as libc::c_uint, libc::c_uint::MAX);
        let rc = sys::chdir(s.plan.cwd.as_ptr());
        if rc != 0 {
            return fail(s, Stage::Chdir, rc);
        }
        for i in 0..s.plan.rlimits.len() {
            if let Some((resource, limit)) = s.plan.rlimits.get(i) {
                let rc = sys::prlimit(*resource, limit, std::ptr::null_mut());
                if rc != 0 {
                    return fail(s, Stage::Rlimit, rc);
                }
            }
        }
        let empty: u64 = 0;
        sys::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
        let rc = sys::execve(s.plan.program.as_ptr(), s.argv.as_ptr(), s.envp.as_ptr());
        fail(s, Stage::Exec, rc)
    }
}
