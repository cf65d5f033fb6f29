//! The workspace handle: every file access made on a caller's behalf (read, list, walk, write,
//! rename, delete, the temporary file of an atomic write) goes through a [`WorkspaceFs`], which
//! holds a directory descriptor of its root and resolves every path *beneath* it without
//! following a single symlink (`openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//! RESOLVE_NO_MAGICLINKS)`, or a component-by-component `O_NOFOLLOW` walk where the kernel lacks
//! `openat2`; see [`resolve`]). Creating, renaming and removing are `*at` calls relative to the
//! parent's descriptor.
//!
//! Why: a path policy decides on text and on a resolved path; between that decision and the
//! open, anyone able to rename inside the workspace can swap a directory for a symlink. Opened
//! by name, the write or delete would follow the swap out of the workspace. Through the handle
//! the swap makes the operation fail with [`changed_under_us`] true, and nothing is written.
//!
//! The legitimate symlinks are the policy's business: it resolves them and hands the handle a
//! path with none left in it. Paths given to the handle are relative to its root, or absolute
//! and inside it.
//!
//! ```
//! let dir = tempfile::tempdir().unwrap();
//! let fs = cheng_fs::WorkspaceFs::open(dir.path()).unwrap();
//! fs.create_dir_all("src".as_ref()).unwrap();
//! fs.write("src/a.txt".as_ref(), b"hello").unwrap();
//! assert_eq!(fs.read("src/a.txt".as_ref()).unwrap(), b"hello");
//! std::os::unix::fs::symlink("/etc", dir.path().join("out")).unwrap();
//! let err = fs.read("out/passwd".as_ref()).unwrap_err();
//! assert!(cheng_fs::changed_under_us(&err));
//! ```

pub mod atomic;
pub mod resolve;
pub mod tree;

pub use atomic::Staged;
pub use resolve::Resolver;
pub use tree::{Entry, Kind};

use rustix::fs::{fchmod, mkdirat, renameat, unlinkat, AtFlags, Mode, OFlags};
use rustix::io::Errno;
use std::ffi::OsStr;
use std::fs::{File, Metadata};
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

/// A directory descriptor of one root (the workspace, or a read-only root) and every file
/// operation beneath it.
#[derive(Debug)]
pub struct WorkspaceFs {
    root: OwnedFd,
    path: PathBuf,
    resolver: Resolver,
}

impl WorkspaceFs {
    /// Opens `root` (a canonical directory; symlinks in `root` itself are the caller's choice).
    pub fn open(root: &Path) -> std::io::Result<Self> {
        Self::open_with(root, Resolver::Kernel)
    }

    /// [`WorkspaceFs::open`] with a chosen resolver ([`Resolver::Components`] is what kernels
    /// without `openat2` get; tests use it to exercise that path).
    pub fn open_with(root: &Path, resolver: Resolver) -> std::io::Result<Self> {
        let fd = rustix::fs::open(
            root,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(std::io::Error::from)?;
        Ok(WorkspaceFs {
            root: fd,
            path: root.to_path_buf(),
            resolver,
        })
    }

    /// The root's path, as opened.
    pub fn root(&self) -> &Path {
        &self.path
    }

    /// `path` relative to the root: a relative path as it is, an absolute one stripped of the
    /// root; refused when outside the root or holding `..`.
    pub fn relative<'a>(&self, path: &'a Path) -> std::io::Result<&'a Path> {
        let rel = if path.is_absolute() {
            path.strip_prefix(&self.path).map_err(|_| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("{} is outside {}", path.display(), self.path.display()),
                )
            })?
        } else {
            path
        };
        resolve::check_relative(rel)?;
        Ok(rel)
    }

    /// Opens `path` beneath the root with `flags`.
    fn open_flags(&self, path: &Path, flags: OFlags, mode: Mode) -> std::io::Result<OwnedFd> {
        let rel = self.relative(path)?;
        resolve::open_beneath(&self.root, rel, flags, mode, self.resolver)
    }

    /// The parent's descriptor and the last name of `path` (which must name something below the
    /// root, not the root itself).
    fn parent_of<'a>(&self, path: &'a Path) -> std::io::Result<(OwnedFd, &'a OsStr)> {
        let rel = self.relative(path)?;
        let name = rel.file_name().ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{} names the root itself", path.display()),
            )
        })?;
        let parent = rel.parent().unwrap_or(Path::new(""));
        let fd = resolve::open_beneath(
            &self.root,
            parent,
            OFlags::RDONLY | OFlags::DIRECTORY,
            Mode::empty(),
            self.resolver,
        )?;
        Ok((fd, name))
    }

    /// Opens a file for reading: never through a symlink, never blocking on a FIFO.
    pub fn open_read(&self, path: &Path) -> std::io::Result<File> {
        Ok(File::from(self.open_flags(
            path,
            OFlags::RDONLY | OFlags::NONBLOCK,
            Mode::empty(),
        )?))
    }

    /// The whole file (a regular file; see [`WorkspaceFs::open_read`]).
    pub fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        let mut bytes = Vec::new();
        self.open_read(path)?.read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    /// Opens a directory (for listing, or as the base of further `*at` calls).
    pub fn open_dir(&self, path: &Path) -> std::io::Result<OwnedFd> {
        self.open_flags(path, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty())
    }

    /// The metadata of what `path` names, a symlink itself rather than what it points to.
    pub fn symlink_metadata(&self, path: &Path) -> std::io::Result<Metadata> {
        // An `O_PATH | O_NOFOLLOW` descriptor names a final symlink itself, and fstat works on it.
        File::from(self.open_flags(path, OFlags::PATH, Mode::empty())?).metadata()
    }

    /// Whether `path` exists (as anything, a dangling symlink included).
    pub fn exists(&self, path: &Path) -> std::io::Result<bool> {
        match self.symlink_metadata(path) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The entries of a directory, sorted by name (`.` and `..` left out; no sizes).
    pub fn read_dir(&self, path: &Path) -> std::io::Result<Vec<Entry>> {
        tree::entries(&self.open_dir(path)?, false)
    }

    /// Creates one directory (its parent must exist).
    pub fn create_dir(&self, path: &Path) -> std::io::Result<()> {
        let (parent, name) = self.parent_of(path)?;
        Ok(mkdirat(&parent, name, Mode::from_raw_mode(0o777))?)
    }

    /// Creates `path` and every missing directory above it, each relative to the one above.
    pub fn create_dir_all(&self, path: &Path) -> std::io::Result<()> {
        let rel = self.relative(path)?;
        let mut done = PathBuf::new();
        for component in rel.components() {
            done.push(component);
            match self.open_dir(&done) {
                Ok(_) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
            match self.create_dir(&done) {
                Ok(()) => {}
                // Made by someone else meanwhile: fine when it is a directory (checked next).
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    self.open_dir(&done)?;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Removes a file or a symlink (the link itself); a directory is refused.
    pub fn remove_file(&self, path: &Path) -> std::io::Result<()> {
        let (parent, name) = self.parent_of(path)?;
        Ok(unlinkat(&parent, name, AtFlags::empty())?)
    }

    /// Removes an empty directory.
    pub fn remove_dir(&self, path: &Path) -> std::io::Result<()> {
        let (parent, name) = self.parent_of(path)?;
        Ok(unlinkat(&parent, name, AtFlags::REMOVEDIR)?)
    }

    /// Removes a directory and everything in it, walking by descriptor and never following a
    /// link; `refuse(name)` is asked for every entry met, and a `true` stops the removal with
    /// an error before that entry's directory loses anything. Returns the files (and links)
    /// removed.
    pub fn remove_dir_all(
        &self,
        path: &Path,
        refuse: impl Fn(&OsStr) -> bool,
    ) -> std::io::Result<u64> {
        let (parent, name) = self.parent_of(path)?;
        tree::remove_all(parent, name, &refuse)
    }

    /// Every entry under a directory, depth first, never following links, regular files with
    /// their sizes; `visit` sees each entry's path relative to the root and may stop the walk
    /// with an error.
    pub fn walk(
        &self,
        path: &Path,
        visit: impl FnMut(&Path, &Entry) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let rel = self.relative(path)?.to_path_buf();
        tree::walk(self.open_dir(&rel)?, rel, visit)
    }

    /// Renames `from` onto `to`, both beneath the root.
    pub fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        let (from_dir, from_name) = self.parent_of(from)?;
        let (to_dir, to_name) = self.parent_of(to)?;
        Ok(renameat(&from_dir, from_name, &to_dir, to_name)?)
    }

    /// Sets a regular file's permission bits.
    pub fn set_mode(&self, path: &Path, mode: u32) -> std::io::Result<()> {
        let fd = self.open_flags(path, OFlags::RDONLY | OFlags::NONBLOCK, Mode::empty())?;
        Ok(fchmod(&fd, Mode::from_raw_mode(mode & 0o7777))?)
    }

    /// Writes `bytes` beside `path` in a temporary file (created in the parent's descriptor),
    /// ready for [`Staged::commit`] to rename onto it; an existing file's mode and owner are kept.
    pub fn stage(&self, path: &Path, bytes: &[u8]) -> std::io::Result<Staged> {
        let (parent, name) = self.parent_of(path)?;
        atomic::stage(parent, name, bytes)
    }

    /// [`WorkspaceFs::stage`] then [`Staged::commit`]: one file, all or nothing.
    pub fn write(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        self.stage(path, bytes)?.commit()
    }
}

/// Whether `e` is the handle refusing a symlink (`ELOOP`) or an escape (`EXDEV`) on the way:
/// the path no longer is what the policy checked, and the caller should say so and stop.
pub fn changed_under_us(e: &std::io::Error) -> bool {
    let loop_ = Errno::LOOP.raw_os_error();
    let xdev = Errno::XDEV.raw_os_error();
    e.raw_os_error()
        .is_some_and(|code| code == loop_ || code == xdev)
}

#[cfg(test)]
mod tests;
