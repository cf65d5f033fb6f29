//! What `tools/code_shell` and `tools/code_python` share: reading the sandbox ports, asking for
//! each requested read path, running the bubblewrap sandbox, and shaping the output object.
//!
//! Decisions where the reference page is silent:
//!
//! - **Boundary**: neither table lists `sandbox_root`, so the boundary is the run's canonical
//!   workspace (`RunContext::workspace`, the value the engine would inject). `working_subdir`
//!   resolves inside it through `cheng_node::paths` (no `..` above the root, no symlink out).
//! - **Capped switches**: `allow_filesystem`, `allow_full_disk_readonly`, `allow_network`,
//!   `timeout_ms` and `memory_mb` are author-capped; the engine has already merged the request
//!   with the author's ceiling, so the node reads the effective values.
//! - **request_read_paths**: absolute, existing, canonicalised; listed on the run's one approval
//!   card (`requested_paths`, with any capability left on "ask"). Run without the engine, the node
//!   asks once per path itself; a denial is `LOCAL_EXECUTOR_APPROVAL_DENIED` naming the path.
//!   Each is opened once when it is resolved, before it is asked about
//!   (`cheng_sandbox::PinnedPath`), and mounted from that descriptor: replacing the path
//!   afterwards (a symlink to another directory) changes nothing the sandbox sees. The card
//!   records which directory each path named and each per-path request what was opened, so the
//!   engine's approval of the card covers a request only for the same directory.
//! - **Failure with output**: a run that exits non-zero, times out, is cancelled, is killed by a
//!   signal or hits its memory limit still returns every reference output, plus `success:false`,
//!   `error_kind`, `terminal` and `error` (`cheng_node::failure`), because
//!   `NodeError::to_outputs` would drop stdout, stderr and metrics.
//! - **Defaults and ranges** of `timeout_ms`, `memory_mb` and the switches are the spec's: the
//!   ports are read through `cheng_node::input` with the node's own [`NodeSpec`].

use cheng_exec::{ProcessOutput, Termination};
use cheng_net::HostPattern;
use cheng_node::{
    failure, input, paths, ApprovalRequest, ErrorKind, NodeError, NodeSpec, PortSpec, RunContext,
    Values,
};
use cheng_sandbox::{Identity, PinnedPath, Sandbox, SandboxRequest, SandboxRun};
use cheng_sandbox::{MAX_MEMORY_MB, MIN_MEMORY_MB};
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Per-stream capture cap (head+tail).
pub const STDOUT_CAP: usize = 1 << 20;
pub const STDERR_CAP: usize = 256 << 10;
pub const MAX_TIMEOUT_MS: i64 = 300_000;
/// Smallest accepted timeout: bwrap alone needs a few milliseconds.
pub const MIN_TIMEOUT_MS: i64 = 100;
/// Re-exported for the spec tables.
pub const MEMORY_MIN: i64 = MIN_MEMORY_MB;
/// The highest memory_mb anyone may set on the code executors (the reference page names none): 4096 MB.
/// Authors and operators may lower it; the sandbox itself could enforce up to `MAX_MEMORY_MB`.
pub const MEMORY_MAX: i64 = if MAX_MEMORY_MB < 4096 {
    MAX_MEMORY_MB
} else {
    4096
};

/// The approval card of a code executor: the script itself (first line when long), so that a
/// person approving a capability sees what will use it.
pub fn script_card(ctx: &RunContext, input: &Values, lang: &str) -> cheng_node::ApprovalRequest {
    let script = input.get("script").and_then(Value::as_str).unwrap_or("");
    let shown = if script.chars().count() > 200 {
        format!("{}…", script.chars().take(200).collect::<String>())
    } else {
        script.to_string()
    };
    let mut card = cheng_node::ApprovalRequest::new(ctx, format!("{lang} script: {shown}"));
    // The host paths the run would mount read-only, as the run itself will name them; the
    // engine asks about them on this one card (entries that are not absolute or cannot be
    // opened are refused by the run before anything is asked).
    let granted = operator_paths(ctx).unwrap_or_default();
    card.requested_paths = input::string_list(input, "request_read_paths")
        .unwrap_or_default()
        .iter()
        .filter(|raw| Path::new(raw).is_absolute() && !raw.contains('\0'))
        .filter_map(|raw| Path::new(raw).canonicalize().ok())
        .filter(|path| !granted.iter().any(|root| path.starts_with(root)))
        .map(|path| path.display().to_string())
        .fold(Vec::new(), |mut paths, path| {
            if !paths.contains(&path) {
                paths.push(path);
            }
            paths
        });
    // What each path names now: a later request for it is covered by this card only while it
    // still names the same directory (see `SandboxPorts::approve_read_paths`).
    card.path_identities = card
        .requested_paths
        .iter()
        .filter_map(|path| {
            let id = Identity::of_path(Path::new(path)).ok()?;
            Some(path_identity(path, id))
        })
        .collect();
    card
}

fn path_identity(path: &str, id: Identity) -> cheng_node::PathIdentity {
    cheng_node::PathIdentity {
        path: path.to_string(),
        dev: id.dev,
        ino: id.ino,
    }
}

/// The operator's `read_paths` for this node type, canonicalised: mounted read-only in every run
/// without asking. One that cannot be opened fails the run (the policy is wrong, not the input).
fn operator_paths(ctx: &RunContext) -> Result<Vec<PathBuf>, NodeError> {
    let (paths, source) = ctx.policy().read_paths(ctx.node_type);
    paths
        .iter()
        .map(|path| {
            path.canonicalize().map_err(|e| {
                NodeError::policy_denied(format!(
                    "the operator's read_paths entry {} cannot be opened: {e} ({source}); ask the machine's operator to fix or remove it",
                    path.display()
                ))
            })
        })
        .collect()
}

/// NOT_FOUND when a path vanished, FILE_CHANGED when it is no longer where it was resolved.
fn opening_failed(e: &std::io::Error) -> ErrorKind {
    match e.kind() {
        std::io::ErrorKind::NotFound => ErrorKind::NotFound,
        _ => ErrorKind::FileChanged,
    }
}

/// The `success` port both sandboxed nodes add to the reference page's outputs (with `cheng_node::failure`'s
/// other three).
pub const SUCCESS_OUTPUT: PortSpec = failure::success(
    "Whether the script ran and exited 0 (added to the reference table: failures keep stdout, stderr and metrics)",
);

/// The sandbox ports, read from a validated, defaulted, author-capped input.
#[derive(Debug, Clone)]
pub struct SandboxPorts {
    pub script: String,
    pub input: Value,
    pub cwd: PathBuf,
    pub allow_filesystem: bool,
    pub allow_full_disk_readonly: bool,
    pub allow_network: bool,
    /// With allow_network: the operator's host rules, then the author's `allowed_hosts` with
    /// the `request_hosts` a person approves ([`SandboxPorts::approve_hosts`]).
    pub network: Option<cheng_net::Gate>,
    /// The `request_hosts` entries beyond the author's list, each asked of a person.
    pub requested_hosts: Vec<HostPattern>,
    /// Host paths the agent asked to read (each approved for this run), outside the operator's,
    /// each opened once when it was resolved.
    pub read_paths: Vec<PinnedPath>,
    /// The operator's `read_paths`: mounted read-only in every run, unasked.
    pub granted_paths: Vec<PinnedPath>,
    pub timeout_ms: u64,
    pub memory_mb: u64,
}

impl SandboxPorts {
    /// Reads the ports through `spec` (its defaults and ranges); a switch the spec does not
    /// declare (code_python has no `allow_network`) is off.
    pub fn read(
        ctx: &RunContext,
        spec: &'static NodeSpec,
        values: &Values,
    ) -> Result<Self, NodeError> {
        let int = |name: &str| input::int(values, input::port(spec, name)?);
        let switch = |name: &str| {
            spec.input(name)
                .map_or(Ok(false), |port| input::boolean(values, port))
        };
        let script = input::opt_str(values, "script")
            .ok_or_else(|| NodeError::invalid_input("script is required: the code to run"))?
            .to_string();
        let cwd = paths::resolve_existing(
            &ctx.workspace,
            input::non_empty_str(values, "working_subdir"),
            "working_subdir",
        )?;
        if !cwd.is_dir() {
            return Err(NodeError::invalid_input(format!(
                "working_subdir {:?} is not a directory",
                paths::display_relative(&ctx.workspace, &cwd)
            )));
        }
        // In range by the spec's own check (`input::int`), so never negative.
        let timeout_ms = int("timeout_ms")?.unsigned_abs();
        let memory_mb = int("memory_mb")?.unsigned_abs();
        let granted = operator_paths(ctx)?;
        let mut read_paths: Vec<PinnedPath> = Vec::new();
        for (i, raw) in input::string_list(values, "request_read_paths")?
            .into_iter()
            .enumerate()
        {
            let path = PathBuf::from(&raw);
            if !path.is_absolute() || raw.contains('\0') {
                return Err(NodeError::invalid_input(format!(
                    "request_read_paths[{i}] {raw:?} must be an absolute host path such as /home/me/project"
                )));
            }
            let canonical = path.canonicalize().map_err(|e| {
                NodeError::new(
                    ErrorKind::NotFound,
                    format!("request_read_paths[{i}] {raw:?} cannot be opened: {e}"),
                )
            })?;
            // Under one of the operator's roots it is mounted already, with nothing to ask.
            if !read_paths.iter().any(|p| p.path() == canonical)
                && !granted.iter().any(|root| canonical.starts_with(root))
            {
                let pinned = PinnedPath::open(&canonical).map_err(|e| {
                    NodeError::new(
                        opening_failed(&e),
                        format!("request_read_paths[{i}] {raw:?} cannot be opened: {e}; run again once it stays put"),
                    )
                })?;
                read_paths.push(pinned);
            }
        }
        let granted_paths = granted
            .iter()
            .map(|path| {
                PinnedPath::open(path).map_err(|e| {
                    NodeError::new(
                        opening_failed(&e),
                        format!(
                            "the operator's read_paths entry {} cannot be opened: {e}; run again",
                            path.display()
                        ),
                    )
                })
            })
            .collect::<Result<_, _>>()?;
        let allow_network = switch("allow_network")?;
        let requested_hosts = hosts_to_ask(values)?;
        if !allow_network && !input::string_list(values, REQUEST_HOSTS)?.is_empty() {
            return Err(NodeError::invalid_input(
                "request_hosts needs allow_network: true (without it the sandbox has no network)",
            ));
        }
        // A node without the switch (code_python) has the network exactly when its author
        // lists the hosts it may reach.
        let listed = spec.input("allow_network").is_none()
            && cheng_node::policy::author_hosts(values)?.is_some_and(|hosts| !hosts.is_empty());
        let network = if allow_network || listed {
            Some(
                ctx.policy()
                    .network_gate(ctx.node_type, values, &requested_hosts)?,
            )
        } else {
            None
        };
        Ok(SandboxPorts {
            script,
            input: values.get("input").cloned().unwrap_or(Value::Null),
            cwd,
            allow_filesystem: switch("allow_filesystem")?,
            allow_full_disk_readonly: switch("allow_full_disk_readonly")?,
            allow_network,
            network,
            requested_hosts,
            read_paths,
            granted_paths,
            timeout_ms,
            memory_mb,
        })
    }

    /// Asks the approver for each requested read path, for this execution only.
    pub async fn approve_read_paths(
        &self,
        ctx: &RunContext,
        what_runs: &str,
    ) -> Result<(), NodeError> {
        for path in &self.read_paths {
            let shown = path.path().display().to_string();
            let mut request =
                ApprovalRequest::new(ctx, format!("{what_runs} may read {shown} (read-only)"));
            request.purpose = Some(format!(
                "request_read_paths: mount {shown} read-only in the sandbox for this execution"
            ));
            request.requested_paths = vec![shown.clone()];
            // What was opened: an approval given for another file at this path does not cover it.
            request.path_identities = vec![path_identity(&shown, path.identity())];
            ctx.require_approval(&request, &format!("request_read_paths entry {shown}"))
                .await?;
        }
        Ok(())
    }

    /// Asks the approver for each host beyond the author's list, for this execution only (the
    /// run's card listed them, so an approved card has decided them already).
    pub async fn approve_hosts(&self, ctx: &RunContext, what_runs: &str) -> Result<(), NodeError> {
        for host in &self.requested_hosts {
            let shown = host.as_str().to_string();
            let mut request = ApprovalRequest::new(ctx, format!("{what_runs} may reach {shown}"));
            request.purpose = Some(format!(
                "request_hosts: let the sandbox reach {shown} through cheng's filtering proxy for this execution"
            ));
            request.requested_hosts = vec![shown.clone()];
            ctx.require_approval(&request, &format!("request_hosts entry {shown}"))
                .await?;
        }
        Ok(())
    }

    /// The sandbox request for `command`, before node-specific additions.
    pub fn request(&self, ctx: &RunContext, command: Vec<std::ffi::OsString>) -> SandboxRequest {
        let mut req = SandboxRequest::new(ctx.workspace.clone(), command);
        req.cwd = self.cwd.clone();
        req.writable = self.allow_filesystem;
        req.full_disk_readonly = self.allow_full_disk_readonly;
        req.network = self.network.clone();
        req.read_paths = self
            .granted_paths
            .iter()
            .chain(&self.read_paths)
            .cloned()
            .collect();
        req.timeout = Duration::from_millis(self.timeout_ms);
        req.memory_mb = self.memory_mb;
        req.stdout_cap = STDOUT_CAP;
        req.stderr_cap = STDERR_CAP;
        req.output = ctx.output.clone();
        req.env.push(("LANG".into(), "C.UTF-8".into()));
        req.env.push(("TMPDIR".into(), "/tmp".into()));
        req
    }
}

/// The agent's port for hosts beyond the author's `allowed_hosts` (code_shell).
pub const REQUEST_HOSTS: &str = "request_hosts";

/// The `request_hosts` entries a person must approve: those the author's `allowed_hosts` does
/// not already cover. Without an author's list there is nothing to ask (every host the
/// operator's rules allow is allowed). An entry that is not a host rule is refused, naming it.
pub fn hosts_to_ask(values: &Values) -> Result<Vec<HostPattern>, NodeError> {
    let Some(author) = cheng_node::policy::author_hosts(values)? else {
        return Ok(Vec::new());
    };
    let mut asked: Vec<HostPattern> = Vec::new();
    for (i, raw) in input::string_list(values, REQUEST_HOSTS)?
        .iter()
        .enumerate()
    {
        let host = HostPattern::parse(raw)
            .map_err(|e| NodeError::invalid_input(format!("{REQUEST_HOSTS}[{i}]: {e}")))?;
        if !author.iter().any(|rule| host.within(rule)) && !asked.contains(&host) {
            asked.push(host);
        }
    }
    Ok(asked)
}

/// A private per-run directory (mounted read-only at `cheng_sandbox::IO_DIR`) for the
/// input file, the runner and the result channel, on a tmpfs where there is one
/// (`cheng_sandbox::io_parent`). Readable by the sandbox uid inside a root-only parent,
/// so nobody else on the host can reach it.
pub fn io_dir() -> Result<(tempfile::TempDir, PathBuf), NodeError> {
    use std::os::unix::fs::PermissionsExt;
    let parent = tempfile::Builder::new()
        .prefix("cheng-sandbox-")
        .tempdir_in(cheng_sandbox::io_parent())
        .map_err(|e| {
            NodeError::internal(format!("cannot create the sandbox I/O directory: {e}"))
        })?;
    let io = parent.path().join("io");
    std::fs::create_dir(&io)
        .and_then(|_| std::fs::set_permissions(&io, std::fs::Permissions::from_mode(0o755)))
        .map_err(|e| {
            NodeError::internal(format!("cannot create the sandbox I/O directory: {e}"))
        })?;
    Ok((parent, io))
}

/// Prepares and runs the sandbox.
pub async fn run(ctx: &RunContext, request: SandboxRequest) -> Result<SandboxRun, NodeError> {
    let sandbox = Sandbox::prepare(request)?;
    sandbox.run(&ctx.cancel).await
}

/// The failure class of a finished run, from the process outcome and stderr; `timeout_ms` is
/// the limit the run had.
pub fn classify(out: &ProcessOutput, timeout_ms: u64) -> Option<(ErrorKind, String)> {
    // bwrap reports a signal-killed child as exit status 128 + signal.
    let signal = out.signal.or_else(|| {
        out.exit_code
            .filter(|c| (129..=192).contains(c))
            .map(|c| c - 128)
    });
    let stderr = &out.stderr.text;
    let memory_words = [
        "MemoryError",
        "Cannot allocate memory",
        "out of memory",
        "memory exhausted",
        "std::bad_alloc",
    ];
    let memory = memory_words.iter().any(|w| stderr.contains(w));
    match out.termination {
        Termination::TimedOut => {
            return Some((
                ErrorKind::TimedOut,
                format!("the script ran longer than timeout_ms ({timeout_ms} ms) and the whole sandbox was killed; raise timeout_ms (at most {MAX_TIMEOUT_MS}) or do less work"),
            ))
        }
        Termination::Cancelled => return Some((ErrorKind::Cancelled, "the run was cancelled and the whole sandbox was killed".into())),
        _ => {}
    }
    if out.exit_code == Some(0) {
        return None;
    }
    if memory {
        return Some((ErrorKind::MemoryLimit, "the script exceeded memory_mb (an allocation failed under the sandbox's address-space limit)".into()));
    }
    if let Some(sig) = signal {
        let name = cheng_exec::signal_name(sig);
        if matches!(sig, libc_sig::SEGV | libc_sig::ABRT | libc_sig::KILL) {
            return Some((
                ErrorKind::MemoryLimit,
                format!("the script was killed by {name}, most likely on reaching memory_mb"),
            ));
        }
        return Some((
            ErrorKind::Signalled,
            format!("the script was killed by {name}"),
        ));
    }
    let code = out.exit_code.unwrap_or(-1);
    Some((
        ErrorKind::NonZeroExit,
        format!("the script exited with status {code}"),
    ))
}

/// MEMORY_LIMIT when the run's cgroup v2 group counted an OOM kill (memory.events oom_kill).
pub fn oom_failure(run: &SandboxRun) -> Option<(ErrorKind, String)> {
    let kills = run
        .cgroup
        .as_ref()
        .and_then(|r| r.oom_kills)
        .filter(|&k| k > 0)?;
    Some((
        ErrorKind::MemoryLimit,
        format!(
            "the script exceeded memory_mb: the kernel killed {kills} process(es) at the sandbox's {}",
            run.enforcement.memory
        ),
    ))
}

/// Signal numbers used by [`classify`] (Linux values, so this crate needs no libc).
mod libc_sig {
    pub const ABRT: i32 = 6;
    pub const KILL: i32 = 9;
    pub const SEGV: i32 = 11;
}

/// The `metrics` object.
pub fn metrics(run: &SandboxRun) -> Value {
    let out = &run.output;
    let usage = out.usage.unwrap_or_default();
    let signal = out.signal.or_else(|| {
        out.exit_code
            .filter(|c| (129..=192).contains(c))
            .map(|c| c - 128)
    });
    json!({
        "duration_ms": out.duration_ms(),
        "sandbox_setup_ms": run.setup.as_secs_f64() * 1000.0,
        "exit_code": out.exit_code,
        "termination": out.termination.as_str(),
        "signal": signal,
        "peak_rss_kb": usage.peak_rss_kb,
        "cpu_user_ms": usage.cpu_user_ms,
        "cpu_sys_ms": usage.cpu_sys_ms,
        "stdout_bytes": out.stdout.total_bytes,
        "stderr_bytes": out.stderr.total_bytes,
        "stdout_truncated": out.stdout.truncated,
        "stderr_truncated": out.stderr.truncated,
        "limits": run.enforcement.to_json(),
        // From the run's cgroup v2 group (null when memory_mb was RLIMIT_AS).
        "memory_peak_bytes": run.cgroup.as_ref().and_then(|r| r.peak_bytes),
        "oom_kills": run.cgroup.as_ref().and_then(|r| r.oom_kills),
        // Every connection asked of the filtering proxy (null without allow_network).
        "network": run.network.as_ref().map(cheng_proxy::Report::to_json),
    })
}

/// The output object: every reference port plus the failure ports.
pub fn outputs(
    run: &SandboxRun,
    result: Value,
    warnings: Vec<String>,
    failure: Option<(ErrorKind, String)>,
) -> Values {
    let mut out = Map::new();
    out.insert("result".into(), result);
    out.insert("isolation_level".into(), json!("bubblewrap"));
    out.insert("metrics".into(), metrics(run));
    out.insert("stdout".into(), json!(run.output.stdout.text));
    out.insert("stderr".into(), json!(run.output.stderr.text));
    out.insert("warnings".into(), json!(warnings));
    let result = match failure {
        None => Ok(()),
        Some((kind, message)) => Err(NodeError::new(kind, message)),
    };
    failure::fill(&mut out, &result);
    out
}

/// Warnings describing what the sandbox enforced differently from the ideal.
pub fn enforcement_warnings(run: &SandboxRun) -> Vec<String> {
    run.enforcement.warnings.clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timed_out(duration_ms: u64) -> ProcessOutput {
        ProcessOutput {
            exit_code: None,
            termination: Termination::TimedOut,
            signal: None,
            duration: Duration::from_millis(duration_ms),
            stdout: cheng_node::text::head_tail(b"", 16),
            stderr: cheng_node::text::head_tail(b"", 16),
            spawn_error: None,
            usage: None,
        }
    }

    #[test]
    fn the_timeout_error_names_the_limit_not_the_measured_time() {
        // Killing a sandbox takes a while: the run lasts longer than its limit.
        let (kind, message) = classify(&timed_out(1873), 1500).expect("a failure");
        assert_eq!(kind, ErrorKind::TimedOut);
        assert!(message.contains("timeout_ms (1500 ms)"), "{message}");
        assert!(!message.contains("1873"), "{message}");
    }
}
