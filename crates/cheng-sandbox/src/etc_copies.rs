//! The view's /etc as one read-only bind of a directory of copies, kept for the process.
//!
//! Each small /etc file of the view ([`SystemEntry::Copy`]) otherwise costs bwrap a `--file`
//! copy at every start (about 80 µs each, 1.2 ms for the fifteen of a Debian host: the largest
//! piece of the view). A process that starts sandboxes again and again (`cheng serve`, a graph)
//! keeps current copies in one directory instead, with empty mount points for the /etc entries
//! bound on top, and binds that directory read-only at /etc: one bind per run. Before every run
//! each source is looked at again (`stat`); one that changed (a new resolv.conf) is copied anew
//! (written aside, then renamed over), so a run sees what a `--file` copy would show. Anything
//! unexpected (a source gone, a type changed, a write failing) makes the run use the `--file`
//! copies as before.
//!
//! Only as root (the directory lives in root's /run/cheng, `etc-<pid>-<nanoseconds>`, mode
//! 0755, files 0444, out of reach of other users and of the sandbox, which sees it read-only),
//! and only from a process's second sandbox on: a single `cheng run` leaves nothing behind. Each
//! directory has a lock file beside it (`….lock`) its process holds locked (`flock`) for as long
//! as it runs; the next process to make a directory removes those whose lock it can take (their
//! process is gone, in whatever pid namespace it ran).

use super::mounts::SystemEntry;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Where the directories are made (root only).
const BASE: &str = "/run/cheng";

/// What identifies a version of a source file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Self {
        Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

/// A directory of copies of the view's /etc entries.
#[derive(Debug)]
pub(crate) struct EtcCopies {
    dir: PathBuf,
    /// The directory's device and inode, as made.
    id: (u64, u64),
    /// Each copied source, where its copy is, and the version copied.
    copies: Vec<(PathBuf, PathBuf, Stamp)>,
    /// Each entry bound on top (its mount point is made inside), and whether it is a directory.
    mount_points: Vec<(PathBuf, bool)>,
}

impl EtcCopies {
    /// Makes `dir` (which must not exist) and fills it from the /etc entries of `view`; `None`
    /// when the view has an /etc entry this cannot show (a symlink) or a step fails.
    pub(crate) fn build(dir: PathBuf, view: &[SystemEntry]) -> Option<EtcCopies> {
        let made = EtcCopies::fill(&dir, view);
        if made.is_none() {
            let _ = std::fs::remove_dir_all(&dir);
        }
        made
    }

    fn fill(dir: &Path, view: &[SystemEntry]) -> Option<EtcCopies> {
        make_dir(dir)?;
        let mut copies = Vec::new();
        let mut mount_points = Vec::new();
        for entry in view {
            match entry {
                SystemEntry::Copy(source) => {
                    let Some(target) = inside(dir, source) else {
                        continue;
                    };
                    make_parents(dir, &target)?;
                    let stamp = copy(source, &target)?;
                    copies.push((source.clone(), target, stamp));
                }
                SystemEntry::ReadOnly(source) => {
                    let Some(target) = inside(dir, source) else {
                        continue;
                    };
                    make_parents(dir, &target)?;
                    let is_dir = std::fs::metadata(source).ok()?.is_dir();
                    if is_dir {
                        make_dir(&target)?;
                    } else {
                        std::fs::write(&target, b"").ok()?;
                        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o444))
                            .ok()?;
                    }
                    mount_points.push((source.clone(), is_dir));
                }
                SystemEntry::Symlink { link, .. } if link.starts_with("/etc") => return None,
                SystemEntry::Symlink { .. } => {}
            }
        }
        Some(EtcCopies {
            dir: dir.to_path_buf(),
            id: identity(dir)?,
            copies,
            mount_points,
        })
    }

    /// Brings every copy up to date with its source; `false` when one cannot be, or when the
    /// directory is no longer the one made (something removed or replaced it).
    pub(crate) fn refresh(&mut self) -> bool {
        let current = std::fs::symlink_metadata(&self.dir)
            .is_ok_and(|m| m.is_dir() && (m.dev(), m.ino()) == self.id);
        if !current {
            return false;
        }
        for (source, target, stamp) in &mut self.copies {
            let Ok(meta) = std::fs::metadata(&*source) else {
                return false;
            };
            if !meta.is_file() {
                return false;
            }
            if Stamp::of(&meta) != *stamp {
                let Some(fresh) = copy(source, target) else {
                    return false;
                };
                *stamp = fresh;
            }
        }
        self.mount_points
            .iter()
            .all(|(source, is_dir)| std::fs::metadata(source).is_ok_and(|m| m.is_dir() == *is_dir))
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }
}

/// The device and inode `path` itself (not a symlink's target) has now.
fn identity(path: &Path) -> Option<(u64, u64)> {
    std::fs::symlink_metadata(path)
        .ok()
        .map(|m| (m.dev(), m.ino()))
}

/// Where `source` (an /etc path) goes inside `dir`; `None` outside /etc.
fn inside(dir: &Path, source: &Path) -> Option<PathBuf> {
    let rest = source.strip_prefix("/etc").ok()?;
    (!rest.as_os_str().is_empty()).then(|| dir.join(rest))
}

fn make_dir(dir: &Path) -> Option<()> {
    use std::os::unix::fs::DirBuilderExt;
    if dir.is_dir() {
        return Some(());
    }
    std::fs::DirBuilder::new().mode(0o755).create(dir).ok()?;
    // Whatever the umask.
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).ok()
}

fn make_parents(dir: &Path, target: &Path) -> Option<()> {
    let parent = target.parent()?;
    let mut missing: Vec<&Path> = parent
        .ancestors()
        .take_while(|p| *p != dir && !p.is_dir())
        .collect();
    missing.reverse();
    missing.into_iter().try_for_each(make_dir)
}

/// Copies `source` (symlinks followed) to `target`, world-readable and read-only, written aside
/// and renamed over; the version copied.
fn copy(source: &Path, target: &Path) -> Option<Stamp> {
    let mut from = std::fs::File::open(source).ok()?;
    let meta = from.metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    let name = target.file_name()?.to_string_lossy().into_owned();
    let aside = target.with_file_name(format!(".{name}.new"));
    let _ = std::fs::remove_file(&aside);
    let mut to = std::fs::File::create(&aside).ok()?;
    std::io::copy(&mut from, &mut to).ok()?;
    to.set_permissions(std::fs::Permissions::from_mode(0o444))
        .ok()?;
    drop(to);
    std::fs::rename(&aside, target).ok()?;
    Some(Stamp::of(&meta))
}

/// Sandboxes started by this process so far.
static STARTS: AtomicUsize = AtomicUsize::new(0);
/// This process's copies and the lock it holds for them, once made; `Err(())` once making them
/// failed (not tried again).
static COPIES: Mutex<Option<Result<(EtcCopies, std::fs::File), ()>>> = Mutex::new(None);

/// The directory to bind at /etc for this run, up to date; `None` to copy the files one by one
/// (not root, the process's first sandbox, or anything unexpected).
pub(crate) fn for_run(root: bool, view: &[SystemEntry]) -> Option<PathBuf> {
    if !root || STARTS.fetch_add(1, Ordering::SeqCst) == 0 {
        return None;
    }
    let mut slot = COPIES.lock().ok()?;
    if slot.is_none() {
        *slot = Some(make_for_process(view).ok_or(()));
    }
    let (copies, _lock) = slot.as_mut()?.as_mut().ok()?;
    copies.refresh().then(|| copies.dir().to_path_buf())
}

fn make_for_process(view: &[SystemEntry]) -> Option<(EtcCopies, std::fs::File)> {
    let base = Path::new(BASE);
    make_dir(base)?;
    // Root's own directory only: not a symlink, owned by root, written by nobody else.
    let meta = std::fs::symlink_metadata(base).ok()?;
    if !meta.is_dir() || meta.uid() != 0 || meta.mode() & 0o022 != 0 {
        return None;
    }
    remove_orphans(base);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let name = format!("etc-{}-{nanos}", std::process::id());
    // The lock first (created anew, locked, and still the file at that path), then the
    // directory: a directory always has a live lock beside it while its process runs.
    let lock_path = base.join(format!("{name}.lock"));
    let lock = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&lock_path)
        .ok()?;
    if !cheng_exec::flock::try_lock_exclusive(&lock).ok()? {
        return None;
    }
    let opened = lock.metadata().ok()?;
    if identity(&lock_path) != Some((opened.dev(), opened.ino())) {
        return None;
    }
    let copies = EtcCopies::build(base.join(name), view)?;
    Some((copies, lock))
}

/// Removes the directories (and lock files) whose process no longer holds its lock, and
/// directories without a lock file (whose lock was removed: their process is gone).
fn remove_orphans(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(name) = path
            .file_name()
            .and_then(|n| n.to_str())
            .map(str::to_string)
        else {
            continue;
        };
        if !name.starts_with("etc-") {
            continue;
        }
        let Some(dir_name) = name.strip_suffix(".lock") else {
            // A process makes its lock file before its directory.
            if !base.join(format!("{name}.lock")).exists()
                && entry.file_type().is_ok_and(|t| t.is_dir())
            {
                let _ = std::fs::remove_dir_all(&path);
            }
            continue;
        };
        let Ok(lock) = std::fs::OpenOptions::new().write(true).open(&path) else {
            continue;
        };
        if cheng_exec::flock::try_lock_exclusive(&lock).unwrap_or(false) {
            // Its process is gone: the directory first, then the lock (a directory without a
            // lock is never left for a live process).
            let _ = std::fs::remove_dir_all(base.join(dir_name));
            let _ = std::fs::remove_file(&path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_follow_their_sources_and_mount_points_exist() {
        let host = tempfile::tempdir().unwrap();
        let dir = host.path().join("copies");
        // /etc/passwd exists on every Linux host; entries outside /etc (and /etc itself) map
        // to nothing inside.
        let view = vec![
            SystemEntry::Copy("/etc/passwd".into()),
            SystemEntry::ReadOnly("/etc".into()),
            SystemEntry::ReadOnly("/usr".into()),
        ];
        let mut copies = EtcCopies::build(dir.clone(), &view).unwrap();
        let copy = dir.join("passwd");
        assert_eq!(
            std::fs::read(&copy).unwrap(),
            std::fs::read("/etc/passwd").unwrap()
        );
        assert_eq!(
            std::fs::metadata(&copy).unwrap().permissions().mode() & 0o777,
            0o444
        );
        assert_eq!(
            std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
            0o755
        );
        assert!(copies.refresh());
        // A source that changes is copied anew at the next refresh (the copy's source swapped
        // for a file the test may change).
        let etc_file = host.path().join("hosts");
        std::fs::write(&etc_file, "127.0.0.1 one\n").unwrap();
        copies.copies[0].0 = etc_file.clone();
        assert!(copies.refresh());
        assert_eq!(std::fs::read_to_string(&copy).unwrap(), "127.0.0.1 one\n");
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&etc_file, "127.0.0.1 two\n").unwrap();
        assert!(copies.refresh());
        assert_eq!(std::fs::read_to_string(&copy).unwrap(), "127.0.0.1 two\n");
        assert_eq!(
            std::fs::metadata(&copy).unwrap().permissions().mode() & 0o777,
            0o444
        );
        // A source gone: the copies are not used.
        std::fs::remove_file(&etc_file).unwrap();
        assert!(!copies.refresh());
    }

    #[test]
    fn only_directories_whose_process_is_gone_are_removed() {
        let base = tempfile::tempdir().unwrap();
        let dir = |n: &str| base.path().join(n);
        for name in ["etc-1-1", "etc-2-2", "etc-3-3", "other"] {
            std::fs::create_dir(dir(name)).unwrap();
        }
        // etc-1-1: its lock file is not held (its process is gone).
        std::fs::write(dir("etc-1-1.lock"), b"").unwrap();
        // etc-2-2: a live process holds its lock.
        let held = std::fs::File::create(dir("etc-2-2.lock")).unwrap();
        assert!(cheng_exec::flock::try_lock_exclusive(&held).unwrap());
        // etc-3-3: no lock file at all.
        remove_orphans(base.path());
        assert!(!dir("etc-1-1").exists() && !dir("etc-1-1.lock").exists());
        assert!(
            dir("etc-2-2").is_dir() && dir("etc-2-2.lock").exists(),
            "a live process's directory was removed"
        );
        assert!(!dir("etc-3-3").exists());
        assert!(
            dir("other").is_dir(),
            "a name not of this module was removed"
        );
        drop(held);
        remove_orphans(base.path());
        assert!(
            !dir("etc-2-2").exists(),
            "the directory outlived its process's lock"
        );
    }

    #[test]
    fn mount_points_are_made_and_symlinks_under_etc_are_refused() {
        let host = tempfile::tempdir().unwrap();
        let view = vec![
            SystemEntry::ReadOnly("/etc/ld.so.conf.d".into()),
            SystemEntry::Copy("/etc/hostname-missing".into()),
        ];
        // A missing source fails the build (and leaves no directory behind).
        let dir = host.path().join("a");
        assert!(EtcCopies::build(dir.clone(), &view).is_none());
        assert!(!dir.exists());
        let view = vec![SystemEntry::ReadOnly("/etc/ld.so.conf.d".into())];
        if Path::new("/etc/ld.so.conf.d").is_dir() {
            let dir = host.path().join("b");
            let copies = EtcCopies::build(dir.clone(), &view).unwrap();
            assert!(dir.join("ld.so.conf.d").is_dir());
            assert_eq!(
                copies.mount_points,
                [(PathBuf::from("/etc/ld.so.conf.d"), true)]
            );
        }
        let view = vec![SystemEntry::Symlink {
            target: "x".into(),
            link: "/etc/y".into(),
        }];
        assert!(EtcCopies::build(host.path().join("c"), &view).is_none());
    }
}
