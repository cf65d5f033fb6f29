//! code_shell and code_python against the bare bwrap command line they build, in one run.
//!
//! `cargo bench -p cheng-nodes-code --bench sandbox`. Prints the mean per call of each and the
//! ratio (target: at most 1.1x). The bare baseline is the exact bwrap argv from
//! `Sandbox::command_line`, started with `std::process::Command` and waited for.

use cheng_exec::sandbox::{Sandbox, SandboxRequest};
use cheng_node::{Decision, Node, RunContext};
use cheng_nodes_code::{python::CodePython, shell::CodeShell};
use serde_json::{json, Value};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ROUNDS: usize = 40;

fn defaults(node: &dyn Node, input: Value) -> cheng_node::Values {
    let mut values = input.as_object().cloned().unwrap_or_default();
    for port in node.spec().inputs {
        if let (false, Some(d)) = (values.contains_key(port.name), port.default_value()) {
            values.insert(port.name.to_string(), d);
        }
    }
    values
}

fn node_mean(rt: &tokio::runtime::Runtime, node: &dyn Node, ws: &Path, input: Value) -> Duration {
    let ctx = RunContext::for_workspace(node.spec().id, ws.to_path_buf(), Decision::Approved);
    let run = || rt.block_on(node.run(&ctx, defaults(node, input.clone())));
    let first = run().expect("node runs");
    assert_eq!(first["success"], true, "{first:?}");
    let start = Instant::now();
    for _ in 0..ROUNDS {
        let _ = run();
    }
    start.elapsed() / ROUNDS as u32
}

fn bare_mean(bwrap: &Path, args: &[OsString], env: &[(OsString, OsString)]) -> Duration {
    let run = || {
        Command::new(bwrap).args(args).env_clear().envs(env.iter().cloned()).stdin(Stdio::null()).stdout(Stdio::null()).status()
    };
    assert!(run().expect("bwrap runs").success());
    let start = Instant::now();
    for _ in 0..ROUNDS {
        let _ = run();
    }
    start.elapsed() / ROUNDS as u32
}

fn report(name: &str, node: Duration, bare: Duration, argv: &(PathBuf, Vec<OsString>)) {
    let ratio = node.as_secs_f64() / bare.as_secs_f64();
    println!("{name}: node {:.2} ms/call, bare bwrap {:.2} ms/call, ratio {ratio:.2}x (target <= 1.1x)", ms(node), ms(bare));
    let shown: Vec<String> = argv.1.iter().map(|a| a.to_string_lossy().into_owned()).collect();
    println!("  bare command: {} {}", argv.0.display(), shown.join(" "));
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn prepared(ws: &Path, command: Vec<OsString>, extra_ro: Vec<PathBuf>, io: &Path) -> (PathBuf, Vec<OsString>, Vec<(OsString, OsString)>) {
    let mut req = SandboxRequest::new(ws.to_path_buf(), command);
    req.io_dir = Some(io.to_path_buf());
    req.extra_ro = extra_ro;
    let env = req.env.clone();
    let sandbox = Sandbox::prepare(req).expect("sandbox available (apt-get install bubblewrap)");
    let (bwrap, args) = sandbox.command_line();
    (bwrap.to_path_buf(), args.to_vec(), env)
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().canonicalize().expect("canonical");
    let (_io_guard, io) = cheng_nodes_code::sandboxed::io_dir().expect("io dir");

    let (bwrap, args, env) = prepared(&ws, vec!["/bin/sh".into(), "-c".into(), "true".into(), "code_shell".into()], vec![], &io);
    let node = node_mean(&rt, &CodeShell, &ws, json!({"script": "true"}));
    let bare = bare_mean(&bwrap, &args, &env);
    report("code_shell `true`", node, bare, &(bwrap, args));

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
    let (bwrap, args, env) = prepared(&ws, vec![exe.into(), "-I".into(), "-c".into(), script.into()], extra, &io);
    let node = node_mean(&rt, &CodePython, &ws, json!({"script": script}));
    let bare = bare_mean(&bwrap, &args, &env);
    report("code_python `result = sum([1, 2, 3])`", node, bare, &(bwrap, args));
}
