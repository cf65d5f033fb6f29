//! Running `git` so that a hostile repository cannot make it run anything else.
//!
//! A repository is untrusted input: its `.git/config`, `.gitattributes` and hooks can name
//! programs (fsmonitor, pager, external diff, textconv and filter drivers, hooks, gpg). Every
//! invocation therefore gets:
//!
//! - a fixed environment: the base environment with `LANG`/`LC_*` replaced by `LC_ALL=C`, plus
//!   `GIT_CONFIG_NOSYSTEM=1`, `GIT_CONFIG_GLOBAL=/dev/null`, `GIT_TERMINAL_PROMPT=0`,
//!   `GIT_OPTIONAL_LOCKS=0` (status never writes the index), `GIT_NO_LAZY_FETCH=1`,
//!   `GIT_PAGER=cat`, and `GIT_CEILING_DIRECTORIES` set to the workspace's parent so discovery
//!   never climbs out of the workspace;
//! - `--no-pager` and command-line `-c` overrides ([`FIXED_OVERRIDES`]) that switch off every
//!   knob with a fixed name (`core.fsmonitor`, `core.hooksPath`, `diff.external`, …);
//! - overrides for every driver the repository's configuration defines (`filter.<x>.clean`,
//!   `.smudge`, `.process`, `diff.<x>.command`, `.textconv`), found by listing that configuration
//!   first and passed through `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`, which needs no quoting;
//! - per-command flags (`--no-ext-diff`, `--no-textconv`, `--end-of-options`, `--`) added by the
//!   operations themselves.
//!
//! Before any operation, [`Git::open`] confines the repository to the workspace
//! ([`super::confine`]): the `.git` entry is checked before git runs at all, then the probe's
//! `--absolute-git-dir`, `--git-common-dir` and `--show-toplevel` and the files git would follow
//! (alternates, symlinks in the git directory, submodule `.git` files). The configuration listing
//! carries `--show-origin`, so a `core.worktree` leading out is reported with the file that sets it.

use super::confine;
use cheng_exec::{ProcessOutput, ProcessSpec, Termination};
use cheng_node::{CancellationToken, ErrorKind, NodeError};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Wall-clock budget of one git invocation.
pub const GIT_TIMEOUT: Duration = Duration::from_secs(60);
/// stderr kept per invocation.
pub const STDERR_CAP: usize = 64 * 1024;

/// `-c` overrides passed to every invocation.
pub const FIXED_OVERRIDES: &[&str] = &[
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "core.untrackedCache=false",
    "core.quotePath=true",
    "core.attributesFile=/dev/null",
    "diff.external=",
    // `git diff` otherwise rewrites the index to refresh stat data (it ignores GIT_OPTIONAL_LOCKS).
    "diff.autoRefreshIndex=false",
    "diff.submodule=short",
    "diff.noprefix=false",
    "color.ui=never",
    "log.showSignature=false",
    "i18n.logOutputEncoding=UTF-8",
    "protocol.allow=never",
    "submodule.recurse=false",
    "status.submoduleSummary=false",
    "safe.bareRepository=explicit",
    "gc.auto=0",
    "maintenance.auto=false",
];

/// The repository probe: where its work tree, git directory and common git directory are (all
/// absolute), and its object format. One line each, in this order.
const PROBE_ARGS: [&str; 6] = [
    "rev-parse",
    "--path-format=absolute",
    "--show-toplevel",
    "--show-object-format",
    "--absolute-git-dir",
    "--git-common-dir",
];

/// One repository, opened with the hardened environment.
pub struct Git {
    /// The directory git runs in (the resolved `cwd`).
    pub cwd: PathBuf,
    /// The work tree's top level (canonical, inside the workspace).
    pub toplevel: PathBuf,
    pub object_format: String,
    env: Vec<(OsString, OsString)>,
    cancel: CancellationToken,
    /// Live output of the operation's git commands (off for the probes [`Git::open`] runs).
    output: cheng_node::Output,
}

impl Git {
    /// Opens the repository containing `cwd`: checks that it is one, that everything git would
    /// read lies inside `workspace` (see [`super::confine`]), and neutralises the drivers its
    /// configuration defines.
    pub async fn open(
        workspace: &Path,
        cwd: PathBuf,
        cancel: &CancellationToken,
    ) -> Result<Git, NodeError> {
        // Before git runs at all: the `.git` entry it would read first must not lead out.
        let guessed = confine::dot_git(workspace, &cwd)?;
        // The git directory's symlink scan (the walk of objects/ and refs/) and the read of its
        // index run while git probes.
        let prescan = guessed.map(|dir| {
            let workspace = workspace.to_path_buf();
            tokio::task::spawn_blocking(move || confine::prescan(&workspace, dir))
        });
        let env = base_env(workspace, cheng_exec::env::base());
        let probe = Git {
            cwd: cwd.clone(),
            toplevel: cwd.clone(),
            object_format: String::new(),
            env,
            cancel: cancel.clone(),
            output: cheng_node::Output::off(),
        };
        let (info, config) = tokio::join!(
            probe.run(&PROBE_ARGS, 64 * 1024),
            probe.run(&["config", "--null", "--show-origin", "--list"], 4 << 20),
        );
        let info = info?;
        if !info.success() {
            return Err(not_a_repository(&cwd, workspace, &info));
        }
        let lines: Vec<&str> = info.stdout.text.lines().collect();
        let [toplevel, object_format, git_dir, common_dir] = lines[..] else {
            return Err(NodeError::new(
                ErrorKind::NotARepository,
                format!(
                    "git rev-parse described the repository in {} lines instead of 4 (a path with a newline?); \
                     rename the repository's directories so their paths hold no newline",
                    lines.len()
                ),
            ));
        };
        let config = config?;
        if !config.success() || config.stdout.truncated {
            return Err(NodeError::new(
                ErrorKind::PolicyDenied,
                "the repository's configuration could not be listed in full, so its drivers cannot be neutralised; git was not run",
            ));
        }
        let entries = config_entries(&config.stdout.text);
        let worktree_origin = entries
            .iter()
            .rev()
            .find(|e| e.key == "core.worktree")
            .and_then(|e| e.origin.strip_prefix("file:"));
        let hash_len = if object_format == "sha256" { 32 } else { 20 };
        let prescanned = match prescan {
            Some(handle) => handle.await.ok(),
            None => None,
        };
        let answers = confine::Probe {
            toplevel,
            git_dir,
            common_dir,
            worktree_origin,
            hash_len,
        };
        let toplevel = confine::layout(workspace, &cwd, &answers, prescanned)?;
        let mut env = probe.env;
        push_config_env(&mut env, &driver_overrides(&entries));
        Ok(Git {
            cwd,
            toplevel,
            object_format: object_format.to_string(),
            env,
            cancel: cancel.clone(),
            output: cheng_node::Output::off(),
        })
    }

    /// Passes the output of the commands run from now on to `output` as it is read.
    pub fn with_output(mut self, output: cheng_node::Output) -> Self {
        self.output = output;
        self
    }

    /// Runs `git <hardening> <args>` and returns its output; only a spawn failure, a timeout or
    /// a cancellation is an error.
    pub async fn run(&self, args: &[&str], stdout_cap: usize) -> Result<ProcessOutput, NodeError> {
        let out = cheng_exec::run(self.spec(args, stdout_cap), &self.cancel).await;
        check(out, args)
    }

    /// Like [`Git::run`], plus the first `stdout_cap` bytes of stdout exactly as git wrote them
    /// (for `-z` output, whose paths may not be UTF-8).
    pub async fn run_bytes(
        &self,
        args: &[&str],
        stdout_cap: usize,
    ) -> Result<(ProcessOutput, Vec<u8>), NodeError> {
        let raw =
            cheng_exec::run_with_stdout_bytes(self.spec(args, stdout_cap), &self.cancel).await;
        Ok((check(raw.output, args)?, raw.stdout_bytes))
    }

    fn spec(&self, args: &[&str], stdout_cap: usize) -> ProcessSpec {
        let mut argv: Vec<OsString> = vec!["--no-pager".into()];
        for item in FIXED_OVERRIDES {
            argv.push("-c".into());
            argv.push((*item).into());
        }
        argv.extend(args.iter().map(OsString::from));
        ProcessSpec::new("git", argv, self.cwd.clone())
            .env(self.env.clone())
            .timeout(GIT_TIMEOUT)
            .caps(stdout_cap.max(1), STDERR_CAP)
            .output(self.output.clone())
    }

    /// The empty tree's id in this repository's object format (diff base of an unborn HEAD).
    pub fn empty_tree(&self) -> &'static str {
        if self.object_format == "sha256" {
            "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321"
        } else {
            "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
        }
    }

    /// Whether HEAD points at a commit (false in an empty repository).
    pub async fn head_exists(&self) -> Result<bool, NodeError> {
        let out = self
            .run(&["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], 4096)
            .await?;
        Ok(out.success())
    }
}

/// The hardened environment over `base` (cheng's base environment): no host git configuration,
/// no `GIT_*` variable from the host (`GIT_DIR`, `GIT_WORK_TREE`, `GIT_COMMON_DIR`,
/// `GIT_OBJECT_DIRECTORY`, `GIT_ALTERNATE_OBJECT_DIRECTORIES`, … would point git elsewhere), no
/// prompts, no optional locks.
fn base_env(workspace: &Path, base: Vec<(OsString, OsString)>) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = base
        .into_iter()
        .filter(|(name, _)| {
            let name = name.to_string_lossy();
            name != "LANG" && !name.starts_with("LC_") && !name.starts_with("GIT_")
        })
        .collect();
    let fixed: &[(&str, &str)] = &[
        ("LC_ALL", "C"),
        ("GIT_CONFIG_NOSYSTEM", "1"),
        ("GIT_CONFIG_GLOBAL", "/dev/null"),
        ("GIT_TERMINAL_PROMPT", "0"),
        ("GIT_OPTIONAL_LOCKS", "0"),
        ("GIT_NO_LAZY_FETCH", "1"),
        ("GIT_NO_REPLACE_OBJECTS", "1"),
        ("GIT_PAGER", "cat"),
        ("PAGER", "cat"),
        ("GIT_ATTR_NOSYSTEM", "1"),
    ];
    env.extend(
        fixed
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v))),
    );
    if let Some(parent) = workspace.parent() {
        env.push((
            "GIT_CEILING_DIRECTORIES".into(),
            parent.as_os_str().to_owned(),
        ));
    }
    env
}

/// One entry of `git config --null --show-origin --list`.
pub struct ConfigEntry<'a> {
    /// `file:<path>`, `command line:`, ...
    pub origin: &'a str,
    /// As git lists it: section and variable lowercased, subsection as written.
    pub key: &'a str,
}

/// The entries of `git config --null --show-origin --list` output: NUL-separated origin and
/// `key\nvalue` pairs.
pub fn config_entries(list: &str) -> Vec<ConfigEntry<'_>> {
    let mut items = list.split('\0');
    let mut out = Vec::new();
    while let (Some(origin), Some(item)) = (items.next(), items.next()) {
        let key = item.split('\n').next().unwrap_or("");
        out.push(ConfigEntry { origin, key });
    }
    out
}

/// Overrides for every filter and diff driver the configuration defines.
///
/// An empty command disables a driver in git (`if (cmd && *cmd)`), and `required=false` keeps a
/// disabled filter from being an error.
pub fn driver_overrides(entries: &[ConfigEntry<'_>]) -> Vec<(String, String)> {
    const FILTER: &[(&str, &str)] = &[
        ("clean", ""),
        ("smudge", ""),
        ("process", ""),
        ("required", "false"),
    ];
    const DIFF: &[(&str, &str)] = &[("command", ""), ("textconv", "")];
    let mut out: Vec<(String, String)> = Vec::new();
    for entry in entries {
        let key = entry.key;
        // `filter.<driver>.<setting>`; the driver name may itself contain dots.
        let Some((prefix, _setting)) = key.rsplit_once('.') else {
            continue;
        };
        let settings = if prefix.starts_with("filter.") {
            FILTER
        } else if prefix.starts_with("diff.") {
            DIFF
        } else {
            continue;
        };
        for (name, value) in settings {
            let full = format!("{prefix}.{name}");
            if !out.iter().any(|(k, _)| *k == full) {
                out.push((full, (*value).to_string()));
            }
        }
    }
    out
}

fn push_config_env(env: &mut Vec<(OsString, OsString)>, overrides: &[(String, String)]) {
    if overrides.is_empty() {
        return;
    }
    env.push((
        "GIT_CONFIG_COUNT".into(),
        overrides.len().to_string().into(),
    ));
    for (i, (key, value)) in overrides.iter().enumerate() {
        env.push((format!("GIT_CONFIG_KEY_{i}").into(), key.into()));
        env.push((format!("GIT_CONFIG_VALUE_{i}").into(), value.into()));
    }
}

/// Turns the ways git can fail to run at all into errors; a git that ran is returned as is.
fn check(out: ProcessOutput, args: &[&str]) -> Result<ProcessOutput, NodeError> {
    match out.termination {
        Termination::SpawnFailed => Err(NodeError::new(
            ErrorKind::SpawnFailed,
            format!(
                "git could not be started: {}; install git and make sure it is on PATH",
                out.spawn_error.as_deref().unwrap_or("unknown error")
            ),
        )),
        Termination::TimedOut => Err(NodeError::new(
            ErrorKind::TimedOut,
            format!(
                "git {} did not finish within {} s and was killed",
                args.first().unwrap_or(&""),
                GIT_TIMEOUT.as_secs()
            ),
        )),
        Termination::Cancelled => Err(NodeError::new(
            ErrorKind::Cancelled,
            "the git operation was cancelled",
        )),
        _ => Ok(out),
    }
}

fn not_a_repository(cwd: &Path, workspace: &Path, out: &ProcessOutput) -> NodeError {
    let shown = cheng_node::paths::display_relative(workspace, cwd);
    let stderr = out.stderr.text.trim();
    if stderr.contains("dubious ownership") {
        return NodeError::new(
            ErrorKind::NotARepository,
            format!("the repository at {shown} is owned by another user, and git refuses to read it: {stderr}"),
        );
    }
    if stderr.contains("bare repository") {
        return NodeError::new(
            ErrorKind::NotARepository,
            format!("{shown} is a bare repository, which is not opened implicitly: {stderr}"),
        );
    }
    NodeError::new(
        ErrorKind::NotARepository,
        format!("{shown} is not inside a git repository within the workspace ({stderr})"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drivers_from_the_repository_config_are_disabled() {
        let list = "file:.git/config\0core.bare\nfalse\0file:.git/config\0filter.evil.clean\ntouch x\0file:/x/inc\0filter.a.b.smudge\nrm -rf /\0command line:\0diff.pic.textconv\nexiftool\0file:.git/config\0diff.renames\ntrue\0file:.git/config\0user.name\nme\0";
        let entries = config_entries(list);
        assert_eq!(entries.len(), 6);
        assert_eq!(
            (entries[2].origin, entries[2].key),
            ("file:/x/inc", "filter.a.b.smudge")
        );
        let got = driver_overrides(&entries);
        let has = |k: &str, v: &str| got.iter().any(|(a, b)| a == k && b == v);
        assert!(has("filter.evil.clean", ""));
        assert!(has("filter.evil.smudge", ""));
        assert!(has("filter.evil.process", ""));
        assert!(has("filter.evil.required", "false"));
        assert!(
            has("filter.a.b.clean", ""),
            "dotted driver names keep their subsection"
        );
        assert!(has("diff.pic.textconv", ""));
        assert!(has("diff.pic.command", ""));
        assert!(!got
            .iter()
            .any(|(k, _)| k.starts_with("diff.renames") || k.starts_with("user.")));
    }

    #[test]
    fn base_environment_disables_host_configuration() {
        let host = [
            ("PATH", "/usr/bin"),
            ("GIT_DIR", "/elsewhere/.git"),
            ("GIT_WORK_TREE", "/elsewhere"),
            ("GIT_COMMON_DIR", "/elsewhere/.git"),
            ("GIT_OBJECT_DIRECTORY", "/elsewhere/.git/objects"),
            (
                "GIT_ALTERNATE_OBJECT_DIRECTORIES",
                "/elsewhere/.git/objects",
            ),
            ("GIT_INDEX_FILE", "/elsewhere/.git/index"),
            ("GIT_NAMESPACE", "x"),
            ("GIT_CONFIG_PARAMETERS", "'core.worktree'='/elsewhere'"),
        ];
        let base = cheng_exec::env::base_from(
            host.iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v))),
        );
        let env = base_env(Path::new("/work/ws"), base);
        for (name, _) in &host[1..] {
            assert!(
                !env.iter().any(|(k, _)| k == name),
                "{name} from the host reaches git"
            );
        }
        let get = |k: &str| {
            env.iter()
                .find(|(a, _)| a == k)
                .map(|(_, v)| v.to_string_lossy().into_owned())
        };
        assert_eq!(get("GIT_CONFIG_NOSYSTEM").as_deref(), Some("1"));
        assert_eq!(get("GIT_CONFIG_GLOBAL").as_deref(), Some("/dev/null"));
        assert_eq!(get("GIT_OPTIONAL_LOCKS").as_deref(), Some("0"));
        assert_eq!(get("GIT_TERMINAL_PROMPT").as_deref(), Some("0"));
        assert_eq!(get("GIT_CEILING_DIRECTORIES").as_deref(), Some("/work"));
        assert_eq!(get("LC_ALL").as_deref(), Some("C"));
    }
}
