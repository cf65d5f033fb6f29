//! The bubblewrap sandbox the code executors run in.
//!
//! [`Sandbox::prepare`] checks bwrap (fail closed: [`ErrorKind::SandboxUnavailable`], never a
//! host fallback), builds the command line and decides every limit; [`Sandbox::run`] runs it
//! through [`crate::run`] (timeout, per-run reaper, descriptor hygiene, bounded capture) and reports what was
//! enforced.
//!
//! The view: system directories read-only ([`mounts::system_view`]) or the whole disk read-only
//! (`full_disk_readonly`), approved read paths read-only at their own path, a fresh /proc, a
//! minimal /dev, private size-bounded /tmp and /run, and the boundary (the workspace) read-only,
//! or writable with its protected metadata re-mounted read-only or masked. After a writable run,
//! [`audit`] removes setuid/setgid bits and file capabilities the run set and names each new
//! `.git` in the warnings.
//!
//! Who runs the code: when cheng runs as root, the sandboxed program runs as a fresh
//! unprivileged uid/gid per run, because RLIMIT_NPROC never binds root and that rlimit is what
//! stops a fork bomb (there is no usable cgroup pids controller on the machines this targets). bwrap itself stays
//! root (so it can mount directories only root may enter, such as an interpreter under /root),
//! skips the user namespace, and the drop happens inside: cheng's init step ([`init`]) or, when
//! no launcher binary is available, `setpriv`. A writable workspace (or an approved read path)
//! owned by someone else is shown through an idmapped mount ([`idmap`]) that maps its owner to
//! the sandbox uid, so writes work and land on disk owned by the original owner. When cheng is not root,
//! bwrap creates a user namespace (`--unshare-user`) and the code runs as cheng's own uid.
//!
//! memory_mb is RLIMIT_AS, or, when the request names a delegated cgroup v2 subtree, the
//! `memory.max` of a per-run group ([`cgroup`]). The per-run I/O directory belongs on a tmpfs
//! ([`io_parent`]) and is bound read-only; the only things the sandbox may write there are the
//! named output FIFOs ([`channel`]), which store nothing on the host.

pub mod audit;
pub mod cgroup;
pub mod channel;
pub mod idmap;
pub mod init;
pub mod mounts;
pub mod seccomp;

use crate::bwrap::{self, Bwrap};
use crate::limits::{CgroupV2, SandboxLimits};
use crate::{ProcessOutput, ProcessSpec};
use cheng_node::{ErrorKind, NodeError};
use serde_json::{json, Value};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Where the per-run I/O directory (input file, result channel) is mounted inside.
pub const IO_DIR: &str = "/run/cheng-io";
/// Where the launcher binary is mounted inside.
const INIT_PATH: &str = "/run/cheng-init";
/// The first of the unprivileged ids sandboxed code runs as when cheng is root. Each run gets
/// its own uid (RLIMIT_NPROC counts per uid, so a fork bomb in one sandbox cannot starve another
/// running at the same time); the ids have no /etc/passwd entry.
pub const SANDBOX_UID_BASE: u32 = 1_900_000_000;
/// How many distinct sandbox uids one cheng process cycles through.
const SANDBOX_UID_SLOTS: u32 = 4096;

/// A uid (= gid) for one run: distinct per process and per concurrent run, never root.
fn sandbox_ids() -> (u32, u32) {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let slot = NEXT.fetch_add(1, Ordering::Relaxed) % SANDBOX_UID_SLOTS;
    let process = (std::process::id() % 20_000) * SANDBOX_UID_SLOTS;
    let id = SANDBOX_UID_BASE + (process + slot) % 200_000_000;
    (id, id)
}
/// Where per-run I/O directories go: /dev/shm when it is a tmpfs, else the temp directory.
///
/// Why: creating and removing a directory on a disk file system can cost milliseconds (ext4
/// mounted with `discard` trims on every removal), more than the rest of cheng's share of a
/// short run; on tmpfs it is microseconds. The sandbox cannot fill it: the directory is
/// bound read-only and the only writable entries are FIFOs ([`channel::Channel`]), which hold
/// nothing on the host (a regular output file would let a script store RLIMIT_FSIZE, 1 GiB,
/// of host memory per run, so [`Sandbox::prepare`] refuses one).
pub fn io_parent() -> PathBuf {
    static PARENT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PARENT
        .get_or_init(|| {
            let shm = Path::new("/dev/shm");
            if is_tmpfs(shm) && writable_dir(shm) {
                shm.to_path_buf()
            } else {
                std::env::temp_dir()
            }
        })
        .clone()
}

/// Whether others may list and enter `dir` (r-x for "other").
fn world_listable(dir: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(dir).is_ok_and(|m| m.permissions().mode() & 0o005 == 0o005)
}

fn is_tmpfs(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else { return false };
    // SAFETY: statfs fills a plain struct from a NUL-terminated path.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above; both pointers are valid for the call.
    unsafe { libc::statfs(c.as_ptr(), &mut st) == 0 && st.f_type == libc::TMPFS_MAGIC }
}

fn writable_dir(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else { return false };
    // SAFETY: access only reads the NUL-terminated path.
    unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) == 0 }
}

/// The PATH inside the sandbox.
pub const SANDBOX_PATH: &str = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin";

/// What to run and with which permissions.
#[derive(Debug, Clone)]
pub struct SandboxRequest {
    /// The canonical execution boundary (the workspace root).
    pub boundary: PathBuf,
    /// The canonical working directory, inside `boundary`.
    pub cwd: PathBuf,
    /// Whether the boundary is writable (allow_filesystem).
    pub writable: bool,
    /// Whether the whole disk is visible read-only (allow_full_disk_readonly).
    pub full_disk_readonly: bool,
    /// Whether the host network is shared (allow_network); otherwise a private, empty network namespace.
    pub network: bool,
    /// Approved, canonical host paths, bound read-only at the same path.
    pub read_paths: Vec<PathBuf>,
    /// Further read-only directories the program needs (an interpreter's prefix).
    pub extra_ro: Vec<PathBuf>,
    /// A host directory bound read-only at [`IO_DIR`] (see [`io_parent`] for where to make it).
    pub io_dir: Option<PathBuf>,
    /// Names of FIFOs in `io_dir` the sandbox may write ([`channel::Channel`]; each must exist
    /// and be a FIFO; bound writable, one by one, so that the sandbox cannot create anything
    /// else there).
    pub io_outputs: Vec<String>,
    /// The command inside the sandbox (argv[0] an absolute path or a name on [`SANDBOX_PATH`]).
    pub command: Vec<OsString>,
    /// The complete environment inside.
    pub env: Vec<(OsString, OsString)>,
    pub timeout: Duration,
    pub memory_mb: u64,
    pub stdout_cap: usize,
    pub stderr_cap: usize,
    /// bwrap to use instead of `$CHENG_BWRAP` / the system one.
    pub bwrap: Option<PathBuf>,
    /// Use the running binary as init step when it offers one (see [`init`]).
    pub use_launcher: bool,
    /// Where a cgroup v2 memory limit may be placed (from [`CgroupV2::detect`]); `None` means
    /// memory_mb is RLIMIT_AS without looking at cgroups. With `Delegated(dir)` each run gets
    /// its own group under `dir` ([`cgroup::RunGroup`]) and RLIMIT_AS is not set; any failure
    /// there falls back to RLIMIT_AS and says so in the warnings.
    pub memory_cgroup: Option<CgroupV2>,
}

impl SandboxRequest {
    pub fn new(boundary: PathBuf, command: Vec<OsString>) -> Self {
        SandboxRequest {
            cwd: boundary.clone(),
            boundary,
            writable: false,
            full_disk_readonly: false,
            network: false,
            read_paths: Vec::new(),
            extra_ro: Vec::new(),
            io_dir: None,
            io_outputs: Vec::new(),
            command,
            env: vec![("PATH".into(), SANDBOX_PATH.into()), ("HOME".into(), "/tmp".into())],
            timeout: Duration::from_secs(5),
            memory_mb: 128,
            stdout_cap: crate::DEFAULT_STREAM_CAP,
            stderr_cap: crate::DEFAULT_STREAM_CAP,
            bwrap: None,
            use_launcher: true,
            memory_cgroup: None,
        }
    }
}

/// What the sandbox actually enforced, for `metrics` and `warnings`.
#[derive(Debug, Clone)]
pub struct Enforcement {
    pub limits: SandboxLimits,
    pub timeout: Duration,
    /// Who the code runs as: `uid 1900000003 (cheng runs as root; ...)`.
    pub identity: String,
    pub network: &'static str,
    pub filesystem: &'static str,
    pub landlock: String,
    /// The seccomp filter ([`seccomp`]): what it refuses.
    pub seccomp: String,
    pub memory: String,
    pub nproc: String,
    pub warnings: Vec<String>,
}

impl Enforcement {
    /// The `limits` object for `metrics`.
    pub fn to_json(&self) -> Value {
        let mut v = crate::limits::report(&self.limits, &self.nproc, &self.memory, self.timeout.as_millis() as u64);
        if let Value::Object(map) = &mut v {
            map.insert("identity".into(), json!(self.identity));
            map.insert("network".into(), json!(self.network));
            map.insert("filesystem".into(), json!(self.filesystem));
            map.insert("landlock".into(), json!(self.landlock));
            map.insert("seccomp".into(), json!(self.seccomp));
        }
        v
    }
}

/// A prepared sandbox run.
#[derive(Debug)]
pub struct Sandbox {
    bwrap: PathBuf,
    args: Vec<OsString>,
    request: SandboxRequest,
    /// rlimits set on bwrap before it is executed; empty when the init step sets them inside.
    rlimits: Vec<crate::Rlimit>,
    /// The run's cgroup v2 group, and the command line and rlimits (with RLIMIT_AS) to use if
    /// the sandbox cannot join it.
    group: Option<cgroup::RunGroup>,
    fallback: Option<(Vec<OsString>, Vec<crate::Rlimit>)>,
    /// Removes the masking placeholders when dropped (after the run, or when the run or the
    /// prepared sandbox is dropped without finishing).
    protections: mounts::Placeholders,
    idmaps: Vec<idmap::IdmapTarget>,
    ids: (u32, u32),
    enforcement: Enforcement,
    setup_started: Instant,
}

/// The result of a sandboxed run.
#[derive(Debug)]
pub struct SandboxRun {
    pub output: ProcessOutput,
    /// Time cheng spent preparing the sandbox before bwrap started.
    pub setup: Duration,
    pub enforcement: Enforcement,
    /// The counters of the run's cgroup v2 group, when memory_mb was enforced through one.
    pub cgroup: Option<cgroup::GroupReport>,
}

/// The namespace flags every sandbox uses; probed once per process.
fn namespace_flags(root: bool) -> Vec<&'static str> {
    let mut flags = vec![
        "--die-with-parent",
        "--new-session",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-net",
        "--unshare-cgroup-try",
    ];
    if !root {
        flags.push("--unshare-user");
    }
    flags.extend(["--cap-drop", "ALL"]);
    flags
}

fn is_root() -> bool {
    // SAFETY: geteuid has no failure modes.
    unsafe { libc::geteuid() == 0 }
}

fn own_ids() -> (u32, u32) {
    // SAFETY: getuid/getgid have no failure modes.
    unsafe { (libc::getuid(), libc::getgid()) }
}

fn system_tool(name: &str) -> Option<PathBuf> {
    ["/usr/bin", "/bin", "/usr/sbin", "/sbin"].iter().map(|d| Path::new(d).join(name)).find(|p| p.is_file())
}

fn unavailable(message: impl Into<String>) -> NodeError {
    NodeError::new(ErrorKind::SandboxUnavailable, message)
}

impl Sandbox {
    /// Checks bwrap and builds the command line. Fails closed with SANDBOX_UNAVAILABLE.
    pub fn prepare(request: SandboxRequest) -> Result<Sandbox, NodeError> {
        let setup_started = Instant::now();
        if request.command.is_empty() {
            return Err(NodeError::internal("sandbox request without a command"));
        }
        let bwrap = bwrap::locate(request.bwrap.as_deref())?;
        let root = is_root();
        // A probe that already failed in this process fails every later run up front; otherwise
        // the run itself is the probe (see `run`).
        if let Some(Err(e)) = bwrap::probed(&bwrap, &namespace_flags(root)) {
            return Err(e);
        }

        let mut warnings = Vec::new();
        let launcher = if request.use_launcher { init::launcher() } else { None };
        let limits = SandboxLimits::with_memory_mb(request.memory_mb);
        let (sandbox_uid, sandbox_gid) = sandbox_ids();
        let landlock_abi = crate::landlock::kernel_abi();
        // Fail closed: no filter, no run (the program is compiled once per process).
        seccomp::program_bytes()?;

        let mut b = Bwrap::new();
        b.flag("--die-with-parent").flag("--new-session");
        // bwrap applies it just before it executes the first program inside (see `attempt`).
        b.seccomp(seccomp::SECCOMP_FD);
        b.flag("--unshare-pid").flag("--unshare-ipc").flag("--unshare-uts").flag("--unshare-cgroup-try");
        if !request.network {
            b.flag("--unshare-net");
        }
        if !root {
            let (uid, gid) = own_ids();
            b.flag("--unshare-user").uid_gid(uid, gid);
        }
        let mut layout = Layout::default();
        if request.full_disk_readonly {
            b.ro_bind(Path::new("/"), Path::new("/"));
            layout.ro_roots.push("/".into());
            if root {
                // The sandbox uid must reach what is bound for it (an interpreter under a 0700
                // /root, an approved read path, the workspace), but in the whole-disk view their
                // host ancestors are in the way. The topmost ancestor it may not enter is
                // replaced by an empty tmpfs holding only those paths: it could not see anything
                // else there anyway.
                let bound = request.extra_ro.iter().chain(&request.read_paths).chain(std::iter::once(&request.boundary));
                for dir in closed_ancestors(bound) {
                    b.tmpfs(&dir, 0o755, Some(1 << 20));
                    layout.writable_roots.push(dir.clone());
                    layout.made.push(dir);
                }
            }
        } else {
            for entry in mounts::system_view() {
                match entry {
                    mounts::SystemEntry::Symlink { target, link } => {
                        b.symlink(&target, &link);
                    }
                    mounts::SystemEntry::ReadOnly(path) => {
                        layout.parents(&mut b, &path);
                        b.ro_bind_try(&path, &path);
                        layout.ro_roots.push(path);
                    }
                }
            }
        }
        b.dev(Path::new("/dev")).proc(Path::new("/proc"));
        // Private, size-bounded scratch space (tmpfs pages count against memory, not RLIMIT_AS).
        b.tmpfs(Path::new("/tmp"), 0o1777, Some(limits.memory_bytes));
        b.tmpfs(Path::new("/run"), 0o755, Some(1 << 20));
        layout.made.extend([PathBuf::from("/tmp"), PathBuf::from("/run")]);
        layout.writable_roots.extend([PathBuf::from("/tmp"), PathBuf::from("/run")]);
        for path in request.extra_ro.iter().chain(&request.read_paths) {
            layout.parents(&mut b, path);
            b.ro_bind(path, path);
            layout.ro_roots.push(path.clone());
        }
        layout.parents(&mut b, &request.boundary);
        if request.writable {
            b.bind(&request.boundary, &request.boundary);
        } else {
            b.ro_bind(&request.boundary, &request.boundary);
        }
        let protections = if request.writable {
            let list = mounts::protect(&request.boundary, &mut warnings).map_err(|e| {
                unavailable(format!(
                    "cannot prepare the protected metadata of {}: {e}; nothing ran",
                    request.boundary.display()
                ))
            })?;
            mounts::apply(&mut b, list.list());
            list
        } else {
            mounts::Placeholders::default()
        };
        if let Some(io) = &request.io_dir {
            b.ro_bind(io, Path::new(IO_DIR));
            for name in &request.io_outputs {
                use std::os::unix::fs::FileTypeExt;
                let fifo = std::fs::symlink_metadata(io.join(name)).is_ok_and(|m| m.file_type().is_fifo());
                if !fifo {
                    return Err(NodeError::internal(format!(
                        "the sandbox output {name} is not a FIFO made by cheng_exec::sandbox::channel; a regular file would store what the script writes on the host"
                    )));
                }
                b.bind(&io.join(name), &Path::new(IO_DIR).join(name));
            }
        }
        if let Some(exe) = &launcher {
            b.ro_bind(exe, Path::new(INIT_PATH));
        }
        b.chdir(&request.cwd);
        b.flag("--cap-drop").flag("ALL");
        if root {
            // Only for the uid drop inside, which clears them again (and the bounding set).
            b.cap_add("CAP_SETUID").cap_add("CAP_SETGID").cap_add("CAP_SETPCAP");
            // bwrap's own --chdir into an idmapped workspace whose owner now appears as the
            // sandbox uid (a private 0700 workspace denies root without it).
            b.cap_add("CAP_DAC_READ_SEARCH");
        }

        // memory_mb: the run's own cgroup v2 group when one can be made, else RLIMIT_AS.
        let group = match &request.memory_cgroup {
            Some(CgroupV2::Delegated(parent)) => {
                let group_limits = cgroup::GroupLimits { memory_bytes: limits.memory_bytes, pids: limits.nproc };
                match cgroup::RunGroup::create(parent, group_limits, &mut warnings) {
                    Ok(group) => {
                        warnings.push(format!("memory_mb enforced as {} (RLIMIT_AS not set)", group.describe()));
                        Some(group)
                    }
                    Err(why) => {
                        warnings.push(format!(
                            "cgroup v2 memory limit not applied ({why}); memory_mb enforced as {} instead",
                            rlimit_as_phrase(request.memory_mb)
                        ));
                        None
                    }
                }
            }
            Some(CgroupV2::Unavailable(why)) => {
                warnings.push(format!(
                    "memory_mb enforced as {}: no cgroup v2 memory limit here ({why}); cgroup v1 hierarchies are never touched",
                    rlimit_as_phrase(request.memory_mb)
                ));
                None
            }
            None => None,
        };
        let memory = group.as_ref().map(cgroup::RunGroup::describe).unwrap_or_else(|| rlimit_as_phrase(request.memory_mb));
        // Every rlimit, RLIMIT_NPROC included; without RLIMIT_AS when `with_as` is false.
        let all_rlimits = |with_as: bool| -> Vec<crate::Rlimit> {
            limits.rlimits(true).into_iter().filter(|l| with_as || l.resource != crate::RlimitResource::AddressSpace).collect()
        };

        // The chain inside: [init step | setpriv | prlimit] then the command.
        let mut writable_roots: Vec<PathBuf> = vec!["/tmp".into(), "/dev".into()];
        if request.io_dir.is_some() {
            writable_roots.extend(request.io_outputs.iter().map(|name| Path::new(IO_DIR).join(name)));
        }
        if request.writable {
            writable_roots.push(request.boundary.clone());
        }
        // With the init step, the rlimits are set inside (see `init`), not on bwrap.
        let init_argv = |with_as: bool| -> Vec<OsString> {
            let plan = init::InitPlan {
                drop_to: root.then_some((sandbox_uid, sandbox_gid)),
                rlimits: all_rlimits(with_as),
                writable: writable_roots.clone(),
                command: request.command.clone(),
            };
            let mut argv: Vec<OsString> = vec![INIT_PATH.into()];
            argv.extend(plan.to_args());
            argv
        };
        let (identity, nproc, landlock, inner): (String, String, String, Vec<OsString>) = match (&launcher, root) {
            (Some(_), _) => {
                let argv = init_argv(group.is_none());
                let landlock = match landlock_abi {
                    Some(abi) => format!(
                        "enforced (ABI {abi}): writes only under {}",
                        writable_roots.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
                    ),
                    None => {
                        warnings.push("Landlock is not supported by this kernel: writes are confined by the read-only mounts only".into());
                        "not supported by this kernel".into()
                    }
                };
                let identity = if root {
                    format!("uid {sandbox_uid} (cheng runs as root; unprivileged per-run uid set by cheng's sandbox init step)")
                } else {
                    format!("uid {} (cheng's own, in a user namespace)", own_ids().0)
                };
                let nproc = if root {
                    format!("RLIMIT_NPROC {} on uid {sandbox_uid}", limits.nproc)
                } else {
                    format!("RLIMIT_NPROC {} set inside the user namespace", limits.nproc)
                };
                (identity, nproc, landlock, argv)
            }
            (None, true) => {
                let setpriv = system_tool("setpriv").ok_or_else(|| {
                    unavailable(
                        "cheng runs as root and this binary has no sandbox init step, so the drop to an unprivileged uid needs \
                         setpriv (util-linux), which is not installed; nothing ran. Install util-linux or run through the `cheng` binary",
                    )
                })?;
                warnings.push(
                    "Landlock not applied: this binary has no sandbox init step (the `cheng` binary has one); writes are confined by the read-only mounts only"
                        .into(),
                );
                let mut argv: Vec<OsString> = vec![
                    setpriv.into(),
                    format!("--reuid={sandbox_uid}").into(),
                    format!("--regid={sandbox_gid}").into(),
                    "--clear-groups".into(),
                    "--inh-caps=-all".into(),
                    "--bounding-set=-all".into(),
                    "--no-new-privs".into(),
                    "--".into(),
                ];
                argv.extend(request.command.iter().cloned());
                (
                    format!("uid {sandbox_uid} (cheng runs as root; unprivileged per-run uid set by setpriv)"),
                    format!("RLIMIT_NPROC {} on uid {sandbox_uid}", limits.nproc),
                    "not applied (no sandbox init step in this binary)".into(),
                    argv,
                )
            }
            (None, false) => {
                warnings.push(
                    "Landlock not applied: this binary has no sandbox init step (the `cheng` binary has one); writes are confined by the read-only mounts only"
                        .into(),
                );
                let mut argv = Vec::new();
                let nproc = match system_tool("prlimit") {
                    Some(prlimit) => {
                        argv.push(prlimit.into_os_string());
                        argv.push(format!("--nproc={}", limits.nproc).into());
                        argv.push("--".into());
                        format!("RLIMIT_NPROC {} set inside the user namespace by prlimit", limits.nproc)
                    }
                    None => {
                        warnings.push("RLIMIT_NPROC not enforced: prlimit (util-linux) is not installed and this binary has no sandbox init step".into());
                        "not enforced".into()
                    }
                };
                argv.extend(request.command.iter().cloned());
                (
                    format!("uid {} (cheng's own, in a user namespace)", own_ids().0),
                    nproc,
                    "not applied (no sandbox init step in this binary)".into(),
                    argv,
                )
            }
        };
        // The same command line with RLIMIT_AS, for a run that cannot join its cgroup group.
        let fallback = group.as_ref().map(|_| {
            let mut fb = b.clone();
            let (args, rlimits) = match &launcher {
                Some(_) => (init_argv(true), Vec::new()),
                None => (inner.clone(), limits.rlimits(root)),
            };
            fb.command(args);
            (fb.into_args(), rlimits)
        });
        b.command(inner);

        let mut idmaps = Vec::new();
        if root {
            let mut targets = Vec::new();
            // Writable: always (writes must land owned by the owner). Read-only: when the
            // sandbox uid could not otherwise list it (a private workspace such as a 0700 home).
            if request.writable || !world_listable(&request.boundary) {
                targets.push(&request.boundary);
            }
            targets.extend(&request.read_paths);
            for path in targets {
                let target = idmap::IdmapTarget::for_path(path)
                    .map_err(|e| unavailable(format!("cannot inspect {}: {e}", path.display())))?;
                if target.owner_uid != sandbox_uid {
                    idmaps.push(target);
                }
            }
        }
        let filesystem = match (request.writable, idmaps.iter().any(|t| t.path == request.boundary)) {
            (false, true) => "workspace read-only through an idmapped mount (owner shown as the sandbox uid)",
            (false, false) => "workspace read-only",
            (true, true) => "workspace writable through an idmapped mount (owner shown as the sandbox uid); protected metadata read-only",
            (true, false) => "workspace writable; protected metadata read-only",
        };
        let enforcement = Enforcement {
            limits,
            timeout: request.timeout,
            identity,
            network: if request.network { "host network shared" } else { "none (private network namespace)" },
            filesystem,
            landlock,
            seccomp: format!(
                "enforced ({} filter installed by bubblewrap before the first program inside): refuses {}",
                std::env::consts::ARCH,
                seccomp::REFUSES
            ),
            memory,
            nproc,
            warnings,
        };
        Ok(Sandbox {
            bwrap,
            args: b.into_args(),
            rlimits: match (&launcher, &group) {
                (Some(_), _) => Vec::new(),
                (None, Some(_)) => limits.rlimits(root).into_iter().filter(|l| l.resource != crate::RlimitResource::AddressSpace).collect(),
                (None, None) => limits.rlimits(root),
            },
            group,
            fallback,
            request,
            protections,
            idmaps,
            ids: (sandbox_uid, sandbox_gid),
            enforcement,
            setup_started,
        })
    }

    /// The bwrap binary and its arguments (what a person would type to reproduce the run,
    /// minus the idmapped mounts, the cgroup placement and, without an init step, the rlimits).
    /// bwrap expects the seccomp program on descriptor [`seccomp::SECCOMP_FD`]
    /// ([`seccomp::program_fd`] makes one).
    pub fn command_line(&self) -> (&Path, &[OsString]) {
        (&self.bwrap, &self.args)
    }

    pub fn enforcement(&self) -> &Enforcement {
        &self.enforcement
    }

    /// Runs the sandbox to completion, timeout or cancellation.
    pub async fn run(mut self, cancel: &CancellationToken) -> Result<SandboxRun, NodeError> {
        let idmaps = if self.idmaps.is_empty() {
            Vec::new()
        } else {
            match idmap::prepare(&self.idmaps, self.ids) {
                Ok(prepared) => prepared,
                Err(e) => {
                    return Err(unavailable(format!("cannot create the user namespace for an idmapped mount: {e}; nothing ran")));
                }
            }
        };
        // Inode times at or after this were changed by the run (see `audit`).
        let since = audit::Since::now();
        let group = self.group.take();
        let procs = group.as_ref().map(cgroup::RunGroup::procs);
        let mut result = self.attempt(self.args.clone(), self.rlimits.clone(), procs, cancel, &idmaps).await;
        let mut report = None;
        if let Some(group) = group {
            let join_failed = matches!(&result, Ok((out, _)) if out.termination == crate::Termination::SpawnFailed);
            match (join_failed, self.fallback.take()) {
                (true, Some((args, rlimits))) => {
                    // The spawn fails closed before exec when the child cannot join its group:
                    // nothing ran, so run again under RLIMIT_AS and say so.
                    let why = result.as_ref().ok().and_then(|(out, _)| out.spawn_error.clone()).unwrap_or_default();
                    let rlimit = rlimit_as_phrase(self.request.memory_mb);
                    self.enforcement.warnings.push(format!(
                        "cgroup v2: the sandbox could not join {} ({why}); memory_mb enforced as {rlimit} instead",
                        group.dir().display()
                    ));
                    self.enforcement.memory = rlimit;
                    drop(group);
                    result = self.attempt(args, rlimits, None, cancel, &idmaps).await;
                }
                _ => report = Some(group.finish()),
            }
        }
        // The run is over (the pid namespace died with bwrap): audit what it left in a writable
        // workspace, then the placeholders go (and on every early return, with `self`).
        let audited = match (&result, self.request.writable) {
            (Ok(_), true) => Some(self.audit(since).await),
            _ => None,
        };
        drop(std::mem::take(&mut self.protections));
        if let Some(e) = report.as_ref().and_then(|r| r.cleanup_error.clone()) {
            self.enforcement.warnings.push(format!("cgroup v2: {e}"));
        }
        let (output, setup) = result.map_err(|e| unavailable(format!("{e}; nothing ran")))?;
        if let Some(message) = setup_failure(&output) {
            return Err(unavailable(message));
        }
        match audited {
            Some(Ok(report)) => self.enforcement.warnings.extend(report.warnings),
            Some(Err(e)) => return Err(NodeError::new(ErrorKind::OutputLimit, e.to_string())),
            None => {}
        }
        if output.termination == crate::Termination::Exited && output.exit_code != Some(0) {
            // A failure bwrap did not explain: the script's own, unless bwrap cannot create the
            // namespaces here at all (a stand-in binary, a policy that kills it). The probe
            // (once per process) tells which.
            bwrap::probe(&self.bwrap, &namespace_flags(is_root()))?;
        }
        Ok(SandboxRun { output, setup, enforcement: self.enforcement, cgroup: report })
    }

    /// The audit of the writable workspace after the run ([`audit::audit`]), off the async
    /// workers: it walks the whole workspace.
    async fn audit(&self, since: audit::Since) -> Result<audit::AuditReport, audit::AuditError> {
        let boundary = self.request.boundary.clone();
        let known = self.protections.repositories().to_vec();
        tokio::task::spawn_blocking(move || audit::audit(&boundary, since, &known))
            .await
            .unwrap_or_else(|e| Err(audit::AuditError(format!("the audit after the run stopped: {e}"))))
    }

    /// One start of bwrap with `args` and `rlimits`, joining the cgroup group of `procs` when
    /// given, through the idmapped mounts when there are any. Returns the output and the setup time.
    async fn attempt(
        &self,
        args: Vec<OsString>,
        rlimits: Vec<crate::Rlimit>,
        procs: Option<std::sync::Arc<std::os::fd::OwnedFd>>,
        cancel: &CancellationToken,
        idmaps: &[(idmap::IdmapTarget, std::sync::Arc<std::os::fd::OwnedFd>)],
    ) -> Result<(ProcessOutput, Duration), String> {
        let spec = ProcessSpec::new(&self.bwrap, args, "/")
            .env(self.request.env.clone())
            .timeout(self.request.timeout)
            .caps(self.request.stdout_cap, self.request.stderr_cap);
        // A fresh descriptor per start: bwrap reads the program to its end.
        let filter = seccomp::program_fd().map_err(|e| e.message)?;
        let inherit_fds = vec![(std::sync::Arc::new(filter), seccomp::SECCOMP_FD)];
        let spec = ProcessSpec { rlimits, cgroup_procs: procs, inherit_fds, ..spec };
        let setup = self.setup_started.elapsed();
        if idmaps.is_empty() {
            Ok((crate::run(spec, cancel).await, setup))
        } else {
            idmap::run_with_idmaps(spec, cancel, idmaps.to_vec()).await.map(|out| (out, setup))
        }
    }
}

/// How memory_mb reads when it is enforced as RLIMIT_AS.
fn rlimit_as_phrase(memory_mb: u64) -> String {
    format!("RLIMIT_AS {memory_mb} MiB (address space, not resident memory)")
}

/// For each path, its topmost ancestor others may not enter (no `o+x`), without duplicates or
/// one inside another.
fn closed_ancestors<'a>(paths: impl Iterator<Item = &'a PathBuf>) -> Vec<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let mut out: Vec<PathBuf> = Vec::new();
    for path in paths {
        let mut ancestors: Vec<&Path> = path.ancestors().skip(1).collect();
        ancestors.reverse();
        let closed = ancestors
            .into_iter()
            .filter(|dir| *dir != Path::new("/"))
            .find(|dir| std::fs::metadata(dir).is_ok_and(|m| m.permissions().mode() & 0o001 == 0));
        if let Some(dir) = closed {
            if !out.iter().any(|o| dir.starts_with(o)) {
                out.retain(|o| !o.starts_with(dir));
                out.push(dir.to_path_buf());
            }
        }
    }
    out
}

/// Creates, mode 0755, the parents of bind destinations that no read-only bind provides.
#[derive(Debug, Default)]
struct Layout {
    ro_roots: Vec<PathBuf>,
    /// tmpfs mounts, where missing parents can always be made.
    writable_roots: Vec<PathBuf>,
    made: Vec<PathBuf>,
}

impl Layout {
    fn parents(&mut self, b: &mut Bwrap, dest: &Path) {
        let mut ancestors: Vec<&Path> = dest.ancestors().skip(1).collect();
        ancestors.reverse();
        for dir in ancestors {
            if dir == Path::new("/") || self.made.iter().any(|m| m == dir) {
                continue;
            }
            let in_ro = self.ro_roots.iter().filter(|r| dir.starts_with(r)).map(|r| r.components().count()).max();
            let in_tmpfs = self.writable_roots.iter().filter(|r| dir.starts_with(r)).map(|r| r.components().count()).max();
            if in_ro > in_tmpfs {
                // Inside a read-only bind: it exists there or cannot be made.
                return;
            }
            b.dir(dir, 0o755);
            self.made.push(dir.to_path_buf());
        }
    }
}

/// bwrap's or the init step's own failure (as opposed to the program's), from the output.
fn setup_failure(out: &ProcessOutput) -> Option<String> {
    if let Some(e) = &out.spawn_error {
        return Some(format!("bubblewrap could not be started: {e}; nothing ran"));
    }
    let stderr = out.stderr.text.trim_start();
    match out.exit_code {
        Some(1) if stderr.starts_with("bwrap: ") => {
            let line = stderr.lines().next().unwrap_or(stderr);
            Some(format!(
                "bubblewrap could not set up the sandbox: {line}. {} Nothing ran; cheng never falls back to running on the host.",
                bwrap::hint(line)
            ))
        }
        Some(126) if stderr.starts_with("cheng sandbox init: ") => {
            let line = stderr.lines().next().unwrap_or(stderr);
            Some(format!("the sandbox init step failed: {line}; nothing ran"))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_topmost_ancestor_others_cannot_enter_is_found_once() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::create_dir_all(root.join("home/lib/python")).unwrap();
        std::fs::create_dir_all(root.join("home/ws")).unwrap();
        std::fs::create_dir_all(root.join("open/inner")).unwrap();
        std::fs::set_permissions(root.join("home"), std::fs::Permissions::from_mode(0o700)).unwrap();
        // A closed directory deeper inside an already closed one adds nothing.
        std::fs::set_permissions(root.join("home/lib"), std::fs::Permissions::from_mode(0o700)).unwrap();
        let paths = [root.join("home/lib/python"), root.join("home/ws"), root.join("open/inner")];
        assert_eq!(closed_ancestors(paths.iter()), [root.join("home")]);
    }
}
