//! Advisory whole-file locks (`flock(2)`) for state files several cheng processes share, such as
//! a named session's freshness table. The lock is released when the file is closed.

use std::fs::File;

/// Blocks until this process holds the exclusive lock on `file`.
pub fn lock_exclusive(file: &File) -> std::io::Result<()> {
    loop {
        let Err(err) = rustix::fs::flock(file, rustix::fs::FlockOperation::LockExclusive) else {
            return Ok(());
        };
        let err = std::io::Error::from(err);
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Takes the exclusive lock on `file` if no one holds it: `Ok(false)` when another descriptor
/// does (a process that is still running, when each holds its lock for its lifetime).
pub fn try_lock_exclusive(file: &File) -> std::io::Result<bool> {
    loop {
        let rc = rustix::fs::flock(file, rustix::fs::FlockOperation::NonBlockingLockExclusive);
        let Err(err) = rc else {
            return Ok(true);
        };
        let err = std::io::Error::from(err);
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
        let rc = rustix::fs::flock(
            &second,
            rustix::fs::FlockOperation::NonBlockingLockExclusive,
        );
        assert!(rc.is_err(), "the lock is held by the first descriptor");
        assert!(!try_lock_exclusive(&second).unwrap());
        drop(first);
        lock_exclusive(&second).unwrap();
    }
}
