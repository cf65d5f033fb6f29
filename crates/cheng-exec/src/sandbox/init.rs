//! The sandbox's init step: cheng's own binary, run by bwrap as the first program inside the
//! sandbox, applies what bwrap cannot (uid drop, RLIMIT_NPROC after the user namespace exists,
//! Landlock) and then executes the real command. It never returns to the caller.
//!
//! A binary opts in by calling [`run_if_requested`] first thing in `main`; that also tells the
//! sandbox that this binary can serve as its launcher. Binaries that do not (test harnesses,
//! embedders) get the same sandbox without Landlock, with the uid drop done by `setpriv`, and a
//! warning saying so.
//!
//! Protocol: `<binary> __sandbox-init [--drop-to UID:GID] [--nproc N] [--write PATH]... -- CMD ARGS...`

use std::ffi::{OsStr, OsString};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

/// The argv[1] that selects the init step.
pub const INIT_ARG: &str = "__sandbox-init";

static LAUNCHER: AtomicBool = AtomicBool::new(false);

/// Call first thing in `main`. When argv[1] is [`INIT_ARG`], runs the init step and exits (or
/// execs); otherwise records that this binary can launch sandboxes and returns.
pub fn run_if_requested() {
    let mut args = std::env::args_os();
    let _program = args.next();
    if args.next().as_deref() != Some(OsStr::new(INIT_ARG)) {
        LAUNCHER.store(true, Ordering::Relaxed);
        return;
    }
    let rest: Vec<OsString> = args.collect();
    let message = match parse(&rest).and_then(|plan| apply_and_exec(&plan)) {
        Ok(never) => match never {},
        Err(message) => message,
    };
    eprintln!("cheng sandbox init: {message}");
    std::process::exit(126);
}

/// The running binary, when it called [`run_if_requested`] (and so can be the sandbox's init).
pub fn launcher() -> Option<PathBuf> {
    if !LAUNCHER.load(Ordering::Relaxed) {
        return None;
    }
    std::env::current_exe().ok().and_then(|p| p.canonicalize().ok())
}

/// What the init step does, parsed from its argv.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InitPlan {
    pub drop_to: Option<(u32, u32)>,
    pub nproc: Option<u64>,
    pub writable: Vec<PathBuf>,
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
        if let Some(n) = self.nproc {
            out.push("--nproc".into());
            out.push(n.to_string().into());
        }
        for path in &self.writable {
            out.push("--write".into());
            out.push(path.clone().into_os_string());
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
        args.get(i + 1).and_then(|v| v.to_str()).map(str::to_string).ok_or_else(|| format!("{flag} needs a value"))
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
                plan.drop_to = Some((u.parse().map_err(|_| "bad uid")?, g.parse().map_err(|_| "bad gid")?));
                i += 2;
            }
            Some("--nproc") => {
                plan.nproc = Some(value(i, "--nproc")?.parse().map_err(|_| "bad --nproc")?);
                i += 2;
            }
            Some("--write") => {
                plan.writable.push(args.get(i + 1).ok_or("--write needs a path")?.into());
                i += 2;
            }
            _ => return Err(format!("unknown argument {:?}", args[i])),
        }
    }
    Err("missing -- before the command".into())
}

enum Never {}

fn apply_and_exec(plan: &InitPlan) -> Result<Never, String> {
    if let Some(n) = plan.nproc {
        let limit = libc::rlimit { rlim_cur: n as libc::rlim_t, rlim_max: n as libc::rlim_t };
        // SAFETY: setrlimit reads a valid struct.
        if unsafe { libc::setrlimit(libc::RLIMIT_NPROC, &limit) } != 0 {
            return Err(format!("cannot set RLIMIT_NPROC: {}", std::io::Error::last_os_error()));
        }
    }
    if let Some((uid, gid)) = plan.drop_to {
        drop_privileges(uid, gid)?;
    }
    // SAFETY: prctl with constant arguments.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(format!("cannot set no_new_privs: {}", std::io::Error::last_os_error()));
    }
    // Fail closed: a kernel without Landlock is reported by the parent (it probes the ABI); an
    // error applying a supported ruleset stops the run here.
    crate::landlock::confine_writes(&plan.writable)?;
    let err = std::process::Command::new(&plan.command[0]).args(&plan.command[1..]).exec();
    Err(format!("cannot execute {:?}: {err}", plan.command[0]))
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
            return Err(format!("cannot clear supplementary groups: {}", std::io::Error::last_os_error()));
        }
        if libc::setresgid(gid, gid, gid) != 0 {
            return Err(format!("cannot switch to gid {gid}: {}", std::io::Error::last_os_error()));
        }
        if libc::setresuid(uid, uid, uid) != 0 {
            return Err(format!("cannot switch to uid {uid}: {}", std::io::Error::last_os_error()));
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
            nproc: Some(64),
            writable: vec!["/tmp".into(), "/work space".into()],
            command: vec!["sh".into(), "-c".into(), "echo --write".into()],
        };
        let args = plan.to_args();
        assert_eq!(args[0], INIT_ARG);
        assert_eq!(parse(&args[1..]).unwrap(), plan);
    }

    #[test]
    fn malformed_argv_is_refused() {
        assert!(parse(&["--nproc".into()]).is_err());
        assert!(parse(&["--".into()]).is_err());
        assert!(parse(&["--bogus".into(), "--".into(), "sh".into()]).is_err());
        assert!(parse(&["sh".into()]).is_err());
    }
}
