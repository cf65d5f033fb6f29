//! The jail a compute-only process puts itself in: the JavaScript worker (`tools/code_js`),
//! which runs QuickJS, a C interpreter, on an agent's script. Whatever such a script reaches
//! through a memory-safety bug of the interpreter, it meets this jail rather than cheng's
//! process (its approver, its sessions, the server's pipes).
//!
//! [`enter`] is called once, by the process itself, single-threaded, after everything it needs
//! from the system is loaded and before it reads its first script. In order:
//! - every descriptor above 2 is closed (the worker keeps only its stdin/stdout pipes and stderr);
//! - the filesystem: a new user, mount, network and IPC namespace whose root is an empty,
//!   read-only tmpfs (the host's tree detached); where user namespaces are refused, Landlock
//!   with no access rights at all; with neither, it fails (the caller reports
//!   SANDBOX_UNAVAILABLE and runs nothing);
//! - the system calls: an allowlist ([`WORKER_SYSCALLS`]: its pipes, memory, futexes, clocks,
//!   exit), every other call EPERM, installed after no_new_privs
//!   ([`super::seccomp::allowlist_program`], the sandbox's one filter assembler).
//!
//! Tests force the fallbacks with [`WITHOUT_ENV`] (`namespaces`, `landlock`, or both, comma
//! separated), as the sandbox's tests name a missing bubblewrap.

use landlock::{Access, AccessFs, Ruleset, RulesetAttr, RulesetStatus, ABI};
use std::ffi::CStr;

/// Names the filesystem layers a test wants treated as missing (`namespaces`, `landlock`).
pub const WITHOUT_ENV: &str = "CHENG_TEST_JAIL_WITHOUT";

/// What the worker needs once it is set up: reading jobs and writing answers on its pipes (and
/// waiting on its stdin a moment), memory (brk, mmap and friends), futexes, clocks (the timeout and the CPU-time report),
/// random bytes (hash seeds), signal returns and exit. No open, no socket, no fork or exec, no
/// mprotect (nothing may be made executable).
pub const WORKER_SYSCALLS: &[i64] = &[
    libc::SYS_read,
    libc::SYS_write,
    libc::SYS_readv,
    libc::SYS_writev,
    libc::SYS_brk,
    libc::SYS_mmap,
    libc::SYS_munmap,
    libc::SYS_mremap,
    libc::SYS_madvise,
    libc::SYS_futex,
    libc::SYS_ppoll,
    libc::SYS_clock_gettime,
    libc::SYS_clock_getres,
    libc::SYS_gettimeofday,
    libc::SYS_getrandom,
    libc::SYS_sched_yield,
    libc::SYS_rt_sigreturn,
    libc::SYS_rt_sigprocmask,
    libc::SYS_sigaltstack,
    libc::SYS_exit,
    libc::SYS_exit_group,
];

/// Enters the jail (see the module documentation) and returns its layers as `metrics` reports
/// them. On an error the process must not go on to run anything.
pub fn enter() -> Result<Vec<String>, String> {
    cheng_exec::fds::close_all_above_stderr();
    let mut layers = vec![filesystem()?];
    layers.push(system_calls()?);
    Ok(layers)
}

/// The filesystem layer alone (see the module documentation); its description.
pub fn filesystem() -> Result<String, String> {
    let without = std::env::var(WITHOUT_ENV).unwrap_or_default();
    let skip = |layer: &str| without.split(',').any(|w| w.trim() == layer);
    let namespaces = if skip("namespaces") {
        Err("user namespaces are treated as missing (test switch)".to_string())
    } else {
        empty_root()
    };
    match namespaces {
        Ok(how) => Ok(how),
        Err(no_namespaces) => {
            let landlock = if skip("landlock") {
                Err("Landlock is treated as missing (test switch)".to_string())
            } else {
                no_file_access()
            };
            match landlock {
                Ok(how) => Ok(how),
                Err(no_landlock) => {
                    Err(format!(
                        "no way to take the filesystem away from the JavaScript worker: {no_namespaces}; {no_landlock}. \
                         Enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or \
                         user.max_user_namespaces > 0) or a kernel with Landlock (5.13 or later, lsm=landlock)"
                    ))
                }
            }
        }
    }
}

/// The system call layer alone: the allowlist, after no_new_privs; its description.
pub fn system_calls() -> Result<String, String> {
    let program = super::seccomp::allowlist_program(WORKER_SYSCALLS)
        .map_err(|e| format!("the worker's seccomp filter cannot be built: {e}"))?;
    seccompiler::apply_filter(&program)
        .map_err(|e| format!("the worker's seccomp filter cannot be installed: {e}"))?;
    Ok(format!(
        "seccomp: {} system calls allowed (its pipes, memory, futex, clocks, exit); open, socket, fork, exec and the rest answer EPERM; no_new_privs",
        WORKER_SYSCALLS.len()
    ))
}

/// New namespaces whose root is an empty read-only tmpfs: no host file can be named at all.
fn empty_root() -> Result<String, String> {
    let isolate = libc::CLONE_NEWNS | libc::CLONE_NEWNET | libc::CLONE_NEWIPC;
    // SAFETY: unshare takes flags only; the process is single-threaded here (a new user
    // namespace requires it).
    let how = if unsafe { libc::unshare(libc::CLONE_NEWUSER | isolate) } == 0 {
        "a new user namespace"
    } else {
        let error = std::io::Error::last_os_error();
        // SAFETY: geteuid has no failure modes.
        let root = unsafe { libc::geteuid() } == 0;
        // SAFETY: as above; root may make the other namespaces without a user namespace.
        if !root || unsafe { libc::unshare(isolate) } != 0 {
            return Err(format!("user namespaces are refused ({error})"));
        }
        "root's own namespaces"
    };
    // Nothing mounted here may propagate back to the host.
    mount(
        None,
        c"/",
        None,
        libc::MS_REC | libc::MS_PRIVATE,
        "make / private",
    )?;
    let point = [c"/tmp", c"/proc", c"/"]
        .into_iter()
        .find(|p| std::path::Path::new(p.to_str().unwrap_or("/")).is_dir())
        .unwrap_or(c"/");
    mount(
        Some(c"cheng-js-worker"),
        point,
        Some(c"tmpfs"),
        libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
        "mount an empty tmpfs",
    )?;
    let point_path = std::path::Path::new(point.to_str().unwrap_or("/"));
    std::env::set_current_dir(point_path).map_err(|e| format!("chdir into the empty root: {e}"))?;
    // SAFETY: pivot_root reads two NUL-terminated paths. "." twice stacks the old root on the
    // new one, which the detach below removes.
    if unsafe { libc::syscall(libc::SYS_pivot_root, c".".as_ptr(), c".".as_ptr()) } != 0 {
        return Err(format!(
            "pivot_root into the empty root: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: umount2 reads a NUL-terminated path.
    if unsafe { libc::umount2(c".".as_ptr(), libc::MNT_DETACH) } != 0 {
        return Err(format!(
            "detach the host's tree: {}",
            std::io::Error::last_os_error()
        ));
    }
    std::env::set_current_dir("/").map_err(|e| format!("chdir to the empty root: {e}"))?;
    if std::path::Path::new("/etc").exists() || std::path::Path::new("/proc/self").exists() {
        return Err("the empty root still shows the host's files".into());
    }
    Ok(format!(
        "filesystem: an empty read-only root in {how} (with its own mount, network and IPC namespaces: no host file, no network interface)"
    ))
}

fn mount(
    source: Option<&CStr>,
    target: &CStr,
    fstype: Option<&CStr>,
    flags: libc::c_ulong,
    what: &str,
) -> Result<(), String> {
    let ptr = |s: Option<&CStr>| s.map_or(std::ptr::null(), CStr::as_ptr);
    // SAFETY: every pointer is NULL or a NUL-terminated string that outlives the call; no data.
    let rc = unsafe {
        libc::mount(
            ptr(source),
            target.as_ptr(),
            ptr(fstype),
            flags,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(format!("{what}: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// Landlock handling every filesystem access right and granting none.
fn no_file_access() -> Result<String, String> {
    let status = Ruleset::default()
        .handle_access(AccessFs::from_all(ABI::V5))
        .and_then(|r| r.create())
        .and_then(|r| r.restrict_self())
        .map_err(|e| format!("Landlock: {e}"))?;
    match status.ruleset {
        RulesetStatus::FullyEnforced | RulesetStatus::PartiallyEnforced => Ok(format!(
            "filesystem: Landlock with no access rights (ABI {}; user namespaces were refused)",
            super::landlock::kernel_abi().unwrap_or(0)
        )),
        RulesetStatus::NotEnforced => Err("this kernel has no Landlock".into()),
    }
}
