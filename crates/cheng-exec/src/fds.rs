//! Closing inherited file descriptors, so that only stdin, stdout, stderr and the descriptors a
//! spec names reach a child.
//!
//! Whatever started cheng may have left descriptors open without `FD_CLOEXEC` (a shell's
//! `exec 7>file`, an MCP host's pipes or sockets, a log file); `exec` would hand them to every
//! program cheng runs. Both places that exec untrusted programs close them first: the per-run
//! reaper ([`crate::reaper`]) for every host process and for bwrap, and the sandbox init step
//! ([`crate::sandbox::init`]) inside the sandbox.
//!
//! Everything here is async-signal-safe (raw system calls on stack buffers, no allocation), so
//! it may run in a child forked from a multi-threaded process.

use std::os::fd::RawFd;

/// `close_range(first, last, 0)`; `false` when the kernel lacks it (before 5.9) or refuses.
fn close_range(first: RawFd, last: libc::c_uint) -> bool {
    if first < 0 || first as libc::c_uint > last {
        return true;
    }
    // SAFETY: close_range only closes descriptors of this process; it touches no memory.
    unsafe { libc::syscall(libc::SYS_close_range, first as libc::c_uint, last, 0 as libc::c_uint) == 0 }
}

/// Closes every descriptor from 3 up except those in `keep`, which is sorted in place. Uses
/// `close_range`, then falls back to listing /proc/self/fd, then to closing every number below
/// the RLIMIT_NOFILE soft limit.
///
/// Async-signal-safe: no allocation, no locks.
pub fn close_all_except(keep: &mut [RawFd]) {
    keep.sort_unstable();
    if close_ranges(keep) {
        return;
    }
    if close_listed(keep) {
        return;
    }
    close_brute_force(keep);
}

/// Closes every descriptor above 2 (the sandbox init step, just before it executes the command).
pub fn close_all_above_stderr() {
    close_all_except(&mut []);
}

/// The gaps between the kept descriptors, by `close_range`. `false` if the kernel lacks it.
fn close_ranges(sorted_keep: &[RawFd]) -> bool {
    let mut next = 3;
    for &fd in sorted_keep.iter().filter(|fd| **fd >= 3) {
        if fd > next && !close_range(next, (fd - 1) as libc::c_uint) {
            return false;
        }
        next = next.max(fd + 1);
    }
    close_range(next, libc::c_uint::MAX)
}

/// Closes what /proc/self/fd lists. `false` if it cannot be read.
fn close_listed(sorted_keep: &[RawFd]) -> bool {
    // SAFETY: open with a static NUL-terminated path.
    let dir = unsafe {
        libc::open(c"/proc/self/fd".as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC)
    };
    if dir < 0 {
        return false;
    }
    let mut buf = [0u8; 4096];
    loop {
        // SAFETY: getdents64 writes at most `buf.len()` bytes into the buffer.
        let n = unsafe { libc::syscall(libc::SYS_getdents64, dir, buf.as_mut_ptr(), buf.len()) };
        if n <= 0 {
            break;
        }
        let mut offset = 0usize;
        while offset < n as usize {
            // linux_dirent64: d_ino u64, d_off i64, d_reclen u16, d_type u8, d_name[].
            let reclen = u16::from_ne_bytes([buf[offset + 16], buf[offset + 17]]) as usize;
            if reclen == 0 {
                break;
            }
            let name = &buf[offset + 19..offset + reclen];
            if let Some(fd) = parse_fd(name) {
                if fd > 2 && fd != dir && sorted_keep.binary_search(&fd).is_err() {
                    // SAFETY: closing a descriptor of this process that nothing here uses.
                    unsafe { libc::close(fd) };
                }
            }
            offset += reclen;
        }
    }
    // SAFETY: closing the directory opened above.
    unsafe { libc::close(dir) };
    true
}

/// A NUL-terminated decimal name as a descriptor number.
fn parse_fd(name: &[u8]) -> Option<RawFd> {
    let mut value: RawFd = 0;
    let mut digits = 0;
    for &b in name {
        match b {
            0 => break,
            b'0'..=b'9' => {
                value = value.checked_mul(10)?.checked_add((b - b'0') as RawFd)?;
                digits += 1;
            }
            _ => return None,
        }
    }
    (digits > 0).then_some(value)
}

fn close_brute_force(sorted_keep: &[RawFd]) {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit fills a plain struct.
    let max = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        limit.rlim_cur.min(1 << 20) as RawFd
    } else {
        1 << 16
    };
    for fd in 3..max {
        if sorted_keep.binary_search(&fd).is_err() {
            // SAFETY: closing descriptors of this process that nothing here uses.
            unsafe { libc::close(fd) };
        }
    }
}

/// The descriptor numbers open in this process, from /proc/self/fd (for tests and
/// diagnostics; allocates).
pub fn open_descriptors() -> Vec<RawFd> {
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else { return Vec::new() };
    let mut fds: Vec<RawFd> = entries.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect();
    fds.sort_unstable();
    fds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_as_descriptor_numbers() {
        assert_eq!(parse_fd(b"17\0\0\0"), Some(17));
        assert_eq!(parse_fd(b"0\0"), Some(0));
        assert_eq!(parse_fd(b".\0"), None);
        assert_eq!(parse_fd(b"..\0"), None);
        assert_eq!(parse_fd(b"\0"), None);
        assert_eq!(parse_fd(b"99999999999999\0"), None);
    }
}
