//! Keeping git inside the workspace: every file git would read must be in it.
//!
//! A repository inside the workspace can still name another one: a `.git` file (`gitdir: X`) or a
//! `.git` symlink, a `commondir` file, `core.worktree`, `objects/info/alternates` (and, for dumb
//! HTTP, `objects/info/http-alternates`), or any symlink inside the git directory (`objects`,
//! `refs`, `packed-refs`, `index`, `shallow`, `info/grafts`, a pack, a loose object). Followed,
//! each would let workspace_git show another repository's history, objects or ref names. Each is
//! refused with [`ErrorKind::PathOutsideWorkspace`] and a message naming the file that points out
//! and where it points.
//!
//! Two steps, both cheap (no extra git process):
//!
//! - [`dot_git`] before git runs at all: the `.git` entry discovery would find, from `cwd` up to
//!   the workspace root, must not lead out (symlink or `gitdir:` file).
//! - [`layout`] after the probe: git's own answers (`--absolute-git-dir`, `--git-common-dir`,
//!   `--show-toplevel`) are canonicalised and must be inside; then the git directory and common
//!   directory are scanned for symlinks that lead out (top level, and `refs/`, `reftable/`,
//!   `info/`, `objects/` in full), and the alternates chain is followed, each alternate objects
//!   directory scanned the same way.
//!
//! - Submodules: git reads the HEAD of every populated submodule while refreshing the index, even
//!   with `--ignore-submodules` (and `git diff` prints it as `Subproject commit <hash>`). So the
//!   gitlink entries are read from the index directly ([`index`]), and each one's `.git` must
//!   lead to a git directory inside the workspace whose `commondir` and refs stay inside too.
//!   Submodule work trees are never entered (`--ignore-submodules=dirty`).

use cheng_node::paths::display_relative;
use cheng_node::{ErrorKind, NodeError};
use std::collections::HashSet;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

mod index;

/// The most bytes read from a `.git` file, `commondir` or an alternates file.
const MAX_POINTER_FILE: u64 = 1 << 20;
/// The most alternate object directories followed before the repository is refused.
const MAX_ALTERNATES: usize = 64;
/// Subdirectories of a git directory scanned in full for symlinks.
const SCANNED_SUBDIRS: &[&str] = &["refs", "reftable", "info", "objects"];

/// What git's probe reported, as printed (paths absolute or relative to `cwd`).
pub struct Probe<'a> {
    pub toplevel: &'a str,
    pub git_dir: &'a str,
    pub common_dir: &'a str,
    /// The configuration file that sets `core.worktree` (`--show-origin`, without `file:`).
    pub worktree_origin: Option<&'a str>,
    /// The object id length in bytes (20 for SHA-1, 32 for SHA-256).
    pub hash_len: usize,
}

/// The refusal: `file` (shown relative to the workspace) leads to `target`.
fn refused(workspace: &Path, file: &Path, how: &str, target: &Path) -> NodeError {
    NodeError::new(
        ErrorKind::PathOutsideWorkspace,
        format!(
            "{} {how} {}, outside the workspace; git would read another repository through it, so the \
             repository is refused (workspace_git reads only repositories whose git directory, objects \
             and work tree are all inside the workspace)",
            display_relative(workspace, file),
            target.display()
        ),
    )
}

/// `path` with symlinks resolved. A path that does not exist (yet) resolves through its nearest
/// existing ancestor, and a dangling symlink by where it would lead, so an entry is judged by the
/// place git would read once it exists.
pub fn resolve(path: &Path) -> PathBuf {
    let mut links = 0;
    resolve_with(path, &mut links)
}

fn resolve_with(path: &Path, links: &mut u32) -> PathBuf {
    if let Ok(canonical) = path.canonicalize() {
        return canonical;
    }
    if *links < 40 {
        if let Ok(target) = std::fs::read_link(path) {
            *links += 1;
            let joined = path
                .parent()
                .map_or(target.clone(), |parent| parent.join(&target));
            return resolve_with(&joined, links);
        }
        if let (Some(parent), Some(name)) = (path.parent(), path.file_name()) {
            if !parent.as_os_str().is_empty() {
                return resolve_with(parent, links).join(name);
            }
        }
    }
    lexical(path)
}

/// `path` with `.` and `..` applied lexically (only for paths that do not exist).
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Reads at most [`MAX_POINTER_FILE`] bytes of a small pointer file; `None` when it is absent.
fn read_small(path: &Path) -> Option<Vec<u8>> {
    let file = std::fs::File::open(path).ok()?;
    let mut bytes = Vec::new();
    file.take(MAX_POINTER_FILE).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// The target of a `gitdir: <path>` file, resolved against the directory holding the file.
fn gitfile_target(dir: &Path, contents: &[u8]) -> Option<PathBuf> {
    let text = std::str::from_utf8(contents).ok()?;
    let line = text.strip_prefix("gitdir: ")?;
    let line = line
        .lines()
        .next()
        .unwrap_or("")
        .trim_end_matches(['\r', '\n']);
    if line.is_empty() {
        return None;
    }
    Some(dir.join(line))
}

/// The first `.git` entry from `cwd` up to the workspace root: the one git's discovery reads first.
fn find_dot_git(workspace: &Path, cwd: &Path) -> Option<PathBuf> {
    cwd.ancestors()
        .take_while(|dir| dir.starts_with(workspace))
        .map(|dir| dir.join(".git"))
        .find(|dot_git| dot_git.symlink_metadata().is_ok())
}

/// Before git runs: the `.git` entry discovery finds first must not be a symlink or a `gitdir:`
/// file leading out of the workspace. Returns it when it is a plain directory (the usual case),
/// so its [`prescan`] can run while git probes the repository.
pub fn dot_git(workspace: &Path, cwd: &Path) -> Result<Option<PathBuf>, NodeError> {
    let Some(dot_git) = find_dot_git(workspace, cwd) else {
        return Ok(None);
    };
    check_dot_git(workspace, &dot_git)?;
    let plain_dir = dot_git
        .symlink_metadata()
        .is_ok_and(|m| m.file_type().is_dir());
    Ok(plain_dir.then_some(dot_git))
}

/// Checks one `.git` entry (a directory, a symlink, or a `gitdir:` file) and returns the git
/// directory it leads to, resolved.
fn check_dot_git(workspace: &Path, dot_git: &Path) -> Result<PathBuf, NodeError> {
    let is_link = dot_git
        .symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink());
    let target = resolve(dot_git);
    if is_link && !target.starts_with(workspace) {
        return Err(refused(workspace, dot_git, "is a symlink to", &target));
    }
    if !target.is_file() {
        return Ok(target);
    }
    let contents = read_small(dot_git).unwrap_or_default();
    let holder = dot_git.parent().unwrap_or(workspace);
    match gitfile_target(holder, &contents) {
        Some(named) => {
            let resolved = resolve(&named);
            if !resolved.starts_with(workspace) {
                let how = format!("(gitdir: {}) points to", named.display());
                return Err(refused(workspace, dot_git, &how, &resolved));
            }
            Ok(resolved)
        }
        None => Ok(target),
    }
}

/// After the probe: git's directories are canonicalised and checked, then scanned. Returns the
/// work tree's top level, canonical. `prescanned` is a [`prescan`] already run on a
/// directory, used when that directory is the git or common directory.
pub fn layout(
    workspace: &Path,
    cwd: &Path,
    probe: &Probe<'_>,
    prescanned: Option<Prescan>,
) -> Result<PathBuf, NodeError> {
    let Probe {
        toplevel,
        git_dir,
        common_dir,
        worktree_origin,
        hash_len,
    } = *probe;
    let git_dir = resolve(&cwd.join(git_dir));
    if !git_dir.starts_with(workspace) {
        let pointer = find_dot_git(workspace, cwd).unwrap_or_else(|| cwd.join(".git"));
        return Err(refused(
            workspace,
            &pointer,
            "leads git to the git directory",
            &git_dir,
        ));
    }
    let common_dir = resolve(&cwd.join(common_dir));
    if !common_dir.starts_with(workspace) {
        let commondir = git_dir.join("commondir");
        let named = read_small(&commondir)
            .map(|b| String::from_utf8_lossy(&b).trim().to_string())
            .map(|c| format!("(commondir: {c}) points to the common git directory"))
            .unwrap_or_else(|| "names the common git directory".to_string());
        return Err(refused(workspace, &commondir, &named, &common_dir));
    }
    let toplevel = resolve(&cwd.join(toplevel));
    if !toplevel.starts_with(workspace) {
        let (file, how) = match worktree_origin {
            Some(origin) => (cwd.join(origin), "sets core.worktree to the work tree"),
            None => (git_dir.join("config"), "places the work tree at"),
        };
        return Err(refused(workspace, &file, how, &toplevel));
    }
    let mut scan = Scan {
        workspace,
        visited: HashSet::new(),
    };
    let dirs: Vec<&Path> = if git_dir == common_dir {
        vec![&git_dir]
    } else {
        vec![&git_dir, &common_dir]
    };
    let mut prescanned = prescanned;
    let mut known_gitlinks = None;
    for dir in dirs {
        match prescanned.take() {
            Some(done) if done.dir == dir => {
                done.scan?;
                if dir == git_dir && hash_len == 20 {
                    known_gitlinks = done.sha1_gitlinks;
                }
            }
            other => {
                prescanned = other;
                scan.git_dir(dir)?;
            }
        }
    }
    alternates(workspace, &resolve(&common_dir.join("objects")), &mut scan)?;
    submodules(
        workspace,
        &toplevel,
        &git_dir,
        hash_len,
        known_gitlinks,
        &mut scan,
    )?;
    Ok(toplevel)
}

/// Every submodule (gitlink entry of the index) whose work tree is populated: git's index refresh
/// reads its `.git` and its HEAD even when submodules are ignored, so its `.git`, `commondir`
/// and refs must stay inside the workspace too.
fn submodules(
    workspace: &Path,
    toplevel: &Path,
    git_dir: &Path,
    hash_len: usize,
    known_gitlinks: Option<Vec<Vec<u8>>>,
    scan: &mut Scan<'_>,
) -> Result<(), NodeError> {
    let mut indexes = vec![git_dir.join("index")];
    // A split index keeps most entries in a shared index next to it.
    if let Ok(entries) = std::fs::read_dir(git_dir) {
        indexes.extend(
            entries
                .flatten()
                .filter(|e| {
                    e.file_name()
                        .as_encoded_bytes()
                        .starts_with(b"sharedindex.")
                })
                .map(|e| e.path()),
        );
    }
    let mut known_gitlinks = known_gitlinks;
    for index in indexes {
        let links = match known_gitlinks.take() {
            Some(links) => links,
            None => {
                let Ok(bytes) = std::fs::read(&index) else {
                    continue;
                };
                index::gitlinks(&bytes, hash_len).ok_or_else(|| {
                    NodeError::new(
                        ErrorKind::PolicyDenied,
                        format!(
                            "the index {} could not be read to find the repository's submodules, so they cannot be \
                             checked; the repository is refused (run `git status` once to rewrite the index, or use an \
                             index of version 2, 3 or 4)",
                            display_relative(workspace, &index)
                        ),
                    )
                })?
            }
        };
        for link in links {
            let dir = toplevel.join(std::ffi::OsStr::from_bytes(&link));
            let dot_git = dir.join(".git");
            if dot_git.symlink_metadata().is_err() {
                continue;
            }
            let sub_git_dir = check_dot_git(workspace, &dot_git)?;
            if !sub_git_dir.starts_with(workspace) {
                return Err(refused(
                    workspace,
                    &dot_git,
                    "leads git to the git directory",
                    &sub_git_dir,
                ));
            }
            if let Some(contents) = read_small(&sub_git_dir.join("commondir")) {
                let named = String::from_utf8_lossy(&contents).trim().to_string();
                let common = resolve(&sub_git_dir.join(&named));
                if !common.starts_with(workspace) {
                    let how = format!("(commondir: {named}) points to the common git directory");
                    return Err(refused(
                        workspace,
                        &sub_git_dir.join("commondir"),
                        &how,
                        &common,
                    ));
                }
                scan.dir(&common, false)?;
                scan.dir(&resolve(&common.join("refs")), true)?;
            }
            scan.dir(&sub_git_dir, false)?;
            scan.dir(&resolve(&sub_git_dir.join("refs")), true)?;
        }
    }
    Ok(())
}

/// A walk for symlinks that lead out of the workspace.
struct Scan<'a> {
    workspace: &'a Path,
    /// Canonical directories already walked (a symlink loop is walked once).
    visited: HashSet<PathBuf>,
}

/// The work that needs only a git directory's path, done while git probes the repository: its
/// symlink scan (top level, and `refs/`, `reftable/`, `info/`, `objects/` in full) and the
/// gitlinks of its index read as SHA-1 (the object format is known only after the probe).
pub struct Prescan {
    dir: PathBuf,
    scan: Result<(), NodeError>,
    /// `None` when the index is absent or does not parse as SHA-1.
    sha1_gitlinks: Option<Vec<Vec<u8>>>,
}

pub fn prescan(workspace: &Path, dir: PathBuf) -> Prescan {
    let scan = Scan {
        workspace,
        visited: HashSet::new(),
    }
    .git_dir(&dir);
    let sha1_gitlinks = std::fs::read(dir.join("index"))
        .ok()
        .and_then(|bytes| index::gitlinks(&bytes, 20));
    Prescan {
        dir,
        scan,
        sha1_gitlinks,
    }
}

impl Scan<'_> {
    fn git_dir(&mut self, dir: &Path) -> Result<(), NodeError> {
        self.dir(dir, false)?;
        for sub in SCANNED_SUBDIRS {
            let path = dir.join(sub);
            if path.is_dir() {
                self.dir(&resolve(&path), true)?;
            }
        }
        Ok(())
    }

    /// Checks every symlink in `dir` (and below it, when `recursive`). A symlink to a directory
    /// inside the workspace is walked too, since git reads through it.
    fn dir(&mut self, dir: &Path, recursive: bool) -> Result<(), NodeError> {
        if recursive && !self.visited.insert(dir.to_path_buf()) {
            return Ok(());
        }
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Ok(());
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if kind.is_symlink() {
                let target = resolve(&path);
                if !target.starts_with(self.workspace) {
                    return Err(refused(self.workspace, &path, "is a symlink to", &target));
                }
                if recursive && target.is_dir() {
                    self.dir(&target, true)?;
                }
            } else if recursive && kind.is_dir() {
                self.dir(&path, true)?;
            }
        }
        Ok(())
    }
}

/// Follows `objects/info/alternates` (and `http-alternates`) from `objects`: every object
/// directory named must be inside the workspace, and is itself scanned and followed.
fn alternates(workspace: &Path, objects: &Path, scan: &mut Scan<'_>) -> Result<(), NodeError> {
    let mut pending = vec![objects.to_path_buf()];
    let mut seen: HashSet<PathBuf> = HashSet::from([objects.to_path_buf()]);
    while let Some(objects) = pending.pop() {
        for (name, http) in [("alternates", false), ("http-alternates", true)] {
            let file = objects.join("info").join(name);
            let Some(contents) = read_small(&file) else {
                continue;
            };
            for raw in contents.split(|b| *b == b'\n') {
                let line = String::from_utf8_lossy(raw);
                let line = line.trim_end_matches('\r');
                if line.trim().is_empty() || line.starts_with('#') {
                    continue;
                }
                let entry = if line.starts_with('"') {
                    match super::quote::unquote(line) {
                        Some(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                        None => line.to_string(),
                    }
                } else {
                    line.to_string()
                };
                let how = format!("names the object directory {entry:?} =");
                if http && entry.contains("://") {
                    return Err(NodeError::new(
                        ErrorKind::PathOutsideWorkspace,
                        format!(
                            "{} names the remote object store {entry:?}, outside the workspace; the repository is \
                             refused (workspace_git reads only repositories whose objects are all inside the workspace)",
                            display_relative(workspace, &file)
                        ),
                    ));
                }
                let target = resolve(&objects.join(&entry));
                if !target.starts_with(workspace) {
                    return Err(refused(workspace, &file, &how, &target));
                }
                if !http && target.is_dir() && seen.insert(target.clone()) {
                    if seen.len() > MAX_ALTERNATES {
                        return Err(NodeError::new(
                            ErrorKind::PolicyDenied,
                            format!(
                                "the repository's alternates name more than {MAX_ALTERNATES} object directories \
                                 (last read: {}); the repository is refused",
                                display_relative(workspace, &file)
                            ),
                        ));
                    }
                    scan.dir(&target, true)?;
                    pending.push(target);
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gitfile_targets_are_read_like_git() {
        let dir = Path::new("/ws/sub");
        assert_eq!(
            gitfile_target(dir, b"gitdir: /x/.git\n"),
            Some(PathBuf::from("/x/.git"))
        );
        assert_eq!(
            gitfile_target(dir, b"gitdir: ../.git/worktrees/a\r\n"),
            Some(PathBuf::from("/ws/sub/../.git/worktrees/a"))
        );
        assert_eq!(gitfile_target(dir, b"nonsense"), None);
        assert_eq!(gitfile_target(dir, b"gitdir: \n"), None);
    }

    #[test]
    fn dangling_paths_resolve_lexically() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        assert_eq!(resolve(&root.join("a/../b/c")), root.join("b/c"));
        std::os::unix::fs::symlink("/nonexistent-outside/x", root.join("link")).expect("symlink");
        assert_eq!(
            resolve(&root.join("link")),
            PathBuf::from("/nonexistent-outside/x")
        );
        assert_eq!(
            resolve(&root.join("link/y")),
            PathBuf::from("/nonexistent-outside/x/y")
        );
        std::os::unix::fs::symlink("inside/z", root.join("rel")).expect("symlink");
        assert_eq!(resolve(&root.join("rel")), root.join("inside/z"));
    }
}
