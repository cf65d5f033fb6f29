//! What the sandbox sees: the system directories a program needs (read-only), and inside a
//! writable boundary the metadata that would turn a write into later code execution, re-mounted
//! read-only or masked.

use super::bwrap::Bwrap;
use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// Top-level system directories; symlinks (merged /usr) are recreated as symlinks.
const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];

/// The part of /etc a shell or python3 needs: the dynamic linker's cache, name service files
/// (uid/host lookups), time zone, TLS roots and Debian's alternatives (`awk`, `editor` …).
/// Deliberately not /etc/shadow, /etc/gshadow, /etc/sudoers or anything holding secrets.
const ETC_ENTRIES: &[&str] = &[
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/resolv.conf",
    "/etc/gai.conf",
    "/etc/protocols",
    "/etc/services",
    "/etc/mime.types",
    "/etc/alternatives",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/pki",
    "/etc/os-release",
];

/// Names inside a writable boundary that must not be written (one list with the file nodes,
/// which refuse them at any depth): see [`cheng_node::paths::PROTECTED_NAMES`].
pub use cheng_node::paths::PROTECTED_NAMES;

/// One entry of the read-only system view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SystemEntry {
    /// Recreate a symlink (merged-/usr layouts: `/bin -> usr/bin`).
    Symlink { target: PathBuf, link: PathBuf },
    /// Bind read-only at the same path.
    ReadOnly(PathBuf),
    /// A small regular file (or a symlink to one), copied into the sandbox's read-only root at
    /// the same path when the run starts (bwrap's `--file`): what it shows is what a read-only
    /// bind would show, at one write instead of a bind mount, a remount and a scan of the mount
    /// table.
    Copy(PathBuf),
}

/// Files up to this size are copied into the view ([`SystemEntry::Copy`]); larger ones are bound.
pub const COPY_MAX_BYTES: u64 = 1 << 20;

/// The read-only system view: the system directories and the /etc subset that exist here.
pub fn system_view() -> Vec<SystemEntry> {
    let mut out = Vec::new();
    for dir in SYSTEM_DIRS {
        let path = Path::new(dir);
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                if let Ok(target) = std::fs::read_link(path) {
                    out.push(SystemEntry::Symlink {
                        target,
                        link: path.to_path_buf(),
                    });
                }
            }
            Ok(meta) if meta.is_dir() => out.push(SystemEntry::ReadOnly(path.to_path_buf())),
            _ => {}
        }
    }
    out.extend(
        ETC_ENTRIES
            .iter()
            .filter_map(|entry| etc_entry(Path::new(entry))),
    );
    out
}

/// How one /etc entry is shown: copied when it is a small regular file everyone may read
/// (symlinks followed: a symlink is shown as the file it names, as a bind would show it, even
/// when its target lies outside the view, such as /etc/resolv.conf -> /run/...), bound read-only
/// otherwise (directories, large files, and files others may not read, whose permissions a copy
/// would not keep); `None` when it does not exist.
pub(crate) fn etc_entry(path: &Path) -> Option<SystemEntry> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).ok()?;
    let world_readable = meta.permissions().mode() & 0o004 != 0;
    Some(
        if meta.is_file() && meta.len() <= COPY_MAX_BYTES && world_readable {
            SystemEntry::Copy(path.to_path_buf())
        } else {
            SystemEntry::ReadOnly(path.to_path_buf())
        },
    )
}

/// How one protected name is handled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Protection {
    /// Exists: bound read-only over itself.
    ReadOnly(PathBuf),
    /// A directory holding a protected entry of several components (`.cargo` for
    /// `.cargo/config.toml`): bound writable over itself, so that it stays writable but, being a
    /// mount point, cannot be renamed, removed or replaced by one with a fresh entry inside.
    Pinned(PathBuf),
    /// Did not exist: an empty placeholder was created as the mount point and /dev/null is
    /// bound read-only over it, so the script can neither write nor create it. The placeholder
    /// is removed when the last run of this process using it ends.
    Masked(PathBuf),
}

/// The walk for nested repositories stops (and the run fails closed) past this many entries.
/// About 60 ms on a 200 000-entry tree with a warm cache (see docs/guides/sandbox.md).
pub const NESTED_WALK_MAX_ENTRIES: usize = 200_000;
/// … or past this depth below the workspace root.
pub const NESTED_WALK_MAX_DEPTH: usize = 64;
/// … or past this many nested repositories (each is one more mount).
pub const NESTED_MAX_REPOSITORIES: usize = 1024;

/// Why the protections could not be prepared; the run fails closed (SANDBOX_UNAVAILABLE).
#[derive(Debug)]
pub enum ProtectError {
    /// A placeholder for a masked name could not be created.
    Placeholder(PathBuf, std::io::Error),
    /// The workspace is too large or too deep to look for nested repositories within the bounds.
    TooLarge(String),
}

impl std::fmt::Display for ProtectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProtectError::Placeholder(path, e) => {
                write!(
                    f,
                    "a mount point for the masked name {} could not be created: {e}",
                    path.display()
                )
            }
            ProtectError::TooLarge(why) => f.write_str(why),
        }
    }
}

/// The placeholders live in this process, with how many prepared runs use each. Two runs on one
/// workspace share a placeholder: the second must not take the first's (empty) placeholder for a
/// real file, and the first must not remove it while the second still needs it as a mount point.
fn live_placeholders() -> std::sync::MutexGuard<'static, HashMap<PathBuf, usize>> {
    static LIVE: OnceLock<Mutex<HashMap<PathBuf, usize>>> = OnceLock::new();
    // A panic while holding the lock leaves the map consistent (every update is one statement).
    LIVE.get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The protections for a writable `boundary`: every protected name at its top, plus the target
/// of a `.git` file's `gitdir:` line when that lies inside the boundary, plus every nested
/// repository below it (see [`nested_repositories`]). Creates placeholders for top-level names
/// that do not exist (see [`Protection::Masked`]).
///
/// An entry of several components (`.cargo/config.toml`) is protected where its path stops
/// being an ordinary directory: each directory on the way is pinned ([`Protection::Pinned`]),
/// and the first component that is missing, a file or a symlink is protected as a top-level name
/// is (a missing `.cargo` is masked whole, so nothing can be created under it).
pub fn protect(boundary: &Path, warnings: &mut Vec<String>) -> Result<Placeholders, ProtectError> {
    // Built as the guard from the start, so that placeholders made before a later failure are
    // removed with it.
    let mut out = Placeholders::default();
    {
        // Held for the whole top level: whether a name is one of our placeholders, and creating
        // one, must not interleave with another run releasing it.
        let mut live = live_placeholders();
        for entry in PROTECTED_NAMES {
            let mut path = boundary.to_path_buf();
            let mut parts = entry.split('/').peekable();
            while let Some(part) = parts.next() {
                path.push(part);
                let last = parts.peek().is_none();
                let name = if last { *entry } else { part };
                // A directory on the way (`.cargo`, met again for each of its entries).
                let pinned = Protection::Pinned(path.clone());
                if out.list.contains(&pinned) {
                    continue;
                }
                if !last
                    && !live.contains_key(&path)
                    && std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir())
                {
                    out.list.push(pinned);
                    continue;
                }
                if !out.list.contains(&Protection::Masked(path.clone())) {
                    protect_name(boundary, name, &path, &mut live, &mut out.list, warnings)?;
                }
                break;
            }
        }
    }
    record_repository(&boundary.join(".git"), &mut out.repositories);
    out.list.extend(nested_repositories(
        boundary,
        &mut out.repositories,
        warnings,
    )?);
    Ok(out)
}

/// One protected name at `path`: read-only when it exists (a symlink's target when inside the
/// boundary), else masked with a placeholder shared with the other runs of this process.
fn protect_name(
    boundary: &Path,
    name: &str,
    path: &Path,
    live: &mut HashMap<PathBuf, usize>,
    out: &mut Vec<Protection>,
    warnings: &mut Vec<String>,
) -> Result<(), ProtectError> {
    let path = path.to_path_buf();
    if let Some(users) = live.get_mut(&path) {
        *users += 1;
        out.push(Protection::Masked(path));
        return Ok(());
    }
    match std::fs::symlink_metadata(&path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            protect_symlink(boundary, name, &path, out, warnings)
        }
        Ok(meta) => {
            if meta.is_file() && name == ".git" {
                protect_gitdir_target(boundary, &path, out);
            }
            out.push(Protection::ReadOnly(path));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Err(e) = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                return Err(ProtectError::Placeholder(path, e));
            }
            live.insert(path.clone(), 1);
            out.push(Protection::Masked(path));
        }
        Err(e) => return Err(ProtectError::Placeholder(path, e)),
    }
    Ok(())
}

/// A protected name that is a symlink: its target is protected when inside the boundary.
fn protect_symlink(
    boundary: &Path,
    name: &str,
    path: &Path,
    out: &mut Vec<Protection>,
    warnings: &mut Vec<String>,
) {
    let shown = display_in(boundary, path);
    match path.canonicalize() {
        Ok(target) if target.starts_with(boundary) => {
            warnings.push(format!(
                "{shown} is a symlink; its target {} is read-only in the sandbox, but the link itself could be replaced",
                target.display()
            ));
            out.push(Protection::ReadOnly(target));
        }
        // Outside the boundary the target is out of reach unless bound read-only.
        _ if name == ".git" && path != boundary.join(name) => {}
        _ => warnings.push(format!("{shown} is a symlink pointing outside the workspace; the sandbox does not show its target")),
    }
}

/// The target of a `.git` file's `gitdir:` line, when it lies inside the boundary (one outside
/// is out of reach unless bound, and then read-only).
fn protect_gitdir_target(boundary: &Path, git_file: &Path, out: &mut Vec<Protection>) {
    if let Some(target) = gitdir_target(git_file) {
        if target.starts_with(boundary) {
            out.push(Protection::ReadOnly(target));
        }
    }
}

/// `path` relative to the boundary, for messages.
fn display_in(boundary: &Path, path: &Path) -> String {
    path.strip_prefix(boundary)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Every repository below the top of `boundary`: a `.git` directory, a `.git` file (and its
/// `gitdir:` target inside the boundary), a `.git` symlink's target inside the boundary, and the
/// `.gitmodules` beside each. A nested repository or submodule checkout is where git runs hooks
/// and reads config (a top-level `git status` runs `git status` in every submodule).
///
/// The walk searches ignored and hidden directories too, never follows symlinks, and does not
/// look inside a `.git` directory. It is bounded ([`NESTED_WALK_MAX_ENTRIES`],
/// [`NESTED_WALK_MAX_DEPTH`], [`NESTED_MAX_REPOSITORIES`]); past a bound the run fails closed,
/// because stopping early could leave a repository writable. A directory that cannot be read is
/// a warning (the sandbox cannot list it either; a vanished entry is skipped). Every `.git` found
/// (of any type) is added to `known`, so that the audit after the run can tell a new one.
fn nested_repositories(
    boundary: &Path,
    known: &mut Vec<Repository>,
    warnings: &mut Vec<String>,
) -> Result<Vec<Protection>, ProtectError> {
    let git = OsStr::new(".git");
    let walk = ignore::WalkBuilder::new(boundary)
        .standard_filters(false)
        .follow_links(false)
        .filter_entry(move |e| {
            e.path().parent().and_then(Path::file_name) != Some(OsStr::new(".git"))
        })
        .build();
    let too_large = |what: String| {
        ProtectError::TooLarge(format!(
            "allow_filesystem: {what}; cheng looks through the whole workspace for nested repositories (.git) to keep \
             them read-only, and stops there rather than leave one writable. Run without allow_filesystem, or use a \
             smaller workspace"
        ))
    };
    let mut out = Vec::new();
    let mut repositories = 0usize;
    let mut unreadable = 0usize;
    for (seen, entry) in walk.enumerate() {
        if seen >= NESTED_WALK_MAX_ENTRIES {
            return Err(too_large(format!(
                "the workspace has more than {NESTED_WALK_MAX_ENTRIES} entries"
            )));
        }
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                let vanished = e
                    .io_error()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::NotFound);
                if !vanished {
                    unreadable += 1;
                    if unreadable <= 3 {
                        warnings.push(format!(
                            "nested repositories: could not look into part of the workspace ({e})"
                        ));
                    }
                }
                continue;
            }
        };
        if entry.depth() > NESTED_WALK_MAX_DEPTH {
            return Err(too_large(format!(
                "the workspace is deeper than {NESTED_WALK_MAX_DEPTH} levels"
            )));
        }
        // Depth 1 is the top level, handled by `protect`.
        if entry.depth() < 2 || entry.file_name() != git {
            continue;
        }
        repositories += 1;
        if repositories > NESTED_MAX_REPOSITORIES {
            return Err(too_large(format!(
                "the workspace holds more than {NESTED_MAX_REPOSITORIES} nested repositories"
            )));
        }
        let path = entry.path();
        record_repository(path, known);
        match entry.file_type() {
            Some(t) if t.is_symlink() => {
                protect_symlink(boundary, ".git", path, &mut out, warnings)
            }
            Some(t) if t.is_file() => {
                protect_gitdir_target(boundary, path, &mut out);
                out.push(Protection::ReadOnly(path.to_path_buf()));
            }
            Some(t) if t.is_dir() => out.push(Protection::ReadOnly(path.to_path_buf())),
            _ => continue,
        }
        if let Some(modules) = path.parent().map(|p| p.join(".gitmodules")) {
            if std::fs::symlink_metadata(&modules).is_ok_and(|m| m.is_file()) {
                out.push(Protection::ReadOnly(modules));
            }
        }
    }
    Ok(out)
}

/// One `.git` seen before the run: its path and its inode, so that the audit after the run can
/// tell it from a new one at the same path (a parent directory renamed during the run and a new
/// `.git` made in its place) and from a link to it elsewhere.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Repository {
    pub path: PathBuf,
    pub dev: u64,
    pub ino: u64,
}

fn record_repository(path: &Path, seen: &mut Vec<Repository>) {
    use std::os::unix::fs::MetadataExt;
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        seen.push(Repository {
            path: path.to_path_buf(),
            dev: meta.dev(),
            ino: meta.ino(),
        });
    }
}

/// The canonical directory a `.git` file's `gitdir: <path>` line names (relative to the
/// directory holding the file, as git reads it).
fn gitdir_target(git_file: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(git_file).ok()?;
    let dir = text.lines().find_map(|l| l.strip_prefix("gitdir:"))?.trim();
    git_file.parent()?.join(dir).canonicalize().ok()
}

/// Adds the bind for each protection (after the boundary itself is bound; their parents exist).
pub fn apply(b: &mut Bwrap, protections: &[Protection]) {
    for p in protections {
        match p {
            Protection::ReadOnly(path) => b.ro_bind(path, path),
            Protection::Pinned(path) => b.bind(path, path),
            Protection::Masked(path) => b.ro_bind(Path::new("/dev/null"), path),
        };
    }
}

/// The protections of one run. Dropping it releases the placeholders [`protect`] created or
/// shares: the last run of this process using one removes it, so that no empty `.bashrc`,
/// `.git` … stays behind in the workspace whether the run succeeds, fails, is cancelled, or is
/// dropped before or while it runs.
///
/// Across processes there is no count: a second cheng process sees the first one's placeholder
/// as an existing (empty) file and binds it read-only; if the first removes it before the
/// second's bwrap has mounted it, that run fails closed (SANDBOX_UNAVAILABLE, "Can't find source path").
#[derive(Debug, Default)]
pub struct Placeholders {
    list: Vec<Protection>,
    /// Every `.git` (directory, file or symlink) in the boundary before the run, the top-level
    /// one whether it existed or was masked: what [`super::audit`] does not report as new.
    repositories: Vec<Repository>,
}

impl Placeholders {
    pub fn list(&self) -> &[Protection] {
        &self.list
    }

    /// The `.git` paths that existed before the run (all of them read-only during it).
    pub fn repositories(&self) -> &[Repository] {
        &self.repositories
    }
}

impl Drop for Placeholders {
    fn drop(&mut self) {
        let mut live = live_placeholders();
        for p in self.list.drain(..) {
            let Protection::Masked(path) = p else {
                continue;
            };
            match live.get_mut(&path) {
                Some(users) if *users > 1 => *users -= 1,
                Some(_) => {
                    live.remove(&path);
                    // Only an empty regular file: never something the user put there meanwhile.
                    if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file() && m.len() == 0) {
                        let _ = std::fs::remove_file(&path);
                    }
                }
                None => {}
            }
        }
    }
}

#[cfg(test)]
mod tests;
