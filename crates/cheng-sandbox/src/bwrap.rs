//! bubblewrap: locating the binary, probing that it can build namespaces here, and an argument
//! builder over plain argv (no wrapper crate; bwrap's own flags, in the order they are pushed).
//!
//! The probe runs at most once per process and bwrap path, with the namespace flags the sandbox
//! will use, on `true`. The sandbox runs it only when a run fails without bwrap naming the reason
//! (a successful start already proves bwrap works, and a second bwrap start per run would cost
//! as much as the run). Its stderr is classified into a hint naming the fix (a sysctl, a package, a
//! container option), because "bwrap: setting up uid map: Permission denied" alone does not tell
//! a person what to do.

use cheng_node::{ErrorKind, NodeError};
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};

/// Environment variable naming the bwrap binary to use instead of `bwrap` on PATH.
pub const BWRAP_ENV: &str = "CHENG_BWRAP";

/// Where bwrap is searched when [`BWRAP_ENV`] is unset (a fixed list, not the caller's PATH, so
/// that a workspace file can never stand in for it).
const SEARCH_DIRS: &[&str] = &["/usr/bin", "/usr/local/bin", "/bin", "/usr/sbin", "/sbin"];

/// The bwrap binary to run: `override_path`, else `$CHENG_BWRAP`, else the first `bwrap` in the
/// system directories. The error is SANDBOX_UNAVAILABLE with an install hint.
pub fn locate(override_path: Option<&Path>) -> Result<PathBuf, NodeError> {
    locate_in(override_path, std::env::var_os(BWRAP_ENV), SEARCH_DIRS)
}

/// [`locate`] with the environment variable's value and the search directories given.
pub(crate) fn locate_in(
    override_path: Option<&Path>,
    env: Option<OsString>,
    search: &[&str],
) -> Result<PathBuf, NodeError> {
    let configured = override_path
        .map(Path::to_path_buf)
        .or_else(|| env.map(PathBuf::from));
    if let Some(path) = configured {
        return if is_executable(&path) {
            Ok(path)
        } else {
            Err(unavailable(format!(
                "bubblewrap was configured at {} ({BWRAP_ENV}) but no executable file is there; \
                 nothing ran. Install bubblewrap (apt-get install bubblewrap) or point {BWRAP_ENV} at it",
                path.display()
            )))
        };
    }
    search.iter().map(|dir| Path::new(dir).join("bwrap")).find(|p| is_executable(p)).ok_or_else(|| {
        unavailable(format!(
            "bubblewrap (bwrap) is not installed (looked in {}); nothing ran and nothing runs on the host \
             instead. Install it: apt-get install bubblewrap / dnf install bubblewrap, or set {BWRAP_ENV}=/path/to/bwrap",
            search.join(", ")
        ))
    })
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

fn unavailable(message: String) -> NodeError {
    NodeError::new(ErrorKind::SandboxUnavailable, message)
}

/// Probe verdicts by bwrap path and flag set.
type ProbeCache = HashMap<(PathBuf, Vec<String>), Result<(), NodeError>>;

/// Checks once per process (per bwrap path and flag set) that bwrap can create the namespaces
/// `flags` ask for. Later calls return the cached verdict.
pub fn probe(bwrap: &Path, flags: &[&str]) -> Result<(), NodeError> {
    if let Some(verdict) = probed(bwrap, flags) {
        return verdict;
    }
    let verdict = probe_uncached(bwrap, flags);
    if let Ok(mut cache) = probe_cache().lock() {
        cache.insert(probe_key(bwrap, flags), verdict.clone());
    }
    verdict
}

/// The verdict of an earlier [`probe`] in this process, if there was one.
pub fn probed(bwrap: &Path, flags: &[&str]) -> Option<Result<(), NodeError>> {
    probe_cache()
        .lock()
        .ok()
        .and_then(|cache| cache.get(&probe_key(bwrap, flags)).cloned())
}

fn probe_key(bwrap: &Path, flags: &[&str]) -> (PathBuf, Vec<String>) {
    (
        bwrap.to_path_buf(),
        flags.iter().map(|f| f.to_string()).collect(),
    )
}

fn probe_cache() -> &'static Mutex<ProbeCache> {
    static CACHE: OnceLock<Mutex<ProbeCache>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

fn probe_uncached(bwrap: &Path, flags: &[&str]) -> Result<(), NodeError> {
    let mut cmd = Command::new(bwrap);
    cheng_exec::fds::close_inherited_on_exec(&mut cmd);
    let output = cmd
        .args(flags)
        .args([
            "--ro-bind",
            "/",
            "/",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--",
            "true",
        ])
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| {
            unavailable(format!(
                "bubblewrap at {} could not be started: {e}; nothing ran",
                bwrap.display()
            ))
        })?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
    let stderr = if stderr.is_empty() {
        format!("exit status {}", output.status)
    } else {
        stderr
    };
    Err(unavailable(format!(
        "bubblewrap cannot create the sandbox here: {stderr}. {} Nothing ran; cheng never falls back to running on the host.",
        hint(&stderr)
    )))
}

/// A sentence telling a person how to fix what bwrap reported.
pub fn hint(stderr: &str) -> &'static str {
    let s = stderr.to_ascii_lowercase();
    if s.contains("seccomp") {
        "bubblewrap could not install cheng's seccomp filter, which every sandbox runs under: use a bubblewrap \
         with `--seccomp` (0.3 or newer; Debian 12 ships 0.8) and a kernel built with CONFIG_SECCOMP_FILTER; \
         in a container, allow nested seccomp filters (the runtime's profile must permit seccomp(2) and prctl)."
    } else if s.contains("race condition binding dirfd") {
        "An approved read path was not what bubblewrap found when it mounted it: it changed while the \
         sandbox was being built. Run again; nothing from the changed path was shown."
    } else if s.contains("no permissions to create new namespace")
        || s.contains("creating new namespace failed")
    {
        "Unprivileged user namespaces are disabled or restricted: on Ubuntu 23.10+ run \
         `sysctl kernel.apparmor_restrict_unprivileged_userns=0` (or install an AppArmor profile for bwrap); \
         on Debian/older kernels `sysctl kernel.unprivileged_userns_clone=1`; check `user.max_user_namespaces` is not 0."
    } else if s.contains("setting up uid map") || s.contains("uid map") || s.contains("gid map") {
        "Writing the user namespace id map was refused, usually by AppArmor \
         (`sysctl kernel.apparmor_restrict_unprivileged_userns=0`) or a container without CAP_SETUID; \
         run in a container with user namespaces allowed (e.g. docker --security-opt seccomp=unconfined --security-opt apparmor=unconfined)."
    } else if s.contains("rtm_newaddr") || s.contains("loopback") {
        "The network namespace's loopback device could not be configured (nested container without \
         CAP_NET_ADMIN in its namespace); allow network namespaces in the container runtime."
    } else if s.contains("can't mount proc") || s.contains("mount proc") {
        "A fresh /proc could not be mounted (a container with a masked /proc or without CAP_SYS_ADMIN); \
         run the container with --privileged or with /proc unmasked (e.g. docker --security-opt systempaths=unconfined)."
    } else if s.contains("can't chdir") || s.contains("can't find source path") {
        "A directory the sandbox mounts or starts in could not be reached by bwrap (missing, or its permissions \
         keep it out); check the workspace, working_subdir and request_read_paths exist and can be entered."
    } else if s.contains("operation not permitted") || s.contains("permission denied") {
        "The kernel or a security module refused the namespaces (seccomp/AppArmor/SELinux policy, or a \
         container without CAP_SYS_ADMIN); allow user namespaces: `sysctl kernel.unprivileged_userns_clone=1`, \
         `sysctl kernel.apparmor_restrict_unprivileged_userns=0`, or relax the container's seccomp profile."
    } else {
        "Check that bubblewrap works: `bwrap --ro-bind / / --unshare-all true`."
    }
}

/// One mount operation of a bwrap command line (`--ro-bind SRC DEST` is `{ op: "--ro-bind",
/// source: Some(SRC), dest: DEST }`; a symlink's source is its target).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    pub op: &'static str,
    pub source: Option<PathBuf>,
    pub dest: PathBuf,
}

/// A bwrap command line, built flag by flag.
#[derive(Debug, Clone, Default)]
pub struct Bwrap {
    args: Vec<OsString>,
    mounts: Vec<Mount>,
}

impl Bwrap {
    pub fn new() -> Self {
        Bwrap::default()
    }

    fn push(&mut self, items: &[&OsStr]) -> &mut Self {
        self.args.extend(items.iter().map(|s| s.to_os_string()));
        self
    }

    /// A bare flag such as `--unshare-pid` or `--die-with-parent`.
    pub fn flag(&mut self, flag: &str) -> &mut Self {
        self.push(&[flag.as_ref()])
    }

    /// A mount operation `op SRC DEST` (or `op DEST` without a source), recorded in [`Bwrap::mounts`].
    fn mount(&mut self, op: &'static str, src: Option<&Path>, dest: &Path) -> &mut Self {
        self.mounts.push(Mount {
            op,
            source: src.map(Path::to_path_buf),
            dest: dest.to_path_buf(),
        });
        self.args.push(op.into());
        if let Some(src) = src {
            self.args.push(src.as_os_str().to_os_string());
        }
        self.args.push(dest.as_os_str().to_os_string());
        self
    }

    pub fn ro_bind(&mut self, src: &Path, dest: &Path) -> &mut Self {
        self.mount("--ro-bind", Some(src), dest)
    }

    /// A read-only bind of what descriptor `fd` names (which must be open in bwrap; see
    /// [`cheng_exec::ProcessSpec::inherit_fds`]) at `dest`. bwrap checks that what it mounted is the
    /// descriptor's file (device and inode) and closes the descriptor after mounting. `source`
    /// names what the descriptor holds, for [`Bwrap::mounts`].
    pub fn ro_bind_fd(&mut self, fd: std::os::fd::RawFd, source: &Path, dest: &Path) -> &mut Self {
        let fd = fd.to_string();
        self.push(&["--ro-bind-fd".as_ref(), fd.as_ref(), dest.as_os_str()]);
        self.mounts.push(Mount {
            op: "--ro-bind-fd",
            source: Some(source.to_path_buf()),
            dest: dest.to_path_buf(),
        });
        self
    }
    pub fn ro_bind_try(&mut self, src: &Path, dest: &Path) -> &mut Self {
        self.mount("--ro-bind-try", Some(src), dest)
    }

    pub fn bind(&mut self, src: &Path, dest: &Path) -> &mut Self {
        self.mount("--bind", Some(src), dest)
    }

    pub fn symlink(&mut self, target: &Path, link: &Path) -> &mut Self {
        self.mount("--symlink", Some(target), link)
    }

    /// A tmpfs with the given mode and (when set) size in bytes.
    pub fn tmpfs(&mut self, dest: &Path, mode: u32, size: Option<u64>) -> &mut Self {
        let mode = format!("{mode:o}");
        self.push(&["--perms".as_ref(), mode.as_ref()]);
        if let Some(size) = size {
            let size = size.to_string();
            self.push(&["--size".as_ref(), size.as_ref()]);
        }
        self.mount("--tmpfs", None, dest)
    }

    /// A directory with the given mode (bwrap would otherwise create missing parents 0700,
    /// which an unprivileged uid cannot traverse).
    pub fn dir(&mut self, dest: &Path, mode: u32) -> &mut Self {
        let mode = format!("{mode:o}");
        self.push(&["--perms".as_ref(), mode.as_ref()]);
        self.mount("--dir", None, dest)
    }

    /// A file at `dest` with the given mode holding what bwrap reads from descriptor `fd`
    /// (which must be open in bwrap; see [`cheng_exec::ProcessSpec::inherit_fds`]). `source` names
    /// what the descriptor holds, for [`Bwrap::mounts`].
    pub fn file(
        &mut self,
        fd: std::os::fd::RawFd,
        source: &Path,
        dest: &Path,
        mode: u32,
    ) -> &mut Self {
        let (mode, fd) = (format!("{mode:o}"), fd.to_string());
        self.push(&[
            "--perms".as_ref(),
            mode.as_ref(),
            "--file".as_ref(),
            fd.as_ref(),
            dest.as_os_str(),
        ]);
        self.mounts.push(Mount {
            op: "--file",
            source: Some(source.to_path_buf()),
            dest: dest.to_path_buf(),
        });
        self
    }

    /// Remounts `dest` (an earlier mount, or the sandbox's root `/`) read-only.
    pub fn remount_ro(&mut self, dest: &Path) -> &mut Self {
        self.mount("--remount-ro", None, dest)
    }

    pub fn dev(&mut self, dest: &Path) -> &mut Self {
        self.mount("--dev", None, dest)
    }

    pub fn proc(&mut self, dest: &Path) -> &mut Self {
        self.mount("--proc", None, dest)
    }

    pub fn chdir(&mut self, dir: &Path) -> &mut Self {
        self.push(&["--chdir".as_ref(), dir.as_os_str()])
    }

    pub fn uid_gid(&mut self, uid: u32, gid: u32) -> &mut Self {
        let (uid, gid) = (uid.to_string(), gid.to_string());
        self.push(&[
            "--uid".as_ref(),
            uid.as_ref(),
            "--gid".as_ref(),
            gid.as_ref(),
        ])
    }

    pub fn cap_add(&mut self, cap: &str) -> &mut Self {
        self.push(&["--cap-add".as_ref(), cap.as_ref()])
    }

    /// The seccomp program bwrap reads from descriptor `fd` and applies just before it executes
    /// the command (the descriptor must be open in bwrap; see [`cheng_exec::ProcessSpec::inherit_fds`]).
    pub fn seccomp(&mut self, fd: std::os::fd::RawFd) -> &mut Self {
        let fd = fd.to_string();
        self.push(&["--seccomp".as_ref(), fd.as_ref()])
    }

    /// Ends the options and appends the command run inside.
    pub fn command<I, S>(&mut self, argv: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args.push("--".into());
        self.args
            .extend(argv.into_iter().map(|s| s.as_ref().to_os_string()));
        self
    }

    pub fn args(&self) -> &[OsString] {
        &self.args
    }

    /// The mount operations so far, in order.
    pub fn mounts(&self) -> &[Mount] {
        &self.mounts
    }

    pub fn into_args(self) -> Vec<OsString> {
        self.args
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_keeps_flag_order_and_ends_options() {
        let mut b = Bwrap::new();
        b.flag("--unshare-pid")
            .ro_bind(Path::new("/usr"), Path::new("/usr"))
            .tmpfs(Path::new("/tmp"), 0o1777, Some(1024))
            .command(["sh", "-c", "true"]);
        let args: Vec<String> = b
            .args()
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args,
            [
                "--unshare-pid",
                "--ro-bind",
                "/usr",
                "/usr",
                "--perms",
                "1777",
                "--size",
                "1024",
                "--tmpfs",
                "/tmp",
                "--",
                "sh",
                "-c",
                "true"
            ]
        );
    }

    #[test]
    fn hints_name_the_fix() {
        assert!(hint("bwrap: No permissions to create new namespace, likely because the kernel does not allow non-privileged user namespaces")
            .contains("apparmor_restrict_unprivileged_userns=0"));
        assert!(hint("bwrap: setting up uid map: Permission denied").contains("id map"));
        assert!(
            hint("bwrap: loopback: Failed RTM_NEWADDR: Operation not permitted")
                .contains("network namespace")
        );
        assert!(
            hint("bwrap: Can't mount proc on /newroot/proc: Operation not permitted")
                .contains("/proc")
        );
        assert!(hint("bwrap: Can't chdir to /work/x: Permission denied").contains("working_subdir"));
        assert!(hint("bwrap: Unknown option --seccomp").contains("CONFIG_SECCOMP_FILTER"));
        assert!(
            hint("bwrap: Race condition binding dirfd: Invalid argument")
                .contains("approved read path")
        );
        assert!(hint("bwrap: prctl(PR_SET_SECCOMP): Invalid argument").contains("--seccomp"));
    }

    #[test]
    fn a_missing_configured_bwrap_is_sandbox_unavailable() {
        let err = locate(Some(Path::new("/nonexistent/bwrap"))).unwrap_err();
        assert_eq!(err.kind, ErrorKind::SandboxUnavailable);
        assert!(
            err.message.contains("/nonexistent/bwrap"),
            "{}",
            err.message
        );
        assert!(err.terminal);
    }

    #[test]
    fn an_absent_bwrap_fails_closed_and_says_how_to_install_it() {
        // No bwrap in the searched directories and none configured: whatever this machine has.
        let empty = tempfile::tempdir().unwrap();
        let dir = empty.path().to_str().unwrap();
        let err = locate_in(None, None, &[dir]).unwrap_err();
        assert_eq!(err.kind, ErrorKind::SandboxUnavailable);
        assert_eq!(err.kind.code(), "LOCAL_EXECUTOR_SANDBOX_UNAVAILABLE");
        assert!(
            err.message.contains("is not installed") && err.message.contains(dir),
            "{}",
            err.message
        );
        assert!(
            err.message.contains("apt-get install bubblewrap") && err.message.contains(BWRAP_ENV),
            "{}",
            err.message
        );
        assert!(err.terminal);
        // A file that is not executable does not count.
        std::fs::write(empty.path().join("bwrap"), "").unwrap();
        assert!(locate_in(None, None, &[dir]).is_err());
    }

    #[test]
    fn a_present_bwrap_is_found_in_the_search_dirs_or_where_configured() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let bwrap = dir.path().join("bwrap");
        std::fs::write(&bwrap, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&bwrap, std::fs::Permissions::from_mode(0o755)).unwrap();
        let empty = tempfile::tempdir().unwrap();
        let search = [empty.path().to_str().unwrap(), dir.path().to_str().unwrap()];
        assert_eq!(locate_in(None, None, &search).unwrap(), bwrap);
        // The environment variable wins over the search, the request over both.
        assert_eq!(
            locate_in(None, Some(bwrap.clone().into()), &[]).unwrap(),
            bwrap
        );
        let err = locate_in(
            Some(Path::new("/nonexistent/bwrap")),
            Some(bwrap.into()),
            &search,
        )
        .unwrap_err();
        assert!(
            err.message.contains("/nonexistent/bwrap"),
            "{}",
            err.message
        );
    }

    #[test]
    fn a_failing_bwrap_is_classified() {
        // `false` stands in for a bwrap that cannot create namespaces.
        let err = probe(Path::new("/bin/false"), &["--unshare-pid"]).unwrap_err();
        assert_eq!(err.kind, ErrorKind::SandboxUnavailable);
        assert!(err.message.contains("never falls back"), "{}", err.message);
    }
}
