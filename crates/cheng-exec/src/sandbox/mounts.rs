//! What the sandbox sees: the system directories a program needs (read-only), and inside a
//! writable boundary the metadata that would turn a write into later code execution, re-mounted
//! read-only or masked.

use crate::bwrap::Bwrap;
use std::path::{Path, PathBuf};

/// Top-level system directories; symlinks (merged /usr) are recreated as symlinks.
const SYSTEM_DIRS: &[&str] = &["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

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

/// Names inside a writable boundary that must not be written: a write there runs code later
/// (git hooks and config, shell start-up files, editor and agent configuration).
pub const PROTECTED_NAMES: &[&str] = &[
    ".git",
    ".cheng",
    ".bashrc",
    ".bash_profile",
    ".profile",
    ".zshrc",
    ".gitconfig",
    ".gitmodules",
    ".mcp.json",
    ".vscode",
    ".idea",
];

/// One entry of the read-only system view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SystemEntry {
    /// Recreate a symlink (merged-/usr layouts: `/bin -> usr/bin`).
    Symlink { target: PathBuf, link: PathBuf },
    /// Bind read-only at the same path.
    ReadOnly(PathBuf),
}

/// The read-only system view: the system directories and the /etc subset that exist here.
pub fn system_view() -> Vec<SystemEntry> {
    let mut out = Vec::new();
    for dir in SYSTEM_DIRS {
        let path = Path::new(dir);
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                if let Ok(target) = std::fs::read_link(path) {
                    out.push(SystemEntry::Symlink { target, link: path.to_path_buf() });
                }
            }
            Ok(meta) if meta.is_dir() => out.push(SystemEntry::ReadOnly(path.to_path_buf())),
            _ => {}
        }
    }
    for entry in ETC_ENTRIES {
        let path = Path::new(entry);
        if path.exists() {
            out.push(SystemEntry::ReadOnly(path.to_path_buf()));
        }
    }
    out
}

/// How one protected name is handled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Protection {
    /// Exists: bound read-only over itself.
    ReadOnly(PathBuf),
    /// Did not exist: an empty placeholder was created as the mount point and /dev/null is
    /// bound read-only over it, so the script can neither write nor create it. The placeholder
    /// is removed after the run.
    Masked(PathBuf),
}

/// The protections for a writable `boundary`: every protected name at its top, plus the target
/// of a `.git` file's `gitdir:` line when that lies inside the boundary. Creates placeholders
/// for names that do not exist (see [`Protection::Masked`]).
pub fn protect(boundary: &Path, warnings: &mut Vec<String>) -> std::io::Result<Placeholders> {
    // Built as the guard from the start, so that placeholders made before a later failure are
    // removed with it.
    let mut out = Placeholders::default();
    for name in PROTECTED_NAMES {
        let path = boundary.join(name);
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => match path.canonicalize() {
                Ok(target) if target.starts_with(boundary) => {
                    warnings.push(format!(
                        "{name} is a symlink; its target {} is read-only in the sandbox, but the link itself could be replaced",
                        target.display()
                    ));
                    out.0.push(Protection::ReadOnly(target));
                }
                _ => warnings.push(format!("{name} is a symlink pointing outside the workspace; the sandbox does not show its target")),
            },
            Ok(meta) => {
                if meta.is_file() && *name == ".git" {
                    if let Some(target) = gitdir_target(boundary, &path) {
                        if target.starts_with(boundary) {
                            out.0.push(Protection::ReadOnly(target));
                        }
                    }
                }
                out.0.push(Protection::ReadOnly(path));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::OpenOptions::new().write(true).create_new(true).open(&path)?;
                out.0.push(Protection::Masked(path));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// The canonical directory a `.git` file's `gitdir: <path>` line names.
fn gitdir_target(boundary: &Path, git_file: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(git_file).ok()?;
    let dir = text.lines().find_map(|l| l.strip_prefix("gitdir:"))?.trim();
    boundary.join(dir).canonicalize().ok()
}

/// Adds the bind for each protection (after the boundary itself is bound; their parents exist).
pub fn apply(b: &mut Bwrap, protections: &[Protection]) {
    for p in protections {
        match p {
            Protection::ReadOnly(path) => b.ro_bind(path, path),
            Protection::Masked(path) => b.ro_bind(Path::new("/dev/null"), path),
        };
    }
}

/// The protections of one run. Dropping it removes the placeholders [`protect`] created, so
/// that no empty `.bashrc`, `.git` … stays behind in the workspace whether the run succeeds,
/// fails, is cancelled, or is dropped before or while it runs.
#[derive(Debug, Default)]
pub struct Placeholders(Vec<Protection>);

impl Placeholders {
    pub fn list(&self) -> &[Protection] {
        &self.0
    }
}

impl Drop for Placeholders {
    fn drop(&mut self) {
        remove_placeholders(&self.0);
    }
}

/// Removes the placeholders created by [`protect`] (only empty regular files).
pub fn remove_placeholders(protections: &[Protection]) {
    for p in protections {
        if let Protection::Masked(path) = p {
            if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && m.len() == 0) {
                let _ = std::fs::remove_file(path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn existing_names_are_read_only_and_missing_ones_masked_then_cleaned() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join(".git")).unwrap();
        let mut warnings = Vec::new();
        let guard = protect(&root, &mut warnings).unwrap();
        let list = guard.list();
        assert!(list.contains(&Protection::ReadOnly(root.join(".git"))));
        assert!(list.contains(&Protection::Masked(root.join(".bashrc"))));
        assert!(root.join(".bashrc").exists());
        remove_placeholders(list);
        assert!(!root.join(".bashrc").exists());
        assert!(root.join(".git").is_dir());
    }

    #[test]
    fn a_gitdir_file_protects_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("modules/real")).unwrap();
        std::fs::write(root.join(".git"), "gitdir: modules/real\n").unwrap();
        let guard = protect(&root, &mut Vec::new()).unwrap();
        let list = guard.list();
        assert!(list.contains(&Protection::ReadOnly(root.join("modules/real"))), "{list:?}");
        assert!(list.contains(&Protection::ReadOnly(root.join(".git"))));
    }

    #[test]
    fn dropping_the_guard_removes_every_placeholder_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join(".profile"), "").unwrap();
        let names = || {
            let mut v: Vec<_> = std::fs::read_dir(&root).unwrap().flatten().map(|e| e.file_name()).collect();
            v.sort();
            v
        };
        let before = names();
        let guard = protect(&root, &mut Vec::new()).unwrap();
        for name in PROTECTED_NAMES {
            assert!(std::fs::symlink_metadata(root.join(name)).is_ok(), "{name} has no mount point");
        }
        drop(guard);
        assert_eq!(before, names(), "placeholders left behind (or an existing empty file removed)");
    }
}
