//! The read side of the path rules and the directory walk `tools/list_dir`, `tools/glob` and
//! `tools/grep` share.
//!
//! Everything a read-only search node decides about a path goes through [`ReadScope`]: where a
//! field value resolves to ([`ReadScope::resolve`], the workspace resolver of
//! `cheng_node::paths`), whether a real path may be read ([`ReadScope::may_read`]) and what a
//! symlink met during a walk points at ([`ReadScope::link`]). Walks never follow symlinks: a link
//! is an entry of its own, reported with where it leads, and its target is never opened (a link
//! whose target leaves the workspace is reported as such, never read).
//!
//! The walk ([`walker`]) is the `ignore` crate's: `.gitignore` and `.ignore` files inside the
//! workspace are respected (also outside a git repository), `.git` is always skipped, hidden
//! entries are optional. Ignore files above the workspace root, the user's global excludes and
//! `.git/info/exclude` are not read: the walk reads nothing outside the workspace.
//!
//! Every file a search node opens or examines goes through the workspace handle
//! ([`ReadScope::fs_for`], [`cheng_fs::WorkspaceFs`]): beneath the root's descriptor, no symlink
//! followed, so a directory swapped for a link after the policy's check is refused, never read
//! through. `list_dir` lists through the handle too. The `ignore` walk itself goes by path (the
//! crate offers no walk relative to a descriptor, and its ignore-file rules are what glob and
//! grep promise): a directory swapped for a link in the middle of a walk can make it meet names
//! from where the link leads. None reaches an output: grep lists only files it read through the
//! handle, and glob lists a match only once the handle finds it beneath the root with no link on
//! the way (nodes/files/tests/suite/races.rs performs the swap against both).

use crate::policy::{Access, PathPolicy};
use cheng_node::{CancellationToken, ErrorKind, NodeError, Values};
use ignore::WalkBuilder;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What the search nodes may read: the path policy's read side (the workspace plus the
/// author's read-only roots, [`crate::policy`]).
#[derive(Debug, Clone)]
pub struct ReadScope {
    policy: PathPolicy,
}

/// Where a symlink met during a walk leads. The target is never opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkTarget {
    /// Inside the workspace (or a read-only root): the real path it resolves to.
    Readable(PathBuf),
    /// Outside everything the node may read.
    Outside,
    /// The target does not exist (or the link loops).
    Dangling,
}

impl LinkTarget {
    /// A short note for listings: `leaves the workspace`, `dangling`, `not followed`.
    pub fn note(&self) -> &'static str {
        match self {
            LinkTarget::Readable(_) => "symlink, not followed",
            LinkTarget::Outside => "symlink leaving the workspace, not followed",
            LinkTarget::Dangling => "dangling symlink",
        }
    }

    /// The stable word in structured outputs: `inside`, `outside`, `dangling`.
    pub fn kind(&self) -> &'static str {
        match self {
            LinkTarget::Readable(_) => "inside",
            LinkTarget::Outside => "outside",
            LinkTarget::Dangling => "dangling",
        }
    }
}

impl ReadScope {
    /// The workspace alone; `root` must be canonical (`RunContext::workspace` is).
    pub fn workspace(root: &Path) -> Self {
        ReadScope {
            policy: PathPolicy::new(root.to_path_buf(), Vec::new()),
        }
    }

    /// The scope of one call: the workspace and the config's `read_roots`.
    pub fn from_input(workspace: &Path, input: &Values) -> Result<Self, NodeError> {
        Ok(ReadScope {
            policy: PathPolicy::from_input(workspace, input)?,
        })
    }

    /// Adds canonical read-only roots (links into them are readable).
    pub fn with_read_roots(self, roots: Vec<PathBuf>) -> Self {
        ReadScope {
            policy: PathPolicy::new(self.policy.root().to_path_buf(), roots),
        }
    }

    pub fn root(&self) -> &Path {
        self.policy.root()
    }

    /// Resolves field `field`'s value (relative to the workspace, or absolute inside it or a
    /// read-only root; `None`, `""` and `"."` are the root) to an existing real path the node may
    /// read, through the path policy. A path naming a symlink is resolved (the caller asked for
    /// it by name); one whose real path leaves what the node may read is refused.
    pub fn resolve(&self, rel: Option<&str>, field: &str) -> Result<PathBuf, NodeError> {
        let rel = rel.filter(|r| !r.is_empty()).unwrap_or(".");
        let target = self.policy.resolve(rel, field, Access::Read)?;
        match self.fs_for(&target.real)?.symlink_metadata(&target.real) {
            Ok(_) => Ok(target.real),
            Err(e) => {
                let kind = if e.kind() == std::io::ErrorKind::NotFound {
                    ErrorKind::NotFound
                } else {
                    ErrorKind::InvalidInput
                };
                Err(NodeError::new(
                    kind,
                    format!("{field} {rel:?} does not exist in the workspace: {e}"),
                ))
            }
        }
    }

    /// The workspace handle on the root holding `real` (a path [`ReadScope::resolve`] returned,
    /// or one found under it): every open of a search node goes through it.
    pub fn fs_for(&self, real: &Path) -> Result<cheng_fs::WorkspaceFs, NodeError> {
        crate::files::fs_for(&self.policy, real)
    }

    /// Whether the real (canonical) path `real` may be read.
    pub fn may_read(&self, real: &Path) -> bool {
        real.starts_with(self.root())
            || self.policy.read_roots().iter().any(|r| real.starts_with(r))
    }

    /// Where the symlink `link` leads, decided on its fully resolved real path.
    pub fn link(&self, link: &Path) -> LinkTarget {
        match std::fs::canonicalize(link) {
            Ok(real) if self.may_read(&real) => LinkTarget::Readable(real),
            Ok(_) => LinkTarget::Outside,
            Err(_) => LinkTarget::Dangling,
        }
    }

    /// `path` relative to the workspace for outputs (`.` for the root).
    pub fn display(&self, path: &Path) -> String {
        cheng_node::paths::display_relative(self.root(), path)
    }
}

/// Cancellation and a wall-clock limit, checked while a walk runs.
#[derive(Clone)]
pub struct Budget {
    cancel: CancellationToken,
    deadline: Instant,
    limit: Duration,
    what: &'static str,
}

impl Budget {
    pub fn new(cancel: CancellationToken, limit: Duration, what: &'static str) -> Self {
        Budget {
            cancel,
            deadline: Instant::now() + limit,
            limit,
            what,
        }
    }

    /// Whether the walk should stop now.
    pub fn exhausted(&self) -> bool {
        self.cancel.is_cancelled() || Instant::now() >= self.deadline
    }

    /// `Err` when cancelled or out of time, naming the node's work.
    pub fn check(&self) -> Result<(), NodeError> {
        if self.cancel.is_cancelled() {
            return Err(NodeError::new(
                ErrorKind::Cancelled,
                format!("cancelled during the {}", self.what),
            ));
        }
        if Instant::now() >= self.deadline {
            return Err(NodeError::new(
                ErrorKind::TimedOut,
                format!(
                    "the {} took longer than its {} s limit and was stopped; narrow it with a smaller path or a more specific pattern",
                    self.what,
                    self.limit.as_secs()
                ),
            ));
        }
        Ok(())
    }
}

/// Longest one walk of glob or grep may run (Codex's grep_files limit).
pub const WALK_TIME_LIMIT: Duration = Duration::from_secs(30);

/// Whether entries named like this are never walked (`.git`, file or directory).
pub fn always_skipped(name: &std::ffi::OsStr) -> bool {
    name == ".git"
}

/// A walk of `target` (a canonical path inside the scope, file or directory) with the shared
/// rules: ignore files inside the workspace respected, `.git` skipped, hidden entries only when
/// `hidden`, symlinks never followed.
///
/// Ignore files of the directories between the workspace root and `target` apply as they do for
/// a walk of the root: the walk starts at the root and descends only towards and into `target`.
/// When `target` is itself ignored or hidden (a person named it on purpose), it is walked from
/// itself, with only the ignore files inside it, as ripgrep does with a path given explicitly.
pub fn walker(scope: &ReadScope, target: &Path, hidden: bool) -> WalkBuilder {
    let root = scope.root().to_path_buf();
    if target == root || !target.starts_with(&root) {
        return base(target, hidden);
    }
    if reachable(&root, target, hidden) {
        let mut builder = base(&root, hidden);
        let target = target.to_path_buf();
        builder.filter_entry(move |entry| {
            let path = entry.path();
            !always_skipped(entry.file_name())
                && (path.starts_with(&target) || target.starts_with(path))
        });
        builder
    } else {
        base(target, hidden)
    }
}

fn base(start: &Path, hidden: bool) -> WalkBuilder {
    let mut builder = WalkBuilder::new(start);
    builder
        .follow_links(false)
        .hidden(!hidden)
        .parents(false)
        .ignore(true)
        .git_ignore(true)
        .git_global(false)
        .git_exclude(false)
        .require_git(false)
        .filter_entry(|entry| !always_skipped(entry.file_name()));
    builder
}

/// Whether a walk from `root` reaches `target` through the ignore and hidden rules (only the
/// directories on the way are read).
fn reachable(root: &Path, target: &Path, hidden: bool) -> bool {
    let mut builder = base(root, hidden);
    let on_the_way = target.to_path_buf();
    builder.filter_entry(move |entry| {
        !always_skipped(entry.file_name()) && on_the_way.starts_with(entry.path())
    });
    builder
        .build()
        .flatten()
        .any(|entry| entry.path() == target)
}

/// Most bytes of listing text a search node returns; whole lines only, the rest counted.
pub const MAX_CONTENT_BYTES: usize = 256 * 1024;

/// The first lines of `lines` that fit in `max_bytes` (joined with newlines) and how many fit.
/// At least one line is always kept, cut at a character boundary if it alone is too long.
pub fn fit_lines(lines: &[String], max_bytes: usize) -> (String, usize) {
    let mut text = String::new();
    let mut kept = 0;
    for line in lines {
        let extra = line.len() + usize::from(kept > 0);
        if text.len() + extra > max_bytes {
            if kept == 0 {
                text.push_str(crate::list_dir::cut(line, max_bytes));
                kept = 1;
            }
            break;
        }
        if kept > 0 {
            text.push('\n');
        }
        text.push_str(line);
        kept += 1;
    }
    (text, kept)
}

/// Keeps the `k` smallest items pushed (in `Ord` order) and counts all of them; memory stays
/// `O(k)` however many are pushed. Items collect in a buffer of up to `2k`; when it is full, the
/// `k` smallest are selected in linear time and the rest dropped, so a push costs `O(1)`
/// amortised and the final sort sees at most `2k` items (already in order when the walk
/// produced them in order, which the sort detects).
#[derive(Debug)]
pub struct TopK<T: Ord> {
    k: usize,
    items: Vec<T>,
    total: usize,
}

impl<T: Ord> TopK<T> {
    pub fn new(k: usize) -> Self {
        TopK {
            k,
            items: Vec::with_capacity(k.min(4096)),
            total: 0,
        }
    }

    pub fn push(&mut self, item: T) {
        self.total += 1;
        if self.k == 0 {
            return;
        }
        self.items.push(item);
        if self.items.len() >= 2 * self.k {
            self.items.select_nth_unstable(self.k - 1);
            self.items.truncate(self.k);
        }
    }

    /// How many items were pushed in all.
    pub fn total(&self) -> usize {
        self.total
    }

    /// The kept items, smallest first.
    pub fn into_sorted(mut self) -> Vec<T> {
        self.items.sort();
        self.items.truncate(self.k);
        self.items
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn scope() -> (tempfile::TempDir, ReadScope) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        (dir, ReadScope::workspace(&root))
    }

    fn walked(scope: &ReadScope, target: &Path, hidden: bool) -> Vec<String> {
        let mut paths: Vec<String> = walker(scope, target, hidden)
            .build()
            .flatten()
            .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
            .map(|e| scope.display(e.path()))
            .collect();
        paths.sort();
        paths
    }

    #[test]
    fn top_k_keeps_the_smallest_and_counts_all() {
        let mut top = TopK::new(3);
        for n in [5, 1, 9, 3, 7, 2, 8] {
            top.push(n);
        }
        assert_eq!(top.total(), 7);
        assert_eq!(top.into_sorted(), [1, 2, 3]);
        let mut top = TopK::new(100);
        for n in (0..10_000).rev() {
            top.push(n);
        }
        assert_eq!(top.into_sorted(), (0..100).collect::<Vec<_>>());
        let mut none = TopK::new(0);
        none.push(1);
        assert_eq!((none.total(), none.into_sorted()), (1, Vec::<i32>::new()));
    }

    #[test]
    fn fit_lines_keeps_whole_lines() {
        let lines: Vec<String> = ["aaaa", "bbbb", "cccc"].map(String::from).to_vec();
        assert_eq!(fit_lines(&lines, 9), ("aaaa\nbbbb".to_string(), 2));
        assert_eq!(fit_lines(&lines, 8), ("aaaa".to_string(), 1));
        assert_eq!(fit_lines(&lines, 2), ("aa".to_string(), 1));
        assert_eq!(fit_lines(&lines, 100).1, 3);
    }

    #[test]
    fn root_ignore_files_apply_to_a_subdirectory_walk() {
        let (_d, scope) = scope();
        let root = scope.root().to_path_buf();
        fs::create_dir_all(root.join("sub/deeper")).unwrap();
        fs::write(root.join(".gitignore"), "*.log\n").unwrap();
        fs::write(root.join("sub/a.log"), "x").unwrap();
        fs::write(root.join("sub/a.txt"), "x").unwrap();
        fs::write(root.join("sub/deeper/b.txt"), "x").unwrap();
        fs::write(root.join("other.txt"), "x").unwrap();
        assert_eq!(
            walked(&scope, &root.join("sub"), false),
            ["sub/a.txt", "sub/deeper/b.txt"]
        );
        assert_eq!(
            walked(&scope, &root, false),
            ["other.txt", "sub/a.txt", "sub/deeper/b.txt"]
        );
    }

    #[test]
    fn an_ignored_target_named_on_purpose_is_walked() {
        let (_d, scope) = scope();
        let root = scope.root().to_path_buf();
        fs::create_dir_all(root.join("target/debug")).unwrap();
        fs::write(root.join(".gitignore"), "target/\n").unwrap();
        fs::write(root.join("target/debug/build.log"), "x").unwrap();
        assert_eq!(walked(&scope, &root, false), Vec::<String>::new());
        assert_eq!(
            walked(&scope, &root.join("target"), false),
            ["target/debug/build.log"]
        );
    }

    #[test]
    fn git_is_skipped_even_with_hidden_entries() {
        let (_d, scope) = scope();
        let root = scope.root().to_path_buf();
        fs::create_dir_all(root.join(".git")).unwrap();
        fs::create_dir_all(root.join(".github")).unwrap();
        fs::write(root.join(".git/config"), "x").unwrap();
        fs::write(root.join(".github/ci.yml"), "x").unwrap();
        assert_eq!(walked(&scope, &root, true), [".github/ci.yml"]);
        assert_eq!(walked(&scope, &root, false), Vec::<String>::new());
    }

    #[test]
    fn links_are_classified_on_their_real_path() {
        let (_d, scope) = scope();
        let root = scope.root().to_path_buf();
        let outside = tempfile::tempdir().unwrap();
        fs::write(root.join("inside.txt"), "x").unwrap();
        std::os::unix::fs::symlink(root.join("inside.txt"), root.join("in")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("out")).unwrap();
        std::os::unix::fs::symlink(root.join("missing"), root.join("dangling")).unwrap();
        // A chain that starts inside and ends outside is outside.
        std::os::unix::fs::symlink(root.join("out"), root.join("chain")).unwrap();
        assert_eq!(
            scope.link(&root.join("in")),
            LinkTarget::Readable(root.join("inside.txt"))
        );
        assert_eq!(scope.link(&root.join("out")), LinkTarget::Outside);
        assert_eq!(scope.link(&root.join("chain")), LinkTarget::Outside);
        assert_eq!(scope.link(&root.join("dangling")), LinkTarget::Dangling);
        let with_root = scope
            .clone()
            .with_read_roots(vec![outside.path().canonicalize().unwrap()]);
        assert!(matches!(
            with_root.link(&root.join("out")),
            LinkTarget::Readable(_)
        ));
    }
}
