//! Helpers shared by cheng's test suites and benchmarks (a dev-dependency only): hermetic git
//! fixtures, temporary workspaces, a no-op node, running a node as the engine would, a
//! live-output sink, the fuzz seeds through their properties, and polling for facts that settle on their own
//! (processes leaving, processes starting) instead of fixed sleeps.
//!
//! Everything here panics on failure: a fixture that cannot be built is a broken test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod fuzz;
mod live;
mod run;
pub use fuzz::{check_fuzz_seeds, FuzzProperty};
pub use live::LiveChunks;
pub use run::{run_denied, with_defaults};

use cheng_node::{
    async_trait, Effects, Node, NodeError, NodeSpec, PortSpec, PortType, RunContext, Values,
};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Copies the directory tree `from` (a fixture) to `to`, creating `to`.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read fixture dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

/// A fresh canonical temporary workspace (keep the `TempDir` alive while it is used).
pub fn temp_workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical tempdir");
    (dir, root)
}

/// Runs `git` in `dir` for fixture building: host configuration ignored, a fixed identity.
/// Returns stdout; panics (with git's stderr) when git fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "Fixture")
        .env("GIT_AUTHOR_EMAIL", "fixture@example.invalid")
        .env("GIT_COMMITTER_NAME", "Fixture")
        .env("GIT_COMMITTER_EMAIL", "fixture@example.invalid")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Plain git in `dir` as any user would run it (the repository's own configuration applies;
/// only host configuration is ignored), to show what an attack does without cheng's
/// protections. Never panics on git's exit status; panics only when git cannot start.
pub fn plain_git(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("git runs")
}

/// A repository at `dir` with `main` checked out and `files` (path, content) committed.
pub fn init_repo(dir: &Path, files: &[(&str, &str)]) {
    std::fs::create_dir_all(dir).expect("mkdir");
    git(dir, &["-c", "init.defaultBranch=main", "init", "-q", "."]);
    for (name, content) in files {
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(path, content).expect("write");
    }
    if !files.is_empty() {
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-qm", "initial commit"]);
    }
}

/// `bench/noop`: returns its input port `x` unchanged (the cheapest node the engine can run).
pub struct Noop;

pub static NOOP: NodeSpec = NodeSpec {
    id: "bench/noop",
    title: "No-op",
    description: "Returns its input port `x` unchanged.",
    category: "bench",
    inputs: &[
        PortSpec::input("x", PortType::Any, "Anything").default("null"),
        PortSpec::sandbox_root(),
    ],
    outputs: &[PortSpec::output("x", PortType::Any, "The same value")],
    gate: None,
    effects: Effects::ReadOnly,
};

#[async_trait]
impl Node for Noop {
    fn spec(&self) -> &'static NodeSpec {
        &NOOP
    }
    async fn run(&self, _ctx: &RunContext, mut input: Values) -> Result<Values, NodeError> {
        let x = input.remove("x").unwrap_or(Value::Null);
        Ok(Values::from_iter([("x".to_string(), x)]))
    }
}

/// How often [`eventually`] looks again.
const POLL: Duration = Duration::from_millis(20);

/// Polls `cond` until it holds or `limit` has passed (then looks one last time); whether it held.
///
/// For facts that settle asynchronously: a killed process leaving /proc, a spawned one appearing,
/// a run finishing. Use it instead of a fixed sleep before a check (too short on a loaded machine,
/// wasted on an idle one) and instead of asserting on elapsed wall-clock time: `limit` is only the
/// point at which the test gives up, so make it generous. Blocking: in an async test call it from
/// `tokio::task::spawn_blocking` when tasks beside it must go on meanwhile.
pub fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if cond() {
            return true;
        }
        std::thread::sleep(POLL);
    }
    cond()
}

/// What a process holds: open descriptors, direct children, resident memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footprint {
    pub fds: usize,
    pub children: usize,
    pub rss_kib: u64,
}

/// The [`Footprint`] of `pid`, from /proc (zeros for what cannot be read).
pub fn footprint(pid: u32) -> Footprint {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0);
    let mut children = 0;
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // The parent pid is the second field after the parenthesised command name.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(pid) {
            children += 1;
        }
    }
    let rss_kib = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0);
    Footprint {
        fds,
        children,
        rss_kib,
    }
}

/// Host pids of the processes `pgrep args...` selects, e.g. `["-f", "^sleep 97\\.31$"]` (the
/// full command line) or `["-x", name]` (the process name); empty when none. Panics when pgrep
/// cannot run.
pub fn pgrep(args: &[&str]) -> Vec<u32> {
    let out = Command::new("pgrep")
        .args(args)
        .stderr(Stdio::null())
        .output()
        .expect("pgrep runs (procps)");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Whether no process [`pgrep`] `args` selects is left, polling up to 20 s.
pub fn none_left(args: &[&str]) -> bool {
    eventually(Duration::from_secs(20), || pgrep(args).is_empty())
}

/// Kills (SIGKILL, by pid) every process [`pgrep`] `args` selects when dropped, so a test whose
/// attack may leave a process running (an escaped `setsid sleep`, a fork bomb) cleans up after
/// itself whether it passes or fails. Give the processes names no other test uses (e.g. with the
/// test process's id in them): the guard kills whatever matches.
pub struct KillOnDrop(Vec<String>);

impl KillOnDrop {
    pub fn new(args: &[&str]) -> Self {
        KillOnDrop(args.iter().map(|a| a.to_string()).collect())
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let args: Vec<&str> = self.0.iter().map(String::as_str).collect();
        for pid in pgrep(&args) {
            let _ = Command::new("kill")
                .arg("-KILL")
                .arg(pid.to_string())
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// Whether `tool` is an executable on PATH.
pub fn on_path(tool: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .filter(|d| d.is_absolute())
                .any(|d| {
                    std::fs::metadata(d.join(tool))
                        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                })
        })
        .unwrap_or(false)
}

/// Whether a test may go on needing `tool` (a program on PATH). When it is missing the test
/// skips with a note, except in CI (env `CI` set), which installs every tool (scripts/test): there
/// a skip would turn the test into one that cannot fail, so the test fails instead.
pub fn require_or_skip(tool: &str) -> bool {
    require_or_skip_that(tool, on_path(tool))
}

/// [`require_or_skip`] for a requirement a PATH lookup cannot check: `what` names it (said in the
/// skip note and the CI failure), `available` says whether it is met. A skip is also recorded in
/// the file [`SKIPPED_LOG`] names, when set: cargo counts a skipped test as passed, and
/// scripts/test reports those apart.
pub fn require_or_skip_that(what: &str, available: bool) -> bool {
    if !available {
        assert!(
            std::env::var_os("CI").is_none(),
            "{what} missing, and CI is set: CI must provide it (scripts/test installs the tools), so this test may not skip"
        );
        eprintln!("skipping: {what} missing");
        if let Some(log) = std::env::var_os(SKIPPED_LOG) {
            // libtest names each test's thread after the test; cargo names the package.
            let test = format!(
                "{} {}",
                std::env::var("CARGO_PKG_NAME").unwrap_or_default(),
                std::thread::current().name().unwrap_or("?")
            );
            record_skip(Path::new(&log), &test, what);
        }
    }
    available
}

/// The environment variable naming the file skips are appended to (one `test: what` line each).
pub const SKIPPED_LOG: &str = "CHENG_SKIPPED_LOG";

/// Appends `test: what` to `log` (one short write in append mode: lines from tests running at
/// once do not interleave).
fn record_skip(log: &Path, test: &str, what: &str) {
    use std::io::Write;
    let line = format!("{test}: {what} missing\n");
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = written {
        eprintln!("cannot record the skip in {}: {e}", log.display());
    }
}

/// Checks a head+tail cut (`cheng_node::text::HeadTail`'s `\n...[omitted N bytes]...\n` marker)
/// against the node's documented limit `cap` (written by the caller, never read from the node) and
/// the `written` byte count: exactly one marker, a head and tail that together are `cap` bytes, and
/// N the bytes dropped. Returns the kept head and tail.
pub fn assert_cut_to<'a>(
    what: &str,
    shown: &'a str,
    written: u64,
    cap: usize,
) -> (&'a str, &'a str) {
    const OPEN: &str = "\n...[omitted ";
    const CLOSE: &str = " bytes]...\n";
    assert_eq!(
        shown.matches(OPEN).count(),
        1,
        "{what}: expected exactly one omission marker"
    );
    let start = shown.find(OPEN).unwrap_or_default();
    let rest = &shown[start + OPEN.len()..];
    let close = rest
        .find(CLOSE)
        .unwrap_or_else(|| panic!("{what}: unterminated marker"));
    let omitted: u64 = rest[..close]
        .parse()
        .unwrap_or_else(|e| panic!("{what}: marker count {:?}: {e}", &rest[..close]));
    let (head, tail) = (&shown[..start], &rest[close + CLOSE.len()..]);
    assert_eq!(
        head.len() + tail.len(),
        cap,
        "{what}: kept {} + {} bytes, not the cap of {cap}",
        head.len(),
        tail.len()
    );
    assert_eq!(
        omitted,
        written - cap as u64,
        "{what}: the marker's count is not the bytes dropped ({written} written, {cap} kept)"
    );
    (head, tail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_are_recorded_one_line_each() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("skipped.txt");
        record_skip(&log, "suite::a", "bwrap");
        record_skip(&log, "suite::b", "the MCP Python SDK");
        assert_eq!(
            std::fs::read_to_string(&log).expect("log"),
            "suite::a: bwrap missing\nsuite::b: the MCP Python SDK missing\n"
        );
    }
}
