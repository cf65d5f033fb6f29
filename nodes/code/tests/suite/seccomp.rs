//! The sandbox's seccomp filter against real attacks: setuid/setgid files planted through a
//! writable workspace, file capabilities, new user namespaces, ptrace, clone3. Every test
//! checks the host afterwards (modes through std::fs) and keeps a positive control, so that a
//! script that simply failed to run cannot pass for a refused attack.

use super::sandbox_support::*;
use cheng_nodes_code::shell::CodeShell;
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Every file and directory under `root` (itself included) with its mode bits.
fn modes(root: &Path) -> Vec<(String, u32)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(path) = stack.pop() {
        let meta = std::fs::symlink_metadata(&path).unwrap();
        out.push((path.display().to_string(), meta.permissions().mode()));
        if meta.is_dir() {
            stack.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        }
    }
    out
}

/// Fails naming each file under `root` that is setuid or setgid on the host.
fn assert_no_setid(root: &Path, out: &Value) {
    let bad: Vec<_> = modes(root)
        .into_iter()
        .filter(|(_, m)| m & 0o6000 != 0)
        .map(|(p, m)| format!("{p} {m:o}"))
        .collect();
    assert!(
        bad.is_empty(),
        "setuid/setgid files reached the host: {bad:?}\n{out}"
    );
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o7777
}

/// errno values (the same on x86_64 and aarch64).
const EPERM: i64 = 1;
const ENOSYS: i64 = 38;

fn stdout(out: &Value) -> &str {
    out["stdout"].as_str().unwrap_or("")
}

#[tokio::test]
async fn code_shell_cannot_plant_setuid_or_setgid_files() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    // The attack from the report, then the other ways to the same bits, each reporting its status.
    let script = "cp /bin/bash ./sh && echo copied; chmod 4755 ./sh; echo chmod4755=$?; chmod g+s ./sh; echo chmodgs=$?; \
                  mkdir -m 2755 sgid; echo mkdir2755=$?; mkfifo -m 4755 fifo; echo mkfifo=$?; \
                  python3 -I -c 'import os; os.close(os.open(\"t2\", os.O_CREAT | os.O_WRONLY, 0o4755))'; echo open4755=$?; \
                  python3 -I -c 'import os; os.mknod(\"n\", 0o104755)'; echo mknod=$?";
    let out = Value::Object(
        run(
            &CodeShell,
            &ws,
            json!({"script": script, "allow_filesystem": true}),
        )
        .await,
    );
    let text = stdout(&out);
    assert!(text.contains("copied"), "the attack did not run: {out}");
    for step in [
        "chmod4755",
        "chmodgs",
        "mkdir2755",
        "mkfifo",
        "open4755",
        "mknod",
    ] {
        assert!(
            !text.contains(&format!("{step}=0")),
            "{step} succeeded: {out}"
        );
    }
    assert!(
        out["stderr"]
            .as_str()
            .unwrap_or("")
            .contains("Operation not permitted"),
        "{out}"
    );
    assert_eq!(mode(&ws.join("sh")) & 0o6000, 0);
    assert_no_setid(&ws, &out);
    assert!(
        out["metrics"]["limits"]["seccomp"]
            .as_str()
            .unwrap_or("")
            .starts_with("enforced"),
        "{out}"
    );
}

#[tokio::test]
async fn code_shell_ordinary_file_work_still_works() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    let script = "set -e; echo hi > a.txt; chmod 644 a.txt; cp /bin/true ./t; chmod 755 ./t; ./t; mkdir -p d/e; \
                  mkdir -m 700 p; chmod u+x a.txt; printf 'b\\na\\n' | sort | tr a-z A-Z | head -1; ln -s a.txt l; \
                  mkfifo q; python3 -I -c 'import subprocess; print(subprocess.run([\"echo\", \"sub\"], capture_output=True, text=True).stdout.strip())'";
    let out = Value::Object(
        run(
            &CodeShell,
            &ws,
            json!({"script": script, "allow_filesystem": true}),
        )
        .await,
    );
    assert_eq!(out["success"], true, "{out}");
    assert_eq!(stdout(&out), "A\nsub\n", "{out}");
    assert_eq!(mode(&ws.join("a.txt")), 0o744);
    assert_eq!(mode(&ws.join("t")), 0o755);
    assert_eq!(mode(&ws.join("p")), 0o700);
    assert!(ws.join("d/e").is_dir());
}

#[tokio::test]
async fn code_shell_cannot_create_user_namespaces_or_set_file_capabilities() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    std::fs::write(ws.join("f"), "x").unwrap();
    let script = "unshare --user true; echo unshare=$?; unshare --user --map-root-user id -u; echo maproot=$?; \
                  python3 -I -c 'import os; os.setxattr(\"f\", \"security.capability\", b\"\\x01\\x00\\x00\\x02\" + bytes(16))'; echo setcap=$?; \
                  python3 -I -c 'import os; os.setxattr(\"f\", \"user.x\", b\"1\")'; echo setxattr=$?; echo ran";
    let out = Value::Object(
        run(
            &CodeShell,
            &ws,
            json!({"script": script, "allow_filesystem": true}),
        )
        .await,
    );
    let text = stdout(&out);
    assert!(text.contains("ran"), "{out}");
    for step in ["unshare", "maproot", "setcap", "setxattr"] {
        assert!(
            text.contains(&format!("{step}=")) && !text.contains(&format!("{step}=0")),
            "{step} succeeded: {out}"
        );
    }
    assert!(
        out["stderr"]
            .as_str()
            .unwrap_or("")
            .contains("unshare failed: Operation not permitted"),
        "{out}"
    );
    // Nothing was attached to the file on the host.
    let listed = std::process::Command::new("python3")
        .args([
            "-I",
            "-c",
            "import os, sys; print(os.listxattr(sys.argv[1]))",
        ])
        .arg(ws.join("f"))
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&listed.stdout).trim(),
        "[]",
        "{out}"
    );
}

/// EAFNOSUPPORT (the same on x86_64 and aarch64).
const EAFNOSUPPORT: i64 = 97;

/// Creates one socket of each family (and a few socketpairs) through libc, and tries
/// io_uring_setup, printing `{name: errno}` as JSON (0: created); then resolves localhost the
/// way glibc asks the kernel for the host's interfaces first (through netlink, refused inside).
const SOCKET_PROBE: &str = r#"
import ctypes, json, os
libc = ctypes.CDLL(None, use_errno=True)
def made(rc, fds=()):
    e = ctypes.get_errno()
    for fd in fds:
        os.close(fd)
    return 0 if rc >= 0 else e
def sock(family, kind):
    ctypes.set_errno(0)
    fd = libc.socket(family, kind, 0)
    return made(fd, [fd] if fd >= 0 else [])
def pair(family, kind):
    fds = (ctypes.c_int * 2)()
    ctypes.set_errno(0)
    rc = libc.socketpair(family, kind, 0, fds)
    return made(rc, list(fds) if rc == 0 else [])
families = {"AF_UNIX": (1, 1), "AF_INET": (2, 1), "AF_INET6": (10, 2), "AF_KEY": (15, 3),
            "AF_NETLINK": (16, 3), "AF_PACKET": (17, 3), "AF_RDS": (21, 5), "AF_CAN": (29, 3),
            "AF_TIPC": (30, 5), "AF_BLUETOOTH": (31, 3), "AF_ALG": (38, 5), "AF_VSOCK": (40, 1),
            "AF_XDP": (44, 3)}
out = {name: sock(f, t) for name, (f, t) in families.items()}
out["socketpair AF_UNIX"] = pair(1, 1)
out["socketpair AF_VSOCK"] = pair(40, 1)
out["socketpair AF_NETLINK"] = pair(16, 3)
params = ctypes.create_string_buffer(120)
ctypes.set_errno(0)
out["io_uring_setup"] = made(libc.syscall(425, 1, params))
import socket
try:
    out["getaddrinfo"] = len(socket.getaddrinfo("localhost", 80, flags=socket.AI_ADDRCONFIG))
except OSError as e:
    out["getaddrinfo"] = str(e)
print(json.dumps(out))
"#;

/// The families the sandbox refuses (the last two only without the network), as probe keys.
const REFUSED_FAMILIES: [&str; 14] = [
    "AF_KEY",
    "AF_NETLINK",
    "AF_PACKET",
    "AF_RDS",
    "AF_CAN",
    "AF_TIPC",
    "AF_BLUETOOTH",
    "AF_ALG",
    "AF_VSOCK",
    "AF_XDP",
    "socketpair AF_VSOCK",
    "socketpair AF_NETLINK",
    // The IP families only while the network is off.
    "AF_INET (without allow_network)",
    "AF_INET6 (without allow_network)",
];

/// The probe's answers on the host, outside any sandbox: the positive control.
fn host_socket_answers() -> Value {
    let out = std::process::Command::new("python3")
        .args(["-I", "-c", SOCKET_PROBE])
        .output()
        .expect("python3 runs on the host");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "the probe failed on the host: {e}: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Without the network only AF_UNIX sockets can be made; with it AF_INET and AF_INET6 too;
/// every other family (vsock, netlink, packet, alg, bluetooth, key, ...) fails with exactly
/// EAFNOSUPPORT, in socket and socketpair alike, and io_uring (which could make sockets
/// without socket()) is refused. The control: on the host the same probe makes AF_NETLINK and
/// AF_INET sockets, so the refusals come from the sandbox.
#[tokio::test]
async fn code_shell_creates_only_allowlisted_socket_families() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    let host = host_socket_answers();
    for name in ["AF_UNIX", "AF_INET", "AF_NETLINK", "socketpair AF_UNIX"] {
        assert_eq!(
            host[name], 0,
            "control: the host cannot make {name}: {host}"
        );
    }
    let script = format!("python3 -I -c '{}'", SOCKET_PROBE.replace('\'', "'\\''"));
    // Without the network only: with it, the run needs the init step's proxy bridge, which this
    // test binary lacks; crates/cheng-cli/tests/suite/seccomp.rs checks both through `cheng`.
    for network in [false] {
        let out = Value::Object(
            run(
                &CodeShell,
                &ws,
                json!({"script": script, "allow_network": network}),
            )
            .await,
        );
        assert_eq!(out["success"], true, "{out}");
        let inside: Value =
            serde_json::from_str(stdout(&out)).unwrap_or_else(|e| panic!("{e}: {out}"));
        for name in REFUSED_FAMILIES {
            let key = name.split(" (").next().unwrap_or(name);
            if name.contains("without allow_network") && network {
                continue;
            }
            assert_eq!(
                inside[key], EAFNOSUPPORT,
                "network {network}: {name} was not refused with EAFNOSUPPORT: {inside} (host: {host})"
            );
        }
        assert_eq!(inside["AF_UNIX"], 0, "{inside}");
        assert_eq!(inside["socketpair AF_UNIX"], 0, "{inside}");
        assert_eq!(inside["io_uring_setup"], EPERM, "{inside}");
        assert!(
            inside["getaddrinfo"].as_u64().is_some_and(|n| n > 0),
            "{inside}"
        );
        if network {
            // Allowed with the network: what the host itself answers (IPv6 may be off there).
            assert_eq!(inside["AF_INET"], 0, "{inside}");
            assert_eq!(
                inside["AF_INET6"], host["AF_INET6"],
                "{inside} (host: {host})"
            );
        }
        let sockets = out["metrics"]["limits"]["sockets"].as_str().unwrap_or("");
        assert!(
            sockets.contains("EAFNOSUPPORT") && sockets.contains("AF_VSOCK"),
            "{out}"
        );
        assert_eq!(
            sockets.starts_with("AF_UNIX, AF_INET, AF_INET6"),
            network,
            "{sockets}"
        );
    }
}

#[cfg(feature = "python")]
mod python {
    use super::*;
    use cheng_nodes_code::python::CodePython;

    #[tokio::test]
    async fn code_python_cannot_plant_setuid_or_setgid_files() {
        if !sandbox_available() {
            return;
        }
        let (_d, ws) = workspace();
        std::fs::write(ws.join("plain"), "x").unwrap();
        let script = r#"
import os, errno
def attempt(name, f):
    try:
        f()
        return "done"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
result = {
    "open": attempt("open", lambda: os.close(os.open("t2", os.O_CREAT | os.O_WRONLY, 0o4755))),
    "open_sgid": attempt("open_sgid", lambda: os.close(os.open("t3", os.O_CREAT | os.O_WRONLY, 0o2755))),
    "chmod_sgid": attempt("chmod_sgid", lambda: os.chmod("plain", 0o2755)),
    "chmod_suid": attempt("chmod_suid", lambda: os.chmod("plain", 0o4755)),
    "mkdir_sgid": attempt("mkdir_sgid", lambda: os.mkdir("d", 0o2755)),
    "mknod": attempt("mknod", lambda: os.mknod("n", 0o104755)),
    "setcap": attempt("setcap", lambda: os.setxattr("plain", "security.capability", b"\x01\x00\x00\x02" + bytes(16))),
    "chmod_755": attempt("chmod_755", lambda: os.chmod("plain", 0o755)),
    "mkdir": attempt("mkdir", lambda: os.mkdir("ok", 0o755)),
    "create": attempt("create", lambda: os.close(os.open("new", os.O_CREAT | os.O_WRONLY, 0o644))),
}
"#;
        let out = Value::Object(
            run(
                &CodePython,
                &ws,
                json!({"script": script, "allow_filesystem": true}),
            )
            .await,
        );
        assert_eq!(out["success"], true, "{out}");
        let r = &out["result"];
        for step in [
            "open",
            "open_sgid",
            "chmod_sgid",
            "chmod_suid",
            "mkdir_sgid",
            "mknod",
            "setcap",
        ] {
            assert_eq!(r[step], "EPERM", "{step}: {out}");
        }
        for step in ["chmod_755", "mkdir", "create"] {
            assert_eq!(r[step], "done", "{step}: {out}");
        }
        assert_eq!(mode(&ws.join("plain")), 0o755);
        assert!(
            !ws.join("t2").exists() && !ws.join("d").exists() && !ws.join("n").exists(),
            "{out}"
        );
        assert_no_setid(&ws, &out);
    }

    /// code_python has no network switch: only AF_UNIX sockets, everything else EAFNOSUPPORT.
    #[tokio::test]
    async fn code_python_creates_only_unix_sockets() {
        if !sandbox_available() {
            return;
        }
        let (_d, ws) = workspace();
        let host = host_socket_answers();
        assert_eq!(host["AF_NETLINK"], 0, "control: {host}");
        let script = SOCKET_PROBE.replace("print(json.dumps(out))", "result = out");
        let out = Value::Object(run(&CodePython, &ws, json!({"script": script})).await);
        assert_eq!(out["success"], true, "{out}");
        let r = &out["result"];
        for name in REFUSED_FAMILIES {
            let key = name.split(" (").next().unwrap_or(name);
            assert_eq!(r[key], EAFNOSUPPORT, "{name}: {r} (host: {host})");
        }
        assert_eq!(r["AF_UNIX"], 0, "{r}");
        assert_eq!(r["socketpair AF_UNIX"], 0, "{r}");
        assert_eq!(r["io_uring_setup"], EPERM, "{r}");
    }

    #[tokio::test]
    async fn code_python_clone3_is_enosys_ptrace_eperm_and_fork_still_works() {
        if !sandbox_available() {
            return;
        }
        let (_d, ws) = workspace();
        let script = r#"
import ctypes, os, subprocess
libc = ctypes.CDLL(None, use_errno=True)
def call(*args):
    ctypes.set_errno(0)
    rc = libc.syscall(*args)
    return [rc, ctypes.get_errno()]
clone3 = call(435, None, 0)
ctypes.set_errno(0)
ptrace = [libc.ptrace(0, 0, None, None), ctypes.get_errno()]
ctypes.set_errno(0)
unshare = [libc.unshare(0x10000000), ctypes.get_errno()]
pid = os.fork()
if pid == 0:
    os._exit(7)
_, status = os.waitpid(pid, 0)
result = {
    "clone3": clone3,
    "ptrace": ptrace,
    "unshare": unshare,
    "fork": os.waitstatus_to_exitcode(status),
    "subprocess": subprocess.run(["sh", "-c", "echo a | tr a b"], capture_output=True, text=True).stdout,
}
"#;
        let out = Value::Object(run(&CodePython, &ws, json!({"script": script})).await);
        assert_eq!(out["success"], true, "{out}");
        let r = &out["result"];
        assert_eq!(r["clone3"], json!([-1, ENOSYS]), "{out}");
        assert_eq!(r["ptrace"], json!([-1, EPERM]), "{out}");
        assert_eq!(r["unshare"], json!([-1, EPERM]), "{out}");
        assert_eq!(r["fork"], 7, "{out}");
        assert_eq!(r["subprocess"], "b\n", "{out}");
    }
}

fn fake_bwrap(dir: &Path, name: &str, body: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// bwrap gets the whole program on descriptor 3 with `--seccomp 3`, freshly for every start.
#[tokio::test]
async fn bwrap_gets_the_whole_program_on_fd_3_for_every_run() {
    use cheng_sandbox::{seccomp, Sandbox, SandboxRequest};
    let (_d, ws) = workspace();
    let fake = fake_bwrap(
        &ws,
        "bwrap",
        "case \" $* \" in *' --seccomp 3 '*) wc -c <&3;; *) echo 'no --seccomp 3';; esac",
    );
    let mut req = SandboxRequest::new(ws.clone(), vec!["/bin/true".into()]);
    req.bwrap = Some(fake);
    let expected = format!("{}\n", seccomp::program_bytes(false).unwrap().len());
    let cancel = cheng_node::CancellationToken::new();
    for _ in 0..2 {
        let run = Sandbox::prepare(req.clone())
            .unwrap()
            .run(&cancel)
            .await
            .unwrap();
        assert_eq!(run.output.stdout.text, expected, "{:?}", run.output);
    }
}

/// A bwrap without `--seccomp`, or one that cannot install the filter, stops the run.
#[tokio::test]
async fn a_bwrap_that_refuses_the_filter_fails_closed() {
    use cheng_sandbox::{Sandbox, SandboxRequest};
    let (_d, ws) = workspace();
    let cancel = cheng_node::CancellationToken::new();
    for line in [
        "bwrap: Unknown option --seccomp",
        "bwrap: prctl(PR_SET_SECCOMP): Invalid argument",
    ] {
        let fake = fake_bwrap(&ws, "bwrap", &format!("echo '{line}' >&2; exit 1"));
        let mut req = SandboxRequest::new(ws.clone(), vec!["/bin/true".into()]);
        req.bwrap = Some(fake);
        let err = Sandbox::prepare(req)
            .unwrap()
            .run(&cancel)
            .await
            .unwrap_err();
        assert_eq!(err.kind, cheng_node::ErrorKind::SandboxUnavailable, "{err}");
        assert!(
            err.message.contains(line) && err.message.contains("CONFIG_SECCOMP_FILTER"),
            "{err}"
        );
        assert!(err.message.contains("never falls back"), "{err}");
    }
}
