//! Resource limits for sandboxed code: setrlimit values, and whether a cgroup v2 memory limit is
//! possible here.
//!
//! - Memory: RLIMIT_AS (address space) on the sandbox. It is not RSS: programs that reserve
//!   large virtual areas need more than they touch, so the floor is [`MIN_MEMORY_MB`].
//! - Processes: RLIMIT_NPROC binds only a process whose real uid is not root, which is why the
//!   sandbox drops to an unprivileged uid when cheng runs as root (see `sandbox`).
//! - cgroup v2: used only when this process's own cgroup v2 directory is writable, offers the
//!   `memory` controller and is not the root of the hierarchy (a delegated subtree); the
//!   per-run groups are made by `sandbox::cgroup`. cgroup v1 hierarchies are never touched.

use cheng_exec::{Rlimit, RlimitResource};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// Smallest accepted memory_mb: below this even `sh` or `python3 -I` cannot map its libraries.
pub const MIN_MEMORY_MB: i64 = 16;
/// Largest accepted memory_mb (64 GiB).
pub const MAX_MEMORY_MB: i64 = 65536;
/// Processes (threads included) the sandbox's unprivileged uid may have at once.
pub const SANDBOX_NPROC: u64 = 256;
/// Largest file a sandboxed program may write (RLIMIT_FSIZE).
pub const SANDBOX_FSIZE: u64 = 1 << 30;
/// Open files per process.
pub const SANDBOX_NOFILE: u64 = 1024;

/// The limits one sandboxed run gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SandboxLimits {
    pub memory_bytes: u64,
    pub nproc: u64,
    pub fsize: u64,
    pub nofile: u64,
}

impl SandboxLimits {
    pub fn with_memory_mb(memory_mb: u64) -> Self {
        SandboxLimits {
            memory_bytes: memory_mb.saturating_mul(1 << 20),
            nproc: SANDBOX_NPROC,
            fsize: SANDBOX_FSIZE,
            nofile: SANDBOX_NOFILE,
        }
    }

    /// The rlimits applied to the sandbox, `with_nproc` when RLIMIT_NPROC is set from outside
    /// (it must not be when bwrap creates a user namespace: see `sandbox`).
    pub fn rlimits(&self, with_nproc: bool) -> Vec<Rlimit> {
        let mut limits = vec![
            Rlimit {
                resource: RlimitResource::AddressSpace,
                value: self.memory_bytes,
            },
            Rlimit {
                resource: RlimitResource::FileSize,
                value: self.fsize,
            },
            Rlimit {
                resource: RlimitResource::OpenFiles,
                value: self.nofile,
            },
            Rlimit {
                resource: RlimitResource::Core,
                value: 0,
            },
        ];
        if with_nproc {
            limits.push(Rlimit {
                resource: RlimitResource::Nproc,
                value: self.nproc,
            });
        }
        limits
    }
}

/// Whether a cgroup v2 memory limit can be applied, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CgroupV2 {
    /// This directory is a writable cgroup v2 group offering `memory` to its children.
    Delegated(PathBuf),
    /// Not possible here; the sentence says why.
    Unavailable(String),
}

impl CgroupV2 {
    /// [`CgroupV2::detect`], once per process. Cached because placing a run may move cheng into
    /// a leaf of the delegated group (see `sandbox::cgroup`), after which a fresh detection
    /// would name that leaf instead of the delegated group.
    pub fn detect_once() -> CgroupV2 {
        static DETECTED: std::sync::OnceLock<CgroupV2> = std::sync::OnceLock::new();
        DETECTED.get_or_init(Self::detect).clone()
    }

    /// Looks at /proc/self/mountinfo and /proc/self/cgroup; writes nothing.
    pub fn detect() -> CgroupV2 {
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        Self::detect_from(
            &mountinfo,
            &cgroup,
            |p| std::fs::read_to_string(p).ok(),
            writable,
        )
    }

    /// [`CgroupV2::detect`] over given file contents (for tests).
    pub fn detect_from(
        mountinfo: &str,
        proc_cgroup: &str,
        read: impl Fn(&Path) -> Option<String>,
        is_writable: impl Fn(&Path) -> bool,
    ) -> CgroupV2 {
        let Some(mount) = mountinfo.lines().find_map(cgroup2_mount_point) else {
            return CgroupV2::Unavailable("no cgroup v2 file system is mounted".into());
        };
        let Some(own) = proc_cgroup.lines().find_map(|l| l.strip_prefix("0::")) else {
            return CgroupV2::Unavailable(
                "this process is not in a cgroup v2 group (the host uses cgroup v1 for its controllers, which cheng never touches)"
                    .into(),
            );
        };
        let dir = mount.join(own.trim_start_matches('/'));
        let controllers = read(&dir.join("cgroup.controllers")).unwrap_or_default();
        if !controllers.split_whitespace().any(|c| c == "memory") {
            return CgroupV2::Unavailable(format!(
                "the cgroup v2 group {} has no memory controller (controllers: {:?})",
                dir.display(),
                controllers.trim()
            ));
        }
        if own.trim_matches('/').is_empty() {
            return CgroupV2::Unavailable(format!(
                "this process is in the root group of the cgroup v2 hierarchy ({}), which is not a delegated subtree; \
                 cheng creates groups only inside a delegated one (e.g. a systemd unit with Delegate=yes)",
                dir.display()
            ));
        }
        if !is_writable(&dir) || !is_writable(&dir.join("cgroup.subtree_control")) {
            return CgroupV2::Unavailable(format!(
                "the cgroup v2 group {} is not delegated to this user (not writable)",
                dir.display()
            ));
        }
        CgroupV2::Delegated(dir)
    }

    /// A short phrase for warnings and metrics.
    pub fn describe(&self) -> String {
        match self {
            CgroupV2::Delegated(dir) => format!("cgroup v2 memory.max under {}", dir.display()),
            CgroupV2::Unavailable(why) => format!("cgroup v2 memory limit unavailable: {why}"),
        }
    }
}

fn cgroup2_mount_point(line: &str) -> Option<PathBuf> {
    // mountinfo: id parent major:minor root mount-point options ... - fstype source super-options
    let (left, right) = line.split_once(" - ")?;
    if right.split_whitespace().next()? != "cgroup2" {
        return None;
    }
    left.split_whitespace().nth(4).map(PathBuf::from)
}

fn writable(path: &Path) -> bool {
    rustix::fs::access(path, rustix::fs::Access::WRITE_OK).is_ok()
}

/// The `limits` object reported in metrics.
pub fn report(limits: &SandboxLimits, nproc_how: &str, memory_how: &str, timeout_ms: u64) -> Value {
    json!({
        "timeout_ms": timeout_ms,
        "memory_bytes": limits.memory_bytes,
        "memory": memory_how,
        "nproc": limits.nproc,
        "nproc_enforcement": nproc_how,
        "file_size_bytes": limits.fsize,
        "open_files": limits.nofile,
        "core_dumps": false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "30 24 0:26 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n\
                             35 24 0:31 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

    #[test]
    fn cgroup_v1_only_hosts_are_unavailable() {
        let v = CgroupV2::detect_from(
            "30 24 0:26 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n",
            "",
            |_| None,
            |_| true,
        );
        assert!(
            matches!(v, CgroupV2::Unavailable(ref why) if why.contains("no cgroup v2")),
            "{v:?}"
        );
    }

    #[test]
    fn a_group_without_the_memory_controller_is_unavailable() {
        let v = CgroupV2::detect_from(
            MOUNTINFO,
            "0::/user.slice\n",
            |_| Some(String::new()),
            |_| true,
        );
        assert!(
            matches!(v, CgroupV2::Unavailable(ref why) if why.contains("no memory controller")),
            "{v:?}"
        );
    }

    #[test]
    fn a_writable_group_with_memory_is_delegated() {
        let v = CgroupV2::detect_from(
            MOUNTINFO,
            "0::/user.slice/me\n",
            |_| Some("cpu memory pids".into()),
            |_| true,
        );
        assert_eq!(
            v,
            CgroupV2::Delegated(PathBuf::from("/sys/fs/cgroup/unified/user.slice/me"))
        );
        let v = CgroupV2::detect_from(
            MOUNTINFO,
            "0::/user.slice/me\n",
            |_| Some("memory".into()),
            |_| false,
        );
        assert!(
            matches!(v, CgroupV2::Unavailable(ref why) if why.contains("not delegated")),
            "{v:?}"
        );
    }

    #[test]
    fn the_root_group_is_never_used() {
        let v = CgroupV2::detect_from(
            MOUNTINFO,
            "0::/\n",
            |_| Some("memory pids".into()),
            |_| true,
        );
        assert!(
            matches!(v, CgroupV2::Unavailable(ref why) if why.contains("root group")),
            "{v:?}"
        );
    }

    #[test]
    fn this_machine_is_detected_without_writing() {
        // Whatever this host offers, detection names a reason when it cannot be used, and the
        // cached verdict is the same as a fresh one.
        let v = CgroupV2::detect();
        if let CgroupV2::Unavailable(why) = &v {
            assert!(!why.is_empty());
        }
        assert_eq!(CgroupV2::detect_once(), v);
    }

    #[test]
    fn nproc_is_only_set_when_asked() {
        let limits = SandboxLimits::with_memory_mb(128);
        assert_eq!(limits.memory_bytes, 128 << 20);
        assert!(!limits
            .rlimits(false)
            .iter()
            .any(|l| l.resource == RlimitResource::Nproc));
        assert!(limits
            .rlimits(true)
            .iter()
            .any(|l| l.resource == RlimitResource::Nproc && l.value == SANDBOX_NPROC));
    }
}
