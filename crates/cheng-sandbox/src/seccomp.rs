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
mod tests;
