//! tools/code_shell with cheng not running as root, through the real binary.

use super::support::*;
use serde_json::json;

// ---------------------------------------------------------------------------------------------
// cheng not running as root: bwrap creates a user namespace, RLIMIT_NPROC is set inside it.
// These run the real binary as uid 65534 through setpriv, under an outer RLIMIT_NPROC and a
// wall-clock limit, on a workspace owned by 65534.
// ---------------------------------------------------------------------------------------------

use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The unprivileged uid/gid the tests run cheng as.
pub const NOBODY: u32 = 65534;
/// Processes uid 65534 may have in total while a test runs (the sandbox's own bound is lower).
const OUTER_NPROC: u32 = 1024;
/// Longest any unprivileged run may take before the test kills it.
const WALL_CLOCK: Duration = Duration::from_secs(60);

fn util(name: &str) -> Option<PathBuf> {
    ["/usr/bin", "/bin", "/usr/sbin", "/sbin"]
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

/// Whether cheng can run as uid 65534 with a working sandbox here; prints why when not.
pub fn unprivileged_sandbox_works() -> bool {
    let skip = |why: String| require_or_skip_that(&why, false);
    if !is_root() {
        return skip("root (the tests must start as root to switch to uid 65534)".into());
    }
    let (Some(setpriv), Some(_)) = (util("setpriv"), util("prlimit")) else {
        return skip("setpriv/prlimit (util-linux)".into());
    };
    let Some(bwrap) = util("bwrap") else {
        return skip("bwrap (bubblewrap)".into());
    };
    let probe = Command::new(&setpriv)
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(&bwrap)
        .args([
            "--unshare-all",
            "--unshare-user",
            "--ro-bind",
            "/",
            "/",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "true",
        ])
        .stdin(Stdio::null())
        .output();
    match probe {
        Ok(out) if out.status.success() => {}
        Ok(out) => {
            return skip(format!(
                "working unprivileged user namespaces ({})",
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
        Err(e) => return skip(format!("a setpriv that runs ({e})")),
    }
    if nobody_cheng().is_none() {
        return skip(format!(
            "a cheng binary uid 65534 can execute ({} nor a copy of it under /tmp)",
            env!("CARGO_BIN_EXE_cheng")
        ));
    }
    true
}

/// A `cheng` binary uid 65534 can execute: the built one when its directories are traversable
/// (a target dir under a 0700 home is not), otherwise a copy in a world-readable /tmp directory.
fn nobody_cheng() -> Option<PathBuf> {
    static BINARY: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    BINARY
        .get_or_init(|| {
            let executable_by_nobody = |path: &Path| {
                Command::new(util("setpriv")?)
                    .args([
                        "--reuid=65534",
                        "--regid=65534",
                        "--clear-groups",
                        "--",
                        "test",
                        "-x",
                    ])
                    .arg(path)
                    .status()
                    .ok()
                    .filter(|s| s.success())
            };
            let built = PathBuf::from(env!("CARGO_BIN_EXE_cheng"));
            if executable_by_nobody(&built).is_some() {
                return Some(built);
            }
            use std::os::unix::fs::PermissionsExt;
            // Kept for the whole test process: every unprivileged test uses the same copy.
            let dir = tempfile::Builder::new()
                .prefix("cheng-bin-")
                .tempdir_in("/tmp")
                .ok()?
                .keep();
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).ok()?;
            let copy = dir.join("cheng");
            std::fs::copy(&built, &copy).ok()?;
            std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).ok()?;
            executable_by_nobody(&copy).map(|_| copy)
        })
        .clone()
}

/// A directory under `parent` owned by uid 65534, world-traversable.
pub fn nobody_dir(parent: &str) -> (tempfile::TempDir, PathBuf) {
    owned_dir(parent, NOBODY)
}

/// A directory under `parent` owned by `uid` (group 65534), world-traversable.
fn owned_dir(parent: &str, uid: u32) -> (tempfile::TempDir, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new()
        .prefix("cheng-nobody-")
        .tempdir_in(parent)
        .expect("tempdir");
    let path = dir.path().canonicalize().expect("canonical");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::os::unix::fs::chown(&path, Some(uid), Some(NOBODY)).expect("chown");
    (dir, path)
}

/// `cheng run <node>` as uid 65534 with `envs`, under RLIMIT_NPROC [`OUTER_NPROC`] for that
/// uid and a [`WALL_CLOCK`] limit. Returns (exit code, stdout JSON, stdout text, stderr).
pub fn run_unprivileged(
    node: &str,
    ws: &Path,
    input: &serde_json::Value,
    config: Option<&serde_json::Value>,
    envs: &[(&str, &str)],
) -> (i32, serde_json::Value, String, String) {
    run_unprivileged_as(NOBODY, node, ws, input, config, envs)
}

/// [`run_unprivileged`] as `uid` (group 65534).
fn run_unprivileged_as(
    uid: u32,
    node: &str,
    ws: &Path,
    input: &serde_json::Value,
    config: Option<&serde_json::Value>,
    envs: &[(&str, &str)],
) -> (i32, serde_json::Value, String, String) {
    let mut cmd = Command::new(util("prlimit").expect("prlimit"));
    cmd.arg(format!("--nproc={OUTER_NPROC}:{OUTER_NPROC}"))
        .arg("--")
        .arg(util("setpriv").expect("setpriv"))
        .arg(format!("--reuid={uid}"))
        .args(["--regid=65534", "--clear-groups", "--"])
        .arg(nobody_cheng().expect("unprivileged_sandbox_works() checked the binary"))
        .args(["run", node, "--workspace"])
        .arg(ws)
        .arg("--input")
        .arg(input.to_string());
    if let Some(config) = config {
        cmd.arg("--config").arg(config.to_string());
    }
    cmd.env_remove("CHENG_ENABLE_CODE_PYTHON")
        .env_remove("CHENG_ENABLE_CODE_JS")
        .env_remove("CHENG_PYTHON")
        .env("LANG", "C")
        .env("LC_ALL", "C")
        .env_remove("LANGUAGE")
        .envs(envs.iter().copied())
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("prlimit runs");
    // Read both pipes off-thread so a chatty child cannot block on a full pipe.
    let mut out_pipe = child.stdout.take().expect("stdout");
    let mut err_pipe = child.stderr.take().expect("stderr");
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out_pipe.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err_pipe.read_to_string(&mut s);
        s
    });
    let mut status = None;
    if !eventually(WALL_CLOCK, || {
        status = child.try_wait().expect("wait");
        status.is_some()
    }) {
        // cheng dies; bwrap follows (--die-with-parent) and takes its pid namespace along.
        let _ = child.kill();
        let _ = child.wait();
        panic!("cheng as uid {uid} ran longer than {WALL_CLOCK:?} and was killed");
    }
    let status = status.expect("eventually saw it exit");
    let stdout = out_reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    let value = serde_json::from_str(&stdout).unwrap_or(serde_json::Value::Null);
    (status.code().unwrap_or(-1), value, stdout, stderr)
}

#[test]
fn unprivileged_code_shell_runs_in_a_user_namespace() {
    if !unprivileged_sandbox_works() {
        return;
    }
    let (_d, ws) = nobody_dir("/tmp");
    let script =
        "id -u; printf '%s\\n' \"$INPUT\"; grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)' /proc/self/status";
    let (code, out, _, stderr) = run_unprivileged(
        "tools/code_shell",
        &ws,
        &json!({"script": script, "input": {"n": 1}}),
        None,
        &[],
    );
    assert_eq!(code, 0, "{out} {stderr}");
    let stdout = out["stdout"].as_str().unwrap_or("");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[..2], ["65534", "{\"n\":1}"], "{out}");
    assert_eq!(lines.len(), 7, "{stdout}");
    for line in &lines[2..] {
        assert!(
            line.ends_with("0000000000000000"),
            "a capability survived: {line}"
        );
    }
    let limits = &out["metrics"]["limits"];
    assert_eq!(
        limits["identity"], "uid 65534 (cheng's own, in a user namespace)",
        "{out}"
    );
    assert_eq!(
        limits["nproc_enforcement"], "RLIMIT_NPROC 256 set inside the user namespace",
        "{out}"
    );
    assert!(
        limits["landlock"]
            .as_str()
            .unwrap_or("")
            .starts_with("enforced"),
        "{out}"
    );
}

#[test]
fn unprivileged_writes_land_in_the_workspace_only() {
    if !unprivileged_sandbox_works() {
        return;
    }
    use std::os::unix::fs::MetadataExt;
    let (_d, ws) = nobody_dir("/tmp");
    // Outside, but writable by uid 65534 on the host: only the sandbox stands in the way.
    let (_o, outside) = nobody_dir("/var/tmp");
    let escape = outside.join("escape.txt");
    std::fs::create_dir(ws.join(".git")).unwrap();
    std::os::unix::fs::chown(ws.join(".git"), Some(NOBODY), Some(NOBODY)).unwrap();
    let script = format!(
        "echo inside > inside.txt; echo pwned > '{}'; echo hook > .git/config; echo x > .bashrc; echo done",
        escape.display()
    );
    for allow in [false, true] {
        let (_, out, _, stderr) = run_unprivileged(
            "tools/code_shell",
            &ws,
            &json!({"script": script}),
            Some(&json!({"allow_filesystem": allow})),
            &[],
        );
        assert!(out.is_object(), "no output: {stderr}");
        assert!(
            !escape.exists(),
            "allow_filesystem={allow}: a write outside the workspace reached the host: {out}"
        );
        assert!(
            !ws.join(".git/config").exists() && !ws.join(".bashrc").exists(),
            "protected metadata written: {out}"
        );
        assert_eq!(
            ws.join("inside.txt").exists(),
            allow,
            "allow_filesystem={allow}: {out}"
        );
        assert!(
            out["stdout"].as_str().unwrap_or("").contains("done"),
            "the attempt did not run: {out}"
        );
    }
    let meta = std::fs::metadata(ws.join("inside.txt")).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (NOBODY, NOBODY));
    assert_eq!(
        std::fs::read_to_string(ws.join("inside.txt")).unwrap(),
        "inside\n"
    );
}

/// A uid of this test process's own, never 65534: RLIMIT_NPROC counts every process of a uid on
/// the host (and, through the sandbox's user namespace, against the outer limit), so a test that
/// drives it to the limit must not share its uid with the unprivileged tests running beside it,
/// here or in another checkout running the same suite. Far above any uid or subordinate-uid range
/// a system hands out; unique while this process lives, as its pid is.
fn own_uid() -> u32 {
    2_000_000_000 + std::process::id()
}

#[test]
fn unprivileged_fork_bombs_are_bounded() {
    if !unprivileged_sandbox_works() {
        return;
    }
    let uid = own_uid();
    let (_d, ws) = owned_dir("/tmp", uid);
    // 1000 sleeping children must not all start (RLIMIT_NPROC 256 inside the namespace).
    let script = "i=0; while [ $i -lt 1000 ]; do sleep 5 & i=$((i+1)); done; echo started $i";
    let (_, out, _, stderr) = run_unprivileged_as(
        uid,
        "tools/code_shell",
        &ws,
        &json!({"script": script, "timeout_ms": 4000}),
        None,
        &[],
    );
    assert_eq!(out["success"], false, "{out} {stderr}");
    assert!(
        !out["stdout"]
            .as_str()
            .unwrap_or("")
            .contains("started 1000"),
        "1000 processes started: {out}"
    );
    assert!(
        out["stderr"].as_str().unwrap_or("").contains("fork"),
        "{out}"
    );
    // A bomb that would double 12 times (8190 processes), cut short by the limit and the timeout.
    // The script's own shell starts it before the limit is reached and then execs its sleep, so
    // that it never needs a fork itself: were it to fork after the bomb, it could lose the race for
    // the last process slot, fail ("Cannot fork") and end the run before the timeout.
    let uid_arg = uid.to_string();
    let _guard = KillOnDrop::new(&["-U", &uid_arg]);
    let script = "bomb_6651() { [ \"$1\" -gt 0 ] && { bomb_6651 $(($1-1)) & bomb_6651 $(($1-1)) & }; sleep 3; }; bomb_6651 12 & exec sleep 3";
    let (_, out, _, stderr) = run_unprivileged_as(
        uid,
        "tools/code_shell",
        &ws,
        &json!({"script": script, "timeout_ms": 1500}),
        None,
        &[],
    );
    assert_eq!(
        out["error_kind"], "LOCAL_EXECUTOR_TIMED_OUT",
        "{out} {stderr}"
    );
    // Nothing of the uid's is left (it is this test's alone, so any survivor is the bomb's).
    assert!(
        none_left(&["-U", &uid_arg]),
        "fork bomb processes survived: {:?}",
        pgrep(&["-U", &uid_arg])
    );
}

#[test]
fn unprivileged_runs_have_no_network() {
    if !unprivileged_sandbox_works() {
        return;
    }
    let (_d, ws) = nobody_dir("/tmp");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let hit = Arc::new(AtomicBool::new(false));
    let flag = hit.clone();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            flag.store(true, Ordering::SeqCst);
            let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
            let _ = stream.read(&mut [0u8; 1024]);
            let _ = stream.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 7\r\n\r\nreached");
        }
    });
    if !require_or_skip("curl") {
        return;
    }
    // curl's exit status is the positive control: 7 (could not connect) proves it ran and tried;
    // 127 (curl not found inside) would make the test prove nothing.
    let script = format!("curl -s -m 2 http://127.0.0.1:{port}/; echo \"curl=$?\"; getent hosts example.com || echo no-dns");
    let (_, out, _, stderr) = run_unprivileged(
        "tools/code_shell",
        &ws,
        &json!({"script": script}),
        None,
        &[],
    );
    assert!(out.is_object(), "no output: {stderr}");
    assert!(
        !hit.load(Ordering::SeqCst),
        "the sandbox reached the host listener: {out}"
    );
    let stdout = out["stdout"].as_str().unwrap_or("");
    assert!(
        !stdout.contains("reached") && stdout.contains("no-dns"),
        "{out}"
    );
    assert!(
        stdout.contains("curl=7\n"),
        "curl did not fail to connect: {out}"
    );
    assert_eq!(
        out["metrics"]["limits"]["network"],
        "none (private network namespace)"
    );
    // With allow_network and a rule naming the host's loopback, the same listener is reached,
    // and only through the proxy (the user namespace's uid reaches its sockets too).
    let policy = ws.join("policy.toml");
    std::fs::write(&policy, "[all]\nnetwork_allow = [\"127.0.0.1\"]\n").unwrap();
    let script = format!(
        "curl -s --noproxy '*' -m 2 http://127.0.0.1:{port}/; echo \"direct=$?\"; curl -s --noproxy '' -m 5 http://127.0.0.1:{port}/"
    );
    let (_, out, _, stderr) = run_unprivileged(
        "tools/code_shell",
        &ws,
        &json!({"script": script}),
        Some(&json!({"allow_network": true})),
        &[("CHENG_POLICY", policy.to_str().unwrap())],
    );
    let stdout = out["stdout"].as_str().unwrap_or("");
    assert!(
        stdout.contains("direct=7\n") && stdout.ends_with("reached"),
        "{out} {stderr}"
    );
    assert!(hit.load(Ordering::SeqCst));
    assert_eq!(
        out["metrics"]["network"]["attempts"][0]["outcome"], "connected",
        "{out}"
    );
}

/// The rlimits are set by cheng's init step inside the sandbox (bwrap itself is started without
/// them): the script sees every one, at the smallest memory_mb too.
#[test]
fn the_init_step_applies_every_rlimit() {
    if !bwrap_works() {
        return;
    }
    let (_d, ws) = temp_workspace();
    let script = "grep -E '^Max (address space|processes|file size|open files|core file size)' /proc/self/limits";
    for memory_mb in [16u64, 200] {
        // The author's config raises the ceiling (128 by default) for the larger value.
        let config = json!({"memory_mb": memory_mb}).to_string();
        let (code, out, stderr) = run_node(
            "tools/code_shell",
            &ws,
            &json!({"script": script, "memory_mb": memory_mb}),
            &["--config", &config],
        );
        assert_eq!(code, 0, "memory_mb={memory_mb}: {out} {stderr}");
        let text = out["stdout"].as_str().unwrap_or("");
        let row = |name: &str| -> Vec<String> {
            let line = text
                .lines()
                .find(|l| l.starts_with(name))
                .unwrap_or_else(|| panic!("{name} missing: {text}"));
            line[name.len()..]
                .split_whitespace()
                .take(2)
                .map(str::to_string)
                .collect()
        };
        let bytes = (memory_mb << 20).to_string();
        assert_eq!(row("Max address space"), [bytes.clone(), bytes], "{text}");
        assert_eq!(row("Max processes"), ["256", "256"], "{text}");
        assert_eq!(row("Max open files"), ["1024", "1024"], "{text}");
        assert_eq!(row("Max file size"), ["1073741824", "1073741824"], "{text}");
        assert_eq!(row("Max core file size"), ["0", "0"], "{text}");
    }
}

#[test]
fn a_memory_hog_under_the_init_step_fails_with_memory_limit() {
    if !bwrap_works() {
        return;
    }
    let (_d, ws) = temp_workspace();
    let input = json!({"script": "head -c 400000000 /dev/zero | tail -c 300000000 > /dev/null", "memory_mb": 64});
    let (code, out, stderr) = run_node("tools/code_shell", &ws, &input, &[]);
    assert_eq!(code, 1, "{out} {stderr}");
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_MEMORY_LIMIT", "{out}");
    assert_eq!(
        out["metrics"]["limits"]["memory"],
        "RLIMIT_AS 64 MiB (address space, not resident memory)"
    );
}
