//! Closing inherited file descriptors, so that only stdin, stdout, stderr and the descriptors a
//! spec names reach a child.
//!
//! Whatever started cheng may have left descriptors open without `FD_CLOEXEC` (a shell's
//! `exec 7>file`, an MCP host's pipes or sockets, a log file); `exec` would hand them to every
//! program cheng runs. Both places that exec untrusted programs close them first: the per-run
//! reaper ([`crate::reaper`]) for every host process and for bwrap, and the sandbox init step
//! (the `cheng-sandbox` crate's `init`) inside the sandbox.
//!
//! Everything here is async-signal-safe (system calls on stack buffers: no allocation, no
//! locks), so it may run between fork and exec.

use std::os::fd::RawFd;

/// `close_range(first, last, 0)`; `false` when the kernel lacks it (before 5.9) or refuses.
fn close_range(first: RawFd, last: libc::c_uint) -> bool {
    if first < 0 || first as libc::c_uint > last {
        return true;
    }
    // SAFETY: close_range only closes descriptors of this process (none that anything here
    // still uses: the callers keep those out of the range); it touches no memory.
    unsafe { libc::syscall(libc::SYS_close_range, first as libc::c_uint, last, 0) == 0 }
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
        libc::syscall(
            libc::SYS_close_range,
            3 as libc::c_uint,
            libc::c_uint::MAX,
            libc::CLOSE_RANGE_CLOEXEC as libc::c_uint,
        )
    };
    if rc == 0 {
        return;
    }
    for_each_listed_descriptor(|fd| {
        // SAFETY: setting FD_CLOEXEC on a descriptor of this process.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
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
            unsafe { libc::close(fd) };
        }
    })
}

/// Calls `f` with each descriptor above 2 that /proc/self/fd lists (not the one reading it),
/// with raw system calls on a stack buffer only (it runs between clone and exec). `false` if
/// the directory cannot be opened.
fn for_each_listed_descriptor(mut f: impl FnMut(RawFd)) -> bool {
    use rustix::fs::{Mode, OFlags, RawDir, CWD};
    let Ok(dir) = rustix::fs::openat(
        CWD,
        c"/proc/self/fd",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return false;
    };
    let own = std::os::fd::AsRawFd::as_raw_fd(&dir);
    let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 4096];
    let mut entries = RawDir::new(&dir, &mut buf);
    while let Some(Ok(entry)) = entries.next() {
        if let Some(fd) = parse_fd(entry.file_name().to_bytes_with_nul()) {
            if fd > 2 && fd != own {
                f(fd);
            }
        }
    }
    true
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
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    let max = limit.current.map_or(1 << 20, |n| n.min(1 << 20)) as RawFd;
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
}
