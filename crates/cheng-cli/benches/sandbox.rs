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

#![allow(clippy::unwrap_used, clippy::expect_used)]

use cheng_node::{Decision, Node, RunContext};
use cheng_nodes_code::{python::CodePython, shell::CodeShell};
use cheng_sandbox::{seccomp, Sandbox, SandboxRequest};
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
    std::env::var("CHENG_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60)
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
        cmd.args(&self.args)
            .env_clear()
            .envs(self.env.iter().cloned())
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        let mut fds: Vec<(OwnedFd, RawFd)> = Vec::new();
        if self.seccomp {
            fds.push((
                seccomp::program_fd(false).expect("seccomp program"),
                seccomp::SECCOMP_FD,
            ));
        }
        for (path, to) in &self.files {
            fds.push((
                OwnedFd::from(std::fs::File::open(path).expect("copied file opens")),
                *to,
            ));
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
        let took = start.elapsed();
        assert!(
            status.success(),
            "{} failed: {status}",
            self.program.display()
        );
        drop(fds);
        reap_orphans();
        took
    }
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
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
    Bare {
        program: bwrap.to_path_buf(),
        args: args.to_vec(),
        env,
        seccomp: true,
        files: sandbox.files().to_vec(),
    }
}

/// The own line with the chain inside (init step, setpriv …) replaced by `command`.
fn own_line_running(sandbox: &Sandbox, env: Vec<(OsString, OsString)>, command: &[&str]) -> Bare {
    let mut bare = own_line(sandbox, env);
    let end = bare
        .args
        .iter()
        .position(|a| a == "--")
        .expect("-- before the command");
    bare.args.truncate(end + 1);
    bare.args.extend(command.iter().map(OsString::from));
    bare
}

fn minimal_line() -> Bare {
    Bare::plain(
        "bwrap",
        &[
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--unshare-pid",
            "--unshare-net",
            "--unshare-ipc",
            "--unshare-uts",
            "--new-session",
            "--die-with-parent",
            "true",
        ],
    )
}

/// Waits for every orphan that came back to this process (a subreaper, see `main`): bwrap
/// returns as soon as the sandboxed command has exited, before its pid 1 is reaped, and that
/// process's CPU time (and everything it reaped) only counts once it is waited for. Not part of
/// the wall time (a person's bwrap line returns when bwrap does).
fn reap_orphans() {
    loop {
        // SAFETY: waitpid with a null status pointer; -1 and ECHILD end the loop.
        if unsafe { libc::waitpid(-1, std::ptr::null_mut(), 0) } < 0 {
            break;
        }
    }
}

/// CPU time (user + system) of this process and of every child it has waited for, in ms: the
/// children's share covers everything below them that was waited for in turn (bwrap, the
/// sandbox, cheng's reaper), so a delta around one call is that call's CPU time.
fn cpu_ms() -> f64 {
    let total = |who| {
        // SAFETY: getrusage fills a plain struct.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: as above; the pointer is valid for the call.
        unsafe { libc::getrusage(who, &mut ru) };
        let tv = |t: libc::timeval| t.tv_sec as f64 * 1000.0 + t.tv_usec as f64 / 1000.0;
        tv(ru.ru_utime) + tv(ru.ru_stime)
    };
    total(libc::RUSAGE_SELF) + total(libc::RUSAGE_CHILDREN)
}

/// Wall and CPU ms per call of one measurement.
#[derive(Default)]
struct Series {
    wall: Vec<f64>,
    cpu: Vec<f64>,
}

/// One named measurement: a call returning its wall time in ms.
type Job<'a> = (&'a str, Box<dyn FnMut() -> f64 + 'a>);

/// Runs every measurement once per round, in an order that rotates every round.
fn interleave(rounds: usize, mut jobs: Vec<Job<'_>>) -> Vec<(String, Series)> {
    // Warm up (probe, page cache, interpreter lookup).
    for (_, job) in jobs.iter_mut() {
        job();
    }
    let mut out: Vec<(String, Series)> = jobs
        .iter()
        .map(|(name, _)| (name.to_string(), Series::default()))
        .collect();
    let n = jobs.len();
    for round in 0..rounds {
        for k in 0..n {
            let i = (round + k) % n;
            let before = cpu_ms();
            let took = (jobs[i].1)();
            out[i].1.cpu.push(cpu_ms() - before);
            out[i].1.wall.push(took);
        }
    }
    out
}

fn get<'a>(results: &'a [(String, Series)], name: &str) -> &'a Series {
    static EMPTY: Series = Series {
        wall: Vec::new(),
        cpu: Vec::new(),
    };
    results
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v)
        .unwrap_or(&EMPTY)
}

fn main() {
    // Like `cheng`: this binary can be the sandbox's init step, and the helper built beside
    // `cheng` is what runs inside.
    cheng_exec::helper::use_helper(HELPER);
    cheng_sandbox::init::run_if_requested();
    // Orphans of the bare runs come back here to be reaped and counted (see `reap_orphans`).
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().canonicalize().expect("canonical");
    let (_io_guard, io) = cheng_nodes_code::sandboxed::io_dir().expect("io dir");
    let n = rounds();

    // code_shell `true`.
    let command: Vec<OsString> = vec![
        "/bin/sh".into(),
        "-c".into(),
        "true".into(),
        "code_shell".into(),
    ];
    let sandbox = sandbox_for(&ws, command, vec![], &io);
    let env: Vec<(OsString, OsString)> = SandboxRequest::new(ws.clone(), vec!["true".into()]).env;
    let own = own_line(&sandbox, env.clone());
    let view_true = own_line_running(&sandbox, env.clone(), &["/bin/true"]);
    let view_sh = own_line_running(
        &sandbox,
        env.clone(),
        &["/bin/sh", "-c", "true", "code_shell"],
    );
    // The same without the seccomp filter: what the filter costs bwrap and every system call inside.
    let mut view_true_no_filter = view_true.clone();
    view_true_no_filter.seccomp = false;
    if let Some(i) = view_true_no_filter
        .args
        .iter()
        .position(|a| a == "--seccomp")
    {
        view_true_no_filter.args.drain(i..i + 2);
    }
    // ... and also without the copied files (each `--perms 444 --file N DEST`).
    let mut view_true_no_copies = view_true_no_filter.clone();
    while let Some(i) = view_true_no_copies.args.iter().position(|a| a == "--file") {
        view_true_no_copies.args.drain(i - 2..i + 3);
    }
    view_true_no_copies.files.clear();
    let minimal = minimal_line();
    // The minimal line plus one thing the node's line has: its environment, the cgroup
    // namespace, the capability flags.
    let mut minimal_env = minimal.clone();
    minimal_env.env = env.clone();
    let with_flags = |flags: &[&str]| {
        let mut line = minimal_line();
        let at = line.args.len() - 1;
        line.args.splice(at..at, flags.iter().map(OsString::from));
        line
    };
    let minimal_cgroup = with_flags(&["--unshare-cgroup-try"]);
    let minimal_caps = with_flags(&[
        "--cap-drop",
        "ALL",
        "--cap-add",
        "CAP_SETUID",
        "--cap-add",
        "CAP_SETGID",
        "--cap-add",
        "CAP_SETPCAP",
        "--cap-add",
        "CAP_DAC_READ_SEARCH",
    ]);
    let true_bin = Bare::plain("/bin/true", &[]);
    let helper_true = Bare::plain(
        HELPER,
        &[
            "__sandbox-init",
            "--rlimit",
            "nofile=1024",
            "--write",
            "/tmp",
            "--",
            "/bin/true",
        ],
    );
    let cheng_true = Bare::plain(
        CHENG,
        &[
            "__sandbox-init",
            "--rlimit",
            "nofile=1024",
            "--write",
            "/tmp",
            "--",
            "/bin/true",
        ],
    );
    let sh_true = Bare::plain("/bin/sh", &["-c", "true"]);
    let ws_arg = ws.to_str().expect("utf-8").to_string();
    let cli = Bare::plain(
        CHENG,
        &[
            "run",
            "tools/code_shell",
            "--workspace",
            &ws_arg,
            "--input",
            r#"{"script":"true"}"#,
        ],
    );
    let ctx = RunContext::for_workspace(CodeShell.spec().id, ws.clone(), Decision::Approved);
    let mut setup = Vec::new();
    let results = interleave(
        n,
        vec![
            (
                "node",
                Box::new(|| {
                    let start = Instant::now();
                    let out = rt
                        .block_on(
                            CodeShell.run(&ctx, defaults(&CodeShell, json!({"script": "true"}))),
                        )
                        .expect("node runs");
                    let took = ms(start.elapsed());
                    assert_eq!(out["success"], true, "{out:?}");
                    setup.push(
                        out["metrics"]["sandbox_setup_ms"]
                            .as_f64()
                            .unwrap_or(f64::NAN),
                    );
                    took
                }),
            ),
            ("own", Box::new(|| ms(own.run()))),
            ("minimal", Box::new(|| ms(minimal.run()))),
            ("view true", Box::new(|| ms(view_true.run()))),
            ("view sh", Box::new(|| ms(view_sh.run()))),
            (
                "view true no filter",
                Box::new(|| ms(view_true_no_filter.run())),
            ),
            (
                "view true no filter no copies",
                Box::new(|| ms(view_true_no_copies.run())),
            ),
            ("minimal env", Box::new(|| ms(minimal_env.run()))),
            ("minimal cgroup", Box::new(|| ms(minimal_cgroup.run()))),
            ("minimal caps", Box::new(|| ms(minimal_caps.run()))),
            ("true", Box::new(|| ms(true_bin.run()))),
            ("helper true", Box::new(|| ms(helper_true.run()))),
            ("cheng true", Box::new(|| ms(cheng_true.run()))),
            ("sh true", Box::new(|| ms(sh_true.run()))),
            ("cli", Box::new(|| ms(cli.run()))),
        ],
    );
    let m = |name: &str| median(&get(&results, name).wall);
    let c = |name: &str| median(&get(&results, name).cpu);
    let (node, own_ms, minimal_ms) = (m("node"), m("own"), m("minimal"));
    println!("code_shell `true` (medians of {n}, interleaved):");
    println!("  node in process {node:.2} ms/call");
    println!(
        "  vs the minimal bwrap line {minimal_ms:.2} ms: {:.2}x (target <= 1.5x)",
        node / minimal_ms
    );
    println!(
        "  vs the node's own bwrap line {own_ms:.2} ms: {:.2}x (target <= 1.1x)",
        node / own_ms
    );
    println!("  `cheng run tools/code_shell` (CLI, a fresh process) {:.2} ms/call: {:.2}x the minimal line", m("cli"), m("cli") / minimal_ms);
    println!(
        "  CPU time (user + system, whole process tree): node {:.2} ms, minimal line {:.2} ms: {:.2}x; own line {:.2} ms: {:.2}x",
        c("node"),
        c("minimal"),
        c("node") / c("minimal"),
        c("own"),
        c("node") / c("own")
    );
    println!("  where the time goes (medians per call; each row a separate measurement):");
    println!("    {:<52} {:>8} {:>8}", "", "wall ms", "CPU ms");
    let rows = [
        ("minimal bwrap line, `true`", "minimal", None),
        (
            "+ the node's view (mounts, copies, seccomp), `true`",
            "view true",
            Some("minimal"),
        ),
        (
            "+ `sh -c true` instead of `true`",
            "view sh",
            Some("view true"),
        ),
        (
            "+ the init step (= the node's own line)",
            "own",
            Some("view sh"),
        ),
        ("+ cheng in process (= the node)", "node", Some("own")),
    ];
    for (label, name, prev) in rows {
        match prev {
            None => println!("    {label:<52} {:>8.2} {:>8.2}", m(name), c(name)),
            Some(p) => println!(
                "    {label:<52} {:>+8.2} {:>+8.2}   (total {:.2} / {:.2})",
                m(name) - m(p),
                c(name) - c(p),
                m(name),
                c(name)
            ),
        }
    }
    println!(
        "    cheng's setup before bwrap starts (metrics.sandbox_setup_ms): {:.2} ms",
        median(&setup)
    );
    println!(
        "    of the view: the seccomp filter {:+.2} ms wall, {:+.2} ms CPU (the view without it: {:.2} / {:.2})",
        m("view true") - m("view true no filter"),
        c("view true") - c("view true no filter"),
        m("view true no filter"),
        c("view true no filter")
    );
    println!(
        "    of the view: the copied files {:+.2} ms CPU (the view without them or the filter: {:.2})",
        c("view true no filter") - c("view true no filter no copies"),
        c("view true no filter no copies")
    );
    println!(
        "    the minimal line plus one piece of the node's line (CPU ms against the minimal line):"
    );
    for (label, name) in [
        ("the node's environment (LANG=C.UTF-8 …)", "minimal env"),
        ("--unshare-cgroup-try", "minimal cgroup"),
        (
            "--cap-drop ALL and the root case's --cap-add",
            "minimal caps",
        ),
    ] {
        println!("      {label:<50} {:>+8.2}", c(name) - c("minimal"));
    }
    println!("    outside any sandbox (wall / CPU ms):");
    for (label, name) in [
        (
            "`cheng-sandbox-init __sandbox-init … -- /bin/true`",
            "helper true",
        ),
        (
            "`cheng __sandbox-init … -- /bin/true` (multi-call)",
            "cheng true",
        ),
        ("`/bin/true`", "true"),
        ("`sh -c true`", "sh true"),
    ] {
        println!("      {label:<52} {:>6.2} {:>6.2}", m(name), c(name));
    }
    let shown: Vec<String> = own
        .args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    println!("  own line: {} {}", own.program.display(), shown.join(" "));
    // Binds and tmpfs mounts are mount(2) calls in bwrap (a bind also a remount and a scan of the
    // mount table); --file, --dir and --symlink only create entries in the view's root.
    let count = |ops: &[&str]| {
        sandbox
            .mounts()
            .iter()
            .filter(|m| ops.contains(&m.op))
            .count()
    };
    println!(
        "  view operations in the own line: {} ({} binds, {} tmpfs, {} remounts; {} copied files, {} directories, {} symlinks; bwrap's /dev and /proc besides)",
        sandbox.mounts().len(),
        count(&["--bind", "--ro-bind", "--ro-bind-try"]),
        count(&["--tmpfs"]),
        count(&["--remount-ro"]),
        count(&["--file"]),
        count(&["--dir"]),
        count(&["--symlink"]),
    );

    // code_python: node against its own line.
    let out = Command::new("python3")
        .args([
            "-I",
            "-c",
            "import sys; print(sys.executable); print(sys.base_prefix)",
        ])
        .output()
        .expect("python3");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut lines = text.lines();
    let exe = PathBuf::from(lines.next().unwrap_or("/usr/bin/python3"))
        .canonicalize()
        .expect("python3 path");
    let prefix = PathBuf::from(lines.next().unwrap_or("/usr"))
        .canonicalize()
        .expect("python3 prefix");
    let extra = if prefix.starts_with("/usr") {
        vec![]
    } else {
        vec![prefix]
    };
    let script = "result = sum([1, 2, 3])";
    let sandbox = sandbox_for(
        &ws,
        vec![exe.into(), "-I".into(), "-c".into(), script.into()],
        extra,
        &io,
    );
    let own = own_line(&sandbox, env);
    let ctx = RunContext::for_workspace(CodePython.spec().id, ws.clone(), Decision::Approved);
    let results = interleave(
        n.min(30),
        vec![
            (
                "node",
                Box::new(|| {
                    let start = Instant::now();
                    let out = rt
                        .block_on(
                            CodePython.run(&ctx, defaults(&CodePython, json!({"script": script}))),
                        )
                        .expect("node runs");
                    assert_eq!(out["success"], true, "{out:?}");
                    ms(start.elapsed())
                }),
            ),
            ("own", Box::new(|| ms(own.run()))),
            ("minimal", Box::new(|| ms(minimal.run()))),
        ],
    );
    let m = |name: &str| median(&get(&results, name).wall);
    println!(
        "code_python `{script}`: node {:.2} ms/call, own bwrap line {:.2} ms ({:.2}x, target <= 1.1x), minimal bwrap line `true` {:.2} ms",
        m("node"),
        m("own"),
        m("node") / m("own"),
        m("minimal")
    );
}
