//! The audit of a writable workspace after each run: the second layer behind the seccomp filter
//! and the read-only protections.
//!
//! One walk of the workspace (never following symlinks, bounded like the walk before the run)
//! looks for two things the sandbox cannot prevent by mounts alone:
//!
//! - **Privileged files.** A regular file that carries a setuid or setgid bit, or a file
//!   capability (`security.capability`), and whose inode changed during the run (its ctime is
//!   not older than the run's start) has the bits or the capability removed, and is named in
//!   the warnings. Through the idmapped mount a file the run writes lands owned by the
//!   workspace's owner (root when cheng runs as root), so such a bit would make it a setuid-root
//!   program on the host. The ctime tells "changed during the run" without a snapshot before
//!   it: no system call can set a ctime, only the clock, and chmod, setxattr, link, rename and
//!   every write move it forward. A privileged file older than the run is left as it is.
//!   Directories are left alone: a setgid directory only picks the group of new entries.
//! - **New repositories.** A `.git` (directory, file or symlink) that was not there before the
//!   run (same path and same inode) cannot have been masked in advance; git runs its hooks and
//!   reads its config when someone uses git in that directory. Each is named, with the hooks
//!   inside it.
//!
//! `.git` directories that existed before the run were read-only during it and are not entered.
//! Past [`NESTED_WALK_MAX_ENTRIES`] entries or [`NESTED_WALK_MAX_DEPTH`] levels, or at a
//! directory changed during the run that cannot be read, the audit fails: the run is reported
//! as failed rather than as audited.

use super::mounts::{Repository, NESTED_WALK_MAX_DEPTH, NESTED_WALK_MAX_ENTRIES};
use std::collections::HashSet;
use std::ffi::{CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The extended attribute that holds a file capability.
const CAPABILITY_XATTR: &str = "security.capability";
/// At most this many warnings of each kind; the rest are counted in one more line.
const MAX_NAMED: usize = 20;
/// How much earlier than the clock read at the run's start a ctime still counts as "during the
/// run": inode times come from the coarse clock, and a small step of the clock backwards must
/// not hide a file. A privileged file changed this shortly before the run is treated as the run's.
const CLOCK_SLACK_NS: i128 = 2_000_000_000;

/// A point in time on the clock inode times are taken from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Since(i128);

impl Since {
    /// Now, as the file system would stamp an inode changed now (CLOCK_REALTIME_COARSE), less
    /// the slack. Read before the run starts.
    pub fn now() -> Since {
        // SAFETY: clock_gettime fills a plain struct; the pointer is valid for the call.
        let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let ok = unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut ts) } == 0;
        let ns = if ok {
            ts.tv_sec as i128 * 1_000_000_000 + ts.tv_nsec as i128
        } else {
            // Without a clock every file counts as changed during the run (stricter, never looser).
            i128::MIN + CLOCK_SLACK_NS
        };
        Since(ns - CLOCK_SLACK_NS)
    }

    /// Whether `meta`'s inode changed at or after this point.
    fn changed_since(&self, meta: &std::fs::Metadata) -> bool {
        meta.ctime() as i128 * 1_000_000_000 + meta.ctime_nsec() as i128 >= self.0
    }
}

/// What the audit found and did.
#[derive(Debug, Default)]
pub struct AuditReport {
    /// One sentence per finding (bounded; see [`MAX_NAMED`]), for the run's `warnings`.
    pub warnings: Vec<String>,
    /// Files whose setuid/setgid bits or capability were removed.
    pub stripped: Vec<PathBuf>,
    /// Privileged files changed during the run whose privilege could not be removed.
    pub not_stripped: Vec<PathBuf>,
    /// The new `.git` entries.
    pub new_repositories: Vec<PathBuf>,
    /// Entries looked at.
    pub entries: usize,
}

/// Why the audit could not finish; the run is then reported as failed.
#[derive(Debug)]
pub struct AuditError(pub String);

impl std::fmt::Display for AuditError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Audits `boundary` after a run that started at `since`; `known` are the `.git` entries that
/// existed before it ([`super::mounts::Placeholders::repositories`]).
pub fn audit(
    boundary: &Path,
    since: Since,
    known: &[Repository],
) -> Result<AuditReport, AuditError> {
    audit_bounded(
        boundary,
        since,
        known,
        NESTED_WALK_MAX_ENTRIES,
        NESTED_WALK_MAX_DEPTH,
    )
}

fn audit_bounded(
    boundary: &Path,
    since: Since,
    known: &[Repository],
    max_entries: usize,
    max_depth: usize,
) -> Result<AuditReport, AuditError> {
    let known: HashSet<&Repository> = known.iter().collect();
    let mut report = AuditReport::default();
    let mut findings = Findings::default();
    let mut stack: Vec<(PathBuf, usize)> = vec![(boundary.to_path_buf(), 0)];
    let fail = |what: String| {
        AuditError(format!(
            "the run finished, but the audit of the writable workspace after it could not: {what}. Files the run \
             wrote may carry setuid/setgid bits or file capabilities, or hold a new git repository: check them \
             (find {} -perm /6000; getcap -r) before using them",
            boundary.display()
        ))
    };
    while let Some((dir, depth)) = stack.pop() {
        let list = match std::fs::read_dir(&dir) {
            Ok(list) => list,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                // Changed during the run: the run may have hidden something there. Otherwise the
                // sandbox could not have written there either (same permissions, no capabilities).
                if std::fs::symlink_metadata(&dir).map_or(true, |m| since.changed_since(&m)) {
                    return Err(fail(format!(
                        "{} cannot be read ({e})",
                        display_in(boundary, &dir)
                    )));
                }
                findings.unreadable(boundary, &dir, &e);
                continue;
            }
        };
        for entry in list {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    return Err(fail(format!(
                        "{} cannot be listed ({e})",
                        display_in(boundary, &dir)
                    )))
                }
            };
            report.entries += 1;
            if report.entries > max_entries {
                return Err(fail(format!(
                    "the workspace has more than {max_entries} entries"
                )));
            }
            // d_type; std asks lstat itself when the file system does not fill it.
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if depth + 1 > max_depth {
                return Err(fail(format!(
                    "the workspace is deeper than {max_depth} levels"
                )));
            }
            if kind.is_file() && entry.file_name() != OsStr::new(".git") {
                // fstatat on the directory's descriptor, without following a symlink.
                let Ok(meta) = entry.metadata() else { continue };
                if since.changed_since(&meta) {
                    check_file(boundary, &entry.path(), &meta, &mut report, &mut findings);
                }
                continue;
            }
            let path = entry.path();
            if entry.file_name() == OsStr::new(".git") {
                let Ok(meta) = std::fs::symlink_metadata(&path) else {
                    continue;
                };
                let seen = Repository {
                    path: path.clone(),
                    dev: meta.dev(),
                    ino: meta.ino(),
                };
                if known.contains(&seen) {
                    // Read-only during the run: nothing in it changed.
                    continue;
                }
                findings.repository(boundary, &path, &meta);
                report.new_repositories.push(path.clone());
            }
            if kind.is_dir() {
                stack.push((path, depth + 1));
            } else if kind.is_file() {
                // A `.git` file (a new one: an old one was skipped above).
                if let Ok(meta) = entry.metadata() {
                    if since.changed_since(&meta) {
                        check_file(boundary, &path, &meta, &mut report, &mut findings);
                    }
                }
            }
            // Symlinks are never followed; other kinds cannot be executed.
        }
    }
    report.warnings = findings.into_warnings();
    Ok(report)
}

/// A regular file changed during the run: removes its setuid/setgid bits and capability.
fn check_file(
    boundary: &Path,
    path: &Path,
    meta: &std::fs::Metadata,
    report: &mut AuditReport,
    findings: &mut Findings,
) {
    let setid = meta.mode() & (libc::S_ISUID | libc::S_ISGID);
    let capability = has_capability(path);
    if setid == 0 && !capability {
        return;
    }
    match strip(path, meta, setid != 0, capability) {
        Ok(()) => {
            findings.stripped(boundary, path, meta.mode(), setid != 0, capability);
            report.stripped.push(path.to_path_buf());
        }
        Err(e) => {
            findings.not_stripped(boundary, path, &e);
            report.not_stripped.push(path.to_path_buf());
        }
    }
}

/// Whether `path` (not followed) carries a `security.capability` attribute.
fn has_capability(path: &Path) -> bool {
    let (Ok(c_path), Ok(name)) = (
        CString::new(path.as_os_str().as_bytes()),
        CString::new(CAPABILITY_XATTR),
    ) else {
        return false;
    };
    // SAFETY: both strings are NUL-terminated; a null buffer of size 0 asks only for the size.
    let size = unsafe { libc::lgetxattr(c_path.as_ptr(), name.as_ptr(), std::ptr::null_mut(), 0) };
    size > 0
}

/// Removes the setuid/setgid bits and the capability from the regular file at `path`, through a
/// descriptor opened without following a symlink and checked to be the inode `meta` describes
/// (so a path swapped in the meantime is not touched).
fn strip(
    path: &Path,
    meta: &std::fs::Metadata,
    setid: bool,
    capability: bool,
) -> Result<(), String> {
    let c_path = CString::new(path.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
    // SAFETY: a NUL-terminated path; O_PATH opens no file content and runs nothing.
    let fd = unsafe {
        libc::open(
            c_path.as_ptr(),
            libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error().to_string());
    }
    // SAFETY: `fd` was just opened and is owned here alone.
    let fd = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    let raw = std::os::fd::AsRawFd::as_raw_fd(&fd);
    // SAFETY: fstat fills a plain struct for a valid descriptor.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::fstat(raw, &mut st) } != 0 {
        return Err(std::io::Error::last_os_error().to_string());
    }
    if st.st_dev != meta.dev()
        || st.st_ino != meta.ino()
        || st.st_mode & libc::S_IFMT != libc::S_IFREG
    {
        return Err("the file was replaced while being audited".into());
    }
    // The magic link reaches the inode the descriptor holds, whatever the path now names.
    let via = CString::new(format!("/proc/self/fd/{raw}")).map_err(|e| e.to_string())?;
    if capability {
        let name = CString::new(CAPABILITY_XATTR).map_err(|e| e.to_string())?;
        // SAFETY: NUL-terminated strings valid for the call.
        if unsafe { libc::removexattr(via.as_ptr(), name.as_ptr()) } != 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::ENODATA) {
                return Err(format!("the capability could not be removed: {e}"));
            }
        }
    }
    if setid || st.st_mode & (libc::S_ISUID | libc::S_ISGID) != 0 {
        // Removing the capability leaves the mode alone; chmod again from the current mode.
        let mode = st.st_mode & 0o7777 & !(libc::S_ISUID | libc::S_ISGID);
        // SAFETY: a NUL-terminated path valid for the call.
        if unsafe { libc::chmod(via.as_ptr(), mode) } != 0 {
            return Err(format!(
                "the setuid/setgid bits could not be removed: {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    Ok(())
}

/// `path` relative to the boundary, for messages.
fn display_in(boundary: &Path, path: &Path) -> String {
    match path.strip_prefix(boundary) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".into(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

/// The warnings, each kind bounded.
#[derive(Default)]
struct Findings {
    stripped: Vec<String>,
    not_stripped: Vec<String>,
    repositories: Vec<String>,
    unreadable: Vec<String>,
    counts: [usize; 4],
}

impl Findings {
    fn push(list: &mut Vec<String>, count: &mut usize, line: impl FnOnce() -> String) {
        *count += 1;
        if list.len() < MAX_NAMED {
            list.push(line());
        }
    }

    fn stripped(&mut self, boundary: &Path, path: &Path, mode: u32, setid: bool, capability: bool) {
        let shown = display_in(boundary, path);
        Self::push(&mut self.stripped, &mut self.counts[0], || {
            let what = match (setid, capability) {
                (true, true) => format!(
                    "its setuid/setgid bits (mode {:o}) and its file capability were",
                    mode & 0o7777
                ),
                (true, false) => format!("its setuid/setgid bits (mode {:o}) were", mode & 0o7777),
                _ => "its file capability (security.capability) was".to_string(),
            };
            format!("{shown} gained privileges during the run; {what} removed after it")
        });
    }

    fn not_stripped(&mut self, boundary: &Path, path: &Path, why: &str) {
        let shown = display_in(boundary, path);
        Self::push(&mut self.not_stripped, &mut self.counts[1], || {
            format!("{shown} gained setuid/setgid bits or a file capability during the run and {why}: do not run it; delete it")
        });
    }

    fn repository(&mut self, boundary: &Path, path: &Path, meta: &std::fs::Metadata) {
        let shown = display_in(boundary, path);
        let line = if meta.is_dir() {
            let hooks = hooks_in(&path.join("hooks"));
            let hooks = if hooks.is_empty() {
                String::new()
            } else {
                let names: Vec<String> = hooks.iter().map(|h| display_in(boundary, h)).collect();
                format!(" (hooks: {})", names.join(", "))
            };
            format!("a new repository was created at {shown}; its hooks run when someone uses git there{hooks}")
        } else if meta.file_type().is_symlink() {
            let target = std::fs::read_link(path)
                .map(|t| t.display().to_string())
                .unwrap_or_default();
            format!("a new repository link was created at {shown} (-> {target}); git uses that repository's hooks and config when someone uses git there")
        } else {
            let text = std::fs::read(path).ok().map(|b| {
                String::from_utf8_lossy(&b[..b.len().min(512)])
                    .lines()
                    .next()
                    .unwrap_or("")
                    .to_string()
            });
            format!(
                "a new repository pointer was created at {shown} ({}); git uses that repository's hooks and config when someone uses git there",
                text.unwrap_or_default().trim()
            )
        };
        Self::push(&mut self.repositories, &mut self.counts[2], || line);
    }

    fn unreadable(&mut self, boundary: &Path, dir: &Path, e: &std::io::Error) {
        let shown = display_in(boundary, dir);
        Self::push(&mut self.unreadable, &mut self.counts[3], || {
            format!("the audit after the run could not look into {shown} ({e}); it was not changed during the run")
        });
    }

    fn into_warnings(self) -> Vec<String> {
        let mut out = Vec::new();
        let kinds = [
            (self.stripped, "more files had privileges removed"),
            (
                self.not_stripped,
                "more privileged files could not be fixed",
            ),
            (self.repositories, "more new repositories"),
            (self.unreadable, "more unreadable directories"),
        ];
        for ((list, more), count) in kinds.into_iter().zip(self.counts) {
            let named = list.len();
            out.extend(list);
            if count > named {
                out.push(format!("… and {} {more}", count - named));
            }
        }
        out
    }
}

/// The hooks git would run in a `hooks` directory: every entry but the `*.sample` files git
/// ships (bounded).
fn hooks_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(list) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut hooks: Vec<PathBuf> = list
        .flatten()
        .filter(|e| !e.file_name().as_bytes().ends_with(b".sample"))
        .take(MAX_NAMED)
        .map(|e| e.path())
        .collect();
    hooks.sort();
    hooks
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn root_dir() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        (dir, root)
    }

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path).unwrap().mode() & 0o7777
    }

    fn executable(path: &Path, mode: u32) {
        std::fs::write(path, "#!/bin/sh\nid\n").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
        assert_eq!(
            self::mode(path),
            mode,
            "the test could not set mode {mode:o} on {}",
            path.display()
        );
    }

    /// A version-2 file capability granting CAP_SETUID (bit 7), permitted and effective, as
    /// `setcap cap_setuid+ep` writes it.
    fn set_capability(path: &Path) -> std::io::Result<()> {
        let mut value = Vec::new();
        value.extend_from_slice(&(0x0200_0000u32 | 0x1).to_le_bytes()); // VFS_CAP_REVISION_2 | effective
        value.extend_from_slice(&(1u32 << 7).to_le_bytes()); // permitted, low word
        value.extend_from_slice(&0u32.to_le_bytes()); // inheritable, low word
        value.extend_from_slice(&0u32.to_le_bytes()); // permitted, high word
        value.extend_from_slice(&0u32.to_le_bytes()); // inheritable, high word
        let c_path = CString::new(path.as_os_str().as_bytes()).unwrap();
        let name = CString::new(CAPABILITY_XATTR).unwrap();
        // SAFETY: NUL-terminated strings and a buffer of the given length, valid for the call.
        let rc = unsafe {
            libc::setxattr(
                c_path.as_ptr(),
                name.as_ptr(),
                value.as_ptr().cast(),
                value.len(),
                0,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }

    /// Root can set a file capability; elsewhere the capability half cannot be set up. In CI
    /// (which runs as root) that is a failure, not a skip.
    fn capability_or_skip(path: &Path) -> bool {
        match set_capability(path) {
            Ok(()) => true,
            Err(e) => {
                assert!(
                    std::env::var_os("CI").is_none(),
                    "cannot set security.capability in CI ({e}): the test must run as root"
                );
                eprintln!("capability half skipped: cannot set security.capability here ({e}); run as root");
                false
            }
        }
    }

    #[test]
    fn privileges_gained_during_the_run_are_removed_and_named() {
        let (_d, root) = root_dir();
        let since = Since::now();
        std::fs::create_dir_all(root.join("deep/er")).unwrap();
        executable(&root.join("sh"), 0o4755);
        executable(&root.join("deep/er/sg"), 0o2711);
        executable(&root.join("both"), 0o6755);
        executable(&root.join("plain"), 0o755);
        executable(&root.join("capped"), 0o755);
        let capped = capability_or_skip(&root.join("capped"));
        assert_eq!(has_capability(&root.join("capped")), capped);

        let report = audit(&root, since, &[]).unwrap();
        let warnings = report.warnings.join("\n");
        assert_eq!(mode(&root.join("sh")), 0o755, "{warnings}");
        assert_eq!(mode(&root.join("deep/er/sg")), 0o711, "{warnings}");
        assert_eq!(mode(&root.join("both")), 0o755, "{warnings}");
        assert_eq!(mode(&root.join("plain")), 0o755);
        assert!(warnings.contains("sh gained privileges during the run; its setuid/setgid bits (mode 4755) were removed"), "{warnings}");
        assert!(
            warnings.contains("deep/er/sg gained privileges"),
            "{warnings}"
        );
        assert!(warnings.contains("both gained privileges"), "{warnings}");
        assert!(!warnings.contains("plain"), "{warnings}");
        if capped {
            assert!(
                !has_capability(&root.join("capped")),
                "the capability is still there: {warnings}"
            );
            assert!(warnings.contains("capped gained privileges during the run; its file capability (security.capability) was removed"), "{warnings}");
            assert_eq!(report.stripped.len(), 4);
        }
        assert!(report.not_stripped.is_empty());
        // Nothing left: a second audit finds nothing.
        assert!(audit(&root, since, &[]).unwrap().warnings.is_empty());
    }

    #[test]
    fn a_privileged_file_older_than_the_run_is_left_alone() {
        let (_d, root) = root_dir();
        executable(&root.join("old-sh"), 0o4755);
        let capped = capability_or_skip(&root.join("old-sh"));
        // The run started after the file's last change (past the clock slack).
        let since = Since(Since::now().0 + 2 * CLOCK_SLACK_NS);
        let report = audit(&root, since, &[]).unwrap();
        assert!(report.warnings.is_empty(), "{:?}", report.warnings);
        assert_eq!(mode(&root.join("old-sh")), 0o4755);
        assert_eq!(has_capability(&root.join("old-sh")), capped);
    }

    #[test]
    fn a_setuid_file_behind_a_symlink_is_not_followed_and_links_are_left_alone() {
        let (_d, root) = root_dir();
        let outside = tempfile::tempdir().unwrap();
        executable(&outside.path().join("target"), 0o4755);
        std::os::unix::fs::symlink(outside.path().join("target"), root.join("link")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("dirlink")).unwrap();
        let report = audit(&root, Since::now(), &[]).unwrap();
        assert!(report.warnings.is_empty(), "{:?}", report.warnings);
        assert_eq!(
            mode(&outside.path().join("target")),
            0o4755,
            "the audit followed a symlink out of the workspace"
        );
    }

    #[test]
    fn new_repositories_are_named_with_their_hooks_and_old_ones_are_not() {
        let (_d, root) = root_dir();
        std::fs::create_dir_all(root.join("old/.git/hooks")).unwrap();
        std::fs::write(root.join("old/.git/hooks/pre-commit"), "").unwrap();
        std::fs::create_dir_all(root.join("moved/.git")).unwrap();
        // A privileged file inside an old (read-only during the run) `.git` is not looked at.
        executable(&root.join("old/.git/tool"), 0o4755);
        let guard = crate::mounts::protect(&root, &mut Vec::new()).unwrap();
        let known = guard.repositories().to_vec();
        let since = Since::now();

        // What a run could do: new repositories of every kind, hooks, a setuid file inside one,
        // and a renamed parent with a new `.git` where the old one was.
        std::fs::create_dir_all(root.join("sub/.git/hooks")).unwrap();
        std::fs::write(root.join("sub/.git/hooks/pre-commit"), "#!/bin/sh\n").unwrap();
        std::fs::write(root.join("sub/.git/hooks/post-update.sample"), "").unwrap();
        executable(&root.join("sub/.git/hooks/post-checkout"), 0o4755);
        std::fs::create_dir_all(root.join("pointer")).unwrap();
        std::fs::write(root.join("pointer/.git"), "gitdir: ../sub/.git\n").unwrap();
        std::fs::create_dir_all(root.join("link")).unwrap();
        std::os::unix::fs::symlink("../sub/.git", root.join("link/.git")).unwrap();
        std::fs::rename(root.join("moved"), root.join("moved-away")).unwrap();
        std::fs::create_dir_all(root.join("moved/.git/hooks")).unwrap();

        let report = audit(&root, since, &known).unwrap();
        let warnings = report.warnings.join("\n");
        assert!(
            warnings.contains("a new repository was created at sub/.git; its hooks run when someone uses git there (hooks: sub/.git/hooks/post-checkout, sub/.git/hooks/pre-commit)"),
            "{warnings}"
        );
        assert!(
            warnings.contains(
                "a new repository pointer was created at pointer/.git (gitdir: ../sub/.git)"
            ),
            "{warnings}"
        );
        assert!(
            warnings.contains("a new repository link was created at link/.git (-> ../sub/.git)"),
            "{warnings}"
        );
        assert!(
            warnings.contains("a new repository was created at moved/.git"),
            "{warnings}"
        );
        assert!(!warnings.contains("old/.git"), "{warnings}");
        assert!(!warnings.contains(".sample"), "{warnings}");
        // The walk entered the new repository.
        assert_eq!(
            mode(&root.join("sub/.git/hooks/post-checkout")),
            0o755,
            "{warnings}"
        );
        assert!(
            warnings.contains("sub/.git/hooks/post-checkout gained privileges"),
            "{warnings}"
        );
        assert_eq!(
            mode(&root.join("old/.git/tool")),
            0o4755,
            "an old .git was entered: {warnings}"
        );
        drop(guard);
    }

    #[test]
    fn the_audit_is_bounded_and_fails_closed() {
        let (_d, root) = root_dir();
        for i in 0..10 {
            std::fs::write(root.join(format!("f{i}")), "").unwrap();
        }
        let err = audit_bounded(&root, Since::now(), &[], 9, 64)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("more than 9 entries")
                && err.contains("find ")
                && err.contains("-perm /6000"),
            "{err}"
        );
        assert!(audit_bounded(&root, Since::now(), &[], 10, 64).is_ok());

        let (_d2, root2) = root_dir();
        std::fs::create_dir_all(root2.join("a/b/c")).unwrap();
        let err = audit_bounded(&root2, Since::now(), &[], 100, 2)
            .unwrap_err()
            .to_string();
        assert!(err.contains("deeper than 2 levels"), "{err}");
        // The real bounds are the walk's before the run.
        let mut deep = root2.clone();
        for _ in 0..=NESTED_WALK_MAX_DEPTH {
            deep.push("d");
        }
        std::fs::create_dir_all(&deep).unwrap();
        let err = audit(&root2, Since::now(), &[]).unwrap_err().to_string();
        assert!(err.contains("deeper than 64 levels"), "{err}");
    }

    #[test]
    fn warnings_are_bounded() {
        let (_d, root) = root_dir();
        let since = Since::now();
        for i in 0..(MAX_NAMED + 5) {
            std::fs::create_dir_all(root.join(format!("r{i}/.git"))).unwrap();
        }
        let report = audit(&root, since, &[]).unwrap();
        assert_eq!(report.new_repositories.len(), MAX_NAMED + 5);
        assert_eq!(
            report.warnings.len(),
            MAX_NAMED + 1,
            "{:?}",
            report.warnings
        );
        assert!(
            report
                .warnings
                .last()
                .is_some_and(|w| w.contains("and 5 more new repositories")),
            "{:?}",
            report.warnings
        );
    }
}
