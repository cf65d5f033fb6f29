//! Directories by descriptor: listing, walking and removing a tree. A subdirectory is always
//! opened with `O_NOFOLLOW | O_DIRECTORY` relative to its parent's descriptor, so a link met
//! (or swapped in) during a walk is an entry like a file, never a way out. Open descriptors
//! grow with depth only (one per level being walked).

use rustix::fs::{openat, statat, unlinkat, AtFlags, Dir, FileType, Mode, OFlags};
use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::rc::Rc;

/// What a directory entry is (the entry itself: a symlink is [`Kind::Symlink`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Symlink,
    /// A FIFO, socket or device.
    Other,
}

/// One directory entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: OsString,
    pub kind: Kind,
    /// A regular file's size, where the caller asked for sizes (a walk); `None` otherwise.
    pub size: Option<u64>,
}

fn kind_of(file_type: FileType) -> Kind {
    match file_type {
        FileType::RegularFile => Kind::File,
        FileType::Directory => Kind::Dir,
        FileType::Symlink => Kind::Symlink,
        _ => Kind::Other,
    }
}

/// The entries of the directory open as `dir`, sorted by name, with regular files' sizes when
/// `sizes`. An entry removed while the directory is read is left out.
pub(crate) fn entries(dir: &OwnedFd, sizes: bool) -> std::io::Result<Vec<Entry>> {
    let mut out = Vec::new();
    for entry in Dir::read_from(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        let name = OsStr::from_bytes(name).to_os_string();
        let listed = entry.file_type();
        // A stat only where the listing does not say enough: the type on file systems that do
        // not report it, the size of a regular file when asked.
        let (kind, size) =
            if listed == FileType::Unknown || (sizes && listed == FileType::RegularFile) {
                match statat(dir, &name, AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(stat) => {
                        let kind = kind_of(FileType::from_raw_mode(stat.st_mode));
                        let size = (sizes && kind == Kind::File)
                            .then(|| u64::try_from(stat.st_size).unwrap_or(0));
                        (kind, size)
                    }
                    Err(rustix::io::Errno::NOENT) => continue,
                    Err(e) => return Err(e.into()),
                }
            } else {
                (kind_of(listed), None)
            };
        out.push(Entry { name, kind, size });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

fn open_child(dir: &impl AsFd, name: &OsStr) -> std::io::Result<OwnedFd> {
    Ok(openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// Every entry under `dir` (open, named `rel`), depth first, never following a link; regular
/// files come with their sizes.
pub(crate) fn walk(
    dir: OwnedFd,
    rel: PathBuf,
    mut visit: impl FnMut(&std::path::Path, &Entry) -> std::io::Result<()>,
) -> std::io::Result<()> {
    // Directories still to list, by their parent's descriptor (shared by the siblings) and name:
    // a directory is opened only when its turn comes, so the open descriptors are those of the
    // ancestors of the one being listed, however many directories wait.
    let mut waiting: Vec<(Rc<OwnedFd>, OsString, PathBuf)> = Vec::new();
    let mut next = Some((Rc::new(dir), rel));
    loop {
        let (dir, rel) = match next.take() {
            Some(listed) => listed,
            None => match waiting.pop() {
                Some((parent, name, path)) => (Rc::new(open_child(&*parent, &name)?), path),
                None => return Ok(()),
            },
        };
        for entry in entries(&dir, true)? {
            let path = rel.join(&entry.name);
            visit(&path, &entry)?;
            if entry.kind == Kind::Dir {
                waiting.push((Rc::clone(&dir), entry.name, path));
            }
        }
    }
}

/// Removes `name` in `parent` and everything under it; returns the files (and links) removed.
pub(crate) fn remove_all(
    parent: OwnedFd,
    name: &OsStr,
    refuse: &dyn Fn(&OsStr) -> bool,
) -> std::io::Result<u64> {
    let top = open_child(&parent, name)?;
    let mut removed = 0u64;
    // Each level: its descriptor and its name in the level above.
    let mut stack: Vec<(OwnedFd, OsString)> = vec![(top, name.to_os_string())];
    while let Some((dir, _)) = stack.last() {
        let listed = entries(dir, false)?;
        if let Some(bad) = listed.iter().find(|e| refuse(&e.name)) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!(
                    "met `{}`, a protected name, and stopped",
                    bad.name.to_string_lossy()
                ),
            ));
        }
        let mut descend = None;
        for entry in listed {
            if entry.kind == Kind::Dir {
                descend.get_or_insert(entry.name);
                continue;
            }
            unlinkat(dir, &entry.name, AtFlags::empty())?;
            removed += 1;
        }
        if let Some(child) = descend {
            let fd = open_child(dir, &child)?;
            stack.push((fd, child));
            continue;
        }
        // Empty now: remove it from the level above (or from `parent` for the top).
        let Some((_, done)) = stack.pop() else { break };
        let above = stack.last().map_or(parent.as_fd(), |(fd, _)| fd.as_fd());
        unlinkat(above, &done, AtFlags::REMOVEDIR)?;
    }
    Ok(removed)
}
