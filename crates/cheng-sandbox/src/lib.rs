//! The bubblewrap sandbox the code executors run in.
//!
//! A plan, then a run. [`Sandbox::prepare`] gathers the host's facts ([`HostFacts`]: fail closed
//! with [`ErrorKind::SandboxUnavailable`] when there is no bwrap, never a host fallback), then this
//! run's facts (making the masking placeholders and the cgroup group it needs), then calls the
//! pure `plan::plan`, which decides the whole command line, its mounts and every limit from those
//! facts alone (and is unit-tested with facts built by hand). [`Sandbox::run`] runs the plan
//! through [`cheng_exec::run`] (timeout, per-run reaper, descriptor hygiene, bounded capture) and
//! reports what was enforced.
//!
//! The view: system directories read-only ([`mounts::system_view`], small world-readable /etc
//! files copied into a root that is then remounted read-only, /run a directory
//! of that root) or the whole disk read-only (`full_disk_readonly`, with a private /run),
//! approved read paths read-only at their own path, a fresh /proc, a minimal /dev, a private
//! size-bounded /tmp, and the boundary (the workspace) read-only,
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
//! The network: every sandbox has its own network namespace with loopback only. With
//! `request.network` (allow_network) the one way out is cheng's filtering proxy
//! ([`cheng_proxy`]): its two sockets are bound in a per-run directory when the sandbox is
//! prepared, shown read-only at [`PROXY_DIR`], bridged to 127.0.0.1 inside by the init step
//! ([`bridge`]) and served for the run under the request's [`cheng_net::Gate`].
//!
//! memory_mb is RLIMIT_AS, or, when the request names a delegated cgroup v2 subtree, the
//! `memory.max` of a per-run group ([`cgroup`]). The per-run I/O directory belongs on a tmpfs
//! ([`io_parent`]) and is bound read-only; the only things the sandbox may write there are the
//! named output FIFOs ([`channel`]), which store nothing on the host.

pub mod audit;
pub mod bridge;
pub(crate) mod bwrap;
pub mod cgroup;
pub mod channel;
pub(crate) mod etc_copies;
pub(crate) mod host;
pub(crate) mod idmap;
pub mod init;
pub mod jail;
pub(crate) mod landlock;
pub(crate) mod limits;
pub mod mounts;
pub mod pinned;
pub(crate) mod plan;
mod proxy_dir;
mod run_facts;
pub mod seccomp;

pub use bwrap::{Mount, BWRAP_ENV};
pub use host::HostFacts;
pub use limits::{CgroupV2, SandboxLimits, MAX_MEMORY_MB, MIN_MEMORY_MB};
pub use pinned::{Identity, PinnedPath};
pub use proxy_dir::PROXY_DIR;

use cheng_exec::{ProcessOutput, ProcessSpec};
use cheng_node::{ErrorKind, NodeError};
use serde_json::{json, Value};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Where the per-run I/O directory (input file, result channel) is mounted inside.
pub const IO_DIR: &str = "/run/cheng-io";
/// The first of the unprivileged ids sandboxed code runs as when cheng is root. Each run gets
/// its own uid (RLIMIT_NPROC counts per uid, so a fork bomb in one sandbox cannot starve another
/// running at the same time); the ids have no /etc/passwd entry.
pub const SANDBOX_UID_BASE: u32 = 1_900_000_000;
/// How many distinct sandbox uids one cheng process cycles through.
pub(crate) const SANDBOX_UID_SLOTS: u32 = 4096;

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

fn is_tmpfs(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: statfs fills a plain struct from a NUL-terminated path.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above; both pointers are valid for the call.
    unsafe { libc::statfs(c.as_ptr(), &mut st) == 0 && st.f_type == libc::TMPFS_MAGIC }
}

fn writable_dir(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
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
    /// The network through cheng's filtering proxy, under these host rules (allow_network).
    /// `None`: no network at all. Either way the sandbox has its own, empty network namespace;
    /// it never shares the host's ([`cheng_proxy`], [`bridge`]).
    pub network: Option<cheng_net::Gate>,
    /// Approved, canonical host paths, each opened once ([`PinnedPath`]) and bound read-only at
    /// its own path from that descriptor, never by path again.
    pub read_paths: Vec<PinnedPath>,
    /// Further read-only directories the program needs (an interpreter's prefix).
    pub extra_ro: Vec<PathBuf>,
    /// A host directory shown read-only at [`IO_DIR`] (see [`io_parent`] for where to make it):
    /// bound, or, when it holds only a few small regular files and no `io_outputs` and the
    /// view's root is read-only, copied (its files read when bwrap starts; see
    /// [`plan::io_copies`]).
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
    /// Live output: the sandboxed program's stdout and stderr chunks as they are read.
    pub output: cheng_node::Output,
}

impl SandboxRequest {
    pub fn new(boundary: PathBuf, command: Vec<OsString>) -> Self {
        SandboxRequest {
            cwd: boundary.clone(),
            boundary,
            writable: false,
            full_disk_readonly: false,
            network: None,
            read_paths: Vec::new(),
            extra_ro: Vec::new(),
            io_dir: None,
            io_outputs: Vec::new(),
            command,
            env: vec![
                ("PATH".into(), SANDBOX_PATH.into()),
                ("HOME".into(), "/tmp".into()),
            ],
            timeout: Duration::from_secs(5),
            memory_mb: 128,
            stdout_cap: cheng_exec::DEFAULT_STREAM_CAP,
            stderr_cap: cheng_exec::DEFAULT_STREAM_CAP,
            bwrap: None,
            use_launcher: true,
            memory_cgroup: None,
            output: cheng_node::Output::off(),
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
    /// The socket families the filter admits ([`seccomp::sockets_report`]).
    pub sockets: String,
    pub memory: String,
    pub nproc: String,
    pub warnings: Vec<String>,
}

impl Enforcement {
    /// The `limits` object for `metrics`.
    pub fn to_json(&self) -> Value {
        let mut v = limits::report(
            &self.limits,
            &self.nproc,
            &self.memory,
            self.timeout.as_millis() as u64,
        );
        if let Value::Object(map) = &mut v {
            map.insert("identity".into(), json!(self.identity));
            map.insert("network".into(), json!(self.network));
            map.insert("filesystem".into(), json!(self.filesystem));
            map.insert("landlock".into(), json!(self.landlock));
            map.insert("seccomp".into(), json!(self.seccomp));
            map.insert("sockets".into(), json!(self.sockets));
        }
        v
    }
}

/// A prepared sandbox run.
#[derive(Debug)]
pub struct Sandbox {
    /// cheng runs as root (from the host facts).
    root: bool,
    bwrap: PathBuf,
    args: Vec<OsString>,
    /// bwrap's environment (passed on to the sandbox).
    env: Vec<(OsString, OsString)>,
    /// The mount operations in `args`.
    mounts: Vec<bwrap::Mount>,
    /// Host files copied into the view, with the descriptor number bwrap reads each from.
    files: Vec<(PathBuf, std::os::fd::RawFd)>,
    /// The approved read paths' descriptors, with the number bwrap mounts each from.
    pinned: Vec<(PinnedPath, std::os::fd::RawFd)>,
    /// The init executable and the descriptor bwrap passes it on to the first program inside.
    init: Option<(PathBuf, std::os::fd::RawFd)>,
    request: SandboxRequest,
    /// rlimits set on bwrap before it is executed; empty when the init step sets them inside.
    rlimits: Vec<cheng_exec::Rlimit>,
    /// The run's cgroup v2 group, and the command line and rlimits (with RLIMIT_AS) to use if
    /// the sandbox cannot join it.
    group: Option<cgroup::RunGroup>,
    fallback: Option<(Vec<OsString>, Vec<cheng_exec::Rlimit>)>,
    /// Removes the masking placeholders when dropped (after the run, or when the run or the
    /// prepared sandbox is dropped without finishing).
    protections: mounts::Placeholders,
    /// The filtering proxy's sockets for a run with the network (bound, served during the run).
    proxy: Option<proxy_dir::ProxyDir>,
    /// A session's proxy, serving until the session (which holds this sandbox) is dropped.
    live_proxy: Option<cheng_proxy::Proxy>,
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
    /// Every connection the run asked of the filtering proxy, when it had the network.
    pub network: Option<cheng_proxy::Report>,
}

/// Checks that a sandbox can be built here: bwrap is found and creates the namespaces every run
/// uses (the same flags, from [`plan::probe_flags`]). Fails closed with SANDBOX_UNAVAILABLE and
/// a sentence naming the fix. Probes at most once per process.
pub fn check_available() -> Result<(), NodeError> {
    let host = HostFacts::gather(None)?;
    bwrap::probe(&host.bwrap, &plan::probe_flags(host.root))
}

fn unavailable(message: impl Into<String>) -> NodeError {
    NodeError::new(ErrorKind::SandboxUnavailable, message)
}

impl Sandbox {
    /// Checks bwrap and builds the command line. Fails closed with SANDBOX_UNAVAILABLE.
    ///
    /// Three steps: the host's facts ([`HostFacts::gather`]), this run's facts and the
    /// placeholders and cgroup group it needs (`run_facts::gather`), then the pure [`plan::plan`].
    pub fn prepare(request: SandboxRequest) -> Result<Sandbox, NodeError> {
        let setup_started = Instant::now();
        if request.command.is_empty() {
            return Err(NodeError::internal("sandbox request without a command"));
        }
        let host = HostFacts::gather(request.bwrap.as_deref())?;
        // A probe that already failed in this process fails every later run up front; otherwise
        // the run itself is the probe (see `run`).
        if let Some(Err(e)) = bwrap::probed(&host.bwrap, &plan::probe_flags(host.root)) {
            return Err(e);
        }
        // Fail closed: no filter, no run (the program is compiled once per process).
        seccomp::program_bytes(request.network.is_some())?;
        let proxy = match request.network {
            Some(_) => Some(proxy_dir::ProxyDir::create()?),
            None => None,
        };
        let (mut facts, protections, group) = run_facts::gather(&request, &host)?;
        facts.proxy_dir = proxy.as_ref().map(|p| p.path().to_path_buf());
        let plan = plan::plan(&request, &host, &facts)?;
        Ok(Sandbox {
            root: host.root,
            bwrap: plan.bwrap,
            args: plan.args,
            env: plan.env,
            mounts: plan.mounts,
            files: plan.files,
            pinned: plan.pinned,
            init: plan.init,
            rlimits: plan.rlimits,
            group,
            fallback: plan.fallback,
            request,
            protections,
            proxy,
            live_proxy: None,
            idmaps: plan.idmaps,
            ids: facts.ids,
            enforcement: plan.enforcement,
            setup_started,
        })
    }

    /// The bwrap binary and its arguments (what a person would type to reproduce the run,
    /// minus the idmapped mounts, the cgroup placement and, without an init step, the rlimits).
    /// bwrap expects the seccomp program on descriptor [`seccomp::SECCOMP_FD`]
    /// ([`seccomp::program_fd`] makes one), each of [`Sandbox::files`] on its descriptor, and
    /// each approved read path's descriptor on its number ([`Sandbox::read_path_fds`]).
    pub fn command_line(&self) -> (&Path, &[OsString]) {
        (&self.bwrap, &self.args)
    }

    /// The host files bwrap must find open, with the descriptor number each must be open on:
    /// those it copies into the view (`--file N`), and the init executable, which it passes on
    /// to the first program inside (executed as `/proc/self/fd/N`).
    pub fn files(&self) -> Vec<(PathBuf, std::os::fd::RawFd)> {
        self.files.iter().chain(&self.init).cloned().collect()
    }

    /// The approved read paths' descriptors with the number each must be open on in bwrap
    /// (`--ro-bind-fd N`): they are mounted from these, never by path.
    pub fn read_path_fds(&self) -> Vec<(std::sync::Arc<std::os::fd::OwnedFd>, std::os::fd::RawFd)> {
        self.pinned
            .iter()
            .map(|(read, fd)| (std::sync::Arc::clone(read.fd()), *fd))
            .collect()
    }

    /// The mount operations of the command line, in order.
    pub fn mounts(&self) -> &[Mount] {
        &self.mounts
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
                    return Err(unavailable(format!(
                        "cannot create the user namespace for an idmapped mount: {e}; nothing ran"
                    )));
                }
            }
        };
        // Inode times at or after this were changed by the run (see `audit`).
        let since = audit::Since::now();
        let proxy = match (self.proxy.as_mut(), &self.request.network) {
            (Some(dir), Some(gate)) => Some(dir.serve(gate.clone(), self.request.output.clone())?),
            _ => None,
        };
        let group = self.group.take();
        let procs = group.as_ref().map(cgroup::RunGroup::procs);
        let mut result = self
            .attempt(
                self.args.clone(),
                self.rlimits.clone(),
                procs,
                cancel,
                &idmaps,
            )
            .await;
        let mut report = None;
        if let Some(group) = group {
            let join_failed = matches!(&result, Ok((out, _)) if out.termination == cheng_exec::Termination::SpawnFailed);
            match (join_failed, self.fallback.take()) {
                (true, Some((args, rlimits))) => {
                    // The spawn fails closed before exec when the child cannot join its group:
                    // nothing ran, so run again under RLIMIT_AS and say so.
                    let why = result
                        .as_ref()
                        .ok()
                        .and_then(|(out, _)| out.spawn_error.clone())
                        .unwrap_or_default();
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
        let network = match proxy {
            Some(proxy) => Some(proxy.finish().await),
            None => None,
        };
        if let Some(network) = &network {
            self.enforcement.warnings.extend(network.refusals());
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
        if output.termination == cheng_exec::Termination::Exited && output.exit_code != Some(0) {
            // A failure bwrap did not explain: the script's own, unless bwrap cannot create the
            // namespaces here at all (a stand-in binary, a policy that kills it). The probe
            // (once per process) tells which.
            bwrap::probe(&self.bwrap, &plan::probe_flags(self.root))?;
        }
        Ok(SandboxRun {
            output,
            setup,
            enforcement: self.enforcement,
            cgroup: report,
            network,
        })
    }

    /// The audit of the writable workspace after the run ([`audit::audit`]), off the async
    /// workers: it walks the whole workspace.
    async fn audit(&self, since: audit::Since) -> Result<audit::AuditReport, audit::AuditError> {
        let boundary = self.request.boundary.clone();
        let known = self.protections.repositories().to_vec();
        tokio::task::spawn_blocking(move || audit::audit(&boundary, since, &known))
            .await
            .unwrap_or_else(|e| {
                Err(audit::AuditError(format!(
                    "the audit after the run stopped: {e}"
                )))
            })
    }

    /// The bwrap process of one start: `args`, `rlimits`, the cgroup of `procs`, the seccomp
    /// program and the files bwrap copies in.
    fn spec(
        &self,
        args: Vec<OsString>,
        rlimits: Vec<cheng_exec::Rlimit>,
        procs: Option<std::sync::Arc<std::os::fd::OwnedFd>>,
    ) -> Result<ProcessSpec, String> {
        let spec = ProcessSpec::new(&self.bwrap, args, "/")
            .env(self.env.clone())
            .timeout(self.request.timeout)
            .caps(self.request.stdout_cap, self.request.stderr_cap)
            .output(self.request.output.clone());
        // A fresh descriptor per start: bwrap reads the program to its end.
        let filter = seccomp::program_fd(self.request.network.is_some()).map_err(|e| e.message)?;
        let mut inherit_fds = vec![(std::sync::Arc::new(filter), seccomp::SECCOMP_FD)];
        // The files bwrap copies into the view, freshly opened: bwrap reads each to its end.
        // One that vanished since the host was looked at shows as empty (as /dev/null).
        for (path, fd) in &self.files {
            let file = std::fs::File::open(path)
                .or_else(|_| std::fs::File::open("/dev/null"))
                .map_err(|e| {
                    format!(
                        "cannot open {} to copy it into the sandbox: {e}",
                        path.display()
                    )
                })?;
            inherit_fds.push((std::sync::Arc::new(std::os::fd::OwnedFd::from(file)), *fd));
        }
        // The approved read paths, mounted from the descriptors opened when they were resolved
        // (bwrap closes each after mounting it; an idmapped one is replaced by its clone).
        inherit_fds.extend(self.read_path_fds());
        // The init executable, run from its descriptor (not CLOEXEC in bwrap: the first program
        // inside is `/proc/self/fd/N`, and the init step closes it before the command starts).
        if let Some((path, fd)) = &self.init {
            let file = std::fs::File::open(path).map_err(|e| {
                format!(
                    "cannot open the sandbox init step {} to hand it to bubblewrap: {e}",
                    path.display()
                )
            })?;
            inherit_fds.push((std::sync::Arc::new(std::os::fd::OwnedFd::from(file)), *fd));
        }
        Ok(ProcessSpec {
            rlimits,
            cgroup_procs: procs,
            inherit_fds,
            ..spec
        })
    }

    /// Starts the plan as a long-lived process ([`cheng_exec::live::LiveProcess`], a session) with
    /// `request.timeout` as its lifetime, killed when `cancel` fires or the handle drops. Returns
    /// it with what must live as long as it does (this sandbox: its masking placeholders, and with
    /// the network the filtering proxy serving the session).
    ///
    /// Fails closed ([`ErrorKind::SandboxUnavailable`], nothing runs) where a session cannot be
    /// sandboxed as a single run would be: a writable workspace (the audit runs after a run). A
    /// view that needs an idmapped mount is set up from a thread of its own, as for one run.
    pub fn start_live(
        mut self,
        cancel: CancellationToken,
    ) -> Result<
        (
            cheng_exec::live::LiveProcess,
            Box<dyn std::any::Any + Send + Sync>,
        ),
        NodeError,
    > {
        if self.request.writable {
            return Err(unavailable("a sandboxed session cannot have a writable workspace (its writes are audited after a run ends); nothing ran"));
        }
        // A per-run memory group is never asked for here (no delegated cgroup in the request).
        drop(self.group.take());
        // The proxy serves the session for as long as it lives: it is held with the sandbox.
        if let (Some(dir), Some(gate)) = (self.proxy.as_mut(), &self.request.network) {
            self.live_proxy = Some(dir.serve(gate.clone(), self.request.output.clone())?);
        }
        let spec = self
            .spec(self.args.clone(), self.rlimits.clone(), None)
            .map_err(|e| unavailable(format!("{e}; nothing ran")))?;
        let process = if self.idmaps.is_empty() {
            cheng_exec::live::LiveProcess::start(spec, cancel)
        } else {
            let prepared = idmap::prepare(&self.idmaps, self.ids).map_err(|e| {
                unavailable(format!(
                    "cannot create the user namespace for an idmapped mount: {e}; nothing ran"
                ))
            })?;
            idmap::start_live_with_idmaps(spec, cancel, prepared)
        }
        .map_err(|e| unavailable(format!("bubblewrap could not be started: {e}; nothing ran")))?;
        Ok((process, Box::new(self)))
    }

    /// One start of bwrap with `args` and `rlimits`, joining the cgroup group of `procs` when
    /// given, through the idmapped mounts when there are any. Returns the output and the setup time.
    async fn attempt(
        &self,
        args: Vec<OsString>,
        rlimits: Vec<cheng_exec::Rlimit>,
        procs: Option<std::sync::Arc<std::os::fd::OwnedFd>>,
        cancel: &CancellationToken,
        idmaps: &[(idmap::IdmapTarget, std::sync::Arc<std::os::fd::OwnedFd>)],
    ) -> Result<(ProcessOutput, Duration), String> {
        let spec = self.spec(args, rlimits, procs)?;
        let setup = self.setup_started.elapsed();
        if idmaps.is_empty() {
            Ok((cheng_exec::run(spec, cancel).await, setup))
        } else {
            idmap::run_with_idmaps(spec, cancel, idmaps.to_vec())
                .await
                .map(|out| (out, setup))
        }
    }
}

/// How memory_mb reads when it is enforced as RLIMIT_AS.
fn rlimit_as_phrase(memory_mb: u64) -> String {
    format!("RLIMIT_AS {memory_mb} MiB (address space, not resident memory)")
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
