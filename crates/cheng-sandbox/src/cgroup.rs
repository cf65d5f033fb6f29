//! A cgroup v2 group per sandboxed run, under a delegated subtree ([`CgroupV2::Delegated`]).
//!
//! [`RunGroup::create`] makes a child group with a unique name, writes `memory.max` (and
//! `memory.swap.max` 0, `memory.oom.group` 1, `pids.max` where the files and controllers exist),
//! and opens the child's `cgroup.procs`. The spawn writes "0" to that descriptor between fork
//! and exec ([`cheng_exec::ProcessSpec::cgroup_procs`]), so bwrap and everything it starts are in the
//! group before any of it runs. [`RunGroup::finish`] reads `memory.events` (oom_kill) and
//! `memory.peak`, then removes the group.
//!
//! Every failure is a sentence for `warnings`; none aborts a run: the caller falls back to
//! RLIMIT_AS. Only the given delegated directory and its children are written; cgroup v1
//! hierarchies are never touched (detection only ever returns a cgroup2 mount).
//!
//! The cgroup v2 "no internal processes" rule: a group that holds processes cannot enable
//! controllers for its children. A delegated group usually holds cheng itself, so when cheng is
//! its only member, cheng first moves itself into the leaf [`SUPERVISOR`] (the pattern systemd
//! documents for delegated services); other members make the cgroup limit unavailable.
//!
//! Why this is not `cgroups-rs` (the crate the design names): it cannot do what a run needs.
//! Its cgroup v2 hierarchy is fixed at `/sys/fs/cgroup` (no other mount, no fake tree for the
//! unit tests below), it takes the controller list from that root rather than from the
//! delegated parent, and creating a group writes `+controller` into the `cgroup.subtree_control`
//! of the root and of every ancestor on the way, outside the delegated subtree cheng is allowed
//! to touch (errors ignored). Placement is by pid after the process exists (`add_task`), so
//! the child would run before it is in the group, or through its `Command` extension, which
//! allocates and writes a path in `pre_exec`; cheng's spawn goes through the per-run reaper,
//! which is handed the group's open `cgroup.procs` descriptor and writes "0" to it before exec,
//! and cgroups-rs exposes no such descriptor. Nor does it move cheng into a supervisor leaf.
//! The few files written here are the whole protocol, so they stay hand-written.
//!
//! [`CgroupV2::Delegated`]: super::limits::CgroupV2::Delegated

use std::fs::OpenOptions;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The leaf cheng moves itself into when it is the only member of the delegated group.
pub const SUPERVISOR: &str = "cheng-supervisor";
/// The prefix of per-run groups.
pub const RUN_PREFIX: &str = "cheng-run-";

/// What one run's group limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupLimits {
    pub memory_bytes: u64,
    /// pids.max, applied when the pids controller is enabled for the group.
    pub pids: u64,
}

/// A created per-run group. Call [`RunGroup::finish`] after the run (dropping it removes the
/// group too, without reading its counters).
#[derive(Debug)]
pub struct RunGroup {
    dir: PathBuf,
    procs: Arc<OwnedFd>,
    limits: GroupLimits,
    swap_zero: bool,
    pids_max: Option<u64>,
    finished: bool,
}

/// What the group saw, read after the run.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GroupReport {
    /// `oom_kill` from memory.events (processes the kernel killed at memory.max).
    pub oom_kills: Option<u64>,
    /// memory.peak (kernels 5.19+).
    pub peak_bytes: Option<u64>,
    /// Why the group could not be removed, when it could not.
    pub cleanup_error: Option<String>,
}

impl RunGroup {
    /// Creates the per-run group under the delegated directory `parent`. `Err` says why the
    /// cgroup limit cannot be used (the caller falls back to RLIMIT_AS); `warnings` gets what
    /// was applied only partly (no swap limit, no pids.max) or done to make it possible.
    pub fn create(
        parent: &Path,
        limits: GroupLimits,
        warnings: &mut Vec<String>,
    ) -> Result<RunGroup, String> {
        let controllers = read(&parent.join("cgroup.controllers"))?;
        let available = |c: &str| controllers.split_whitespace().any(|x| x == c);
        if !available("memory") {
            return Err(format!(
                "{} offers no memory controller (controllers: {:?})",
                parent.display(),
                controllers.trim()
            ));
        }
        enable_controllers(parent, available("pids"), warnings)?;
        let subtree = read(&parent.join("cgroup.subtree_control"))?;
        let pids_enabled = subtree.split_whitespace().any(|c| c == "pids");

        let dir = parent.join(unique_name());
        std::fs::create_dir(&dir)
            .map_err(|e| format!("cannot create the run group {}: {e}", dir.display()))?;
        // From here on the group exists: every early return removes it.
        let fail = |dir: &Path, message: String| {
            let _ = remove_group(dir);
            Err(message)
        };
        if let Err(e) = write(&dir.join("memory.max"), &limits.memory_bytes.to_string()) {
            return fail(
                &dir,
                format!("cannot write memory.max in {}: {e}", dir.display()),
            );
        }
        let present = |name: &str| parent.join(name).exists() || dir.join(name).exists();
        let mut swap_zero = false;
        if present("memory.swap.max") {
            match write(&dir.join("memory.swap.max"), "0") {
                Ok(()) => swap_zero = true,
                Err(e) => warnings.push(format!(
                    "cgroup v2: cannot set memory.swap.max to 0 in {} ({e}): swap may extend memory_mb",
                    dir.display()
                )),
            }
        }
        if present("memory.oom.group") {
            // One OOM kill ends the whole sandbox rather than leaving half of it running.
            if let Err(e) = write(&dir.join("memory.oom.group"), "1") {
                warnings.push(format!(
                    "cgroup v2: cannot set memory.oom.group in {} ({e})",
                    dir.display()
                ));
            }
        }
        let mut pids_max = None;
        if pids_enabled {
            match write(&dir.join("pids.max"), &limits.pids.to_string()) {
                Ok(()) => pids_max = Some(limits.pids),
                Err(e) => warnings.push(format!(
                    "cgroup v2: cannot write pids.max in {} ({e}): processes are bounded by RLIMIT_NPROC only",
                    dir.display()
                )),
            }
        }
        // Created if missing only on a plain directory (tests); cgroupfs provides the file.
        let procs = match OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(dir.join("cgroup.procs"))
        {
            Ok(f) => Arc::new(OwnedFd::from(f)),
            Err(e) => {
                return fail(
                    &dir,
                    format!("cannot open cgroup.procs in {}: {e}", dir.display()),
                )
            }
        };
        Ok(RunGroup {
            dir,
            procs,
            limits,
            swap_zero,
            pids_max,
            finished: false,
        })
    }

    /// The group's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The open `cgroup.procs` of the group, for [`cheng_exec::ProcessSpec::cgroup_procs`].
    pub fn procs(&self) -> Arc<OwnedFd> {
        self.procs.clone()
    }

    /// pids.max when it was set.
    pub fn pids_max(&self) -> Option<u64> {
        self.pids_max
    }

    /// `cgroup v2 memory.max 128 MiB (memory.swap.max 0, pids.max 256) in /sys/fs/cgroup/…/cheng-run-…`.
    pub fn describe(&self) -> String {
        let mut extras = Vec::new();
        if self.swap_zero {
            extras.push("memory.swap.max 0".to_string());
        }
        if let Some(n) = self.pids_max {
            extras.push(format!("pids.max {n}"));
        }
        let extras = if extras.is_empty() {
            String::new()
        } else {
            format!(" ({})", extras.join(", "))
        };
        format!(
            "cgroup v2 memory.max {} MiB{extras} in {}",
            self.limits.memory_bytes >> 20,
            self.dir.display()
        )
    }

    /// Reads the counters and removes the group.
    pub fn finish(mut self) -> GroupReport {
        self.finished = true;
        let events = std::fs::read_to_string(self.dir.join("memory.events")).ok();
        let oom_kills = events.as_deref().and_then(|text| event(text, "oom_kill"));
        let peak_bytes = std::fs::read_to_string(self.dir.join("memory.peak"))
            .ok()
            .and_then(|t| t.trim().parse().ok());
        let cleanup_error = remove_group(&self.dir).err();
        GroupReport {
            oom_kills,
            peak_bytes,
            cleanup_error,
        }
    }
}

impl Drop for RunGroup {
    fn drop(&mut self) {
        if !self.finished {
            let _ = remove_group(&self.dir);
        }
    }
}

/// Makes sure `memory` (and `pids` when offered) are enabled for `parent`'s children.
fn enable_controllers(
    parent: &Path,
    pids_offered: bool,
    warnings: &mut Vec<String>,
) -> Result<(), String> {
    let subtree_path = parent.join("cgroup.subtree_control");
    let subtree = read(&subtree_path)?;
    let enabled = |c: &str| subtree.split_whitespace().any(|x| x == c);
    let wanted: Vec<&str> = ["memory", "pids"]
        .into_iter()
        .filter(|c| !enabled(c) && (*c == "memory" || pids_offered))
        .collect();
    if wanted.is_empty() {
        return Ok(());
    }
    leave_the_parent(parent, warnings)?;
    for controller in wanted {
        if let Err(e) = write(&subtree_path, &format!("+{controller}")) {
            let why = format!(
                "cannot enable the {controller} controller in {} ({e})",
                subtree_path.display()
            );
            if controller == "memory" {
                return Err(why);
            }
            warnings.push(format!(
                "cgroup v2: {why}: processes are bounded by RLIMIT_NPROC only"
            ));
        }
    }
    Ok(())
}

/// Moves cheng out of `parent` into its [`SUPERVISOR`] leaf when cheng is the group's only
/// member (see the module docs); refuses when other processes are members.
fn leave_the_parent(parent: &Path, warnings: &mut Vec<String>) -> Result<(), String> {
    let members = read(&parent.join("cgroup.procs"))?;
    let own = std::process::id().to_string();
    let pids: Vec<&str> = members.split_whitespace().collect();
    if pids.is_empty() {
        return Ok(());
    }
    if pids.iter().any(|p| *p != own) {
        return Err(format!(
            "{} holds {} process(es) besides cheng, so it cannot enable controllers for child groups \
             (cgroup v2 no-internal-process rule); start cheng in a delegated group of its own",
            parent.display(),
            pids.iter().filter(|p| **p != own).count()
        ));
    }
    let leaf = parent.join(SUPERVISOR);
    match std::fs::create_dir(&leaf) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("cannot create {}: {e}", leaf.display())),
    }
    // "0" moves the writing process (all its threads).
    write(&leaf.join("cgroup.procs"), "0")
        .map_err(|e| format!("cannot move cheng into {}: {e}", leaf.display()))?;
    warnings.push(format!(
        "cgroup v2: cheng moved itself into {} so that {} can enable controllers for per-run groups",
        leaf.display(),
        parent.display()
    ));
    Ok(())
}

/// `cheng-run-<pid>-<counter>-<nanos>`: unique within this process and across processes.
fn unique_name() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{RUN_PREFIX}{}-{n}-{nanos}", std::process::id())
}

/// The number after `key ` in a flat-keyed cgroup file such as memory.events.
fn event(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        l.strip_prefix(key)
            .and_then(|rest| rest.strip_prefix(' '))
            .and_then(|v| v.trim().parse().ok())
    })
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// Writes a cgroup interface file the way `echo VALUE > FILE` does.
fn write(path: &Path, value: &str) -> io::Result<()> {
    std::fs::write(path, value)
}

/// Removes a run group. On cgroupfs `rmdir` succeeds once no process is left (stragglers are
/// killed through cgroup.kill); on a plain directory (tests) its files are removed first.
fn remove_group(dir: &Path) -> Result<(), String> {
    let mut last = None;
    for attempt in 0..40 {
        match std::fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e)
                if e.raw_os_error() == Some(libc::ENOTEMPTY)
                    || e.raw_os_error() == Some(libc::EEXIST) =>
            {
                // Not cgroupfs (whose interface files never block rmdir): remove plain files.
                for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                    if entry.file_type().is_ok_and(|t| t.is_file()) {
                        let _ = std::fs::remove_file(entry.path());
                    }
                }
                last = Some(e);
            }
            Err(e) => {
                // EBUSY: processes of the run are still exiting.
                if attempt == 4 && dir.join("cgroup.kill").exists() {
                    let _ = write(&dir.join("cgroup.kill"), "1");
                }
                std::thread::sleep(Duration::from_millis(5));
                last = Some(e);
            }
        }
    }
    Err(format!(
        "cannot remove the run group {}: {}",
        dir.display(),
        last.map(|e| e.to_string())
            .unwrap_or_else(|| "unknown error".into())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake delegated group: the interface files a real one has.
    fn fake(controllers: &str, subtree: &str, procs: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in [
            ("cgroup.controllers", controllers),
            ("cgroup.subtree_control", subtree),
            ("cgroup.procs", procs),
            ("memory.swap.max", "max\n"),
            ("memory.oom.group", "0\n"),
        ] {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        dir
    }

    fn run_groups(parent: &Path) -> Vec<PathBuf> {
        std::fs::read_dir(parent)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(RUN_PREFIX))
            })
            .collect()
    }

    const LIMITS: GroupLimits = GroupLimits {
        memory_bytes: 128 << 20,
        pids: 256,
    };

    #[test]
    fn a_group_gets_its_limits_and_is_removed_after() {
        let parent = fake("cpu memory pids\n", "memory pids\n", "");
        let mut warnings = Vec::new();
        let group = RunGroup::create(parent.path(), LIMITS, &mut warnings).unwrap();
        let dir = group.dir().to_path_buf();
        assert!(
            dir.starts_with(parent.path())
                && dir
                    .file_name()
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .starts_with(RUN_PREFIX)
        );
        let file = |n: &str| std::fs::read_to_string(dir.join(n)).unwrap();
        assert_eq!(file("memory.max"), (128u64 << 20).to_string());
        assert_eq!(file("memory.swap.max"), "0");
        assert_eq!(file("memory.oom.group"), "1");
        assert_eq!(file("pids.max"), "256");
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(
            group.describe(),
            format!(
                "cgroup v2 memory.max 128 MiB (memory.swap.max 0, pids.max 256) in {}",
                dir.display()
            )
        );
        // The kernel's counters after an OOM kill.
        std::fs::write(
            dir.join("memory.events"),
            "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 1\n",
        )
        .unwrap();
        std::fs::write(dir.join("memory.peak"), "134217728\n").unwrap();
        let report = group.finish();
        assert_eq!(
            report,
            GroupReport {
                oom_kills: Some(1),
                peak_bytes: Some(128 << 20),
                cleanup_error: None
            }
        );
        assert!(!dir.exists());
        // The parent's own files are untouched.
        assert_eq!(
            std::fs::read_to_string(parent.path().join("cgroup.subtree_control")).unwrap(),
            "memory pids\n"
        );
    }

    #[test]
    fn controllers_are_enabled_only_when_missing() {
        let parent = fake("memory pids\n", "", "");
        let group = RunGroup::create(parent.path(), LIMITS, &mut Vec::new()).unwrap();
        // A plain file keeps only the last write: "+pids" after "+memory" (the kernel accumulates).
        assert_eq!(
            std::fs::read_to_string(parent.path().join("cgroup.subtree_control")).unwrap(),
            "+pids"
        );
        drop(group);
        assert!(run_groups(parent.path()).is_empty());

        let parent = fake("memory\n", "memory\n", "");
        let group = RunGroup::create(parent.path(), LIMITS, &mut Vec::new()).unwrap();
        assert_eq!(group.pids_max(), None);
        assert!(!group.dir().join("pids.max").exists());
        assert_eq!(
            std::fs::read_to_string(parent.path().join("cgroup.subtree_control")).unwrap(),
            "memory\n"
        );
    }

    #[test]
    fn cheng_leaves_the_parent_when_it_is_its_only_member() {
        let parent = fake("memory\n", "", &format!("{}\n", std::process::id()));
        let mut warnings = Vec::new();
        let group = RunGroup::create(parent.path(), LIMITS, &mut warnings).unwrap();
        assert_eq!(
            std::fs::read_to_string(parent.path().join(SUPERVISOR).join("cgroup.procs")).unwrap(),
            "0"
        );
        assert!(
            warnings.iter().any(|w| w.contains(SUPERVISOR)),
            "{warnings:?}"
        );
        drop(group);

        let parent = fake("memory\n", "", &format!("{}\n1\n", std::process::id()));
        let err = RunGroup::create(parent.path(), LIMITS, &mut Vec::new()).unwrap_err();
        assert!(err.contains("1 process(es) besides cheng"), "{err}");
        assert!(!parent.path().join(SUPERVISOR).exists());
    }

    #[test]
    fn failures_are_reasons_and_leave_nothing_behind() {
        let parent = fake("cpu pids\n", "", "");
        assert!(RunGroup::create(parent.path(), LIMITS, &mut Vec::new())
            .unwrap_err()
            .contains("no memory controller"));
        // subtree_control that cannot be written (a directory stands in for a refused write).
        let parent = fake("memory\n", "", "");
        std::fs::remove_file(parent.path().join("cgroup.subtree_control")).unwrap();
        std::fs::create_dir(parent.path().join("cgroup.subtree_control")).unwrap();
        let err = RunGroup::create(parent.path(), LIMITS, &mut Vec::new()).unwrap_err();
        assert!(err.contains("cgroup.subtree_control"), "{err}");
        assert!(run_groups(parent.path()).is_empty());
        // A parent that is not there at all.
        assert!(
            RunGroup::create(Path::new("/nonexistent/cgroup"), LIMITS, &mut Vec::new()).is_err()
        );
    }

    fn run(spec: cheng_exec::ProcessSpec) -> cheng_exec::ProcessOutput {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(cheng_exec::run(
            spec,
            &tokio_util::sync::CancellationToken::new(),
        ))
    }

    #[test]
    fn the_spawned_child_joins_the_group_before_it_execs() {
        let parent = fake("memory pids\n", "memory pids\n", "");
        let group = RunGroup::create(parent.path(), LIMITS, &mut Vec::new()).unwrap();
        let dir = group.dir().to_path_buf();
        let mut spec = cheng_exec::ProcessSpec::new("/bin/sh", ["-c", "echo ran"], "/");
        spec.cgroup_procs = Some(group.procs());
        let out = run(spec);
        assert!(out.success(), "{out:?}");
        assert_eq!(out.stdout.text, "ran\n");
        // The child, not cheng, wrote "0" (the kernel reads it as "the writer").
        assert_eq!(
            std::fs::read_to_string(dir.join("cgroup.procs")).unwrap(),
            "0"
        );
        assert_eq!(group.finish().cleanup_error, None);
        assert!(!dir.exists());
    }

    #[test]
    fn a_failed_join_fails_the_spawn_closed() {
        // /dev/full refuses every write, as cgroup.procs refuses a move that is not allowed.
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let marker = tempfile::tempdir().unwrap();
        let flag = marker.path().join("ran");
        let mut spec = cheng_exec::ProcessSpec::new(
            "/bin/sh",
            ["-c".to_string(), format!("touch '{}'", flag.display())],
            "/",
        );
        spec.cgroup_procs = Some(Arc::new(OwnedFd::from(full)));
        let out = run(spec);
        assert_eq!(
            out.termination,
            cheng_exec::Termination::SpawnFailed,
            "{out:?}"
        );
        assert!(!flag.exists(), "the program ran outside its group");
    }

    #[test]
    fn memory_events_are_parsed() {
        assert_eq!(
            event("oom 2\noom_kill 3\noom_group_kill 1\n", "oom_kill"),
            Some(3)
        );
        assert_eq!(event("oom 2\n", "oom_kill"), None);
    }
}
