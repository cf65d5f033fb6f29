//! All-or-nothing writes inside one directory descriptor: a temporary file created with
//! `O_EXCL` in the parent's descriptor, written and fsynced, then `renameat` onto the target
//! within that same descriptor and the directory fsynced. The parent is held open from the first
//! step to the last, so swapping it for a symlink by name changes nothing: the temporary file
//! and the rename stay in the directory that was opened. A failure before the rename removes
//! the temporary file and leaves the old file untouched; the mode (and, where allowed, the
//! owner) of an existing file are kept.

use rustix::fs::{fchown, fsync, openat, renameat, statat, unlinkat, AtFlags, Mode, OFlags};
use rustix::fs::{Gid, Uid};
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A written and fsynced temporary file waiting to be renamed onto its target (in the same
/// directory descriptor). Dropping it removes the temporary file.
#[derive(Debug)]
pub struct Staged {
    dir: OwnedFd,
    temp: Option<OsString>,
    name: OsString,
}

impl Staged {
    /// Renames the temporary file onto the target and fsyncs the directory.
    pub fn commit(mut self) -> std::io::Result<()> {
        let Some(temp) = self.temp.take() else {
            return Ok(());
        };
        if let Err(e) = renameat(&self.dir, &temp, &self.dir, &self.name) {
            let _ = unlinkat(&self.dir, &temp, AtFlags::empty());
            return Err(e.into());
        }
        // Makes the rename itself durable; a directory that cannot be synced does not undo it.
        let _ = fsync(&self.dir);
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if let Some(temp) = self.temp.take() {
            let _ = unlinkat(&self.dir, &temp, AtFlags::empty());
        }
    }
}

/// Writes `bytes` into a new temporary file in `dir`, beside `name`.
pub(crate) fn stage(dir: OwnedFd, name: &OsStr, bytes: &[u8]) -> std::io::Result<Staged> {
    let existing = match statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) if (stat.st_mode & 0o170000) == 0o100000 => Some(stat),
        _ => None,
    };
    let mode = existing.as_ref().map_or(0o666, |s| s.st_mode & 0o7777);
    let (file, temp) = create_temp(&dir, name, mode)?;
    // Dropped on error, which removes the temporary file.
    let staged = Staged {
        dir,
        temp: Some(temp),
        name: name.to_os_string(),
    };
    fill(
        file,
        bytes,
        existing.map(|s| (s.st_mode & 0o7777, s.st_uid, s.st_gid)),
    )?;
    Ok(staged)
}

fn create_temp(dir: &OwnedFd, name: &OsStr, mode: u32) -> std::io::Result<(File, OsString)> {
    let short: String = name.to_string_lossy().chars().take(64).collect();
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let temp = OsString::from(format!(".{short}.cheng-{}-{n}.tmp", std::process::id()));
        match openat(
            dir,
            &temp,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode),
        ) {
            Ok(fd) => return Ok((File::from(fd), temp)),
            Err(rustix::io::Errno::EXIST) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

fn fill(mut file: File, bytes: &[u8], existing: Option<(u32, u32, u32)>) -> std::io::Result<()> {
    if let Some((mode, uid, gid)) = existing {
        // The umask narrowed the mode given at creation: set it exactly.
        rustix::fs::fchmod(&file, Mode::from_raw_mode(mode))?;
        // Keep the owner where this process may (it is root, or the owner already).
        let _ = fchown(&file, Some(Uid::from_raw(uid)), Some(Gid::from_raw(gid)));
    }
    file.write_all(bytes)?;
    file.sync_all()
}
