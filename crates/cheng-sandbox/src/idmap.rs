//! Idmapped mounts, so that code running as the unprivileged sandbox uid can write a workspace
//! (or read a requested path) owned by another user, without that user's uid.
//!
//! Used only when cheng runs as root. The sandboxed code runs as an unprivileged per-run uid so that RLIMIT_NPROC
//! binds it (it never binds root), but the workspace usually belongs to root or a login user. An
//! idmapped mount presents files owned by that owner as owned by the sandbox uid, and files the
//! sandbox creates land on disk owned by the original owner.
//!
//! The mount must not be visible on the host: a dedicated thread unshares its mount namespace,
//! replaces each path with its idmapped clone there, and starts bwrap from that thread, so only
//! bwrap (and the sandbox it builds from that view) sees it. The namespace disappears with bwrap.
//! bwrap is started through [`cheng_exec::run`] like every other process: its per-run reaper is cloned
//! from that thread (so it shares the thread's mount namespace), and it passes bwrap only stdin,
//! stdout, stderr and the run's declared descriptors.
//!
//! An approved read path is never looked up by path here: its clone is made from the descriptor
//! it was opened on ([`PinnedPath`]), attached over the directory at its path in the private
//! namespace only once that is still the same directory (device and inode), and handed to bwrap
//! on the descriptor number the plan gave the read path, in place of the original descriptor.

use super::pinned::{Identity, PinnedPath};
use cheng_exec::{ProcessOutput, ProcessSpec};
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// One path to replace with an idmapped clone: files owned by `owner` appear owned by the sandbox ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdmapTarget {
    pub path: PathBuf,
    pub owner_uid: u32,
    pub owner_gid: u32,
    /// An approved read path: the descriptor it was opened on and the number bwrap mounts it
    /// from (`--ro-bind-fd`, given by the plan). The clone is made from that descriptor and
    /// handed to bwrap on that number instead.
    pub pinned: Option<(PinnedPath, RawFd)>,
}

impl IdmapTarget {
    pub fn for_path(path: &Path) -> io::Result<Self> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path)?;
        Ok(IdmapTarget {
            path: path.to_path_buf(),
            owner_uid: meta.uid(),
            owner_gid: meta.gid(),
            pinned: None,
        })
    }

    /// An approved read path, with its owner as it was when it was opened (the plan adds the
    /// descriptor and its number).
    pub fn for_pinned(pinned: &PinnedPath) -> Self {
        let (owner_uid, owner_gid) = pinned.owner();
        IdmapTarget {
            path: pinned.path().to_path_buf(),
            owner_uid,
            owner_gid,
            pinned: None,
        }
    }
}

/// A user namespace whose id map sends `owner` to the sandbox ids. One per run (sandbox uids
/// differ per run); the descriptor is dropped when the run ends.
fn userns_for(owner: (u32, u32), sandbox: (u32, u32)) -> io::Result<Arc<OwnedFd>> {
    new_userns(owner, sandbox).map(Arc::new)
}

/// Forks a child that enters a new user namespace, writes its id maps from here, and keeps a
/// descriptor to the namespace. The child only makes raw system calls before `_exit`.
fn new_userns(owner: (u32, u32), sandbox: (u32, u32)) -> io::Result<OwnedFd> {
    let (ready_r, ready_w) = pipe()?;
    let (go_r, go_w) = pipe()?;
    // SAFETY: the child runs only async-signal-safe system calls (unshare, write, read, _exit).
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: child side, raw system calls only.
        unsafe {
            libc::close(go_w.as_raw_fd());
            libc::close(ready_r.as_raw_fd());
            let ok: u8 = if libc::unshare(libc::CLONE_NEWUSER) == 0 {
                1
            } else {
                0
            };
            libc::write(
                ready_w.as_raw_fd(),
                &ok as *const u8 as *const libc::c_void,
                1,
            );
            let mut b = 0u8;
            libc::read(go_r.as_raw_fd(), &mut b as *mut u8 as *mut libc::c_void, 1);
            libc::_exit(0);
        }
    }
    drop(ready_w);
    drop(go_r);
    let result = (|| {
        let mut ok = [0u8; 1];
        let n = read_fd(ready_r.as_raw_fd(), &mut ok)?;
        if n != 1 || ok[0] != 1 {
            return Err(io::Error::other(
                "the helper could not create a user namespace",
            ));
        }
        std::fs::write(
            format!("/proc/{pid}/uid_map"),
            format!("{} {} 1\n", owner.0, sandbox.0),
        )?;
        std::fs::write(
            format!("/proc/{pid}/gid_map"),
            format!("{} {} 1\n", owner.1, sandbox.1),
        )?;
        let ns = std::fs::File::open(format!("/proc/{pid}/ns/user"))?;
        Ok(OwnedFd::from(ns))
    })();
    // Release the child: a byte, then EOF (either ends its wait).
    // SAFETY: writing one byte from a valid buffer.
    unsafe { libc::write(go_w.as_raw_fd(), [1u8].as_ptr() as *const libc::c_void, 1) };
    drop(go_w);
    let mut status = 0;
    // SAFETY: reaping our own child, which exits once `go_w` is closed.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    result
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 fills two new descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are new and owned here.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn read_fd(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        // SAFETY: reading into a valid buffer.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const OPEN_TREE_CLONE: libc::c_uint = 1;
const MOUNT_ATTR_IDMAP: u64 = 0x0010_0000;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x0000_0004;
const MOVE_MOUNT_T_EMPTY_PATH: libc::c_uint = 0x0000_0040;

/// A detached idmapped clone of what `target` names: its pinned descriptor (an approved read
/// path; cloned in the namespace the descriptor was opened in, before the thread leaves it), or
/// its path (in the calling thread's private namespace).
fn idmapped_clone(target: &IdmapTarget, userns: &OwnedFd) -> io::Result<OwnedFd> {
    let path = CString::new(target.path.as_os_str().as_bytes())
        .map_err(|_| io::Error::other("path contains NUL"))?;
    let empty = c"";
    let (from_dir, from_path, from_flags) = match &target.pinned {
        Some((pinned, _)) => (
            pinned.fd().as_raw_fd(),
            empty.as_ptr(),
            libc::AT_EMPTY_PATH as libc::c_uint,
        ),
        None => (libc::AT_FDCWD, path.as_ptr(), 0),
    };
    // SAFETY: open_tree with a valid descriptor and NUL-terminated path returns a new detached
    // mount descriptor or -1.
    let tree = unsafe {
        libc::syscall(
            libc::SYS_open_tree,
            from_dir,
            from_path,
            OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint | from_flags,
        )
    };
    if tree < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the descriptor is new and owned here.
    let tree = unsafe { OwnedFd::from_raw_fd(tree as RawFd) };
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_IDMAP,
        attr_clr: 0,
        propagation: 0,
        userns_fd: userns.as_raw_fd() as u64,
    };
    // SAFETY: mount_setattr reads `attr` (size given) and the empty path.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            tree.as_raw_fd(),
            empty.as_ptr(),
            libc::AT_EMPTY_PATH,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(tree)
}

/// Attaches the detached `tree` in the calling thread's (private) namespace over `target.path`,
/// or over `place` (the directory at a pinned read path's path, checked by [`still_pinned`]):
/// bwrap cannot bind a detached tree, only one attached somewhere.
fn attach(tree: &OwnedFd, target: &IdmapTarget, place: Option<&std::fs::File>) -> io::Result<()> {
    let path = CString::new(target.path.as_os_str().as_bytes())
        .map_err(|_| io::Error::other("path contains NUL"))?;
    let empty = c"";
    let (to_dir, to_path, move_flags) = match place {
        Some(here) => (
            here.as_raw_fd(),
            empty.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH,
        ),
        None => (libc::AT_FDCWD, path.as_ptr(), MOVE_MOUNT_F_EMPTY_PATH),
    };
    // SAFETY: move_mount attaches the detached tree over the given place in this thread's
    // namespace; every pointer is a NUL-terminated string alive for the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree.as_raw_fd(),
            empty.as_ptr(),
            to_dir,
            to_path,
            move_flags,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The directory at a pinned read path's path, opened in this namespace, when it is still the
/// pinned one.
fn still_pinned(pinned: &PinnedPath) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let here = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_NOFOLLOW)
        .open(pinned.path())
        .and_then(|f| f.metadata().map(|m| (f, m)));
    let here = match here {
        Ok((file, meta)) if Identity::of(&meta) == pinned.identity() => Some(file),
        _ => None,
    };
    let Some(here) = here else {
        return Err(io::Error::other(format!(
            "{} is no longer the directory that was approved (it was replaced after it was opened); run again to approve what is there now",
            pinned.path().display()
        )));
    };
    Ok(here)
}

/// `spec` with each `(descriptor, number)` of `replaced` in place of what it had on that number.
fn with_descriptors(mut spec: ProcessSpec, replaced: Vec<(OwnedFd, RawFd)>) -> ProcessSpec {
    for (fd, number) in replaced {
        spec.inherit_fds.retain(|(_, n)| *n != number);
        spec.inherit_fds.push((Arc::new(fd), number));
    }
    spec
}

/// Prepares the user namespaces up front (so errors surface before anything starts).
pub fn prepare(
    targets: &[IdmapTarget],
    sandbox: (u32, u32),
) -> io::Result<Vec<(IdmapTarget, Arc<OwnedFd>)>> {
    targets
        .iter()
        .map(|t| Ok((t.clone(), userns_for((t.owner_uid, t.owner_gid), sandbox)?)))
        .collect()
}

/// Gives the calling thread a private mount namespace with the idmapped clones in place; what it
/// starts afterwards inherits the namespace. Only for a thread that ends soon after. Returns the
/// clones of pinned read paths with the descriptor numbers bwrap must find them on.
fn enter_private_namespace(
    prepared: &[(IdmapTarget, Arc<OwnedFd>)],
) -> Result<Vec<(OwnedFd, RawFd)>, String> {
    let failed = |target: &IdmapTarget, e: io::Error| {
        format!(
            "cannot create an idmapped mount of {} (uid {} -> sandbox uid): {e}; the file system may not support idmapped mounts",
            target.path.display(),
            target.owner_uid
        )
    };
    // Pinned read paths are cloned from their descriptors here, in the namespace they were
    // opened in: a mount of another namespace cannot be cloned once this thread has left it.
    let mut pinned_clones = Vec::new();
    for (target, userns) in prepared.iter().filter(|(t, _)| t.pinned.is_some()) {
        pinned_clones.push(idmapped_clone(target, userns).map_err(|e| failed(target, e))?);
    }
    // SAFETY: unsharing the mount namespace (and fs info) of this thread only.
    if unsafe { libc::unshare(libc::CLONE_NEWNS | libc::CLONE_FS) } != 0 {
        return Err(format!(
            "cannot create a private mount namespace: {}",
            io::Error::last_os_error()
        ));
    }
    // SAFETY: remounting / as recursively private in the new namespace; nothing propagates to the host.
    let rc = unsafe {
        libc::mount(
            c"none".as_ptr(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(format!(
            "cannot make the private mount namespace private: {}",
            io::Error::last_os_error()
        ));
    }
    let mut pinned_clones = pinned_clones.into_iter();
    let mut replaced = Vec::new();
    for (target, userns) in prepared {
        match &target.pinned {
            Some((pinned, number)) => {
                let tree = pinned_clones
                    .next()
                    .ok_or_else(|| failed(target, io::Error::other("its clone is missing")))?;
                let place = still_pinned(pinned).map_err(|e| e.to_string())?;
                attach(&tree, target, Some(&place)).map_err(|e| failed(target, e))?;
                replaced.push((tree, *number));
            }
            None => {
                let tree = idmapped_clone(target, userns).map_err(|e| failed(target, e))?;
                attach(&tree, target, None).map_err(|e| failed(target, e))?;
            }
        }
    }
    Ok(replaced)
}

/// Starts `spec` as a live process (a session) from a thread whose private mount namespace has
/// the idmapped clones in place: the process, and the per-run reaper above it, keep that
/// namespace after the thread ends. Its supervision runs on the caller's runtime.
pub fn start_live_with_idmaps(
    spec: ProcessSpec,
    cancel: CancellationToken,
    prepared: Vec<(IdmapTarget, Arc<OwnedFd>)>,
) -> Result<cheng_exec::live::LiveProcess, String> {
    let runtime = tokio::runtime::Handle::try_current()
        .map_err(|e| format!("a session needs the async runtime: {e}"))?;
    std::thread::Builder::new()
        .name("cheng-sandbox-idmap".into())
        .spawn(move || {
            let spec = with_descriptors(spec, enter_private_namespace(&prepared)?);
            let _entered = runtime.enter();
            cheng_exec::live::LiveProcess::start(spec, cancel)
        })
        .map_err(|e| format!("cannot start the sandbox thread: {e}"))?
        .join()
        .map_err(|_| "the sandbox thread stopped unexpectedly".to_string())?
}

/// Runs `spec` from a thread whose private mount namespace has the idmapped clones in place.
pub async fn run_with_idmaps(
    spec: ProcessSpec,
    cancel: &CancellationToken,
    prepared: Vec<(IdmapTarget, Arc<OwnedFd>)>,
) -> Result<ProcessOutput, String> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    // Dropping this future cancels the run on the thread too, so nothing outlives the caller.
    let cancel = cancel.child_token();
    let _cancel_on_drop = cancel.clone().drop_guard();
    std::thread::Builder::new()
        .name("cheng-sandbox-idmap".into())
        .spawn(move || {
            let result = (|| {
                let spec = with_descriptors(spec, enter_private_namespace(&prepared)?);
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| format!("cannot start the sandbox runtime: {e}"))?;
                Ok(runtime.block_on(cheng_exec::run(spec, &cancel)))
            })();
            let _ = tx.send(result);
        })
        .map_err(|e| format!("cannot start the sandbox thread: {e}"))?;
    rx.await
        .map_err(|_| "the sandbox thread ended without a result".to_string())?
}
