//! The sandbox's init step: cheng's own binary, run by bwrap as the first program inside the
//! sandbox, applies what bwrap cannot (uid drop, RLIMIT_NPROC after the user namespace exists,
//! Landlock) and the other rlimits, then executes the real command. It never returns to the
//! caller. Setting the rlimits here rather than on bwrap keeps them off bwrap itself;
//! everything the sandbox runs still starts under them. RLIMIT_AS comes last, just before `execvp` on an argv built beforehand, so that
//! the init step itself never allocates under a small address-space limit.
//!
//! A binary opts in by calling [`run_if_requested`] first thing in `main`; that also tells the
//! sandbox that this binary can serve as its launcher. Binaries that do not (test harnesses,
//! embedders) get the same sandbox without Landlock, with the uid drop done by `setpriv`, and a
//! warning saying so.
//!
//! The sandbox does not mount it: bwrap receives the executable open on a descriptor and runs
//! `/proc/self/fd/N` (see `plan::Plan::init`); the descriptor is closed with the others below.
//!
//! What runs inside is, when it exists, the small dedicated executable [`HELPER_NAME`] found
//! next to the running binary (built and installed with `cheng`: it is a second binary of the
//! `cheng-cli` package, whose `main` is [`main`]); otherwise the running binary itself. Both
//! run the same code; the helper only starts faster (it is a fraction of the size of `cheng`,
//! so the dynamic loader has far fewer relocations to apply and pages to fault in).
//!
//! Right before exec it closes every descriptor above 2, so only stdin, stdout and stderr reach
//! the sandboxed command, whatever the process that started bwrap left open.
//!
//! With `--bridge PORT=SOCKET` it also starts the filtering proxy's bridge ([`crate::bridge`])
//! after Landlock and before the command.
//!
//! Protocol: `<binary> __sandbox-init [--drop-to UID:GID] [--rlimit NAME=N]... [--write PATH]... [--bridge PORT=SOCKET]... -- CMD ARGS...`
//! with NAME one of `as`, `nproc`, `fsize`, `nofile`, `core`, `cpu`.

use crate::bridge::Route;
use cheng_exec::{Rlimit, RlimitResource};
use std::ffi::{CString, OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// The argv[1] that selects the init step.
pub const INIT_ARG: &str = "__sandbox-init";

pub use cheng_exec::helper::{use_helper, HELPER_NAME};

/// Call first thing in `main`. When argv[1] is [`INIT_ARG`], runs the init step and exits (or
/// execs); otherwise records that this binary can launch sandboxes and returns.
pub fn run_if_requested() {
    let mut args = std::env::args_os();
    let _program = args.next();
    if args.next().as_deref() != Some(OsStr::new(INIT_ARG)) {
        cheng_exec::helper::mark_launcher();
        return;
    }
    init(args.collect())
}

/// `main` of the dedicated helper ([`HELPER_NAME`]): argv[1] must be [`INIT_ARG`]. Runs the
/// init step and never returns.
pub fn main() -> ! {
    let mut args = std::env::args_os();
    let _program = args.next();
    if args.next().as_deref() != Some(OsStr::new(INIT_ARG)) {
        eprintln!("cheng sandbox init: this program is cheng's sandbox init step; bubblewrap starts it as `{HELPER_NAME} {INIT_ARG} ... -- CMD`");
        std::process::exit(126);
    }
    init(args.collect())
}

fn init(rest: Vec<OsString>) -> ! {
    let message = match parse(&rest).and_then(|plan| apply_and_exec(&plan)) {
        Ok(never) => match never {},
        Err(message) => message,
    };
    eprintln!("cheng sandbox init: {message}");
    std::process::exit(126);
}

/// The init step to bind into the sandbox when the running binary called [`run_if_requested`]:
/// the helper named by [`use_helper`], else [`HELPER_NAME`] next to the running binary, else the
/// running binary itself. `None` when the running binary did not opt in. Looked up once.
pub fn launcher() -> Option<PathBuf> {
    if !cheng_exec::helper::is_launcher() {
        return None;
    }
    static FOUND: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    FOUND
        .get_or_init(|| {
            let exe = std::env::current_exe()
                .ok()
                .and_then(|p| p.canonicalize().ok())?;
            let named = cheng_exec::helper::named_helper();
            let sibling = exe.parent().map(|dir| dir.join(HELPER_NAME));
            let helper = named
                .into_iter()
                .chain(sibling)
                .find(|p| cheng_exec::helper::is_executable_file(p))
                .and_then(|p| p.canonicalize().ok());
            Some(helper.unwrap_or(exe))
        })
        .clone()
}

/// What the init step does, parsed from its argv.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InitPlan {
    pub drop_to: Option<(u32, u32)>,
    pub rlimits: Vec<Rlimit>,
    pub writable: Vec<PathBuf>,
    /// Ports to bridge to the filtering proxy's sockets ([`crate::bridge`]).
    pub bridges: Vec<Route>,
    pub command: Vec<OsString>,
}

impl InitPlan {
    /// The argv after the binary: `__sandbox-init ... -- CMD...`.
    pub fn to_args(&self) -> Vec<OsString> {
        let mut out: Vec<OsString> = vec![INIT_ARG.into()];
        if let Some((uid, gid)) = self.drop_to {
            out.push("--drop-to".into());
            out.push(format!("{uid}:{gid}").into());
        }
        for limit in &self.rlimits {
            out.push("--rlimit".into());
            out.push(format!("{}={}", rlimit_name(limit.resource), limit.value).into());
        }
        for path in &self.writable {
            out.push("--write".into());
            out.push(path.clone().into_os_string());
        }
        for route in &self.bridges {
            let mut arg = OsString::from(format!("{}=", route.port));
            arg.push(&route.socket);
            out.push("--bridge".into());
            out.push(arg);
        }
        out.push("--".into());
        out.extend(self.command.iter().cloned());
        out
    }
}

/// Parses the argv after [`INIT_ARG`].
pub fn parse(args: &[OsString]) -> Result<InitPlan, String> {
    let mut plan = InitPlan::default();
    let mut i = 0;
    let value = |i: usize, flag: &str| -> Result<String, String> {
        args.get(i + 1)
            .and_then(|v| v.to_str())
            .map(str::to_string)
            .ok_or_else(|| format!("{flag} needs a value"))
    };
    while i < args.len() {
        match args[i].to_str() {
            Some("--") => {
                plan.command = args[i + 1..].to_vec();
                if plan.command.is_empty() {
                    return Err("no command after --".into());
                }
                return Ok(plan);
            }
            Some("--drop-to") => {
                let v = value(i, "--drop-to")?;
                let (u, g) = v.split_once(':').ok_or("--drop-to takes UID:GID")?;
                plan.drop_to = Some((
                    u.parse().map_err(|_| "bad uid")?,
                    g.parse().map_err(|_| "bad gid")?,
                ));
                i += 2;
            }
            Some("--rlimit") => {
                let v = value(i, "--rlimit")?;
                let (name, n) = v.split_once('=').ok_or("--rlimit takes NAME=VALUE")?;
                let resource =
                    rlimit_resource(name).ok_or_else(|| format!("unknown rlimit {name:?}"))?;
                plan.rlimits.push(Rlimit {
                    resource,
                    value: n.parse().map_err(|_| format!("bad --rlimit value {n:?}"))?,
                });
                i += 2;
            }
            Some("--write") => {
                plan.writable
                    .push(args.get(i + 1).ok_or("--write needs a path")?.into());
                i += 2;
            }
            Some("--bridge") => {
                let v = args.get(i + 1).ok_or("--bridge needs PORT=SOCKET")?;
                let (port, socket) = v
                    .as_bytes()
                    .iter()
                    .position(|b| *b == b'=')
                    .map(|at| (&v.as_bytes()[..at], &v.as_bytes()[at + 1..]))
                    .ok_or("--bridge takes PORT=SOCKET")?;
                plan.bridges.push(Route {
                    port: std::str::from_utf8(port)
                        .ok()
                        .and_then(|p| p.parse().ok())
                        .ok_or("--bridge: bad port")?,
                    socket: OsStr::from_bytes(socket).into(),
                });
                i += 2;
            }
            _ => return Err(format!("unknown argument {:?}", args[i])),
        }
    }
    Err("missing -- before the command".into())
}

enum Never {}

fn rlimit_name(resource: RlimitResource) -> &'static str {
    match resource {
        RlimitResource::AddressSpace => "as",
        RlimitResource::Nproc => "nproc",
        RlimitResource::FileSize => "fsize",
        RlimitResource::OpenFiles => "nofile",
        RlimitResource::Core => "core",
        RlimitResource::CpuSeconds => "cpu",
    }
}

fn rlimit_resource(name: &str) -> Option<RlimitResource> {
    [
        RlimitResource::AddressSpace,
        RlimitResource::Nproc,
        RlimitResource::FileSize,
        RlimitResource::OpenFiles,
        RlimitResource::Core,
        RlimitResource::CpuSeconds,
    ]
    .into_iter()
    .find(|r| rlimit_name(*r) == name)
}

fn set_rlimit(limit: &Rlimit) -> Result<(), String> {
    let resource = match limit.resource {
        RlimitResource::AddressSpace => libc::RLIMIT_AS,
        RlimitResource::Nproc => libc::RLIMIT_NPROC,
        RlimitResource::FileSize => libc::RLIMIT_FSIZE,
        RlimitResource::OpenFiles => libc::RLIMIT_NOFILE,
        RlimitResource::Core => libc::RLIMIT_CORE,
        RlimitResource::CpuSeconds => libc::RLIMIT_CPU,
    };
    let value = libc::rlimit {
        rlim_cur: limit.value as libc::rlim_t,
        rlim_max: limit.value as libc::rlim_t,
    };
    // SAFETY: setrlimit reads a valid struct.
    if unsafe { libc::setrlimit(resource, &value) } != 0 {
        return Err(format!(
            "cannot set RLIMIT_{} to {}: {}",
            rlimit_name(limit.resource).to_uppercase(),
            limit.value,
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

fn apply_and_exec(plan: &InitPlan) -> Result<Never, String> {
    // Everything exec needs is allocated now, before any limit applies.
    let argv: Vec<CString> = plan
        .command
        .iter()
        .map(|a| {
            CString::new(a.as_bytes()).map_err(|_| format!("argument {a:?} contains a NUL byte"))
        })
        .collect::<Result<_, _>>()?;
    let mut argv_ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    argv_ptrs.push(std::ptr::null());
    let failure_prefix = format!("cheng sandbox init: cannot execute {:?}: ", plan.command[0]);
    let (address_space, others): (Vec<&Rlimit>, Vec<&Rlimit>) = plan
        .rlimits
        .iter()
        .partition(|l| l.resource == RlimitResource::AddressSpace);

    // RLIMIT_NPROC before the drop: it binds the new uid from its first fork.
    for limit in others {
        set_rlimit(limit)?;
    }
    if let Some((uid, gid)) = plan.drop_to {
        drop_privileges(uid, gid)?;
    }
    clear_capabilities()?;
    // SAFETY: prctl with constant arguments.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(format!(
            "cannot set no_new_privs: {}",
            std::io::Error::last_os_error()
        ));
    }
    // Fail closed: a kernel without Landlock is reported by the parent (it probes the ABI); an
    // error applying a supported ruleset stops the run here.
    super::landlock::confine_writes(&plan.writable)?;
    // Only stdin, stdout and stderr reach the command (and the bridge): whatever reached this
    // step without FD_CLOEXEC (from bwrap's parent, or a caller's `exec 7>file` when bwrap was
    // started by something other than cheng) is closed. close_range, else each entry of
    // /proc/self/fd, else every number below RLIMIT_NOFILE.
    cheng_exec::fds::close_all_above_stderr();
    // The proxy bridge, confined like the command, listening before the command starts.
    if !plan.bridges.is_empty() {
        super::bridge::start(&plan.bridges)?;
    }
    for limit in address_space {
        set_rlimit(limit)?;
    }
    // The Rust runtime set SIGPIPE to "ignore" in this process, and an ignored signal stays
    // ignored across exec: the command gets the default back, as from any shell (otherwise
    // `yes | head -1` writes to a closed pipe forever instead of ending).
    // SAFETY: signal() with a valid signal number and SIG_DFL.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    // From here on: no allocation. execvp searches PATH of the sandbox's environment.
    // SAFETY: argv_ptrs is a NULL-terminated array of pointers into `argv`, alive here.
    unsafe { libc::execvp(argv_ptrs[0], argv_ptrs.as_ptr()) };
    let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
    // SAFETY: writes from valid buffers; strerror returns a static NUL-terminated string
    // (this process has one thread); _exit never returns.
    unsafe {
        libc::write(2, failure_prefix.as_ptr().cast(), failure_prefix.len());
        let text = std::ffi::CStr::from_ptr(libc::strerror(errno));
        libc::write(2, text.as_ptr().cast(), text.to_bytes().len());
        libc::write(2, b"\n".as_ptr().cast(), 1);
        libc::_exit(126);
    }
}

/// Empties the effective, permitted and inheritable capability sets (bwrap hands the ones it
/// was asked to keep to the inheritable set too; the uid drop clears only the other two).
fn clear_capabilities() -> Result<(), String> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    let header = Header {
        version: VERSION_3,
        pid: 0,
    };
    let data = [Data {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: capset reads the header and two data structs (version 3 layout).
    if unsafe { libc::syscall(libc::SYS_capset, &header as *const Header, data.as_ptr()) } != 0 {
        return Err(format!(
            "cannot clear the capability sets: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: prctl with constant arguments; ambient capabilities are cleared as well.
    unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        )
    };
    Ok(())
}

/// Empties the capability bounding set, then switches groups, gid and uid (which clears the
/// permitted and effective capabilities), and checks the switch cannot be undone.
fn drop_privileges(uid: u32, gid: u32) -> Result<(), String> {
    let last = std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|s| s.trim().parse::<libc::c_ulong>().ok())
        .unwrap_or(63);
    for cap in 0..=last {
        // SAFETY: prctl with integer arguments; EINVAL for unknown caps is ignored.
        unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) };
    }
    // SAFETY: plain system calls with integer arguments.
    unsafe {
        if libc::setgroups(0, std::ptr::null()) != 0 {
            return Err(format!(
                "cannot clear supplementary groups: {}",
                std::io::Error::last_os_error()
            ));
        }
        if libc::setresgid(gid, gid, gid) != 0 {
            return Err(format!(
                "cannot switch to gid {gid}: {}",
                std::io::Error::last_os_error()
            ));
        }
        if libc::setresuid(uid, uid, uid) != 0 {
            return Err(format!(
                "cannot switch to uid {uid}: {}",
                std::io::Error::last_os_error()
            ));
        }
        if uid != 0 && libc::setuid(0) == 0 {
            return Err("the uid switch could be undone; refusing to continue".into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_round_trip_through_argv() {
        let plan = InitPlan {
            drop_to: Some((65534, 65534)),
            rlimits: vec![
                Rlimit {
                    resource: RlimitResource::Nproc,
                    value: 64,
                },
                Rlimit {
                    resource: RlimitResource::AddressSpace,
                    value: 128 << 20,
                },
            ],
            writable: vec!["/tmp".into(), "/work space".into()],
            bridges: vec![Route {
                port: 3128,
                socket: "/run/cheng-proxy/http=.sock".into(),
            }],
            command: vec!["sh".into(), "-c".into(), "echo --write".into()],
        };
        let args = plan.to_args();
        assert_eq!(args[0], INIT_ARG);
        assert_eq!(parse(&args[1..]).unwrap(), plan);
    }

    #[test]
    fn malformed_argv_is_refused() {
        assert!(parse(&["--rlimit".into()]).is_err());
        assert!(parse(&[
            "--rlimit".into(),
            "stack=1".into(),
            "--".into(),
            "sh".into()
        ])
        .is_err());
        assert!(parse(&[
            "--rlimit".into(),
            "as=lots".into(),
            "--".into(),
            "sh".into()
        ])
        .is_err());
        assert!(parse(&["--".into()]).is_err());
        assert!(parse(&["--bogus".into(), "--".into(), "sh".into()]).is_err());
        assert!(parse(&["sh".into()]).is_err());
    }
}
