//! Approved host paths held open, so that what a person approved is what the sandbox mounts.
//!
//! Why: a `request_read_paths` entry is approved by its path, and bwrap used to mount it by that
//! path again when the run started. A symlink put in its place in between (or a directory renamed
//! over it) was mounted instead, something nobody approved. A [`PinnedPath`] is an
//! `O_PATH | O_CLOEXEC` descriptor opened once, when the path is resolved for the approval card;
//! from then on only the descriptor is used: bwrap mounts it with `--ro-bind-fd` (and itself
//! checks that what it mounted is the descriptor's directory, then closes it before the first
//! program inside starts), and an idmapped view of it is cloned from it (`idmap`). Whatever
//! happens to the path afterwards, the sandbox sees the approved directory.

use std::fs::Metadata;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Which file a descriptor or a path names: its device and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    pub dev: u64,
    pub ino: u64,
}

impl Identity {
    pub fn of(meta: &Metadata) -> Identity {
        Identity {
            dev: meta.dev(),
            ino: meta.ino(),
        }
    }

    /// What `path` names now (following symlinks, as the approval card resolved it).
    pub fn of_path(path: &Path) -> io::Result<Identity> {
        std::fs::metadata(path).map(|m| Identity::of(&m))
    }
}

/// An absolute, canonical host path and the descriptor it was opened on once.
#[derive(Debug, Clone)]
pub struct PinnedPath {
    path: PathBuf,
    fd: Arc<OwnedFd>,
    identity: Identity,
    owner: (u32, u32),
}

impl PartialEq for PinnedPath {
    fn eq(&self, other: &Self) -> bool {
        self.path == other.path && self.identity == other.identity
    }
}

impl Eq for PinnedPath {}

impl PinnedPath {
    /// Opens `path` (absolute and canonical, as the approval card shows it) once. Refused, with
    /// [`io::ErrorKind::Other`] and a sentence saying so, when what is there now is not at that
    /// path: a symlink in its place or on the way to it, or a rename since it was resolved.
    pub fn open(path: &Path) -> io::Result<PinnedPath> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH | libc::O_NOFOLLOW)
            .open(path)?;
        let meta = file.metadata()?;
        let changed = |now: &str| {
            io::Error::other(format!(
                "{} changed after it was resolved ({now}); nothing was mounted",
                path.display()
            ))
        };
        if meta.file_type().is_symlink() {
            return Err(changed("it is now a symbolic link"));
        }
        // The kernel's own name for what was opened: a symlink on the way, or a rename since the
        // path was resolved, shows as a different name here.
        let opened = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))?;
        if opened != path {
            return Err(changed(&format!("it now leads to {}", opened.display())));
        }
        Ok(PinnedPath {
            path: path.to_path_buf(),
            identity: Identity::of(&meta),
            owner: (meta.uid(), meta.gid()),
            fd: Arc::new(OwnedFd::from(file)),
        })
    }

    /// The path it was opened at: where it is mounted in the sandbox.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The device and inode of the opened file.
    pub fn identity(&self) -> Identity {
        self.identity
    }

    /// The owner's uid and gid when it was opened.
    pub fn owner(&self) -> (u32, u32) {
        self.owner
    }

    /// The descriptor (O_PATH), shared with each bwrap start of the run.
    pub fn fd(&self) -> &Arc<OwnedFd> {
        &self.fd
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_descriptor_keeps_naming_the_opened_directory_after_a_swap() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let approved = root.join("approved");
        std::fs::create_dir(&approved).unwrap();
        std::fs::create_dir(root.join("other")).unwrap();
        std::fs::write(approved.join("f"), "approved").unwrap();
        std::fs::write(root.join("other/f"), "other").unwrap();
        let pinned = PinnedPath::open(&approved).unwrap();
        assert_eq!(pinned.path(), approved);
        assert_eq!(pinned.identity(), Identity::of_path(&approved).unwrap());
        // The path is swapped for a symlink to another directory.
        std::fs::rename(&approved, root.join("moved")).unwrap();
        std::os::unix::fs::symlink(root.join("other"), &approved).unwrap();
        let through_fd = format!("/proc/self/fd/{}/f", pinned.fd().as_raw_fd());
        assert_eq!(std::fs::read_to_string(through_fd).unwrap(), "approved");
        // By path it is the other directory now (what a by-path mount would have shown).
        assert_eq!(
            std::fs::read_to_string(approved.join("f")).unwrap(),
            "other"
        );
        assert_ne!(pinned.identity(), Identity::of_path(&approved).unwrap());
    }

    #[test]
    fn a_path_that_is_not_where_it_was_resolved_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("real")).unwrap();
        // The last component a symlink.
        std::os::unix::fs::symlink(root.join("real"), root.join("link")).unwrap();
        let err = PinnedPath::open(&root.join("link")).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        // A symlink on the way.
        std::fs::create_dir(root.join("real/inner")).unwrap();
        let err = PinnedPath::open(&root.join("link/inner")).unwrap_err();
        assert!(err.to_string().contains("now leads to"), "{err}");
        assert!(
            err.to_string()
                .contains(&root.join("real/inner").display().to_string()),
            "{err}"
        );
        // Missing.
        let err = PinnedPath::open(&root.join("missing")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }
}
