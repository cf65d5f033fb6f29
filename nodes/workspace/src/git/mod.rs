//! `tools/workspace_git`: read-only git inspection (status, diff, log, show, branch).
//!
//! The repository is untrusted input. Its configuration, attributes and hooks must never make git
//! run another program, so every invocation goes through [`command::Git`] (hardened environment,
//! `-c` overrides, every configured filter/diff driver switched off) and user values are checked
//! by [`validate`] before git sees them. Decisions:
//!
//! - **cwd**: resolved inside the workspace with the shared resolver, and repository discovery
//!   stops at the workspace root (`GIT_CEILING_DIRECTORIES`): a workspace that is a subdirectory
//!   of a larger repository is "not a repository".
//! - **confinement** ([`confine`]): everything git would read must be inside the workspace. A
//!   `.git` file or symlink, `commondir`, `core.worktree`, alternates (nested, relative, and
//!   `http-alternates`), a symlink in the git directory (`objects`, `refs`, a pack, `shallow`, …)
//!   or a submodule's `.git` that leads out makes every operation fail with
//!   `LOCAL_EXECUTOR_PATH_OUTSIDE_WORKSPACE`, naming the file and where it points. The checks read
//!   those few files directly (no extra git process).
//! - **status**: `--porcelain=v2 -z --branch --untracked-files=normal --find-renames
//!   --ignore-submodules=dirty` (submodule work trees are not entered: entering one would run git
//!   under a configuration that was never neutralised; git still reads each populated
//!   submodule's HEAD, which is why [`confine`] checks submodule git directories), read as raw
//!   bytes. Paths are relative to the repository root. Paths that are not UTF-8 keep their bytes
//!   in `path_bytes_base64` (see [`quote`]).
//!   The current branch's tracking (upstream, ahead, behind) is reported in `branches`.
//! - **diff**: the working tree against HEAD — staged and unstaged changes to tracked files
//!   together, untracked files excluded (`git diff HEAD`); against the empty tree before the first
//!   commit. Renames are shown as a deletion plus an addition (`--no-renames`), so every `files`
//!   entry names one path. `files` carries numstat counts, `stdout` the patch.
//! - **log**: from HEAD (or from `revision`, checked like show's), `max_count` commits (default
//!   20, at most 100).
//! - **show**: `revision` (default HEAD) must be a plain local ref name or hash with optional
//!   `~N`/`^N` suffixes; remote-tracking refs are refused, and it must resolve to a commit.
//!   `commits` holds the commit, `files` its numstat, `stdout` the patch.
//! - **branch**: local branches (`refs/heads/`), with upstream and ahead/behind where set.
//! - **caps**: `max_bytes` (default 262 144, at most 16 MiB) bounds what is read from each git
//!   invocation; the patch in `stdout` is head+tail truncated, and a structured list cut by the
//!   cap keeps its complete leading entries, with `stdout_truncated` true and the summary saying
//!   so. Each git invocation has 60 s.

mod branch;
mod command;
mod confine;
mod diff;
pub(crate) mod log;
mod quote;
pub(crate) mod status;
mod validate;

use cheng_exec::ProcessOutput;
use cheng_node::input::{self, non_empty_str, opt_str, string_list};
use cheng_node::paths::{display_relative, resolve_existing};
use cheng_node::text::Bounded;
use cheng_node::{
    async_trait, failure, Effects, ErrorKind, Node, NodeError, NodeSpec, PortSpec, PortType,
    RunContext, Values,
};
use command::Git;
use serde_json::{json, Value};

/// Largest accepted `max_bytes` (16 MiB): the most any one git output is held in memory.
pub const MAX_MAX_BYTES: i64 = 16 << 20;
pub const MAX_MAX_COUNT: i64 = 100;

/// `max_bytes` and `max_count`: the spec is the only place their defaults and ranges live.
const MAX_BYTES: PortSpec = PortSpec::input(
    "max_bytes",
    PortType::Integer,
    "Output byte cap (default 262144).",
)
.default("262144")
.min(1)
.max(MAX_MAX_BYTES);
const MAX_COUNT: PortSpec = PortSpec::input(
    "max_count",
    PortType::Integer,
    "For log: number of commits (default 20, max 100)",
)
.default("20")
.min(1)
.max(MAX_MAX_COUNT);

const OPERATIONS: &[&str] = &["status", "diff", "log", "show", "branch"];

static SPEC: NodeSpec = NodeSpec {
    id: "tools/workspace_git",
    title: "Workspace Git",
    description: "Read-only git inspection (status/diff/log/show/branch) with structured, bounded output. Destructive git operations are not available.",
    category: "workspace",
    inputs: &[
        PortSpec::input("operation", PortType::String, "Read-only git operation: status, diff, log, show, or branch")
            .required()
            .choices(OPERATIONS),
        PortSpec::input("cwd", PortType::String, "Repository directory relative to the workspace root. Omit for the root.")
            .default("null"),
        PortSpec::input(
            "pathspecs",
            PortType::Array(&PortType::String),
            "Relative pathspecs to narrow diff/log/status. No absolute paths, no '..'",
        )
        .default("[]"),
        PortSpec::input("revision", PortType::String, "For show: local revision (HEAD, branch name, commit hash).")
            .default("null"),
        MAX_BYTES,
        MAX_COUNT,
        PortSpec::sandbox_root(),
    ],
    outputs: &[
        PortSpec::output("operation", PortType::String, "Git operation that was executed"),
        failure::success("Whether the operation succeeded"),
        PortSpec::output("summary", PortType::String, "Human-readable summary of the operation result"),
        PortSpec::output("files", PortType::Any, "Structured status entries (changed/staged/untracked files)"),
        PortSpec::output("commits", PortType::Any, "Structured log entries (hash/author/date/subject)"),
        PortSpec::output("branches", PortType::Any, "Local branch names"),
        PortSpec::output("current_branch", PortType::String, "Current branch name (marked in branch list)"),
        PortSpec::output("stdout", PortType::String, "Raw capped stdout text (diff/show output)"),
        PortSpec::output("stdout_truncated", PortType::Boolean, "True when stdout was head+tail truncated due to byte cap"),
        PortSpec::output("stderr", PortType::String, "Raw capped stderr text"),
        failure::ERROR_KIND,
        failure::TERMINAL,
        failure::ERROR,
    ],
    gate: None,
    effects: Effects::ReadOnly,
};

/// The `tools/workspace_git` node.
pub struct WorkspaceGit;

cheng_node::inventory::submit! { cheng_node::NodeRegistration::new(&WorkspaceGit) }

/// Validated input.
struct Request {
    operation: &'static str,
    pathspecs: Vec<String>,
    revision: Option<String>,
    max_bytes: usize,
    max_count: i64,
}

#[async_trait]
impl Node for WorkspaceGit {
    fn spec(&self) -> &'static NodeSpec {
        &SPEC
    }

    async fn run(&self, ctx: &RunContext, input: Values) -> Result<Values, NodeError> {
        let request = parse_request(&input)?;
        let cwd = resolve_existing(&ctx.workspace, opt_str(&input, "cwd"), "cwd")?;
        let git = Git::open(&ctx.workspace, cwd, &ctx.cancel)
            .await?
            .with_output(ctx.output.clone());
        let mut out = blank_outputs(request.operation);
        match request.operation {
            "status" => status(&git, &request, &mut out).await?,
            "diff" => diff(&git, &request, &mut out).await?,
            "log" => log(&git, &request, &mut out).await?,
            "show" => show(&git, &request, &mut out).await?,
            _ => branch(&git, &mut out).await?,
        }
        if out.get("success") == Some(&Value::Null) {
            failure::fill::<()>(&mut out, &Ok(()));
        }
        let repo = display_relative(&ctx.workspace, &git.toplevel);
        if repo != "." {
            if let Some(Value::String(summary)) = out.get_mut("summary") {
                summary.push_str(&format!(" [repository {repo}]"));
            }
        }
        Ok(out)
    }
}

fn parse_request(input: &Values) -> Result<Request, NodeError> {
    let operation = match non_empty_str(input, "operation") {
        None => {
            return Err(NodeError::invalid_input(format!(
                "operation is required; choose one of: {}",
                OPERATIONS.join(", ")
            )))
        }
        Some(op) => OPERATIONS
            .iter()
            .copied()
            .find(|o| *o == op)
            .ok_or_else(|| {
                NodeError::invalid_input(format!(
                    "operation {op:?} is not available; choose one of: {} (git is read-only here)",
                    OPERATIONS.join(", ")
                ))
            })?,
    };
    let pathspecs = string_list(input, "pathspecs")?;
    validate::pathspecs(&pathspecs)?;
    if operation == "branch" && !pathspecs.is_empty() {
        return Err(NodeError::invalid_input(
            "pathspecs does not apply to branch; leave it empty",
        ));
    }
    let revision = non_empty_str(input, "revision").map(str::to_string);
    if revision.is_some() && !matches!(operation, "show" | "log") {
        return Err(NodeError::invalid_input(format!(
            "revision applies to show and log, not to {operation}; leave it unset"
        )));
    }
    let max_bytes = input::int(input, &MAX_BYTES)?;
    let max_count = input::int(input, &MAX_COUNT)?;
    let max_bytes = usize::try_from(max_bytes)
        .map_err(|_| NodeError::internal("max_bytes passed its range check but is not a size"))?;
    Ok(Request {
        operation,
        pathspecs,
        revision,
        max_bytes,
        max_count,
    })
}

/// Every output port, null, with `operation` set.
fn blank_outputs(operation: &str) -> Values {
    let mut out = Values::new();
    for port in SPEC.outputs {
        out.insert(port.name.into(), Value::Null);
    }
    out.insert("operation".into(), json!(operation));
    out.insert("stdout_truncated".into(), json!(false));
    out
}

/// Marks `out` as a failed git run: its stderr and exit status become the error.
fn git_failed(out: &mut Values, what: &str, proc: &ProcessOutput) {
    let stderr = proc.stderr.text.trim();
    let first = stderr
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("no message");
    let code = proc
        .exit_code
        .map_or("no exit status".to_string(), |c| format!("exit status {c}"));
    let message = format!("{what} failed ({code}): {first}");
    let kind = proc.error_kind().unwrap_or(ErrorKind::NonZeroExit);
    out.insert("summary".into(), json!(message));
    out.insert("stderr".into(), json!(proc.stderr.text));
    failure::fill::<()>(out, &Err(NodeError::new(kind, message)));
}

/// The complete part of a possibly truncated structured output: the head before the omitted
/// marker, without its last (partial) record.
fn kept_records(bounded: &Bounded, separator: char) -> &str {
    if !bounded.truncated {
        return &bounded.text;
    }
    let head = bounded
        .text
        .find("\n...[omitted ")
        .map_or(bounded.text.as_str(), |i| &bounded.text[..i]);
    head.rfind(separator).map_or("", |i| &head[..=i])
}

/// The complete NUL-terminated records of a raw stdout prefix (all of it when nothing was cut).
fn kept_raw_records(bytes: &[u8], truncated: bool) -> &[u8] {
    if !truncated {
        return bytes;
    }
    bytes
        .iter()
        .rposition(|b| *b == 0)
        .map_or(&[], |i| &bytes[..=i])
}

fn pathspec_args<'a>(args: &mut Vec<&'a str>, request: &'a Request) {
    args.push("--");
    args.extend(request.pathspecs.iter().map(String::as_str));
}

fn truncation_note(truncated: bool, max_bytes: usize) -> String {
    if truncated {
        format!(" (output exceeded max_bytes {max_bytes}; list incomplete)")
    } else {
        String::new()
    }
}

async fn status(git: &Git, request: &Request, out: &mut Values) -> Result<(), NodeError> {
    let mut args = vec![
        "status",
        "--porcelain=v2",
        "-z",
        "--branch",
        "--untracked-files=normal",
        "--find-renames",
        "--ignore-submodules=dirty",
    ];
    pathspec_args(&mut args, request);
    let (proc, bytes) = git.run_bytes(&args, request.max_bytes).await?;
    if !proc.success() {
        git_failed(out, "git status", &proc);
        return Ok(());
    }
    let parsed = status::parse(kept_raw_records(&bytes, proc.stdout.truncated), true);
    let count = |key: &str| parsed.files.iter().filter(|f| f[key] == true).count();
    let (staged, untracked, conflicted) =
        (count("staged"), count("untracked"), count("conflicted"));
    let unstaged = parsed
        .files
        .iter()
        .filter(|f| {
            f["untracked"] == false && f["conflicted"] == false && f["worktree_status"] != "."
        })
        .count();
    let b = &parsed.branch;
    let mut summary = match (&b.head, &b.oid) {
        (Some(head), None) => format!("On branch {head} (no commits yet)"),
        (Some(head), Some(_)) => format!("On branch {head}"),
        (None, Some(oid)) => format!(
            "HEAD detached at {}",
            oid.chars().take(12).collect::<String>()
        ),
        (None, None) => "HEAD detached".to_string(),
    };
    match (&b.upstream, b.ahead, b.behind) {
        (Some(upstream), Some(ahead), Some(behind)) => summary.push_str(&format!(
            ", tracking {upstream} (ahead {ahead}, behind {behind})"
        )),
        (Some(upstream), _, _) => {
            summary.push_str(&format!(", tracking {upstream} (upstream gone)"))
        }
        _ => {}
    }
    if parsed.files.is_empty() {
        summary.push_str(": working tree clean");
    } else {
        summary.push_str(&format!(
            ": {} changed {} — {staged} staged, {unstaged} unstaged, {untracked} untracked, {conflicted} conflicted",
            parsed.files.len(),
            if parsed.files.len() == 1 { "path" } else { "paths" }
        ));
    }
    if parsed.unparsed > 0 {
        summary.push_str(&format!(
            "; {} status records could not be parsed",
            parsed.unparsed
        ));
    }
    summary.push_str(&truncation_note(proc.stdout.truncated, request.max_bytes));
    let branches = match &b.head {
        Some(head) => json!([{
            "name": head,
            "current": true,
            "hash": b.oid,
            "upstream": b.upstream,
            "ahead": b.ahead,
            "behind": b.behind,
        }]),
        None => json!([]),
    };
    out.insert("summary".into(), json!(summary));
    out.insert("files".into(), Value::Array(parsed.files));
    out.insert("branches".into(), branches);
    out.insert("current_branch".into(), json!(b.head));
    out.insert("stdout_truncated".into(), json!(proc.stdout.truncated));
    out.insert("stderr".into(), json!(proc.stderr.text));
    Ok(())
}

/// Flags every diff/show gets: no external programs, no colour, no configured order file.
const DIFF_FLAGS: &[&str] = &[
    "--no-ext-diff",
    "--no-textconv",
    "--no-color",
    "--no-renames",
    "--ignore-submodules=dirty",
    "-O/dev/null",
];

async fn diff(git: &Git, request: &Request, out: &mut Values) -> Result<(), NodeError> {
    let base = if git.head_exists().await? {
        "HEAD"
    } else {
        git.empty_tree()
    };
    let build = |mode: &'static str| {
        let mut args = vec!["diff", mode];
        args.extend_from_slice(DIFF_FLAGS);
        args.extend(["--end-of-options", base]);
        pathspec_args(&mut args, request);
        args
    };
    let (numstat_args, patch_args) = (build("--numstat"), build("--patch"));
    let (numstat, patch) = tokio::join!(
        git.run(&numstat_args, request.max_bytes),
        git.run(&patch_args, request.max_bytes)
    );
    let (numstat, patch) = (numstat?, patch?);
    for (proc, what) in [
        (&numstat, "git diff --numstat"),
        (&patch, "git diff --patch"),
    ] {
        if !proc.success() {
            git_failed(out, what, proc);
            return Ok(());
        }
    }
    let (files, unparsed) = diff::parse_numstat(kept_records(&numstat.stdout, '\n'));
    let added: u64 = files.iter().filter_map(|f| f["added"].as_u64()).sum();
    let deleted: u64 = files.iter().filter_map(|f| f["deleted"].as_u64()).sum();
    let against = if base == "HEAD" {
        "HEAD"
    } else {
        "the empty tree (no commits yet)"
    };
    let mut summary = if files.is_empty() {
        format!("No changes to tracked files against {against} (staged and unstaged)")
    } else {
        let noun = if files.len() == 1 { "file" } else { "files" };
        format!("{} {noun} changed, +{added} -{deleted}: working tree against {against}, staged and unstaged", files.len())
    };
    if unparsed > 0 {
        summary.push_str(&format!("; {unparsed} numstat lines could not be parsed"));
    }
    if patch.stdout.truncated {
        summary.push_str(&format!(
            "; patch is {} bytes, head+tail truncated to max_bytes {}",
            patch.stdout.total_bytes, request.max_bytes
        ));
    }
    summary.push_str(&truncation_note(
        numstat.stdout.truncated,
        request.max_bytes,
    ));
    out.insert("summary".into(), json!(summary));
    out.insert("files".into(), Value::Array(files));
    out.insert("stdout".into(), json!(patch.stdout.text));
    out.insert(
        "stdout_truncated".into(),
        json!(patch.stdout.truncated || numstat.stdout.truncated),
    );
    out.insert(
        "stderr".into(),
        json!(format!("{}{}", numstat.stderr.text, patch.stderr.text)),
    );
    Ok(())
}

/// Checks `revision` and resolves it to a commit hash; remote-tracking refs are refused.
async fn resolve_commit(git: &Git, revision: &str) -> Result<String, NodeError> {
    let name = validate::revision(revision)?;
    let full = git
        .run(
            &[
                "rev-parse",
                "--symbolic-full-name",
                "--end-of-options",
                name,
            ],
            4096,
        )
        .await?;
    if full
        .stdout
        .text
        .lines()
        .any(|l| l.starts_with("refs/remotes/"))
    {
        return Err(NodeError::invalid_input(format!(
            "revision {revision:?} is a remote-tracking ref ({}); only local branches, tags and hashes are accepted",
            full.stdout.text.trim()
        )));
    }
    let spec = format!("{revision}^{{commit}}");
    let resolved = git
        .run(
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                "--end-of-options",
                &spec,
            ],
            4096,
        )
        .await?;
    let hash = resolved.stdout.text.trim();
    if !resolved.success() || hash.is_empty() {
        return Err(NodeError::new(
            ErrorKind::NotFound,
            format!("revision {revision:?} does not resolve to a commit in this repository"),
        ));
    }
    Ok(hash.to_string())
}

async fn log(git: &Git, request: &Request, out: &mut Values) -> Result<(), NodeError> {
    let start = match &request.revision {
        Some(revision) => resolve_commit(git, revision).await?,
        None => {
            if !git.head_exists().await? {
                out.insert("summary".into(), json!("The repository has no commits yet"));
                out.insert("commits".into(), json!([]));
                return Ok(());
            }
            "HEAD".to_string()
        }
    };
    let count = request.max_count.to_string();
    let mut args = vec![
        "log",
        log::FORMAT,
        "-z",
        "--no-color",
        "-n",
        &count,
        "--end-of-options",
        &start,
    ];
    pathspec_args(&mut args, request);
    let proc = git.run(&args, request.max_bytes).await?;
    if !proc.success() {
        git_failed(out, "git log", &proc);
        return Ok(());
    }
    let commits = log::parse(kept_records(&proc.stdout, '\0'), !proc.stdout.truncated);
    let mut summary = match commits.len() {
        0 => "No commits match".to_string(),
        1 => "1 commit".to_string(),
        n => format!("{n} commits"),
    };
    if let Some(first) = commits.first() {
        summary.push_str(&format!(
            ", newest {} {}",
            first["short_hash"].as_str().unwrap_or(""),
            first["subject"].as_str().unwrap_or("")
        ));
    }
    summary.push_str(&truncation_note(proc.stdout.truncated, request.max_bytes));
    out.insert("summary".into(), json!(summary));
    out.insert("commits".into(), Value::Array(commits));
    out.insert("stdout_truncated".into(), json!(proc.stdout.truncated));
    out.insert("stderr".into(), json!(proc.stderr.text));
    Ok(())
}

async fn show(git: &Git, request: &Request, out: &mut Values) -> Result<(), NodeError> {
    let revision = request.revision.as_deref().unwrap_or("HEAD");
    if revision == "HEAD" && !git.head_exists().await? {
        return Err(NodeError::new(
            ErrorKind::NotFound,
            "the repository has no commits yet, so there is nothing to show",
        ));
    }
    let hash = resolve_commit(git, revision).await?;
    let meta_format = format!("{}%x00", log::FORMAT);
    let mut meta_args = vec!["show", "--numstat", &meta_format];
    meta_args.extend_from_slice(DIFF_FLAGS);
    meta_args.extend(["--end-of-options", &hash]);
    pathspec_args(&mut meta_args, request);
    let mut patch_args = vec!["show", "--patch", "--format=fuller"];
    patch_args.extend_from_slice(DIFF_FLAGS);
    patch_args.extend(["--end-of-options", &hash]);
    pathspec_args(&mut patch_args, request);
    let (meta, patch) = tokio::join!(
        git.run(&meta_args, request.max_bytes),
        git.run(&patch_args, request.max_bytes)
    );
    let (meta, patch) = (meta?, patch?);
    for (proc, what) in [(&meta, "git show --numstat"), (&patch, "git show --patch")] {
        if !proc.success() {
            git_failed(out, what, proc);
            return Ok(());
        }
    }
    let fields: Vec<&str> = meta.stdout.text.splitn(log::FIELDS + 1, '\0').collect();
    if fields.len() != log::FIELDS + 1 {
        return Err(NodeError::internal(format!(
            "git show printed an unexpected header for {hash}"
        )));
    }
    let commit = log::commit(&fields[..log::FIELDS]);
    let numstat_text = if meta.stdout.truncated {
        kept_records(&meta.stdout, '\n')
    } else {
        fields[log::FIELDS]
    };
    let (files, _) = diff::parse_numstat(numstat_text);
    let mut summary = format!(
        "{} {} by {} on {}: {} {} changed",
        commit["short_hash"].as_str().unwrap_or(""),
        commit["subject"].as_str().unwrap_or(""),
        commit["author"].as_str().unwrap_or(""),
        commit["date"].as_str().unwrap_or(""),
        files.len(),
        if files.len() == 1 { "file" } else { "files" }
    );
    if patch.stdout.truncated {
        summary.push_str(&format!(
            "; output head+tail truncated to max_bytes {}",
            request.max_bytes
        ));
    }
    out.insert("summary".into(), json!(summary));
    out.insert("commits".into(), json!([commit]));
    out.insert("files".into(), Value::Array(files));
    out.insert("stdout".into(), json!(patch.stdout.text));
    out.insert(
        "stdout_truncated".into(),
        json!(patch.stdout.truncated || meta.stdout.truncated),
    );
    out.insert(
        "stderr".into(),
        json!(format!("{}{}", meta.stderr.text, patch.stderr.text)),
    );
    Ok(())
}

async fn branch(git: &Git, out: &mut Values) -> Result<(), NodeError> {
    let (symbolic, refs, head) = tokio::join!(
        git.run(&["symbolic-ref", "--quiet", "--short", "HEAD"], 4096),
        git.run(
            &[
                "for-each-ref",
                branch::FORMAT,
                "--sort=refname",
                "refs/heads/"
            ],
            4 << 20
        ),
        git.run(
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                "--short",
                "HEAD^{commit}"
            ],
            4096
        ),
    );
    let (symbolic, refs, head) = (symbolic?, refs?, head?);
    if !refs.success() {
        git_failed(out, "git for-each-ref", &refs);
        return Ok(());
    }
    let branches = branch::parse(kept_records(&refs.stdout, '\n'));
    let current = symbolic
        .success()
        .then(|| symbolic.stdout.text.trim().to_string())
        .filter(|s| !s.is_empty());
    let head_hash = head.success().then(|| head.stdout.text.trim().to_string());
    let noun = if branches.len() == 1 {
        "branch"
    } else {
        "branches"
    };
    let summary = match (&current, &head_hash) {
        (Some(name), Some(_)) => format!("{} local {noun}; on {name}", branches.len()),
        (Some(name), None) => {
            format!("The repository has no commits yet; on branch {name} (unborn)")
        }
        (None, Some(hash)) => format!("{} local {noun}; HEAD detached at {hash}", branches.len()),
        (None, None) => "HEAD does not point at a branch or a commit".to_string(),
    };
    out.insert("summary".into(), json!(summary));
    out.insert("branches".into(), Value::Array(branches));
    out.insert("current_branch".into(), json!(current));
    out.insert("stderr".into(), json!(refs.stderr.text));
    Ok(())
}

#[cfg(test)]
mod tests;
