//! Helpers shared by the CLI integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The repository root (for `fixtures/`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repo root")
}

pub fn fixtures() -> PathBuf {
    repo_root().join("fixtures")
}

/// A `cheng` command with a clean environment for the gates (tests set them explicitly), in the
/// C locale: cheng passes `LANG`/`LC_*` on to the commands it runs, and tests match their English
/// messages ("No such file or directory"), which another locale would translate.
pub fn cheng() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cheng"));
    cmd.env_remove("CHENG_ENABLE_CODE_PYTHON")
        .env_remove("CHENG_ENABLE_CODE_JS")
        .env_remove("CHENG_POLICY")
        .env("LANG", "C")
        .env("LC_ALL", "C")
        .env_remove("LANGUAGE")
        .stdin(Stdio::null());
    without_terminal(&mut cmd);
    cmd
}

/// Runs `cmd` in a session of its own, without a controlling terminal: cheng asks approvals on
/// /dev/tty when there is one, and tests run from a developer's terminal must not be asked.
pub fn without_terminal(cmd: &mut Command) {
    cheng_exec::session::without_controlling_terminal(cmd);
}

/// `cheng run NODE -w WS --input JSON [extra]` with the state directory (`--session` tables) at
/// `state`: exit code, stdout as JSON (null when it is not), stderr.
pub fn run_in(
    state: &Path,
    node: &str,
    ws: &Path,
    input: serde_json::Value,
    extra: &[&str],
) -> (i32, serde_json::Value, String) {
    let out = cheng()
        .env("XDG_STATE_HOME", state)
        .args([
            "run",
            node,
            "--workspace",
            ws.to_str().unwrap(),
            "--input",
            &input.to_string(),
        ])
        .args(extra)
        .output()
        .unwrap();
    let value = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (
        out.status.code().unwrap_or(-1),
        value,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Whether the official MCP Python SDK client (`mcp.Client`) imports; a test that needs it skips
/// without it, and fails under CI (see [`require_or_skip_that`]).
pub fn mcp_sdk_available() -> bool {
    let sdk = python_runs("import mcp, mcp_types; from mcp import Client");
    require_or_skip_that("the MCP Python SDK (pip install \"mcp>=2.3\")", sdk)
}

/// Whether `python3 -c CODE` succeeds (a module imports, say).
pub fn python_runs(code: &str) -> bool {
    Command::new("python3")
        .args(["-c", code])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A captured stream as text (lossy).
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs `cheng` with `args` and returns its output.
pub fn run_cheng(args: &[&str]) -> Output {
    cheng().args(args).output().expect("cheng binary runs")
}

/// `cheng run <node> --workspace <ws> --input <json> [extra...]`, stdout parsed as JSON.
pub fn run_node(
    node: &str,
    workspace: &Path,
    input: &serde_json::Value,
    extra: &[&str],
) -> (i32, serde_json::Value, String) {
    let input = input.to_string();
    let ws = workspace.to_str().expect("utf-8 workspace path");
    let mut args = vec!["run", node, "--workspace", ws, "--input", &input];
    args.extend_from_slice(extra);
    let out = run_cheng(&args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let value = serde_json::from_str(&stdout).unwrap_or(serde_json::Value::Null);
    (out.status.code().unwrap_or(-1), value, stderr)
}

pub use cheng_test_support::{
    copy_dir, eventually, git, none_left, pgrep, temp_workspace, KillOnDrop,
};

pub use cheng_test_support::{on_path, require_or_skip, require_or_skip_that};

/// Whether bubblewrap can create the sandbox here (see [`require_or_skip`]).
pub fn bwrap_works() -> bool {
    if !require_or_skip("bwrap") {
        return false;
    }
    let works = Command::new("bwrap")
        .args([
            "--unshare-all",
            "--die-with-parent",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "true",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    require_or_skip_that("a bubblewrap that can create namespaces", works)
}

/// Sends `signal` (`INT`, `KILL`, …) to process `pid` with kill(1), so the tests need no
/// `unsafe` (the workspace forbids it outside cheng-exec and cheng-sandbox). Whether kill(1) succeeded.
pub fn send_signal(pid: impl std::fmt::Display, signal: &str) -> bool {
    Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether this process runs as root: `/proc/self` belongs to the effective uid.
pub fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// Runs one of the official MCP SDK scripts (tests/mcp/*.py): without `PYTHONOPTIMIZE` (under
/// it `assert` statements are skipped and every check would pass; the scripts also refuse to run
/// with asserts off), stdin closed, and killed, failing the test, once it has run for `limit`
/// (a hung check must not hang the suite).
pub fn run_sdk_script(cmd: &mut Command, limit: std::time::Duration) -> Output {
    use std::io::Read;
    cmd.env_remove("PYTHONOPTIMIZE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("python3 runs");
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for python3") {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} ran for more than {limit:?} and was killed");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }
}

/// Writes `graph` as `graph.json` in `dir`; its path, for `cheng graph run`.
pub fn write_graph(dir: &Path, graph: &serde_json::Value) -> String {
    let path = dir.join("graph.json");
    std::fs::write(&path, graph.to_string()).expect("write graph");
    path.to_string_lossy().into_owned()
}

/// The cards of the `approval_requested` events a run with `--events -` wrote among its stderr
/// lines (each event's `request`).
pub fn approval_cards(stderr: &str) -> Vec<serde_json::Value> {
    stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["event"] == "approval_requested")
        .map(|e| e["request"].clone())
        .collect()
}
