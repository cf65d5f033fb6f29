//! Opening a relative path beneath a directory descriptor without following any symlink.
//!
//! The first choice is `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//! RESOLVE_NO_MAGICLINKS`: the kernel resolves the whole path and refuses any symlink (`ELOOP`)
//! and any escape (`EXDEV`) in one call, so a directory swapped for a link between a check and
//! this open is refused, never followed.
//!
//! Kernels older than 5.6 (and sandboxes that filter the call) answer `ENOSYS` (some seccomp
//! profiles `EPERM`); then the path is opened one component at a time, each with `O_NOFOLLOW` relative to the previous component's
//! descriptor. Since no symlink is ever followed and `..` never reaches here, that walk cannot
//! leave the starting directory either: it is slower, not weaker.

use rustix::fs::{openat, openat2, FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once `openat2` answered `ENOSYS`: later opens go straight to the component walk.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// How a handle resolves paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolver {
    /// `openat2` when the kernel has it, else the component walk.
    Kernel,
    /// Always the component walk (what kernels without `openat2` get).
    Components,
}

/// `openat2` retries an `EAGAIN` (a rename elsewhere on the system raced the lookup) this often.
const EAGAIN_RETRIES: usize = 16;

/// Opens `rel` (checked: normal components only, see [`check_relative`]) beneath `dir` with
/// `flags` (plus `O_CLOEXEC | O_NOFOLLOW`); `rel` empty opens `dir` itself again.
pub(crate) fn open_beneath(
    dir: impl AsFd,
    rel: &Path,
    flags: OFlags,
    mode: Mode,
    resolver: Resolver,
) -> std::io::Result<OwnedFd> {
    let flags = flags | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    let rel = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    match open_any(dir.as_fd(), rel, flags, mode, resolver) {
        // `O_DIRECTORY` reports a final symlink as "not a directory": say what it is.
        Err(e) if e == Errno::NOTDIR && flags.contains(OFlags::DIRECTORY) => {
            let probe = open_any(
                dir.as_fd(),
                rel,
                OFlags::PATH | OFlags::CLOEXEC | OFlags::NOFOLLOW,
                Mode::empty(),
                resolver,
            );
            match probe.and_then(rustix::fs::fstat) {
                Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::Symlink => {
                    Err(Errno::LOOP.into())
                }
                _ => Err(e.into()),
            }
        }
        other => other.map_err(Into::into),
    }
}

fn open_any(
    dir: BorrowedFd<'_>,
    rel: &Path,
    flags: OFlags,
    mode: Mode,
    resolver: Resolver,
) -> rustix::io::Result<OwnedFd> {
    if resolver == Resolver::Kernel && !NO_OPENAT2.load(Ordering::Relaxed) {
        let resolve =
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        let mut tries = 0;
        loop {
            match openat2(dir.as_fd(), rel, flags, mode, resolve) {
                Ok(fd) => return Ok(fd),
                Err(Errno::AGAIN) if tries < EAGAIN_RETRIES => tries += 1,
                Err(Errno::NOSYS) => {
                    NO_OPENAT2.store(true, Ordering::Relaxed);
                    break;
                }
                // Some seccomp profiles answer an unknown system call with EPERM: the walk by
                // component decides (it answers EPERM itself when that was the real reason).
                Err(Errno::PERM) => break,
                Err(e) => return Err(e),
            }
        }
    }
    open_by_components(dir, rel, flags, mode)
}

/// The fallback: every directory on the way opened with `O_NOFOLLOW | O_DIRECTORY` relative to
/// the one before, then the last component with `flags`.
fn open_by_components(
    dir: BorrowedFd<'_>,
    rel: &Path,
    flags: OFlags,
    mode: Mode,
) -> rustix::io::Result<OwnedFd> {
    let names: Vec<&std::ffi::OsStr> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect();
    let Some((last, parents)) = names.split_last() else {
        return openat(dir, ".", flags, mode);
    };
    let mut current: Option<OwnedFd> = None;
    for name in parents {
        let next = {
            let base = match &current {
                Some(fd) => fd.as_fd(),
                None => dir,
            };
            // Without `O_DIRECTORY`, so that a symlink is `ELOOP` (with it: `ENOTDIR`);
            // `O_NONBLOCK` so that a FIFO met here does not block; the type is checked next.
            let fd = openat(
                base,
                *name,
                OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            if FileType::from_raw_mode(rustix::fs::fstat(&fd)?.st_mode) != FileType::Directory {
                return Err(Errno::NOTDIR);
            }
            fd
        };
        current = Some(next);
    }
    let base = match &current {
        Some(fd) => fd.as_fd(),
        None => dir,
    };
    openat(base, *last, flags, mode)
}

/// Refuses what cannot name a place beneath the root: a `..`, a root or prefix component.
pub(crate) fn check_relative(rel: &Path) -> std::io::Result<()> {
    for component in rel.components() {
        match component {
            Component::Normal(_) | Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!(
                        "{} is not a plain path beneath the workspace (no `..`, no root)",
                        rel.display()
                    ),
                ))
            }
        }
    }
    Ok(())
}
