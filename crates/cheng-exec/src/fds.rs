//! Closing inherited file descriptors, so that only stdin, stdout, stderr and the descriptors a
//! spec names reach a child.
//!
//! Whatever started cheng may have left descriptors open without `FD_CLOEXEC` (a shell's
//! `exec 7>file`, an MCP host's pipes or sockets, a log file); `exec` would hand them to every
//! program cheng runs. Both places that exec untrusted programs close them first: the per-run
//! reaper ([`crate::reaper`]) for every host process and for bwrap, and the sandbox init step
//! ([`crate::sandbox::init`]) inside the sandbox.
//!
//! Everything here is async-signal-safe and uses only [`crate::sys`] (system calls on stack
//! buffers: no allocation, no locks), so it may run between fork and exec.

use crate::sys;
use std::os::fd::RawFd;

/// `close_range(first, last, 0)`; `false` when the kernel lacks it (before 5.9) or refuses.
fn close_range(first: RawFd, last: libc::c_uint) -> bool {
    if first < 0 || first as libc::c_uint > last {
        return true;
    }
    // SAFETY: close_range only closes descriptors of this process; it touches no memory.
    unsafe { sys::close_range(first as libc::c_uint, last) == 0 }
}

/// Closes every descriptor from 3 up except those in `keep`, which is sorted in place. Uses
/// `close_range`, then falls back to listing /proc/self/fd, then to closing every number below
/// the RLIMIT_NOFILE soft limit.
///
/// Async-signal-safe: no allocation, no locks, no `errno`.
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

/// For a `std::process::Command` that cheng runs itself (one-off probes of bwrap or python):
/// makes the command close every descriptor above 2 when it executes, by marking them all
/// close-on-exec in the child before exec (`close_range` with `CLOSE_RANGE_CLOEXEC`, else each
/// entry of /proc/self/fd). Unlike closing them, this keeps std's own exec-error pipe working.
pub fn close_inherited_on_exec(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs between fork and exec and makes only raw system calls on stack
    // buffers (no allocation, no locks).
    unsafe {
        cmd.pre_exec(|| {
            mark_cloexec_above_stderr();
            Ok(())
        });
    }
}

fn mark_cloexec_above_stderr() {
    // SAFETY: close_range with CLOSE_RANGE_CLOEXEC only changes descriptor flags of this process.
    let rc = unsafe {
        sys::raw6(
            libc::SYS_close_range,
            3,
            libc::c_uint::MAX as usize,
            libc::CLOSE_RANGE_CLOEXEC as usize,
            0,
            0,
            0,
        )
    };
    if rc == 0 {
        return;
    }
    for_each_listed_descriptor(|fd| {
        // SAFETY: setting FD_CLOEXEC on a descriptor of this process.
        unsafe {
            sys::raw6(
                libc::SYS_fcntl,
                fd as usize,
                libc::F_SETFD as usize,
                libc::FD_CLOEXEC as usize,
                0,
                0,
                0,
            )
        };
    });
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
    for_each_listed_descriptor(|fd| {
        if sorted_keep.binary_search(&fd).is_err() {
            // SAFETY: closing a descriptor of this process that nothing here uses.
            unsafe { sys::close(fd) };
        }
    })
}

/// Calls `f` with each descriptor above 2 that /proc/self/fd lists (not the one reading it),
/// with raw system calls on a stack buffer only (it runs between clone and exec). `false` if
/// the directory cannot be opened.
fn for_each_listed_descriptor(mut f: impl FnMut(RawFd)) -> bool {
    // SAFETY: open with a static NUL-terminated path.
    let dir = unsafe {
        sys::openat(
            c"/proc/self/fd".as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if dir < 0 {
        return false;
    }
    let dir = dir as RawFd;
    let mut buf = [0u8; 4096];
    loop {
        // SAFETY: getdents64 writes at most `buf.len()` bytes into the buffer.
        let n = unsafe { sys::getdents64(dir, buf.as_mut_ptr(), buf.len()) };
        if n <= 0 {
            break;
        }
        for_each_name(&buf[..n as usize], |name| {
            if let Some(fd) = parse_fd(name) {
                if fd > 2 && fd != dir {
                    f(fd);
                }
            }
        });
    }
    // SAFETY: closing the directory opened above.
    unsafe { sys::close(dir) };
    true
}

/// Calls `f` with the NUL-terminated name of each `linux_dirent64` record in `buf` (d_ino u64,
/// d_off i64, d_reclen u16, d_type u8, d_name). Never reads past `buf`.
pub(crate) fn for_each_name(buf: &[u8], mut f: impl FnMut(&[u8])) {
    let mut offset = 0usize;
    while let (Some(&lo), Some(&hi)) = (
        buf.get(offset.wrapping_add(16)),
        buf.get(offset.wrapping_add(17)),
    ) {
        let reclen = u16::from_ne_bytes([lo, hi]) as usize;
        let end = offset.wrapping_add(reclen);
        if reclen < 20 || end > buf.len() {
            return;
        }
        if let Some(name) = buf.get(offset + 19..end) {
            f(name);
        }
        offset = end;
    }
}

/// A NUL-terminated decimal name as a descriptor number.
pub(crate) fn parse_fd(name: &[u8]) -> Option<RawFd> {
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
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: prlimit fills a plain struct.
    let max = if unsafe {
        sys::prlimit(
            libc::RLIMIT_NOFILE as libc::c_int,
            std::ptr::null(),
            &mut limit,
        )
    } == 0
    {
        limit.rlim_cur.min(1 << 20) as RawFd
    } else {
        1 << 16
    };
    for fd in 3..max {
        if sorted_keep.binary_search(&fd).is_err() {
            // SAFETY: closing descriptors of this process that nothing here uses.
            unsafe { sys::close(fd) };
        }
    }
}

/// The descriptor numbers open in this process, from /proc/self/fd (for tests and
/// diagnostics; allocates).
pub fn open_descriptors() -> Vec<RawFd> {
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return Vec::new();
    };
    let mut fds: Vec<RawFd> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
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

    #[test]
    fn directory_records_are_walked_without_reading_past_the_buffer() {
        let mut buf = Vec::new();
        for name in ["0", "17", "."] {
            let reclen = (20 + name.len()).div_ceil(8) * 8;
            let mut rec = vec![0u8; reclen];
            rec[16..18].copy_from_slice(&(reclen as u16).to_ne_bytes());
            rec[19..19 + name.len()].copy_from_slice(name.as_bytes());
            buf.extend(rec);
        }
        let mut seen = Vec::new();
        for_each_name(&buf, |n| seen.push(parse_fd(n)));
        assert_eq!(seen, [Some(0), Some(17), None]);
        // A record cut short is ignored.
        let mut count = 0;
        for_each_name(&buf[..buf.len() - 3], |_| count += 1);
        assert_eq!(count, 2);
    }
}
