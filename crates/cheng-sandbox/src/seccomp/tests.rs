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
    let mut b = crate::bwrap::Bwrap::new();
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
            0x20 => acc = u32::from_ne_bytes(data[k as usize..k as usize + 4].try_into().unwrap()),
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
                    || (network && (low == libc::AF_INET as u32 || low == libc::AF_INET6 as u32));
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
