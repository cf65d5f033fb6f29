//! The sandbox as a plan: a pure function from a request, the host's facts ([`HostFacts`]) and
//! the facts of this run ([`RunFacts`]) to the complete bwrap command line, its environment,
//! its mounts, the rlimits and what is reported as enforced.
//!
//! Nothing here touches the host: [`super::Sandbox::prepare`] gathers the facts (and makes what
//! must exist before bwrap starts: masking placeholders, the cgroup group), then calls [`plan`];
//! [`super::Sandbox::run`] runs what it returns. The unit tests below build facts by hand and
//! check exact command lines, with or without bubblewrap on the machine.

use super::bridge::Route;
use super::bwrap::{Bwrap, Mount};
use super::host::HostFacts;
use super::idmap::IdmapTarget;
use super::init;
use super::limits::SandboxLimits;
use super::mounts::{self, Protection, SystemEntry};
use super::pinned::PinnedPath;
use super::{rlimit_as_phrase, seccomp, Enforcement, SandboxRequest, IO_DIR, PROXY_DIR};
use cheng_exec::{Rlimit, RlimitResource};
use cheng_node::{ErrorKind, NodeError};
use std::ffi::OsString;
use std::os::fd::RawFd;
use std::path::{Path, PathBuf};

/// The descriptor of the first copied file ([`SystemEntry::Copy`]) in bwrap; the seccomp program
/// is on [`seccomp::SECCOMP_FD`] below it.
pub(crate) const FIRST_FILE_FD: RawFd = seccomp::SECCOMP_FD + 1;

/// The namespace flags of every sandbox: the probe ([`probe_flags`]) checks exactly these, so
/// what it tests is what a run uses. The network namespace is always the sandbox's own: with
/// the network, the way out is the filtering proxy ([`cheng_proxy`]), never the host's stack.
pub(crate) fn namespace_flags(root: bool) -> Vec<&'static str> {
    let mut flags = vec![
        "--die-with-parent",
        "--new-session",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--unshare-net",
    ];
    if !root {
        flags.push("--unshare-user");
    }
    flags
}

/// The path the first program inside is executed from when the init executable is handed over
/// on descriptor `fd`: the kernel follows the descriptor, whatever the view shows.
pub(crate) fn init_exec_path(fd: RawFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{fd}"))
}

/// Dropped by every sandbox (bwrap's own capabilities; the init step clears the rest).
const CAP_DROP: [&str; 2] = ["--cap-drop", "ALL"];

/// The flags the bwrap probe checks: the run's namespace flags and capability drop.
pub(crate) fn probe_flags(root: bool) -> Vec<&'static str> {
    let mut flags = namespace_flags(root);
    flags.extend(CAP_DROP);
    flags
}

/// How memory_mb is enforced for this run (decided while gathering, where a cgroup group may
/// have been created).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MemoryFact {
    /// RLIMIT_AS; the request named no cgroup.
    Rlimit,
    /// The run's own cgroup v2 group (described).
    Group(String),
    /// A group could not be made (why); RLIMIT_AS instead.
    GroupFailed(String),
    /// No cgroup v2 memory limit here (why); RLIMIT_AS.
    Unavailable(String),
}

/// What was found out about this run's paths and made for it before planning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RunFacts {
    /// The uid and gid the code runs as when cheng is root.
    pub ids: (u32, u32),
    /// For the whole-disk view as root: the topmost ancestors of bound paths others may not
    /// enter ([`super::closed_ancestors`]).
    pub closed_ancestors: Vec<PathBuf>,
    /// Others may list and enter the boundary.
    pub boundary_listable: bool,
    /// As root: the owners of the boundary and of each read path.
    pub owners: Vec<IdmapTarget>,
    /// The protected metadata of a writable boundary ([`mounts::protect`]).
    pub protections: Vec<Protection>,
    /// The I/O directory's files, when it is shown as a copy rather than bound ([`io_copies`]).
    pub io_copies: Option<Vec<PathBuf>>,
    /// A directory of current copies of the view's /etc files (and mount points for the /etc
    /// entries bound on top), bound read-only at /etc instead of copying each file
    /// ([`super::etc_copies`]).
    pub etc_copies: Option<PathBuf>,
    /// The host directory of the filtering proxy's sockets, when the run has the network.
    pub proxy_dir: Option<PathBuf>,
    /// Warnings from gathering (protection, cgroup), reported first.
    pub warnings: Vec<String>,
    pub memory: MemoryFact,
}

/// The complete sandbox for one run.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub bwrap: PathBuf,
    /// bwrap's arguments, the command inside included.
    pub args: Vec<OsString>,
    /// bwrap's environment (the sandbox's: bwrap passes it on).
    pub env: Vec<(OsString, OsString)>,
    /// The mount operations in `args`, in order.
    pub mounts: Vec<Mount>,
    /// Host files bwrap copies into the view, each read from the descriptor number given
    /// (opened for each start of bwrap: it reads them to the end).
    pub files: Vec<(PathBuf, RawFd)>,
    /// The approved read paths, each mounted from its descriptor on the number given
    /// (`--ro-bind-fd`): never by path.
    pub pinned: Vec<(PinnedPath, RawFd)>,
    /// The init executable, open on the descriptor given, which bwrap passes on to the first
    /// program inside: that program is `/proc/self/fd/N` ([`init_exec_path`]), so the init step
    /// runs without being mounted into the view, and closes the descriptor before the command.
    pub init: Option<(PathBuf, RawFd)>,
    /// rlimits set on bwrap before exec (empty when the init step sets them inside).
    pub rlimits: Vec<Rlimit>,
    /// The command line and rlimits (with RLIMIT_AS) for a run that cannot join its cgroup group.
    pub fallback: Option<(Vec<OsString>, Vec<Rlimit>)>,
    /// Paths to show through idmapped mounts.
    pub idmaps: Vec<IdmapTarget>,
    pub enforcement: Enforcement,
}

/// The I/O directory is copied when it holds at most this many files …
pub(crate) const IO_COPY_MAX_FILES: usize = 4;

/// The files of the I/O directory `io` when it can be shown as a copy: at most
/// [`IO_COPY_MAX_FILES`] regular files, [`mounts::COPY_MAX_BYTES`] in all, nothing else (a FIFO,
/// a directory, a symlink keep the bind). `None` otherwise, or when it cannot be read.
pub(crate) fn io_copies(io: &Path) -> Option<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut bytes = 0;
    for entry in std::fs::read_dir(io).ok()? {
        let entry = entry.ok()?;
        let meta = entry.metadata().ok()?;
        bytes += meta.len();
        if !meta.file_type().is_file()
            || out.len() >= IO_COPY_MAX_FILES
            || bytes > mounts::COPY_MAX_BYTES
        {
            return None;
        }
        out.push(entry.path());
    }
    out.sort();
    Some(out)
}

/// The sandbox's environment, with the proxy variables programs look for when the run has the
/// network (both spellings: curl reads `http_proxy` only in lower case, others upper case).
fn with_proxy_env(env: &[(OsString, OsString)], network: bool) -> Vec<(OsString, OsString)> {
    let mut out = env.to_vec();
    if network {
        let http = format!("http://127.0.0.1:{}", cheng_proxy::HTTP_PORT);
        let socks = format!("socks5h://127.0.0.1:{}", cheng_proxy::SOCKS_PORT);
        let local = "localhost,127.0.0.1,::1";
        for (name, value) in [
            ("http_proxy", &http),
            ("https_proxy", &http),
            ("all_proxy", &socks),
            ("no_proxy", &local.to_string()),
        ] {
            for name in [name.to_string(), name.to_uppercase()] {
                out.retain(|(n, _)| n.as_os_str() != name.as_str());
                out.push((name.into(), value.into()));
            }
        }
    }
    out
}

fn unavailable(message: impl Into<String>) -> NodeError {
    NodeError::new(ErrorKind::SandboxUnavailable, message)
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
            let in_ro = self
                .ro_roots
                .iter()
                .filter(|r| dir.starts_with(r))
                .map(|r| r.components().count())
                .max();
            let in_tmpfs = self
                .writable_roots
                .iter()
                .filter(|r| dir.starts_with(r))
                .map(|r| r.components().count())
                .max();
            if in_ro > in_tmpfs {
                // Inside a read-only bind: it exists there or cannot be made.
                return;
            }
            b.dir(dir, 0o755);
            self.made.push(dir.to_path_buf());
        }
    }
}

/// The sandbox for `request` on a host with `host`'s facts and this run's `run` facts.
pub(crate) fn plan(
    request: &SandboxRequest,
    host: &HostFacts,
    run: &RunFacts,
) -> Result<Plan, NodeError> {
    if request.command.is_empty() {
        return Err(NodeError::internal("sandbox request without a command"));
    }
    let root = host.root;
    let (sandbox_uid, sandbox_gid) = run.ids;
    let launcher = if request.use_launcher {
        host.launcher.as_ref()
    } else {
        None
    };
    let limits = SandboxLimits::with_memory_mb(request.memory_mb);
    let mut warnings = run.warnings.clone();

    let mut b = Bwrap::new();
    for flag in namespace_flags(root) {
        b.flag(flag);
    }
    // bwrap applies it just before it executes the first program inside.
    b.seccomp(seccomp::SECCOMP_FD);
    if !root {
        b.uid_gid(host.own_ids.0, host.own_ids.1);
    }
    let mut layout = Layout::default();
    let mut files = Vec::new();
    if request.full_disk_readonly {
        b.ro_bind(Path::new("/"), Path::new("/"));
        layout.ro_roots.push("/".into());
        if root {
            // The sandbox uid must reach what is bound for it (an interpreter under a 0700
            // /root, an approved read path, the workspace), but in the whole-disk view their
            // host ancestors are in the way. The topmost ancestor it may not enter is
            // replaced by an empty tmpfs holding only those paths: it could not see anything
            // else there anyway.
            for dir in &run.closed_ancestors {
                b.tmpfs(dir, 0o755, Some(1 << 20));
                layout.writable_roots.push(dir.clone());
                layout.made.push(dir.clone());
            }
        }
    } else {
        let etc = Path::new("/etc");
        let mut etc_bound = false;
        // A bind the request adds under /etc needs a mount point the copies' read-only
        // directory cannot offer: then the files are copied one by one.
        let binds_under_etc = request
            .extra_ro
            .iter()
            .map(PathBuf::as_path)
            .chain(request.read_paths.iter().map(PinnedPath::path))
            .chain([request.boundary.as_path()])
            .any(|p| p.starts_with(etc));
        let etc_copies = run.etc_copies.as_ref().filter(|_| !binds_under_etc);
        for entry in &host.system_view {
            let path = match entry {
                SystemEntry::Symlink { link, .. } => link,
                SystemEntry::ReadOnly(path) | SystemEntry::Copy(path) => path,
            };
            if let Some(copies) = etc_copies.filter(|_| path.starts_with(etc) && path != etc) {
                // The copies' directory, once, at /etc; its files are the copies, its empty
                // entries the mount points of what is bound below.
                if !etc_bound {
                    b.ro_bind(copies, etc);
                    layout.ro_roots.push(etc.to_path_buf());
                    etc_bound = true;
                }
                if let SystemEntry::ReadOnly(path) = entry {
                    b.ro_bind_try(path, path);
                    layout.ro_roots.push(path.clone());
                }
                continue;
            }
            match entry {
                SystemEntry::Symlink { target, link } => {
                    b.symlink(target, link);
                }
                SystemEntry::ReadOnly(path) => {
                    layout.parents(&mut b, path);
                    b.ro_bind_try(path, path);
                    layout.ro_roots.push(path.clone());
                }
                SystemEntry::Copy(path) => {
                    layout.parents(&mut b, path);
                    let fd = FIRST_FILE_FD + files.len() as RawFd;
                    b.file(fd, path, path, 0o444);
                    files.push((path.clone(), fd));
                }
            }
        }
    }
    b.dev(Path::new("/dev")).proc(Path::new("/proc"));
    // Private, size-bounded scratch space (tmpfs pages count against memory, not RLIMIT_AS).
    b.tmpfs(Path::new("/tmp"), 0o1777, Some(limits.memory_bytes));
    layout.made.push(PathBuf::from("/tmp"));
    layout.writable_roots.push(PathBuf::from("/tmp"));
    if request.full_disk_readonly {
        // Hides the host's /run (its sockets) under the whole-disk view.
        b.tmpfs(Path::new("/run"), 0o755, Some(1 << 20));
        layout.writable_roots.push(PathBuf::from("/run"));
    } else {
        // A directory of the view's root, read-only with it: nothing inside writes there (the
        // I/O directory's writable entries are binds of their own).
        b.dir(Path::new("/run"), 0o755);
    }
    layout.made.push(PathBuf::from("/run"));
    if let Some(dir) = &run.proxy_dir {
        b.ro_bind(dir, Path::new(PROXY_DIR));
    }
    for path in &request.extra_ro {
        layout.parents(&mut b, path);
        b.ro_bind(path, path);
        layout.ro_roots.push(path.clone());
    }
    // What was approved is what is mounted: the descriptor opened when the path was resolved.
    let mut pinned = Vec::new();
    for read in &request.read_paths {
        let path = read.path();
        layout.parents(&mut b, path);
        let fd = FIRST_FILE_FD + (files.len() + pinned.len()) as RawFd;
        b.ro_bind_fd(fd, path, path);
        pinned.push((read.clone(), fd));
        layout.ro_roots.push(path.to_path_buf());
    }
    layout.parents(&mut b, &request.boundary);
    if request.writable {
        b.bind(&request.boundary, &request.boundary);
        mounts::apply(&mut b, &run.protections);
    } else {
        b.ro_bind(&request.boundary, &request.boundary);
    }
    if let (Some(_), Some(copies), false) =
        (&request.io_dir, &run.io_copies, request.full_disk_readonly)
    {
        // A directory of the read-only root holding copies: the same read-only view at no mount.
        b.dir(Path::new(IO_DIR), 0o755);
        for path in copies {
            let Some(name) = path.file_name() else {
                continue;
            };
            let fd = FIRST_FILE_FD + (files.len() + pinned.len()) as RawFd;
            b.file(fd, path, &Path::new(IO_DIR).join(name), 0o444);
            files.push((path.clone(), fd));
        }
    } else if let Some(io) = &request.io_dir {
        b.ro_bind(io, Path::new(IO_DIR));
        for name in &request.io_outputs {
            b.bind(&io.join(name), &Path::new(IO_DIR).join(name));
        }
    }
    // The init executable is not mounted: bwrap receives it open on the next descriptor and
    // executes it through /proc/self/fd (see `Plan::init`).
    let init = launcher.map(|exe| {
        let fd = FIRST_FILE_FD + (files.len() + pinned.len()) as RawFd;
        (exe.clone(), fd)
    });
    if !request.full_disk_readonly {
        // The root of the view (the directories made above, /run, the copied files) is
        // read-only like the binds in it; the tmpfs on /tmp stays writable.
        b.remount_ro(Path::new("/"));
    }
    b.chdir(&request.cwd);
    for flag in CAP_DROP {
        b.flag(flag);
    }
    if root {
        // Only for the uid drop inside, which clears them again (and the bounding set).
        b.cap_add("CAP_SETUID")
            .cap_add("CAP_SETGID")
            .cap_add("CAP_SETPCAP");
        // bwrap's own --chdir into an idmapped workspace whose owner now appears as the
        // sandbox uid (a private 0700 workspace denies root without it).
        b.cap_add("CAP_DAC_READ_SEARCH");
    }

    // memory_mb: the run's own cgroup v2 group when one could be made, else RLIMIT_AS.
    let group = match &run.memory {
        MemoryFact::Group(describe) => {
            warnings.push(format!(
                "memory_mb enforced as {describe} (RLIMIT_AS not set)"
            ));
            Some(describe.clone())
        }
        MemoryFact::GroupFailed(why) => {
            warnings.push(format!(
                "cgroup v2 memory limit not applied ({why}); memory_mb enforced as {} instead",
                rlimit_as_phrase(request.memory_mb)
            ));
            None
        }
        MemoryFact::Unavailable(why) => {
            warnings.push(format!(
                "memory_mb enforced as {}: no cgroup v2 memory limit here ({why}); cgroup v1 hierarchies are never touched",
                rlimit_as_phrase(request.memory_mb)
            ));
            None
        }
        MemoryFact::Rlimit => None,
    };
    let memory = group
        .clone()
        .unwrap_or_else(|| rlimit_as_phrase(request.memory_mb));
    // Every rlimit, RLIMIT_NPROC included; without RLIMIT_AS when `with_as` is false.
    let all_rlimits = |with_as: bool| -> Vec<Rlimit> {
        limits
            .rlimits(true)
            .into_iter()
            .filter(|l| with_as || l.resource != RlimitResource::AddressSpace)
            .collect()
    };

    // The chain inside: [init step | setpriv | prlimit] then the command.
    let mut writable_roots: Vec<PathBuf> = vec!["/tmp".into(), "/dev".into()];
    if request.io_dir.is_some() {
        writable_roots.extend(
            request
                .io_outputs
                .iter()
                .map(|name| Path::new(IO_DIR).join(name)),
        );
    }
    if request.writable {
        writable_roots.push(request.boundary.clone());
    }
    // The network: the bridge to the proxy's sockets, started by the init step (fail closed
    // without one: no other way out exists).
    let bridges: Vec<Route> = match &run.proxy_dir {
        Some(_) if launcher.is_none() => {
            return Err(unavailable(
                "allow_network needs cheng's sandbox init step to bridge the filtering proxy into the sandbox, \
                 and this binary has none; nothing ran. Run through the `cheng` binary",
            ))
        }
        Some(_) => vec![
            Route {
                port: cheng_proxy::HTTP_PORT,
                socket: Path::new(PROXY_DIR).join(cheng_proxy::HTTP_SOCKET),
            },
            Route {
                port: cheng_proxy::SOCKS_PORT,
                socket: Path::new(PROXY_DIR).join(cheng_proxy::SOCKS_SOCKET),
            },
        ],
        None => Vec::new(),
    };
    // With the init step, the rlimits are set inside (see `init`), not on bwrap.
    let init_argv = |with_as: bool| -> Vec<OsString> {
        let plan = init::InitPlan {
            drop_to: root.then_some((sandbox_uid, sandbox_gid)),
            rlimits: all_rlimits(with_as),
            writable: writable_roots.clone(),
            bridges: bridges.clone(),
            command: request.command.clone(),
        };
        let exe = init
            .as_ref()
            .map(|(_, fd)| init_exec_path(*fd))
            .unwrap_or_default();
        let mut argv: Vec<OsString> = vec![exe.into_os_string()];
        argv.extend(plan.to_args());
        argv
    };
    let no_init = "not applied (no sandbox init step in this binary)";
    let no_landlock = "Landlock not applied: this binary has no sandbox init step (the `cheng` binary has one); writes are confined by the read-only mounts only";
    let (identity, nproc, landlock, inner): (String, String, String, Vec<OsString>) = match (
        launcher, root,
    ) {
        (Some(_), _) => {
            let argv = init_argv(group.is_none());
            let landlock = match host.landlock_abi {
                Some(abi) => format!(
                    "enforced (ABI {abi}): writes only under {}",
                    writable_roots
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None => {
                    warnings.push("Landlock is not supported by this kernel: writes are confined by the read-only mounts only".into());
                    "not supported by this kernel".into()
                }
            };
            let identity = if root {
                format!("uid {sandbox_uid} (cheng runs as root; unprivileged per-run uid set by cheng's sandbox init step)")
            } else {
                format!("uid {} (cheng's own, in a user namespace)", host.own_ids.0)
            };
            let nproc = if root {
                format!("RLIMIT_NPROC {} on uid {sandbox_uid}", limits.nproc)
            } else {
                format!(
                    "RLIMIT_NPROC {} set inside the user namespace",
                    limits.nproc
                )
            };
            (identity, nproc, landlock, argv)
        }
        (None, true) => {
            let setpriv = host.setpriv.clone().ok_or_else(|| {
                unavailable(
                    "cheng runs as root and this binary has no sandbox init step, so the drop to an unprivileged uid needs \
                     setpriv (util-linux), which is not installed; nothing ran. Install util-linux or run through the `cheng` binary",
                )
            })?;
            warnings.push(no_landlock.into());
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
                no_init.into(),
                argv,
            )
        }
        (None, false) => {
            warnings.push(no_landlock.into());
            let mut argv = Vec::new();
            let nproc = match &host.prlimit {
                Some(prlimit) => {
                    argv.push(prlimit.clone().into_os_string());
                    argv.push(format!("--nproc={}", limits.nproc).into());
                    argv.push("--".into());
                    format!(
                        "RLIMIT_NPROC {} set inside the user namespace by prlimit",
                        limits.nproc
                    )
                }
                None => {
                    warnings.push("RLIMIT_NPROC not enforced: prlimit (util-linux) is not installed and this binary has no sandbox init step".into());
                    "not enforced".into()
                }
            };
            argv.extend(request.command.iter().cloned());
            (
                format!("uid {} (cheng's own, in a user namespace)", host.own_ids.0),
                nproc,
                no_init.into(),
                argv,
            )
        }
    };
    // The same command line with RLIMIT_AS, for a run that cannot join its cgroup group.
    let fallback = group.as_ref().map(|_| {
        let mut fb = b.clone();
        let (args, rlimits) = match launcher {
            Some(_) => (init_argv(true), Vec::new()),
            None => (inner.clone(), limits.rlimits(root)),
        };
        fb.command(args);
        (fb.into_args(), rlimits)
    });
    b.command(inner);

    let mut idmaps = Vec::new();
    if root {
        // Writable: always (writes must land owned by the owner). Read-only: when the sandbox
        // uid could not otherwise list it (a private workspace such as a 0700 home).
        let boundary_too = request.writable || !run.boundary_listable;
        for target in &run.owners {
            let is_boundary = target.path == request.boundary;
            let read = pinned
                .iter()
                .find(|(p, _)| !is_boundary && p.path() == target.path);
            let wanted = if is_boundary {
                boundary_too
            } else {
                read.is_some()
            };
            if wanted && target.owner_uid != sandbox_uid {
                // A read path's clone is made from its descriptor and replaces it on its number.
                let mut target = target.clone();
                target.pinned = read.cloned();
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
        network: if request.network.is_some() {
            "through cheng's filtering proxy (HTTP_PROXY http://127.0.0.1:3128, ALL_PROXY socks5h://127.0.0.1:1080; a private network namespace with loopback only)"
        } else {
            "none (private network namespace)"
        },
        filesystem,
        landlock,
        seccomp: format!(
            "enforced ({} filter installed by bubblewrap before the first program inside): refuses {}",
            std::env::consts::ARCH,
            seccomp::REFUSES
        ),
        sockets: seccomp::sockets_report(request.network.is_some()),
        memory,
        nproc,
        warnings,
    };
    let rlimits = match (launcher, &group) {
        (Some(_), _) => Vec::new(),
        (None, Some(_)) => limits
            .rlimits(root)
            .into_iter()
            .filter(|l| l.resource != RlimitResource::AddressSpace)
            .collect(),
        (None, None) => limits.rlimits(root),
    };
    Ok(Plan {
        bwrap: host.bwrap.clone(),
        mounts: b.mounts().to_vec(),
        files,
        pinned,
        init,
        args: b.into_args(),
        env: with_proxy_env(&request.env, request.network.is_some()),
        rlimits,
        fallback,
        idmaps,
        enforcement,
    })
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
