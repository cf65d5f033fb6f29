//! Raw Linux system calls for [`crate::fds`], which also runs between fork and exec (the sandbox
//! init step, `fds::close_inherited_on_exec`): libc's `syscall`, no allocation, no locks. Every
//! function returns the kernel's result: the value, or `-errno`.

#![allow(clippy::missing_safety_doc)]

use std::os::fd::RawFd;

/// `syscall(n, a..f)` with the result as the value or `-errno`.
pub unsafe fn raw6(
    n: libc::c_long,
    a: usize,
    b: usize,
    c: usize,
    d: usize,
    e: usize,
    f: usize,
) -> isize {
    // SAFETY: the caller upholds the system call's contract (valid pointers).
    let rc = unsafe { libc::syscall(n, a, b, c, d, e, f) };
    if rc < 0 {
        -(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO) as isize)
    } else {
        rc as isize
    }
}

macro_rules! args {
    ($n:expr) => {
        raw6($n, 0, 0, 0, 0, 0, 0)
    };
    ($n:expr, $a:expr) => {
        raw6($n, $a as usize, 0, 0, 0, 0, 0)
    };
    ($n:expr, $a:expr, $b:expr) => {
        raw6($n, $a as usize, $b as usize, 0, 0, 0, 0)
    };
    ($n:expr, $a:expr, $b:expr, $c:expr) => {
        raw6($n, $a as usize, $b as usize, $c as usize, 0, 0, 0)
    };
    ($n:expr, $a:expr, $b:expr, $c:expr, $d:expr) => {
        raw6($n, $a as usize, $b as usize, $c as usize, $d as usize, 0, 0)
    };
}

// Thin wrappers; each returns the value or -errno. Pointers must be valid for the call.
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
pub unsafe fn prlimit(
    resource: libc::c_int,
    new: *const libc::rlimit,
    old: *mut libc::rlimit,
) -> isize {
    // SAFETY: the raw syscall; the caller upholds this function's contract (valid pointers).
    unsafe { args!(libc::SYS_prlimit64, 0, resource, new, old) }
}
