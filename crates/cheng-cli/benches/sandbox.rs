//! code_shell and code_python against two bubblewrap baselines, and where code_shell's time goes.
//!
//! `cargo bench -p cheng-cli --bench sandbox` (`CHENG_BENCH_ROUNDS`, default 60).
//!
//! Baselines, each started with `std::process::Command` and waited for:
//! - **minimal**: the line a person would type instead, `bwrap --ro-bind / / --dev /dev --proc
//!   /proc --unshare-pid --unshare-net --unshare-ipc --unshare-uts --new-session
//!   --die-with-parent true` (target: code_shell `true` in process at most 1.5x this);
//! - **own**: the exact bwrap command line the node builds (`Sandbox::command_line`, the init
//!   step included), given the seccomp program and the copied files on their descriptors as
//!   the node gives them (target: at most 1.1x this).
//!
//! This binary registers itself as a sandbox launcher the way `cheng` does and names the
//! `cheng-sandbox-init` helper cargo built beside `cheng` (as `cheng` finds it next to itself).
//! Every measurement alternates with the others round by round, so that load from other
//! processes hits all alike; figures are medians per call. The phase table splits the node's
//! time: bwrap with the minimal view, the node's view, the init step, `sh`, and cheng's own
//! work (setup, reaper, capture, output).

use cheng_exec::sandbox::{seccomp, Sandbox, SandboxRequest};
use cheng_node::{Decision, Node, RunContext};
use cheng_nodes_code::{python::CodePython, shell::CodeShell};
use serde_json::{json, Value};
use std::ffi::OsString;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const HELPER: &str = env!("CARGO_BIN_EXE_cheng-sandbox-init");
const CHENG: &str = env!("CARGO_BIN_EXE_cheng");

fn rounds() -> usize {
    std::env::var("CHENG_BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(60)
}

fn defaults(node: &dyn Node, input: Value) -> cheng_node::Values {
    let mut values = input.as_object().cloned().unwrap_or_default();
    for port in node.spec().inputs {
        if let (false, Some(d)) = (values.contains_key(port.name), port.default_value()) {
            values.insert(port.name.to_string(), d);
        }
    }
    values
}

/// A bwrap (or other) command line run bare, with descriptors handed over as the node does.
#[derive(Clone)]
struct Bare {
    program: PathBuf,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    /// Seccomp program on descriptor 3.
    seccomp: bool,
    /// Files opened and handed over at the given numbers.
    files: Vec<(PathBuf, RawFd)>,
}

impl Bare {
    fn plain(program: &str, args: &[&str]) -> Bare {
        Bare {
            program: program.into(),
            args: args.iter().map(OsString::from).collect(),
            env: vec![("PATH".into(), "/usr/bin:/bin".into())],
            seccomp: false,
            files: Vec::new(),
        }
    }

    fn run(&self) -> Duration {
        let start = Instant::now();
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args).env_clear().envs(self.env.iter().cloned()).stdin(Stdio::null()).stdout(Stdio::null());
        let mut fds: Vec<(OwnedFd, RawFd)> = Vec::new();
        if self.seccomp {
            fds.push((seccomp::program_fd().expect("seccomp program"), seccomp::SECCOMP_FD));
        }
        for (path, to) in &self.files {
            fds.push((OwnedFd::from(std::fs::File::open(path).expect("copied file opens")), *to));
        }
        // Sources moved above every target first, so that no dup2 overwrites a later source.
        let pairs: Vec<(RawFd, RawFd)> = fds.iter().map(|(fd, to)| (fd.as_raw_fd(), *to)).collect();
        // SAFETY: between fork and exec only fcntl(F_DUPFD) and dup2, which are async-signal-safe.
        unsafe {
            cmd.pre_exec(move || {
                let mut moved = [0; 64];
                for (i, (from, _)) in pairs.iter().enumerate() {
                    moved[i] = libc::fcntl(*from, libc::F_DUPFD, 100);
                    if moved[i] < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                for (i, (_, to)) in pairs.iter().enumerate() {
                    if libc::dup2(moved[i], *to) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        let status = cmd.status().expect("runs");
        assert!(status.success(), "{} failed: {status}", self.program.display());
        drop(fds);
        start.elapsed()
    }
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn sandbox_for(ws: &Path, command: Vec<OsString>, extra_ro: Vec<PathBuf>, io: &Path) -> Sandbox {
    let mut req = SandboxRequest::new(ws.to_path_buf(), command);
    req.io_dir = Some(io.to_path_buf());
    req.extra_ro = extra_ro;
    Sandbox::prepare(req).expect("sandbox available (apt-get install bubblewrap)")
}

fn own_line(sandbox: &Sandbox, env: Vec<(OsString, OsString)>) -> Bare {
    let (bwrap, args) = sandbox.command_line();
    Bare { program: bwrap.to_path_buf(), args: args.to_vec(), env, seccomp: true, files: sandbox.files().to_vec() }
}

/// The own line with the chain inside (init step, setpriv …) replaced by `command`.
fn own_line_running(sandbox: &Sandbox, env: Vec<(OsString, OsString)>, command: &[&str]) -> Bare {
    let mut bare = own_line(sandbox, env);
    let end = bare.args.iter().position(|a| a == "--").expect("-- before the command");
    bare.args.truncate(end + 1);
    bare.args.extend(command.iter().map(OsString::from));
    bare
}

fn minimal_line() -> Bare {
    Bare::plain(
        "bwrap",
        &[
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--unshare-net", "--unshare-ipc",
            "--unshare-uts", "--new-session", "--die-with-parent", "true",
        ],
    )
}

/// Runs every measurement once per round, in an order that rotates every round.
fn interleave(rounds: usize, mut jobs: Vec<(&str, Box<dyn FnMut() -> f64 + '_>)>) -> Vec<(String, Vec<f64>)> {
    // Warm up (probe, page cache, interpreter lookup).
    for (_, job) in jobs.iter_mut() {
        job();
    }
    let mut out: Vec<(String, Vec<f64>)> = jobs.iter().map(|(name, _)| (name.to_string(), Vec::new())).collect();
    let n = jobs.len();
    for round in 0..rounds {
        for k in 0..n {
            let i = (round + k) % n;
            let took = (jobs[i].1)();
            out[i].1.push(took);
        }
    }
    out
}

fn get<'a>(results: &'a [(String, Vec<f64>)], name: &str) -> &'a [f64] {
    results.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_slice()).unwrap_or(&[])
}

fn main() {
    // Like `cheng`: this binary can be the sandbox's init step, and the helper built beside
    // `cheng` is what runs inside.
    cheng_exec::sandbox::init::use_helper(HELPER);
    cheng_exec::sandbox::init::run_if_requested();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().canonicalize().expect("canonical");
    let (_io_guard, io) = cheng_nodes_code::sandboxed::io_dir().expect("io dir");
    let n = rounds();

    // code_shell `true`.
    let command: Vec<OsString> = vec!["/bin/sh".into(), "-c".into(), "true".into(), "code_shell".into()];
    let sandbox = sandbox_for(&ws, command, vec![], &io);
    let env: Vec<(OsString, OsString)> = SandboxRequest::new(ws.clone(), vec!["true".into()]).env;
    let own = own_line(&sandbox, env.clone());
    let view_true = own_line_running(&sandbox, env.clone(), &["/bin/true"]);
    let view_sh = own_line_running(&sandbox, env.clone(), &["/bin/sh", "-c", "true", "code_shell"]);
    let minimal = minimal_line();
    let true_bin = Bare::plain("/bin/true", &[]);
    let helper_true = Bare::plain(HELPER, &["__sandbox-init", "--rlimit", "nofile=1024", "--write", "/tmp", "--", "/bin/true"]);
    let cheng_true = Bare::plain(CHENG, &["__sandbox-init", "--rlimit", "nofile=1024", "--write", "/tmp", "--", "/bin/true"]);
    let sh_true = Bare::plain("/bin/sh", &["-c", "true"]);
    let ws_arg = ws.to_str().expect("utf-8").to_string();
    let cli = Bare::plain(CHENG, &["run", "tools/code_shell", "--workspace", &ws_arg, "--input", r#"{"script":"true"}"#]);
    let ctx = RunContext::for_workspace(CodeShell.spec().id, ws.clone(), Decision::Approved);
    let mut setup = Vec::new();
    let results = interleave(
        n,
        vec![
            ("node", Box::new(|| {
                let start = Instant::now();
                let out = rt.block_on(CodeShell.run(&ctx, defaults(&CodeShell, json!({"script": "true"})))).expect("node runs");
                let took = ms(start.elapsed());
                assert_eq!(out["success"], true, "{out:?}");
                setup.push(out["metrics"]["sandbox_setup_ms"].as_f64().unwrap_or(f64::NAN));
                took
            })),
            ("own", Box::new(|| ms(own.run()))),
            ("minimal", Box::new(|| ms(minimal.run()))),
            ("view true", Box::new(|| ms(view_true.run()))),
            ("view sh", Box::new(|| ms(view_sh.run()))),
            ("true", Box::new(|| ms(true_bin.run()))),
            ("helper true", Box::new(|| ms(helper_true.run()))),
            ("cheng true", Box::new(|| ms(cheng_true.run()))),
            ("sh true", Box::new(|| ms(sh_true.run()))),
            ("cli", Box::new(|| ms(cli.run()))),
        ],
    );
    let m = |name: &str| median(get(&results, name));
    let (node, own_ms, minimal_ms) = (m("node"), m("own"), m("minimal"));
    println!("code_shell `true` (medians of {n}, interleaved):");
    println!("  node in process {node:.2} ms/call");
    println!("  vs the minimal bwrap line {minimal_ms:.2} ms: {:.2}x (target <= 1.5x)", node / minimal_ms);
    println!("  vs the node's own bwrap line {own_ms:.2} ms: {:.2}x (target <= 1.1x)", node / own_ms);
    println!("  `cheng run tools/code_shell` (CLI, a fresh process) {:.2} ms/call: {:.2}x the minimal line", m("cli"), m("cli") / minimal_ms);
    println!("  where the time goes (ms, medians; each row a separate measurement):");
    println!("    minimal bwrap line, `true`                         {minimal_ms:6.2}");
    println!("    + the node's view (own mounts, seccomp), `true`    {:6.2}  (+{:.2})", m("view true"), m("view true") - minimal_ms);
    println!("    + `sh -c true` instead of `true`                   {:6.2}  (+{:.2})", m("view sh"), m("view sh") - m("view true"));
    println!("    + the init step (own line, complete)               {:6.2}  (+{:.2})", own_ms, own_ms - m("view sh"));
    println!("    + cheng in process (setup {:.2} ms, reaper, capture) {:6.2}  (+{:.2})", median(&setup), node, node - own_ms);
    println!(
        "    init step outside any sandbox: helper {:.2} ms, cheng multi-call {:.2} ms, `/bin/true` alone {:.2} ms, `sh -c true` {:.2} ms",
        m("helper true"),
        m("cheng true"),
        m("true"),
        m("sh true")
    );
    let shown: Vec<String> = own.args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
    println!("  own line: {} {}", own.program.display(), shown.join(" "));
    println!("  mount operations in the own line: {}", sandbox.mounts().len());

    // code_python: node against its own line.
    let out = Command::new("python3")
        .args(["-I", "-c", "import sys; print(sys.executable); print(sys.base_prefix)"])
        .output()
        .expect("python3");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut lines = text.lines();
    let exe = PathBuf::from(lines.next().unwrap_or("/usr/bin/python3")).canonicalize().expect("python3 path");
    let prefix = PathBuf::from(lines.next().unwrap_or("/usr")).canonicalize().expect("python3 prefix");
    let extra = if prefix.starts_with("/usr") { vec![] } else { vec![prefix] };
    let script = "result = sum([1, 2, 3])";
    let sandbox = sandbox_for(&ws, vec![exe.into(), "-I".into(), "-c".into(), script.into()], extra, &io);
    let own = own_line(&sandbox, env);
    let ctx = RunContext::for_workspace(CodePython.spec().id, ws.clone(), Decision::Approved);
    let results = interleave(
        n.min(30),
        vec![
            ("node", Box::new(|| {
                let start = Instant::now();
                let out = rt.block_on(CodePython.run(&ctx, defaults(&CodePython, json!({"script": script})))).expect("node runs");
                assert_eq!(out["success"], true, "{out:?}");
                ms(start.elapsed())
            })),
            ("own", Box::new(|| ms(own.run()))),
            ("minimal", Box::new(|| ms(minimal.run()))),
        ],
    );
    let m = |name: &str| median(get(&results, name));
    println!(
        "code_python `{script}`: node {:.2} ms/call, own bwrap line {:.2} ms ({:.2}x, target <= 1.1x), minimal bwrap line `true` {:.2} ms",
        m("node"),
        m("own"),
        m("node") / m("own"),
        m("minimal")
    );
}
