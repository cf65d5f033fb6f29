//! The seccomp-BPF filter every sandbox runs under.
//!
//! Why: a writable workspace is shown through an idmapped mount that maps its owner to the
//! sandbox uid, so inside the sandbox that uid owns every file and the kernel lets it set
//! S_ISUID/S_ISGID. `nosuid` protects only the sandbox's own view: on the host such a file is
//! a setuid binary of the workspace owner (root, when cheng runs as root). The filter makes the
//! system calls that would plant one fail, and refuses what no script needs but attackers use
//! to reach the kernel or other processes.
//!
//! What it refuses (EPERM unless stated):
//! - chmod, fchmod, fchmodat, fchmodat2 with S_ISUID or S_ISGID in the mode;
//! - open, openat, creat with O_CREAT or O_TMPFILE and such a mode; mknod, mknodat with such a
//!   mode; mkdir, mkdirat with S_ISGID;
//! - openat2: ENOSYS (its mode sits in a struct seccomp cannot read; libc falls back to openat);
//! - the setxattr family (setxattr, lsetxattr, fsetxattr, setxattrat): file capabilities are
//!   the `security.capability` attribute;
//! - io_uring (io_uring_setup/enter/register): its requests create files and set attributes
//!   without passing through the system calls above;
//! - ptrace, process_vm_readv/writev, keyctl/add_key/request_key, bpf, perf_event_open,
//!   userfaultfd, kexec_load/kexec_file_load, init_module/finit_module/delete_module,
//!   mount/umount2/pivot_root and the mount API (fsopen, fsconfig, fsmount, fspick, move_mount,
//!   open_tree, mount_setattr), setns, unshare and clone with CLONE_NEWUSER;
//! - clone3: ENOSYS (its flags sit in a struct; libc falls back to clone, which is checked);
//! - socket and socketpair of any address family but AF_UNIX, and AF_INET/AF_INET6 when the
//!   network is shared: EAFNOSUPPORT, as from a kernel built without that family. A network
//!   namespace isolates only the IP families: vsock reaches the hypervisor side of a VM, netlink
//!   the kernel's configuration interfaces, AF_PACKET/AF_ALG/AF_BLUETOOTH/AF_KEY kernel code no
//!   script needs. io_uring (which can create sockets without socket()) is refused whole above,
//!   and the 32-bit `socketcall` only exists for foreign architectures, which are killed;
//! - on x86_64, x32 system calls (numbers with bit 30 set): ENOSYS, so that the x32 aliases of
//!   the calls above cannot go around the filter. Other architectures' calls (32-bit `int 0x80`)
//!   kill the process.
//!
//! How it is installed: the program is assembled once per process and network setting (a binary
//! search over the listed system call numbers, 162 instructions on x86_64: see [`assemble`] for
//! why its size matters), written to a fresh memfd for each run and handed to bubblewrap as `--seccomp 3`; bwrap applies it right
//! before it executes the first program inside, after it built the namespaces and mounts. So it
//! binds cheng's init step, `setpriv` and `prlimit` as well as the script (none of which use a
//! refused call), in every mode the sandbox runs in.

use cheng_node::{ErrorKind, NodeError};
use seccompiler::{sock_filter, BpfProgram};
use std::io::{Seek, Write};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::sync::OnceLock;

/// The descriptor number the program has in bwrap (`--seccomp 3`).
pub const SECCOMP_FD: RawFd = 3;

/// What the filter refuses, for `metrics.limits.seccomp`.
pub const REFUSES: &str = "setuid/setgid modes in chmod, open, creat, mknod (and setgid in mkdir), \
     the setxattr family (file capabilities), io_uring, ptrace, process_vm_readv/writev, keyrings, bpf, \
     perf_event_open, userfaultfd, kexec, kernel modules, mount/umount/pivot_root and the mount API, \
     new user namespaces (unshare/clone with CLONE_NEWUSER) and setns; openat2 and clone3 answer ENOSYS; \
     socket families outside the allowlist answer EAFNOSUPPORT (see sockets)";

/// The socket families the sandbox may create: AF_UNIX always, the IP families only with the
/// network. Everything else (AF_VSOCK, AF_NETLINK, AF_PACKET, AF_ALG, ...) is EAFNOSUPPORT.
pub fn socket_families(network: bool) -> &'static [u32] {
    const LOCAL: [u32; 1] = [libc::AF_UNIX as u32];
    const WITH_NETWORK: [u32; 3] = [
        libc::AF_UNIX as u32,
        libc::AF_INET as u32,
        libc::AF_INET6 as u32,
    ];
    if network {
        &WITH_NETWORK
    } else {
        &LOCAL
    }
}

/// The socket allowlist as `metrics.limits.sockets` reports it.
pub fn sockets_report(network: bool) -> String {
    let allowed = if network {
        "AF_UNIX, AF_INET, AF_INET6"
    } else {
        "AF_UNIX only (AF_INET and AF_INET6 need allow_network)"
    };
    format!(
        "{allowed}; socket and socketpair of every other family (AF_VSOCK, AF_NETLINK, AF_PACKET, AF_ALG, \
         AF_BLUETOOTH, AF_KEY, ...) answer EAFNOSUPPORT (seccomp filter); io_uring is refused"
    )
}

// System calls numbered after 423 have the same number on every architecture (the unified
// table); the libc crate does not name these two on every target yet.
const SYS_FCHMODAT2: i64 = 452;
const SYS_SETXATTRAT: i64 = 463;

/// The x32 ABI marker in x86_64 system call numbers.
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// The compiled program as the bytes bwrap reads (`struct sock_filter` after `struct
/// sock_filter`, native byte order), built once per process for each `network` setting (the
/// socket families it admits differ).
pub fn program_bytes(network: bool) -> Result<&'static [u8], NodeError> {
    static BYTES: [OnceLock<Result<Vec<u8>, String>>; 2] = [OnceLock::new(), OnceLock::new()];
    match BYTES[usize::from(network)].get_or_init(|| program(network).map(|p| to_bytes(&p))) {
        Ok(bytes) => Ok(bytes),
        Err(why) => Err(NodeError::new(
            ErrorKind::SandboxUnavailable,
            format!(
                "the sandbox's seccomp filter cannot be built: {why}; nothing ran. cheng refuses to run code without it \
                 (supported architectures: x86_64, aarch64)"
            ),
        )),
    }
}

/// A fresh descriptor (a sealed memfd at offset 0) holding the program for a sandbox with or
/// without the `network`, for one bwrap start: bwrap reads it to the end, so descriptors are
/// never shared between runs.
pub fn program_fd(network: bool) -> Result<OwnedFd, NodeError> {
    let bytes = program_bytes(network)?;
    let failed = |what: &str, e: std::io::Error| {
        NodeError::new(
            ErrorKind::SandboxUnavailable,
            format!("cannot hand the seccomp filter to bubblewrap ({what}: {e})"),
        )
    };
    // SAFETY: memfd_create reads a NUL-terminated name and returns a new descriptor or -1.
    let fd = unsafe {
        libc::memfd_create(
            c"cheng-seccomp".as_ptr(),
            libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
        )
    };
    if fd < 0 {
        return Err(failed("memfd_create", std::io::Error::last_os_error()));
    }
    // SAFETY: the descriptor is new and owned here.
    let mut file = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    file.write_all(bytes).map_err(|e| failed("write", e))?;
    file.rewind().map_err(|e| failed("seek", e))?;
    let seals = libc::F_SEAL_SEAL | libc::F_SEAL_WRITE | libc::F_SEAL_GROW | libc::F_SEAL_SHRINK;
    // SAFETY: fcntl on a descriptor owned by `file`, with integer arguments.
    if unsafe {
        libc::fcntl(
            std::os::fd::AsRawFd::as_raw_fd(&file),
            libc::F_ADD_SEALS,
            seals,
        )
    } != 0
    {
        return Err(failed("seal", std::io::Error::last_os_error()));
    }
    Ok(OwnedFd::from(file))
}

/// The whole program (see [`assemble`] for its shape).
pub fn program(network: bool) -> Result<BpfProgram, String> {
    let program = assemble(audit_arch()?, &table(network), Unlisted::Allow)?;
    if program.len() > 4096 {
        return Err(format!(
            "the program has {} instructions, more than the kernel's 4096",
            program.len()
        ));
    }
    Ok(program)
}

fn audit_arch() -> Result<u32, String> {
    // EM_X86_64 / EM_AARCH64 | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE (linux/audit.h).
    match std::env::consts::ARCH {
        "x86_64" => Ok(62 | 0x8000_0000 | 0x4000_0000),
        "aarch64" => Ok(183 | 0x8000_0000 | 0x4000_0000),
        other => Err(format!(
            "seccomp filters are not supported on the {other} architecture"
        )),
    }
}

/// A test on the low 32 bits of one system call argument (modes, open flags and clone flags
/// all fit there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bits {
    /// Any of these bits set.
    Any(u8, u32),
    /// All of these bits set.
    All(u8, u32),
}

/// What a listed system call gets.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Action {
    /// Always this errno.
    Errno(u32),
    /// EPERM when every test of one of the rules holds; allowed otherwise.
    EpermWhen(Vec<Vec<Bits>>),
    /// Allowed when the low 32 bits of the first argument (the kernel reads an `int`) are one
    /// of these address families; EAFNOSUPPORT otherwise.
    FamilyIn(&'static [u32]),
    /// Allowed (an allowlist's entries).
    Allow,
}

/// What a system call the table does not list gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unlisted {
    /// The sandbox's filter: a list of refusals, everything else allowed.
    Allow,
    /// An allowlist ([`allowlist_program`]): everything else fails with EPERM.
    Eperm,
}

/// A filter that allows exactly `allowed` (system call numbers) and answers every other call
/// with EPERM; foreign architectures are killed and x32 numbers answer ENOSYS as in the
/// sandbox's filter. For a process that needs almost nothing from the kernel once it is set up
/// (the JavaScript worker: its pipes, memory and clocks). Installed by the caller with
/// `seccompiler::apply_filter`, which sets no_new_privs first.
pub fn allowlist_program(allowed: &[i64]) -> Result<BpfProgram, String> {
    let mut table: Vec<(u32, Action)> = allowed
        .iter()
        .map(|nr| {
            u32::try_from(*nr)
                .map(|nr| (nr, Action::Allow))
                .map_err(|_| format!("system call number {nr} is out of range"))
        })
        .collect::<Result<_, _>>()?;
    table.sort_by_key(|(nr, _)| *nr);
    table.dedup_by_key(|(nr, _)| *nr);
    assemble(audit_arch()?, &table, Unlisted::Eperm)
}

/// System calls refused whatever their arguments: file capabilities, io_uring (its requests
/// would go around the rest), tracing, keyrings, BPF, kernel images and modules, mounts, setns.
const ALWAYS_REFUSED: [i64; 32] = [
    libc::SYS_setxattr,
    libc::SYS_lsetxattr,
    libc::SYS_fsetxattr,
    SYS_SETXATTRAT,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_mount_setattr,
    libc::SYS_setns,
];

/// Every listed system call, sorted by number; the rest are allowed.
fn table(network: bool) -> Vec<(u32, Action)> {
    let setid: u32 = libc::S_ISUID | libc::S_ISGID;
    let setgid: u32 = libc::S_ISGID;
    let mode = |arg: u8, bits: u32| Action::EpermWhen(vec![vec![Bits::Any(arg, bits)]]);
    // O_CREAT, or O_TMPFILE (two bits, both set), with a setuid/setgid mode.
    let create = |flags: u8, mode: u8| {
        Action::EpermWhen(vec![
            vec![
                Bits::Any(flags, libc::O_CREAT as u32),
                Bits::Any(mode, setid),
            ],
            vec![
                Bits::All(flags, libc::O_TMPFILE as u32),
                Bits::Any(mode, setid),
            ],
        ])
    };
    let newuser = || Action::EpermWhen(vec![vec![Bits::Any(0, libc::CLONE_NEWUSER as u32)]]);
    let eperm = || Action::Errno(libc::EPERM as u32);
    let enosys = || Action::Errno(libc::ENOSYS as u32);
    let mut t: Vec<(i64, Action)> = vec![
        // Setuid/setgid files and directories.
        (libc::SYS_fchmod, mode(1, setid)),
        (libc::SYS_fchmodat, mode(2, setid)),
        (SYS_FCHMODAT2, mode(2, setid)),
        (libc::SYS_openat, create(2, 3)),
        (libc::SYS_mknodat, mode(2, setid)),
        (libc::SYS_mkdirat, mode(2, setgid)),
        // New user namespaces.
        (libc::SYS_unshare, newuser()),
        (libc::SYS_clone, newuser()),
        // Arguments seccomp cannot read: libc falls back to openat / clone.
        (libc::SYS_openat2, enosys()),
        (libc::SYS_clone3, enosys()),
        // Socket families outside the allowlist.
        (libc::SYS_socket, Action::FamilyIn(socket_families(network))),
        (
            libc::SYS_socketpair,
            Action::FamilyIn(socket_families(network)),
        ),
    ];
    #[cfg(target_arch = "x86_64")]
    t.extend([
        (libc::SYS_chmod, mode(1, setid)),
        (libc::SYS_open, create(1, 2)),
        (libc::SYS_creat, mode(1, setid)),
        (libc::SYS_mknod, mode(1, setid)),
        (libc::SYS_mkdir, mode(1, setgid)),
    ]);
    // Always refused.
    for nr in ALWAYS_REFUSED {
        t.push((nr, eperm()));
    }
    let mut t: Vec<(u32, Action)> = t.into_iter().map(|(nr, a)| (nr as u32, a)).collect();
    t.sort_by_key(|(nr, _)| *nr);
    t
}

// linux/bpf_common.h and linux/filter.h.
const LD_W_ABS: u16 = 0x20;
const JEQ_K: u16 = 0x15;
const JGE_K: u16 = 0x35;
const JSET_K: u16 = 0x45;
const AND_K: u16 = 0x54;
const JA: u16 = 0x05;
const RET_K: u16 = 0x06;
/// Offsets in `struct seccomp_data`: nr, arch, then args (the low half of `args[i]` first:
/// both supported architectures are little-endian).
const DATA_NR: u32 = 0;
const DATA_ARCH: u32 = 4;
const fn data_arg_low(i: u8) -> u32 {
    16 + 8 * i as u32
}

/// A jump target while assembling: the next instruction or a label.
#[derive(Clone, Copy)]
enum To {
    Next,
    Label(usize),
}

#[derive(Default)]
struct Asm {
    /// (code, k, jt, jf); for `JA` the target is in `jt`.
    code: Vec<(u16, u32, To, To)>,
    labels: Vec<Option<usize>>,
}

impl Asm {
    fn label(&mut self) -> usize {
        self.labels.push(None);
        self.labels.len() - 1
    }
    fn place(&mut self, label: usize) {
        self.labels[label] = Some(self.code.len());
    }
    fn stmt(&mut self, code: u16, k: u32) {
        self.code.push((code, k, To::Next, To::Next));
    }
    fn jump(&mut self, code: u16, k: u32, jt: To, jf: To) {
        self.code.push((code, k, jt, jf));
    }
    fn finish(self) -> Result<BpfProgram, String> {
        let mut out = Vec::with_capacity(self.code.len());
        for (at, (code, k, jt, jf)) in self.code.iter().enumerate() {
            let offset = |to: &To| -> Result<u32, String> {
                match *to {
                    To::Next => Ok(0),
                    To::Label(l) => {
                        let target = self.labels[l].ok_or("a jump to a label never placed")?;
                        target
                            .checked_sub(at + 1)
                            .map(|o| o as u32)
                            .ok_or_else(|| "a backward jump".to_string())
                    }
                }
            };
            let (jt, jf) = (offset(jt)?, offset(jf)?);
            let ins = if *code == JA {
                sock_filter {
                    code: *code,
                    jt: 0,
                    jf: 0,
                    k: jt,
                }
            } else {
                let short = |o: u32| {
                    u8::try_from(o).map_err(|_| {
                        format!("a conditional jump of {o} instructions (at most 255)")
                    })
                };
                sock_filter {
                    code: *code,
                    jt: short(jt)?,
                    jf: short(jf)?,
                    k: *k,
                }
            };
            out.push(ins);
        }
        Ok(out)
    }
}

/// The program: a foreign architecture is killed; x32 numbers answer ENOSYS; the system call
/// number is then found in a binary search tree over `table` (a handful of comparisons instead
/// of one per listed call), whose leaves either return the call's errno, test its arguments, or
/// allow. Short and shallow on purpose: the kernel converts and JIT-compiles the program for
/// every sandbox and runs it once per system call number to find the calls it may allow without
/// running the filter at all (its action cache), so both the length and the depth of every path
/// are paid at each sandbox start.
fn assemble(
    audit_arch: u32,
    table: &[(u32, Action)],
    unlisted: Unlisted,
) -> Result<BpfProgram, String> {
    let mut a = Asm::default();
    let (allow, eperm, enosys, kill) = (a.label(), a.label(), a.label(), a.label());
    let otherwise = match unlisted {
        Unlisted::Allow => allow,
        Unlisted::Eperm => eperm,
    };
    let eafnosupport = a.label();
    a.stmt(LD_W_ABS, DATA_ARCH);
    a.jump(JEQ_K, audit_arch, To::Next, To::Label(kill));
    a.stmt(LD_W_ABS, DATA_NR);
    // x32 numbers only occur on x86_64; elsewhere no call has bit 30 set either.
    a.jump(JGE_K, X32_SYSCALL_BIT, To::Label(enosys), To::Next);
    let errno_label = |errno: u32| {
        if errno == libc::ENOSYS as u32 {
            enosys
        } else {
            eperm
        }
    };
    // Argument tests, emitted after the tree: (label, rules) and (label, families); calls that
    // share a family list share its block.
    let mut blocks: Vec<(usize, &Vec<Vec<Bits>>)> = Vec::new();
    let mut family_blocks: Vec<(usize, &'static [u32])> = Vec::new();
    let mut targets = Vec::with_capacity(table.len());
    for (_, action) in table {
        targets.push(match action {
            Action::Errno(e) if *e == libc::EPERM as u32 || *e == libc::ENOSYS as u32 => {
                errno_label(*e)
            }
            Action::Errno(e) => return Err(format!("errno {e} has no return instruction")),
            Action::Allow => allow,
            Action::EpermWhen(rules) => {
                let l = a.label();
                blocks.push((l, rules));
                l
            }
            Action::FamilyIn(families) => match family_blocks.iter().find(|(_, f)| f == families) {
                Some((l, _)) => *l,
                None => {
                    let l = a.label();
                    family_blocks.push((l, families));
                    l
                }
            },
        });
    }
    tree(&mut a, table, &targets, otherwise);
    for (label, rules) in blocks {
        a.place(label);
        for rule in rules {
            let next_rule = a.label();
            for bits in rule {
                match *bits {
                    Bits::Any(arg, mask) => {
                        a.stmt(LD_W_ABS, data_arg_low(arg));
                        a.jump(JSET_K, mask, To::Next, To::Label(next_rule));
                    }
                    Bits::All(arg, mask) => {
                        a.stmt(LD_W_ABS, data_arg_low(arg));
                        a.stmt(AND_K, mask);
                        a.jump(JEQ_K, mask, To::Next, To::Label(next_rule));
                    }
                }
            }
            a.jump(JA, 0, To::Label(eperm), To::Next);
            a.place(next_rule);
        }
        a.jump(JA, 0, To::Label(allow), To::Next);
    }
    for (label, families) in family_blocks {
        a.place(label);
        a.stmt(LD_W_ABS, data_arg_low(0));
        for family in families {
            a.jump(JEQ_K, *family, To::Label(allow), To::Next);
        }
        a.jump(JA, 0, To::Label(eafnosupport), To::Next);
    }
    a.place(allow);
    a.stmt(RET_K, libc::SECCOMP_RET_ALLOW);
    a.place(eperm);
    a.stmt(
        RET_K,
        libc::SECCOMP_RET_ERRNO | (libc::EPERM as u32 & libc::SECCOMP_RET_DATA),
    );
    a.place(enosys);
    a.stmt(
        RET_K,
        libc::SECCOMP_RET_ERRNO | (libc::ENOSYS as u32 & libc::SECCOMP_RET_DATA),
    );
    a.place(eafnosupport);
    a.stmt(
        RET_K,
        libc::SECCOMP_RET_ERRNO | (libc::EAFNOSUPPORT as u32 & libc::SECCOMP_RET_DATA),
    );
    a.place(kill);
    a.stmt(RET_K, libc::SECCOMP_RET_KILL_PROCESS);
    a.finish()
}

/// A binary search over `table` (sorted by number) on the number in the accumulator; a number
/// not listed goes to `otherwise`.
fn tree(a: &mut Asm, table: &[(u32, Action)], targets: &[usize], otherwise: usize) {
    if table.len() <= 3 {
        for ((nr, _), target) in table.iter().zip(targets) {
            a.jump(JEQ_K, *nr, To::Label(*target), To::Next);
        }
        a.jump(JA, 0, To::Label(otherwise), To::Next);
        return;
    }
    let mid = table.len() / 2;
    let right = a.label();
    a.jump(JGE_K, table[mid].0, To::Label(right), To::Next);
    tree(a, &table[..mid], &targets[..mid], otherwise);
    a.place(right);
    tree(a, &table[mid..], &targets[mid..], otherwise);
}

fn to_bytes(program: &[sock_filter]) -> Vec<u8> {
    let mut out = Vec::with_capacity(program.len() * 8);
    for ins in program {
        out.extend_from_slice(&ins.code.to_ne_bytes());
        out.push(ins.jt);
        out.push(ins.jf);
        out.extend_from_slice(&ins.k.to_ne_bytes());
    }
    out
}

/// The previous form of the program, built with seccompiler's rule compiler (a linear list of
/// 379 instructions on x86_64), kept as the reference the assembled program must agree with.
#[cfg(test)]
mod reference {
    use super::*;
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };
    use std::collections::BTreeMap;

    /// The whole program: the ENOSYS prefix, then seccompiler's EPERM filter.
    pub(super) fn program() -> Result<BpfProgram, String> {
        let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
        let filter = SeccompFilter::new(
            eperm_rules()?,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EPERM as u32),
            arch,
        )
        .map_err(|e| format!("seccompiler: {e}"))?;
        let eperm: BpfProgram = filter
            .try_into()
            .map_err(|e: seccompiler::BackendError| format!("seccompiler: {e}"))?;
        let mut program = enosys_prefix(audit_arch()?, &[libc::SYS_openat2, libc::SYS_clone3]);
        program.extend(eperm);
        if program.len() > 4096 {
            return Err(format!(
                "the program has {} instructions, more than the kernel's 4096",
                program.len()
            ));
        }
        Ok(program)
    }

    /// Hand-written because seccompiler gives one filter a single match action: for the native
    /// architecture, x32 numbers and `enosys` answer ENOSYS; everything else falls through to the
    /// program that follows (which starts with its own architecture check, killing foreign ones).
    fn enosys_prefix(audit_arch: u32, enosys: &[i64]) -> BpfProgram {
        // linux/bpf_common.h: BPF_LD|BPF_W|BPF_ABS, BPF_JMP|BPF_JEQ|BPF_K, BPF_JMP|BPF_JGE|BPF_K,
        // BPF_JMP|BPF_JA, BPF_RET|BPF_K.
        const LD_W_ABS: u16 = 0x20;
        const JEQ_K: u16 = 0x15;
        const JGE_K: u16 = 0x35;
        const JA: u16 = 0x05;
        const RET_K: u16 = 0x06;
        let stmt = |code, k| sock_filter {
            code,
            jt: 0,
            jf: 0,
            k,
        };
        let jump = |code, k, jt, jf| sock_filter { code, jt, jf, k };
        let n = enosys.len() as u8;
        // Layout: [0] ld arch, [1] jeq, [2] ld nr, [3] jge x32, [4..4+n] jeq nr, [4+n] ja +1,
        // [5+n] ret ENOSYS, [6+n] the rest. A jump's target is its index + 1 + offset.
        let mut p = vec![
            stmt(LD_W_ABS, 4),
            // Foreign architecture: straight to the rest (it kills).
            jump(JEQ_K, audit_arch, 0, 4 + n),
            stmt(LD_W_ABS, 0),
            // x32 numbers only occur on x86_64; elsewhere no call has bit 30 set either.
            jump(JGE_K, X32_SYSCALL_BIT, 1 + n, 0),
        ];
        for (i, nr) in enosys.iter().enumerate() {
            p.push(jump(JEQ_K, *nr as u32, n - i as u8, 0));
        }
        p.push(stmt(JA, 1));
        p.push(stmt(
            RET_K,
            libc::SECCOMP_RET_ERRNO | (libc::ENOSYS as u32 & libc::SECCOMP_RET_DATA),
        ));
        p
    }

    /// `arg & mask == mask` on the low 32 bits (modes, open flags and clone flags all fit).
    fn has_bits(arg: u8, mask: u64) -> Result<SeccompCondition, String> {
        SeccompCondition::new(
            arg,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::MaskedEq(mask),
            mask,
        )
        .map_err(|e| e.to_string())
    }

    fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, String> {
        SeccompRule::new(conditions).map_err(|e| e.to_string())
    }

    /// One rule per bit: the call matches when the mode argument carries any of `bits`.
    fn mode_rules(mode_arg: u8, bits: &[u64]) -> Result<Vec<SeccompRule>, String> {
        bits.iter()
            .map(|&b| rule(vec![has_bits(mode_arg, b)?]))
            .collect()
    }

    /// For open-like calls: (O_CREAT or O_TMPFILE in the flags) and (S_ISUID or S_ISGID in the mode).
    fn create_rules(flags_arg: u8, mode_arg: u8) -> Result<Vec<SeccompRule>, String> {
        let mut out = Vec::new();
        for flag in [libc::O_CREAT as u64, libc::O_TMPFILE as u64] {
            for bit in [libc::S_ISUID as u64, libc::S_ISGID as u64] {
                out.push(rule(vec![
                    has_bits(flags_arg, flag)?,
                    has_bits(mode_arg, bit)?,
                ])?);
            }
        }
        Ok(out)
    }

    /// The system calls answered EPERM, with the argument rules that select them (none: always).
    fn eperm_rules() -> Result<BTreeMap<i64, Vec<SeccompRule>>, String> {
        let setid = [libc::S_ISUID as u64, libc::S_ISGID as u64];
        let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
        // Setuid/setgid files and directories.
        rules.insert(libc::SYS_fchmod, mode_rules(1, &setid)?);
        rules.insert(libc::SYS_fchmodat, mode_rules(2, &setid)?);
        rules.insert(SYS_FCHMODAT2, mode_rules(2, &setid)?);
        rules.insert(libc::SYS_openat, create_rules(2, 3)?);
        rules.insert(libc::SYS_mknodat, mode_rules(2, &setid)?);
        rules.insert(libc::SYS_mkdirat, mode_rules(2, &[libc::S_ISGID as u64])?);
        #[cfg(target_arch = "x86_64")]
        {
            rules.insert(libc::SYS_chmod, mode_rules(1, &setid)?);
            rules.insert(libc::SYS_open, create_rules(1, 2)?);
            rules.insert(libc::SYS_creat, mode_rules(1, &setid)?);
            rules.insert(libc::SYS_mknod, mode_rules(1, &setid)?);
            rules.insert(libc::SYS_mkdir, mode_rules(1, &[libc::S_ISGID as u64])?);
        }
        // New user namespaces.
        let newuser = libc::CLONE_NEWUSER as u64;
        rules.insert(libc::SYS_unshare, vec![rule(vec![has_bits(0, newuser)?])?]);
        rules.insert(libc::SYS_clone, vec![rule(vec![has_bits(0, newuser)?])?]);
        // Always refused.
        for nr in ALWAYS_REFUSED {
            rules.insert(nr, Vec::new());
        }
        Ok(rules)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_program_compiles_and_bwrap_gets_it_on_fd_3() {
        for network in [false, true] {
            let program = program(network).unwrap();
            assert!(program.len() > 20, "{} instructions", program.len());
            assert_eq!(program_bytes(network).unwrap().len(), program.len() * 8);
            let fd = program_fd(network).unwrap();
            let mut file = std::fs::File::from(fd);
            let mut read = Vec::new();
            std::io::Read::read_to_end(&mut file, &mut read).unwrap();
            assert_eq!(read, program_bytes(network).unwrap());
        }
        assert_ne!(program_bytes(false).unwrap(), program_bytes(true).unwrap());
        let mut b = crate::sandbox::bwrap::Bwrap::new();
        b.seccomp(SECCOMP_FD);
        let args: Vec<String> = b
            .args()
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(args, ["--seccomp", "3"]);
    }

    /// Runs a classic BPF seccomp program on one `struct seccomp_data` (nr, arch, args), as the
    /// kernel does; every instruction either program uses is implemented, anything else panics.
    fn interpret(program: &[sock_filter], nr: u32, arch: u32, args: [u64; 6]) -> u32 {
        let mut data = Vec::with_capacity(64);
        data.extend_from_slice(&nr.to_ne_bytes());
        data.extend_from_slice(&arch.to_ne_bytes());
        data.extend_from_slice(&0u64.to_ne_bytes());
        for arg in args {
            data.extend_from_slice(&arg.to_ne_bytes());
        }
        let (mut acc, mut pc) = (0u32, 0usize);
        loop {
            let ins = &program[pc];
            pc += 1;
            let k = ins.k;
            let cond = |taken: bool| {
                if taken {
                    ins.jt as usize
                } else {
                    ins.jf as usize
                }
            };
            match ins.code {
                0x20 => {
                    acc = u32::from_ne_bytes(data[k as usize..k as usize + 4].try_into().unwrap())
                }
                0x54 => acc &= k,
                0x05 => pc += k as usize,
                0x15 => pc += cond(acc == k),
                0x25 => pc += cond(acc > k),
                0x35 => pc += cond(acc >= k),
                0x45 => pc += cond(acc & k != 0),
                0x06 => return k,
                other => panic!("instruction {other:#x} at {}", pc - 1),
            }
        }
    }

    /// The assembled program answers exactly as the seccompiler-built one did, for every system
    /// call number but the two socket calls (the reference predates the socket allowlist, see
    /// the next test), both architectures, x32 numbers, and every combination of interesting
    /// argument values on the calls whose arguments are tested; and it is far shorter.
    #[test]
    fn the_assembled_program_answers_as_the_reference_does() {
        for network in [false, true] {
            answers_as_the_reference_does(network);
        }
    }

    fn answers_as_the_reference_does(network: bool) {
        let new = program(network).unwrap();
        let old = reference::program().unwrap();
        assert!(
            new.len() * 2 < old.len(),
            "{} instructions vs {}",
            new.len(),
            old.len()
        );
        let native = audit_arch().unwrap();
        let foreign = 0x4000_0003; // AUDIT_ARCH_I386
        let tested: Vec<u32> = table(network)
            .into_iter()
            .filter(|(_, a)| matches!(a, Action::EpermWhen(_)))
            .map(|(nr, _)| nr)
            .collect();
        let values: [u64; 16] = [
            0,
            0o4755,
            0o2755,
            0o6000,
            0o755,
            0o1777,
            libc::O_CREAT as u64,
            (libc::O_CREAT | libc::O_WRONLY) as u64,
            libc::O_TMPFILE as u64,
            0o20000000, // __O_TMPFILE without O_DIRECTORY
            libc::O_DIRECTORY as u64,
            libc::CLONE_NEWUSER as u64,
            (libc::CLONE_NEWUSER | libc::SIGCHLD) as u64,
            0xffff_ffff,
            1 << 32,
            u64::MAX,
        ];
        let mut checked = 0usize;
        let mut numbers: Vec<u32> = (0..600).collect();
        numbers.extend((0..600).map(|n| X32_SYSCALL_BIT | n));
        numbers.extend([u32::MAX, 0x8000_0000, X32_SYSCALL_BIT - 1]);
        let sockets = [libc::SYS_socket as u32, libc::SYS_socketpair as u32];
        for nr in numbers {
            for arch in [native, foreign] {
                if arch == native && sockets.contains(&nr) {
                    continue;
                }
                for fill in [0, u64::MAX, 0o4755] {
                    let args = [fill; 6];
                    assert_eq!(
                        interpret(&new, nr, arch, args),
                        interpret(&old, nr, arch, args),
                        "nr {nr} arch {arch:#x} args {args:?}"
                    );
                    checked += 1;
                }
            }
        }
        for &nr in &tested {
            for a in values {
                for b in values {
                    for c in values {
                        for d in values {
                            let args = [a, b, c, d, 0, 0];
                            assert_eq!(
                                interpret(&new, nr, native, args),
                                interpret(&old, nr, native, args),
                                "nr {nr} args {args:?}"
                            );
                            checked += 1;
                        }
                    }
                }
            }
        }
        assert!(checked > 500_000, "{checked}");
    }

    /// socket and socketpair: AF_UNIX always, AF_INET and AF_INET6 only with the network, every
    /// other family (and every value the kernel would read as one) EAFNOSUPPORT; only the low
    /// 32 bits count, as the kernel reads an `int`; a foreign architecture is still killed.
    #[test]
    fn socket_families_outside_the_allowlist_answer_eafnosupport() {
        let native = audit_arch().unwrap();
        let refused = libc::SECCOMP_RET_ERRNO | libc::EAFNOSUPPORT as u32;
        let allowed = libc::SECCOMP_RET_ALLOW;
        for network in [false, true] {
            let p = program(network).unwrap();
            for nr in [libc::SYS_socket as u32, libc::SYS_socketpair as u32] {
                let mut families: Vec<u64> = (0..=64).collect();
                families.extend([0xffff_ffff, u64::MAX, 1 << 32, 2 << 32]);
                for family in families {
                    let low = family as u32;
                    let admitted = low == libc::AF_UNIX as u32
                        || (network
                            && (low == libc::AF_INET as u32 || low == libc::AF_INET6 as u32));
                    let want = if admitted { allowed } else { refused };
                    for rest in [0, libc::SOCK_STREAM as u64, u64::MAX] {
                        let args = [family, rest, rest, 0, 0, 0];
                        assert_eq!(
                            interpret(&p, nr, native, args),
                            want,
                            "network {network} nr {nr} family {family:#x} args {args:?}"
                        );
                    }
                }
                // High bits of the argument are ignored by the kernel: 1 << 32 | AF_UNIX is
                // AF_UNIX there, and the filter must agree (neither looser nor stricter).
                let unix_high = (1u64 << 32) | libc::AF_UNIX as u64;
                assert_eq!(
                    interpret(&p, nr, native, [unix_high, 1, 0, 0, 0, 0]),
                    allowed
                );
                assert_eq!(
                    interpret(&p, nr, 0x4000_0003, [libc::AF_UNIX as u64, 1, 0, 0, 0, 0]),
                    libc::SECCOMP_RET_KILL_PROCESS
                );
            }
        }
    }

    /// Under the filter (applied to a throwaway thread), socket() and socketpair() create only
    /// the allowlisted families; the rest fail with exactly EAFNOSUPPORT. The control: the same
    /// calls on an unfiltered thread do not fail with EAFNOSUPPORT for AF_NETLINK and AF_INET.
    #[test]
    fn a_filtered_thread_creates_only_allowlisted_sockets() {
        fn attempt() -> Vec<(&'static str, i32)> {
            use socket2::{Domain, Socket, Type};
            let errno = |made: std::io::Result<()>| made.err().and_then(|e| e.raw_os_error());
            let mut r = Vec::new();
            for (name, family, kind) in [
                ("unix", libc::AF_UNIX, libc::SOCK_STREAM),
                ("inet", libc::AF_INET, libc::SOCK_STREAM),
                ("inet6", libc::AF_INET6, libc::SOCK_DGRAM),
                ("netlink", libc::AF_NETLINK, libc::SOCK_RAW),
                ("vsock", libc::AF_VSOCK, libc::SOCK_STREAM),
                ("packet", libc::AF_PACKET, libc::SOCK_RAW),
                ("alg", libc::AF_ALG, libc::SOCK_SEQPACKET),
            ] {
                let made = Socket::new(Domain::from(family), Type::from(kind), None);
                r.push((name, errno(made.map(drop)).unwrap_or(0)));
            }
            for (name, family) in [("pair unix", libc::AF_UNIX), ("pair vsock", libc::AF_VSOCK)] {
                let made = Socket::pair(Domain::from(family), Type::STREAM, None);
                r.push((name, errno(made.map(drop)).unwrap_or(0)));
            }
            r
        }
        let filtered = |network: bool| {
            std::thread::spawn(move || {
                seccompiler::apply_filter(&program(network).unwrap()).unwrap();
                attempt()
            })
            .join()
            .unwrap()
        };
        let get = |r: &[(&str, i32)], name: &str| {
            r.iter().find(|(n, _)| *n == name).map(|(_, e)| *e).unwrap()
        };
        let unfiltered = std::thread::spawn(attempt).join().unwrap();
        for name in ["unix", "inet", "netlink", "pair unix"] {
            assert_eq!(get(&unfiltered, name), 0, "control {name}: {unfiltered:?}");
        }
        for network in [false, true] {
            let r = filtered(network);
            let mut refused = vec!["netlink", "vsock", "packet", "alg", "pair vsock"];
            if network {
                assert_eq!(get(&r, "inet"), 0, "{r:?}");
            } else {
                refused.extend(["inet", "inet6"]);
            }
            for name in refused {
                assert_eq!(
                    get(&r, name),
                    libc::EAFNOSUPPORT,
                    "network {network} {name}: {r:?}"
                );
            }
            assert_eq!(get(&r, "unix"), 0, "{r:?}");
            assert_eq!(get(&r, "pair unix"), 0, "{r:?}");
        }
    }

    fn errno<T: Into<i64>>(rc: T) -> i32 {
        if rc.into() < 0 {
            std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
        } else {
            0
        }
    }

    /// The filter, applied to a throwaway thread (filters bind the calling thread only), refuses
    /// the setuid/setgid calls and lets the ordinary ones through.
    #[test]
    fn a_filtered_thread_cannot_make_setuid_files() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().to_path_buf();
        let results = std::thread::spawn(move || {
            let program = program(false).unwrap();
            seccompiler::apply_filter(&program).unwrap();
            let path = |name: &str| CString::new(base.join(name).as_os_str().as_bytes()).unwrap();
            let file = path("f");
            std::fs::write(base.join("f"), "x").unwrap();
            let mut r = Vec::new();
            // SAFETY: (all calls below) raw system calls on NUL-terminated paths this test owns.
            unsafe {
                r.push((
                    "fchmodat 4755",
                    errno(libc::fchmodat(libc::AT_FDCWD, file.as_ptr(), 0o4755, 0)),
                ));
                r.push((
                    "fchmodat 2755",
                    errno(libc::fchmodat(libc::AT_FDCWD, file.as_ptr(), 0o2755, 0)),
                ));
                r.push((
                    "fchmodat 755",
                    errno(libc::fchmodat(libc::AT_FDCWD, file.as_ptr(), 0o755, 0)),
                ));
                r.push((
                    "fchmodat2 6755",
                    errno(libc::syscall(
                        SYS_FCHMODAT2,
                        libc::AT_FDCWD,
                        file.as_ptr(),
                        0o6755,
                        0,
                    )),
                ));
                let t = path("t");
                r.push((
                    "openat creat 4755",
                    errno(libc::openat(
                        libc::AT_FDCWD,
                        t.as_ptr(),
                        libc::O_CREAT | libc::O_WRONLY,
                        0o4755,
                    )),
                ));
                let ok = path("ok");
                let fd = libc::openat(
                    libc::AT_FDCWD,
                    ok.as_ptr(),
                    libc::O_CREAT | libc::O_WRONLY,
                    0o644,
                );
                r.push(("openat creat 644", errno(fd)));
                libc::close(fd);
                // Without O_CREAT the mode is not looked at.
                let fd = libc::openat(libc::AT_FDCWD, file.as_ptr(), libc::O_RDONLY, 0o4755);
                r.push(("openat read junk mode", errno(fd)));
                libc::close(fd);
                r.push((
                    "mkdirat 2755",
                    errno(libc::mkdirat(libc::AT_FDCWD, path("d").as_ptr(), 0o2755)),
                ));
                r.push((
                    "mkdirat 755",
                    errno(libc::mkdirat(libc::AT_FDCWD, path("d2").as_ptr(), 0o755)),
                ));
                r.push((
                    "mknodat 4644",
                    errno(libc::mknodat(
                        libc::AT_FDCWD,
                        path("n").as_ptr(),
                        libc::S_IFREG | 0o4644,
                        0,
                    )),
                ));
                let name = c"user.x";
                r.push((
                    "setxattr",
                    errno(libc::setxattr(
                        file.as_ptr(),
                        name.as_ptr(),
                        b"1".as_ptr().cast(),
                        1,
                        0,
                    )),
                ));
                r.push(("unshare newuser", errno(libc::unshare(libc::CLONE_NEWUSER))));
                r.push((
                    "openat2",
                    errno(libc::syscall(
                        libc::SYS_openat2,
                        libc::AT_FDCWD,
                        file.as_ptr(),
                        std::ptr::null::<u8>(),
                        0,
                    )),
                ));
                r.push((
                    "clone3",
                    errno(libc::syscall(libc::SYS_clone3, std::ptr::null::<u8>(), 0)),
                ));
                r.push((
                    "io_uring_setup",
                    errno(libc::syscall(
                        libc::SYS_io_uring_setup,
                        1,
                        std::ptr::null::<u8>(),
                    )),
                ));
            }
            let mode = |n: &str| {
                std::fs::metadata(base.join(n))
                    .map(|m| m.permissions().mode() & 0o7777)
                    .ok()
            };
            (r, mode("f"), mode("t"), mode("d"), mode("d2"), mode("n"))
        })
        .join()
        .unwrap();
        let (r, f, t, d, d2, n) = results;
        let get = |name: &str| r.iter().find(|(n, _)| *n == name).map(|(_, e)| *e).unwrap();
        for name in [
            "fchmodat 4755",
            "fchmodat 2755",
            "fchmodat2 6755",
            "openat creat 4755",
            "mkdirat 2755",
            "mknodat 4644",
            "setxattr",
            "unshare newuser",
            "io_uring_setup",
        ] {
            assert_eq!(get(name), libc::EPERM, "{name}: {r:?}");
        }
        for name in ["openat2", "clone3"] {
            assert_eq!(get(name), libc::ENOSYS, "{name}: {r:?}");
        }
        for name in [
            "fchmodat 755",
            "openat creat 644",
            "openat read junk mode",
            "mkdirat 755",
        ] {
            assert_eq!(get(name), 0, "{name}: {r:?}");
        }
        assert_eq!(
            (f, t, d, d2, n),
            (Some(0o755), None, None, Some(0o755), None)
        );
    }
}
