//! code_shell and code_python against the bare bwrap command line they build, in one run.
//!
//! `cargo bench -p cheng-nodes-code --bench sandbox`. The bare baseline is the exact bwrap argv
//! from `Sandbox::command_line` (including the init step, since this binary registers itself as
//! the sandbox launcher the way `cheng` does), started with `std::process::Command` (given the
//! seccomp program on descriptor 3, as bwrap's `--seccomp 3` expects) and waited for. Node and bare calls alternate (the order flips every round) so that load from other
//! processes on the machine hits both alike; the figures are medians per call, and the ratio is
//! the ratio of the medians (target: at most 1.1x). The breakdown shows where the node's time
//! goes: `setup` is cheng's work before bwrap starts, `process` bwrap's lifetime as the node saw it.
// A benchmark: `unwrap`/`expect` are allowed here (denied in library code, [workspace.lints]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use cheng_exec::sandbox::{seccomp, Sandbox, SandboxRequest};
use cheng_node::{Decision, Node, RunContext};
use cheng_nodes_code::{python::CodePython, shell::CodeShell};
use serde_json::{json, Value};
use std::ffi::OsString;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ROUNDS: usize = 60;

fn defaults(node: &dyn Node, input: Value) -> cheng_node::Values {
    let mut values = input.as_object().cloned().unwrap_or_default();
    for port in node.spec().inputs {
        if let (false, Some(d)) = (values.contains_key(port.name), port.default_value()) {
            values.insert(port.name.to_string(), d);
        }
    }
    values
}

struct Bare {
    bwrap: PathBuf,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
}

impl Bare {
    fn run(&self) -> Duration {
        let start = Instant::now();
        let mut cmd = Command::new(&self.bwrap);
        cmd.args(&self.args).env_clear().envs(self.env.iter().cloned()).stdin(Stdio::null()).stdout(Stdio::null());
        // The seccomp program on descriptor 3 (`--seccomp 3`), a fresh one per start as the node does.
        let filter = seccomp::program_fd().expect("seccomp program");
        let from = filter.as_raw_fd();
        // SAFETY: between fork and exec only dup2, which is async-signal-safe.
        unsafe {
            cmd.pre_exec(move || {
                if libc::dup2(from, seccomp::SECCOMP_FD) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let status = cmd.status().expect("bwrap runs");
        assert!(status.success());
        start.elapsed()
    }
}

#[derive(Default)]
struct Samples {
    node: Vec<f64>,
    bare: Vec<f64>,
    setup: Vec<f64>,
    process: Vec<f64>,
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

fn measure(rt: &tokio::runtime::Runtime, node: &dyn Node, ws: &Path, input: Value, bare: &Bare) -> Samples {
    let ctx = RunContext::for_workspace(node.spec().id, ws.to_path_buf(), Decision::Approved);
    let run_node = || {
        let start = Instant::now();
        let out = rt.block_on(node.run(&ctx, defaults(node, input.clone()))).expect("node runs");
        (start.elapsed(), out)
    };
    // Warm up both (probe, interpreter lookup, page cache).
    let (_, first) = run_node();
    assert_eq!(first["success"], true, "{first:?}");
    bare.run();
    let mut s = Samples::default();
    for round in 0..ROUNDS {
        let node_once = |s: &mut Samples| {
            let (took, out) = run_node();
            s.node.push(ms(took));
            s.setup.push(out["metrics"]["sandbox_setup_ms"].as_f64().unwrap_or(f64::NAN));
            s.process.push(out["metrics"]["duration_ms"].as_f64().unwrap_or(f64::NAN));
        };
        if round % 2 == 0 {
            node_once(&mut s);
            s.bare.push(ms(bare.run()));
        } else {
            s.bare.push(ms(bare.run()));
            node_once(&mut s);
        }
    }
    s
}

fn report(name: &str, mut s: Samples, bare: &Bare) {
    let (node, bare_ms) = (median(&mut s.node), median(&mut s.bare));
    let ratio = node / bare_ms;
    println!("{name}: node {node:.2} ms/call, bare bwrap {bare_ms:.2} ms/call, ratio {ratio:.2}x (medians of {ROUNDS}, interleaved; target <= 1.1x)");
    println!(
        "  node breakdown (medians): setup {:.2} ms, bwrap process {:.0} ms (whole ms)",
        median(&mut s.setup),
        median(&mut s.process)
    );
    let shown: Vec<String> = bare.args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
    println!("  bare command: {} {}", bare.bwrap.display(), shown.join(" "));
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn prepared(ws: &Path, command: Vec<OsString>, extra_ro: Vec<PathBuf>, io: &Path) -> Bare {
    let mut req = SandboxRequest::new(ws.to_path_buf(), command);
    req.io_dir = Some(io.to_path_buf());
    req.extra_ro = extra_ro;
    let env = req.env.clone();
    let sandbox = Sandbox::prepare(req).expect("sandbox available (apt-get install bubblewrap)");
    let (bwrap, args) = sandbox.command_line();
    Bare { bwrap: bwrap.to_path_buf(), args: args.to_vec(), env }
}

fn main() {
    // Like `cheng`: this binary is the sandbox's init step (uid drop, RLIMIT_NPROC, Landlock).
    cheng_exec::sandbox::init::run_if_requested();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().canonicalize().expect("canonical");
    let (_io_guard, io) = cheng_nodes_code::sandboxed::io_dir().expect("io dir");

    let bare = prepared(&ws, vec!["/bin/sh".into(), "-c".into(), "true".into(), "code_shell".into()], vec![], &io);
    let samples = measure(&rt, &CodeShell, &ws, json!({"script": "true"}), &bare);
    report("code_shell `true`", samples, &bare);

    // Same interpreter and prefix the node resolves.
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
    let bare = prepared(&ws, vec![exe.into(), "-I".into(), "-c".into(), script.into()], extra, &io);
    let samples = measure(&rt, &CodePython, &ws, json!({"script": script}), &bare);
    report("code_python `result = sum([1, 2, 3])`", samples, &bare);
}
