//! Advisory whole-file locks (`flock(2)`) for state files several cheng processes share, such as
//! a named session's freshness table. The lock is released when the file is closed.

use std::fs::File;
use std::os::fd::AsRawFd;

/// Blocks until this process holds the exclusive lock on `file`.
pub fn lock_exclusive(file: &File) -> std::io::Result<()> {
    loop {
        // SAFETY: flock only reads the descriptor number; `file` keeps it open for the call.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
        if rc == 0 {
            return Ok(());
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Takes the exclusive lock on `file` if no one holds it: `Ok(false)` when another descriptor
/// does (a process that is still running, when each holds its lock for its lifetime).
pub fn try_lock_exclusive(file: &File) -> std::io::Result<bool> {
    loop {
        // SAFETY: flock only reads the descriptor number; `file` keeps it open for the call.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc == 0 {
            return Ok(true);
        }
        let err = std::io::Error::last_os_error();
        match err.kind() {
            std::io::ErrorKind::Interrupted => {}
            std::io::ErrorKind::WouldBlock => return Ok(false),
            _ => return Err(err),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_descriptor_waits_until_the_first_is_closed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let first = File::create(&path).unwrap();
        lock_exclusive(&first).unwrap();
        let second = File::open(&path).unwrap();
        // SAFETY: a non-blocking probe on a descriptor `second` keeps open.
        let rc = unsafe { libc::flock(second.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        assert_eq!(rc, -1, "the lock is held by the first descriptor");
        assert!(!try_lock_exclusive(&second).unwrap());
        drop(first);
        lock_exclusive(&second).unwrap();
    }
}
