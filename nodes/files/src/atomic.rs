//! All-or-nothing file writes: a temporary file in the same directory, written and fsynced, then
//! renamed onto the real path (and the directory fsynced). A failure at any step before the
//! rename leaves the old file untouched and removes the temporary file; the permissions (and,
//! where allowed, the owner) of an existing file are kept.
//!
//! Several files are written all-or-nothing by staging each ([`stage`]) and committing them only
//! when every one staged ([`Staged::commit`]); a dropped [`Staged`] removes its temporary file.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A written and fsynced temporary file waiting to be renamed onto its target.
#[derive(Debug)]
pub struct Staged {
    temp: Option<PathBuf>,
    target: PathBuf,
}

impl Staged {
    /// The path the commit renames onto.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Renames the temporary file onto the target and fsyncs the directory.
    pub fn commit(mut self) -> std::io::Result<()> {
        let Some(temp) = self.temp.take() else {
            return Ok(());
        };
        if let Err(e) = std::fs::rename(&temp, &self.target) {
            let _ = std::fs::remove_file(&temp);
            return Err(e);
        }
        if let Some(dir) = self.target.parent() {
            // Makes the rename itself durable; a directory that cannot be opened is not an error
            // of the write.
            if let Ok(dir) = File::open(dir) {
                let _ = dir.sync_all();
            }
        }
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if let Some(temp) = self.temp.take() {
            let _ = std::fs::remove_file(temp);
        }
    }
}

/// Writes `bytes` to a temporary file beside `target` (which must be a real path: no symlink in
/// it), with the permissions of the existing `target` when there is one, and fsyncs it.
/// The parent directory must exist.
pub fn stage(target: &Path, bytes: &[u8]) -> std::io::Result<Staged> {
    let dir = target.parent().ok_or_else(|| {
        std::io::Error::other(format!("{} has no parent directory", target.display()))
    })?;
    let name = target
        .file_name()
        .ok_or_else(|| std::io::Error::other(format!("{} names no file", target.display())))?;
    let existing = std::fs::symlink_metadata(target)
        .ok()
        .filter(|m| m.is_file());
    let mode = existing
        .as_ref()
        .map_or(0o666, |m| m.permissions().mode() & 0o7777);
    let (file, temp) = create_temp(dir, &name.to_string_lossy(), mode)?;
    // Dropped on error, which removes the temporary file.
    let staged = Staged {
        temp: Some(temp),
        target: target.to_path_buf(),
    };
    fill(file, bytes, existing.as_ref())?;
    Ok(staged)
}

/// [`stage`] then [`Staged::commit`]: one file, all or nothing.
pub fn write(target: &Path, bytes: &[u8]) -> std::io::Result<()> {
    stage(target, bytes)?.commit()
}

fn create_temp(dir: &Path, name: &str, mode: u32) -> std::io::Result<(File, PathBuf)> {
    let short: String = name.chars().take(64).collect();
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let temp = dir.join(format!(".{short}.cheng-{}-{n}.tmp", std::process::id()));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&temp)
        {
            Ok(file) => return Ok((file, temp)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

fn fill(mut file: File, bytes: &[u8], existing: Option<&std::fs::Metadata>) -> std::io::Result<()> {
    if let Some(meta) = existing {
        // The umask narrowed the mode given at creation: set it exactly.
        file.set_permissions(std::fs::Permissions::from_mode(
            meta.permissions().mode() & 0o7777,
        ))?;
        // Keep the owner where this process may (it is root, or the owner already).
        let _ = std::os::unix::fs::fchown(&file, Some(meta.uid()), Some(meta.gid()));
    }
    file.write_all(bytes)?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_content_keeps_mode_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.sh");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o751)).unwrap();
        write(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777,
            0o751
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_dropped_stage_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "old").unwrap();
        let staged = stage(&path, b"new").unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
        drop(staged);
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
