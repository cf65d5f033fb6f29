//! Raw Linux system calls that touch neither `errno` nor any other thread-local state, for code
//! that runs in a process sharing cheng's memory (the per-run reaper, started with `CLONE_VM`, and
//! the command between clone and exec). libc's wrappers write `errno` (and cancellable ones the
//! thread's cancellation state) in the thread-local storage of the cheng thread that created the
//! reaper, which keeps running; these do not. Every function returns the kernel's result: the
//! value, or `-errno`.
//!
//! On x86_64 and aarch64 the system call is made with inline assembly. Elsewhere the reaper is a
//! forked process (its own memory), so libc's `syscall` is safe there and is used instead.

#![allow(clippy::missing_safety_doc)]

use std::os::fd::RawFd;

/// The kernel's `struct sigaction` (handler, flags, restorer, mask), which differs from libc's.
#[repr(C)]
pub struct KernelSigaction {
    pub handler: usize,
    pub flags: u64,
    pub restorer: usize,
    pub mask: u64,
}

/// Whether the reaper may share cheng's memory (`CLONE_VM`): only where the system calls here
/// are made without libc.
pub const SHARED_MEMORY_REAPER: bool = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));

#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub unsafe fn raw6(
    n: libc::c_long,
    a1: usize,
    a2: usize,
    a3: usize,
    a4: usize,
    a5: usize,
    a6: usize,
) -> isize {
    let ret: isize;
    // SAFETY: the caller passes arguments valid for system call `n`; `syscall` clobbers only
    // rcx and r11 besides rax.
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") n as isize => ret,
            in("rdi") a1,
            in("rsi") a2,
            in("rdx") a3,
            in("r10") a4,
            in("r8") a5,
            in("r9") a6,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    ret
}

#[cfg(target_arch = "aarch64")]
#[inline(always)]
pub unsafe fn raw6(
    n: libc::c_long,
    a1: usize,
    a2: usize,
    a3: usize,
    a4: usize,
    a5: usize,
    a6: usize,
) -> isize {
    let ret: isize;
    // SAFETY: the caller passes arguments valid for system call `n`; `svc 0` returns in x0.
    unsafe {
        std::arch::asm!(
            "svc 0",
            in("x8") n as usize,
            inlateout("x0") a1 => ret,
            in("x1") a2,
            in("x2") a3,
            in("x3") a4,
            in("x4") a5,
            in("x5") a6,
            options(nostack),
        );
    }
    ret
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub unsafe fn raw6(
    n: libc::c_long,
    a1: usize,
    a2: usize,
    a3: usize,
    a4: usize,
    a5: usize,
    a6: usize,
) -> isize {
    // SAFETY: as the caller guarantees; here the reaper is a forked process, so errno is its own.
    let rc = unsafe { libc::syscall(n, a1, a2, a3, a4, a5, a6) };
    if rc < 0 {
        -(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO) as isize)
    } else {
        rc as isize
    }
}

/// Starts a process with `clone(flags, stack_top)` that runs `f(arg)` on that stack and exits
/// with its return value; returns its pid or `-errno`.
///
/// # Safety
/// `stack_top` must be the 16-byte aligned top of a stack that stays mapped while the child runs
/// on it, and `f` must be safe to run in a child sharing (or copying) this memory as `flags` say.
#[cfg(target_arch = "x86_64")]
pub unsafe fn clone_run(
    flags: usize,
    stack_top: *mut u8,
    f: extern "C" fn(usize) -> i32,
    arg: usize,
) -> isize {
    let ret: isize;
    // SAFETY: see the function's contract. The child starts on `stack_top` with the parent's
    // registers (r12 and r13 included), calls `f(arg)` and exits; it never returns here.
    unsafe {
        std::arch::asm!(
            "syscall",
            "test rax, rax",
            "jnz 2f",
            "xor ebp, ebp",
            "mov rdi, r12",
            "call r13",
            "mov edi, eax",
            "mov eax, {exit}",
            "syscall",
            "ud2",
            "2:",
            exit = const libc::SYS_exit,
            inlateout("rax") libc::SYS_clone as isize => ret,
            in("rdi") flags,
            in("rsi") stack_top,
            in("rdx") 0usize,
            in("r10") 0usize,
            in("r8") 0usize,
            in("r12") arg,
            in("r13") f,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    ret
}

/// See the x86_64 version.
///
/// # Safety
/// As for the x86_64 version.
#[cfg(target_arch = "aarch64")]
pub unsafe fn clone_run(
    flags: usize,
    stack_top: *mut u8,
    f: extern "C" fn(usize) -> i32,
    arg: usize,
) -> isize {
    let ret: isize;
    // SAFETY: see the function's contract. The child starts on `stack_top` with the parent's
    // registers (x19 and x20 included), calls `f(arg)` and exits; it never returns here.
    unsafe {
        std::arch::asm!(
            "svc 0",
            "cbnz x0, 2f",
            "mov x29, xzr",
            "mov x30, xzr",
            "mov x0, x20",
            "blr x19",
            "mov x8, {exit}",
            "svc 0",
            "brk #0",
            "2:",
            exit = const libc::SYS_exit,
            in("x8") libc::SYS_clone as usize,
            inlateout("x0") flags => ret,
            in("x1") stack_top,
            in("x2") 0usize,
            in("x3") 0usize,
            in("x4") 0usize,
            in("x19") f,
            in("x20") arg,
            options(nostack),
        );
    }
    ret
}

/// See the x86_64 version; here through libc (the caller is a forked process).
///
/// # Safety
/// As for the x86_64 version.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub unsafe fn clone_run(
    flags: usize,
    stack_top: *mut u8,
    f: extern "C" fn(usize) -> i32,
    arg: usize,
) -> isize {
    extern "C" fn trampoline(arg: *mut libc::c_void) -> libc::c_int {
        // SAFETY: `arg` is the pair built below, alive until the child has exec'd or exited
        // (the callers use CLONE_VFORK) or for the child's life.
        let pair = unsafe { &*(arg as *const (extern "C" fn(usize) -> i32, usize)) };
        (pair.0)(pair.1)
    }
    let pair = (f, arg);
    // SAFETY: as the caller guarantees.
    let rc = unsafe {
        libc::clone(
            trampoline,
            stack_top.cast(),
            flags as libc::c_int,
            &pair as *const _ as *mut libc::c_void,
        )
    };
    if rc < 0 {
        -(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO) as isize)
    } else {
        rc as isize
    }
}

macro_rules! args {
    ($n:expr) => { raw6($n, 0, 0, 0, 0, 0, 0) };
    ($n:expr, $a:expr) => { raw6($n, $a as usize, 0, 0, 0, 0, 0) };
    ($n:expr, $a:expr, $b:expr) => { raw6($n, $a as usize, $b as usize, 0, 0, 0, 0) };
    ($n:expr, $a:expr, $b:expr, $c:expr) => { raw6($n, $a as usize, $b as usize, $c as usize, 0, 0, 0) };
    ($n:expr, $a:expr, $b:expr, $c:expr, $d:expr) => { raw6($n, $a as usize, $b as usize, $c as usize, $d as usize, 0, 0) };
    ($n:expr, $a:expr, $b:expr, $c:expr, $d:expr, $e:expr) => {
        raw6($n, $a as usize, $b as usize, $c as usize, $d as usize, $e as usize, 0)
    };
}

// Thin wrappers; each returns the value or -errno. Pointers must be valid for the call.
pub unsafe fn read(fd: RawFd, buf: *mut u8, len: usize) -> isize {
    // SAFETY: the raw syscall; the caller upholds this function's contract (valid pointers).
    unsafe { args!(libc::SYS_read, fd, buf, len) }
}
pub unsafe fn write(fd: RawFd, buf: *const u8, len: usize) -> isize {
    // SAFETY: the raw syscall; the caller upholds this function's contract (valid pointers).
    unsafe { args!(libc::SYS_write, fd, buf, len) }
}
pub unsafe fn openat(path: *const libc::c_char, flags: libc::c_int) -> isize {
    // SAFETY: the raw syscall; the caller upholds this function's contract (valid pointers).
    unsafe { args!(libc::SYS_openat, libc::AT_FDCWD, path, flags, 0) }
}
pub unsafe fn close(fd: RawFd) -> isize {
    // SAFETY: the raw syscall; the caller upholds this function's contract (valid pointers).
    unsafe { args!(libc::SYS_close, fd) }
}
pub unsafe fn close_range(first: libc::c_uint, last: libc::c_uint) -> isize {
    // SAFETY: the raw syscall; the caller upholds this function's contract (valid pointers).
    unsafe { args!(libc::SYS_close_range, first, last, 0) }
}
pub unsafe fn getdents64(fd: RawFd, buf: *mut u8, len: usize) -> isize {
    // SAFETY: the raw syscall; the caller upholds this function's contract (valid pointers).
    unsafe { args!(libc::SYS_getdents64, fd, buf, len) }
}
pub unsafe fn dupfd_cloexec(fd: RawFd, min: RawFd) -> isize {
    // SAFETY: the raw syscall; the caller upholds this function's contract (valid pointers).
    unsafe { args!(libc::SYS_fcntl, fd, libc::F_DUPFD_CLOEXEC, min) }
}
pub unsafe fn dup3(from: RawFd, to: RawFd) -> isize {
    // SAFETY: the raw syscall; the caller upholds this function's contract (valid pointers).
    unsafe { args!(libc::SYS_dup3, from, to, 0) }
}
pub unsafe fn prlimit(
    resource: libc::c_int,
    new: *const libc::rlimit,
    old: *mut libc::rlimit,
) -> isize {
    // SAFETY: the raw syscall; the caller upholds this function's contract (valid pointers).
    unsafe { args!(libc::SYS_prlimit64, 0, resource, new, old) }
}
pub unsafe fn sigprocmask(how: libc::c_int, set: *const u64, old: *mut u64) -> isize {
    // SAFETY: the raw syscall; the caller upholds this function's contract (valid pointers).
    unsafe { args!(libc::SYS_rt_sigprocmask, how, set, old, 8) }
}
pub unsafe fn sigaction(
    sig: libc::c_int,
    new: *const KernelSigaction,
    old: *mut KernelSigaction,
) -> isize {
    // SAFETY: the raw syscall; the caller upholds this function's contract (valid pointers).
    unsafe { args!(libc::SYS_rt_sigaction, sig, new, old, 8) }
}
pub unsafe fn signalfd(mask: *const u64, flags: libc::c_int) -> isize {
    // SAFETY: the raw syscall; the caller upholds this function's contract (valid pointers).
    unsafe { args!(libc::SYS_signalfd4, -1 as RawFd, mask, 8, flags) }
}
pub unsafe fn ppoll(fds: *mut libc::pollfd, n: usize) -> isize {
    // SAFETY: the raw syscall; the caller upholds this function's contract (valid pointers).
    unsafe { args!(libc::SYS_ppoll, fds, n, 0, 0, 8) }
}
pub unsafe fn prctl(option: libc::c_int, arg: usize) -> isize {
    // SAFETY: the raw syscall; the caller upholds this function's contract (valid pointers).
    unsafe { args!(libc::SYS_prctl, option, arg, 0, 0, 0) }
}
pub unsafe fn kill(pid: i32, sig: libc::c_int) -> isize {
    // SAFETY: the raw syscall; the caller upholds this function's contract (valid pointers).
    unsafe { args!(libc::SYS_kill, pid, sig) }
}
pub unsafe fn wait4(pid: i32, status: *mut libc::c_int, options: libc::c_int) -> isize {
    // SAFETY: the raw syscall; the caller upholds this function's contract (valid pointers).
    unsafe { args!(libc::SYS_wait4, pid, status, options, 0) }
}
pub unsafe fn waitid(
    idtype: libc::idtype_t,
    id: libc::id_t,
    info: *mut libc::siginfo_t,
    options: libc::c_int,
) -> isize {
    // SAFETY: the raw syscall; the caller upholds this function's contract (valid pointers).
    unsafe { args!(libc::SYS_waitid, idtype, id, info, options, 0) }
}
pub unsafe fn getrusage(who: libc::c_int, usage: *mut libc::rusage) -> isize {
    // SAFETY: the raw syscall; the caller upholds this function's contract (valid pointers).
    unsafe { args!(libc::SYS_getrusage, who, usage) }
}
pub unsafe fn getpid() -> i32 {
    // SAFETY: the raw syscall; the caller upholds this function's contract (valid pointers).
    unsafe { args!(libc::SYS_getpid) as i32 }
}
pub unsafe fn setpgid(pid: i32, pgid: i32) -> isize {
    // SAFETY: the raw syscall; the caller upholds this function's contract (valid pointers).
    unsafe { args!(libc::SYS_setpgid, pid, pgid) }
}
pub unsafe fn chdir(path: *const libc::c_char) -> isize {
    // SAFETY: the raw syscall; the caller upholds this function's contract (valid pointers).
    unsafe { args!(libc::SYS_chdir, path) }
}
pub unsafe fn execve(
    path: *const libc::c_char,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
) -> isize {
    // SAFETY: the raw syscall; the caller upholds this function's contract (valid pointers).
    unsafe { args!(libc::SYS_execve, path, argv, envp) }
}
pub unsafe fn exit_group(code: i32) -> ! {
    // SAFETY: the raw syscall; the caller upholds this function's contract (valid pointers).
    unsafe {
        args!(libc::SYS_exit_group, code);
    }
    // exit_group does not return; should it ever, spin rather than run on.
    loop {
        std::hint::spin_loop();
    }
}
