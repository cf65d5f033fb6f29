//! Writing a computed patch all or nothing. Every target's state before and after is known in
//! memory before the first write. First every new content is staged (a temporary file beside its
//! target, written and fsynced; the missing directories made): a failure there (a full disk, a
//! read-only directory) removes what was staged and made, and no file was touched. Then the
//! staged files are renamed onto their targets in order (so a moved file exists at its new place
//! before its old one goes), and the removals come last. When a rename or removal fails, every
//! step already done is undone in reverse (an overwritten file gets its old bytes and permissions
//! back, a created file and the directories made for it are removed, a removed file is written
//! back), and the error says what failed and whether everything was restored.

use std::fs::Permissions;
use std::io;
use std::path::{Path, PathBuf};

/// A target's content before the patch (what the plan read from it).
#[derive(Debug, Clone)]
pub(crate) struct Before {
    pub bytes: Vec<u8>,
    pub permissions: Permissions,
}

/// One real path the patch changes: from `before` (`None`: absent) to `after` (`None`: removed).
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub target: PathBuf,
    /// How the target is named to the user (workspace-relative).
    pub display: String,
    pub before: Option<Before>,
    pub after: Option<Vec<u8>>,
}

/// The file operations a commit performs; the node's go through the workspace handle
/// ([`cheng_fs::WorkspaceFs`]).
pub(crate) trait Disk {
    /// Whether anything (a dangling symlink included) is at `path`.
    fn exists(&self, path: &Path) -> bool;
    type Staged;
    /// Writes `bytes` beside `path`, ready to be renamed onto it (keeping an existing file's
    /// permissions); dropping the handle removes it.
    fn stage(&self, path: &Path, bytes: &[u8]) -> io::Result<Self::Staged>;
    /// Renames a staged file onto its target.
    fn commit(&self, staged: Self::Staged) -> io::Result<()>;
    /// Replaces (or creates) `path` with `bytes` at once (for undoing).
    fn write(&self, path: &Path, bytes: &[u8]) -> io::Result<()>;
    fn remove(&self, path: &Path) -> io::Result<()>;
    fn create_dir(&self, path: &Path) -> io::Result<()>;
    fn remove_dir(&self, path: &Path) -> io::Result<()>;
    fn set_permissions(&self, path: &Path, permissions: Permissions) -> io::Result<()>;
}

/// `target`'s missing ancestors, outermost first.
fn missing_dirs<D: Disk>(target: &Path, disk: &D) -> Vec<PathBuf> {
    let mut missing = Vec::new();
    let mut dir = target.parent();
    while let Some(d) = dir {
        if disk.exists(d) {
            break;
        }
        missing.push(d.to_path_buf());
        dir = d.parent();
    }
    missing.reverse();
    missing
}

enum Done<'a> {
    Dir(PathBuf),
    Wrote(&'a Entry),
    Removed(&'a Entry),
}

/// Applies `entries`; on failure, undoes what was done and returns the sentence to report.
pub(crate) fn commit<D: Disk>(entries: &[Entry], disk: &D) -> Result<(), String> {
    let mut done: Vec<Done> = Vec::new();
    let result = (|| -> Result<(), String> {
        let mut staged = Vec::new();
        for entry in entries {
            let Some(bytes) = &entry.after else { continue };
            for dir in missing_dirs(&entry.target, disk) {
                disk.create_dir(&dir).map_err(|e| {
                    format!(
                        "could not create the directory for '{}': {}",
                        entry.display,
                        reason(&e)
                    )
                })?;
                done.push(Done::Dir(dir));
            }
            let handle = disk
                .stage(&entry.target, bytes)
                .map_err(|e| format!("could not write '{}': {}", entry.display, reason(&e)))?;
            staged.push((entry, handle));
        }
        for (entry, handle) in staged {
            disk.commit(handle)
                .map_err(|e| format!("could not write '{}': {}", entry.display, reason(&e)))?;
            done.push(Done::Wrote(entry));
        }
        for entry in entries.iter().filter(|e| e.after.is_none()) {
            disk.remove(&entry.target)
                .map_err(|e| format!("could not remove '{}': {}", entry.display, reason(&e)))?;
            done.push(Done::Removed(entry));
        }
        Ok(())
    })();
    let Err(failure) = result else { return Ok(()) };
    let mut unrestored = Vec::new();
    for step in done.iter().rev() {
        let undone = match step {
            Done::Dir(dir) => disk
                .remove_dir(dir)
                .map_err(|e| (dir.display().to_string(), e)),
            Done::Wrote(entry) | Done::Removed(entry) => {
                restore(entry, disk).map_err(|e| (entry.display.clone(), e))
            }
        };
        if let Err((what, e)) = undone {
            unrestored.push(format!("'{what}' ({e})"));
        }
    }
    if unrestored.is_empty() {
        Err(format!(
            "{failure}; no file was changed (everything done before it was undone)"
        ))
    } else {
        Err(format!(
            "{failure}; undoing what was done before it failed for {}: check those paths by hand",
            unrestored.join(", ")
        ))
    }
}

/// The system's reason, or what a symlink refused by the workspace handle means.
fn reason(e: &io::Error) -> String {
    if cheng_fs::changed_under_us(e) {
        "it changed while the patch was being written (a directory on its path was replaced by a symlink), and nothing is written through such a link; try again".to_string()
    } else {
        e.to_string()
    }
}

/// Puts `entry.target` back as it was before the patch.
fn restore<D: Disk>(entry: &Entry, disk: &D) -> io::Result<()> {
    match &entry.before {
        None => disk.remove(&entry.target),
        Some(before) => {
            disk.write(&entry.target, &before.bytes)?;
            disk.set_permissions(&entry.target, before.permissions.clone())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::os::unix::fs::PermissionsExt;

    /// Plain std operations, failing the `fail_at`-th call (counting from 1).
    struct Flaky {
        calls: Cell<usize>,
        fail_at: usize,
    }

    impl Flaky {
        fn step(&self) -> io::Result<()> {
            self.calls.set(self.calls.get() + 1);
            if self.calls.get() == self.fail_at {
                return Err(io::Error::other("injected failure"));
            }
            Ok(())
        }
    }

    impl Disk for Flaky {
        type Staged = (PathBuf, Vec<u8>);
        fn exists(&self, path: &Path) -> bool {
            std::fs::symlink_metadata(path).is_ok()
        }
        fn stage(&self, path: &Path, bytes: &[u8]) -> io::Result<Self::Staged> {
            self.step()?;
            Ok((path.to_path_buf(), bytes.to_vec()))
        }
        fn commit(&self, (path, bytes): Self::Staged) -> io::Result<()> {
            self.step()?;
            std::fs::write(path, bytes)
        }
        fn write(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
            std::fs::write(path, bytes)
        }
        fn remove(&self, path: &Path) -> io::Result<()> {
            self.step()?;
            std::fs::remove_file(path)
        }
        fn create_dir(&self, path: &Path) -> io::Result<()> {
            self.step()?;
            std::fs::create_dir(path)
        }
        fn remove_dir(&self, path: &Path) -> io::Result<()> {
            std::fs::remove_dir(path)
        }
        fn set_permissions(&self, path: &Path, permissions: Permissions) -> io::Result<()> {
            std::fs::set_permissions(path, permissions)
        }
    }

    fn tree(root: &Path) -> Vec<(String, Vec<u8>, u32)> {
        let mut out = Vec::new();
        for entry in walk(root) {
            let meta = std::fs::metadata(&entry).unwrap();
            let bytes = if meta.is_dir() {
                Vec::new()
            } else {
                std::fs::read(&entry).unwrap()
            };
            out.push((
                entry.strip_prefix(root).unwrap().display().to_string(),
                bytes,
                meta.permissions().mode(),
            ));
        }
        out.sort();
        out
    }

    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                out.extend(walk(&p));
            }
            out.push(p);
        }
        out
    }

    #[test]
    fn a_failure_at_any_step_leaves_the_tree_as_it_was() {
        // Nine steps: two directories, three stages, three renames, one removal.
        for fail_at in 1..=10 {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path();
            std::fs::write(root.join("keep.txt"), "old\n").unwrap();
            std::fs::set_permissions(root.join("keep.txt"), Permissions::from_mode(0o640)).unwrap();
            std::fs::write(root.join("src.txt"), "moved\n").unwrap();
            let before = tree(root);
            let was = |name: &str| {
                Some(Before {
                    bytes: std::fs::read(root.join(name)).unwrap(),
                    permissions: std::fs::metadata(root.join(name)).unwrap().permissions(),
                })
            };
            let entries = vec![
                Entry {
                    target: root.join("new/dir/a.txt"),
                    display: "new/dir/a.txt".into(),
                    before: None,
                    after: Some(b"a\n".to_vec()),
                },
                Entry {
                    target: root.join("keep.txt"),
                    display: "keep.txt".into(),
                    before: was("keep.txt"),
                    after: Some(b"new\n".to_vec()),
                },
                Entry {
                    target: root.join("dst.txt"),
                    display: "dst.txt".into(),
                    before: None,
                    after: Some(b"moved2\n".to_vec()),
                },
                Entry {
                    target: root.join("src.txt"),
                    display: "src.txt".into(),
                    before: was("src.txt"),
                    after: None,
                },
            ];
            let disk = Flaky {
                calls: Cell::new(0),
                fail_at,
            };
            let result = commit(&entries, &disk);
            if disk.calls.get() >= fail_at {
                let err = result.unwrap_err();
                assert!(
                    err.contains("injected failure") && err.contains("no file was changed"),
                    "{fail_at}: {err}"
                );
                assert_eq!(tree(root), before, "step {fail_at}");
            } else {
                result.unwrap();
                assert!(!root.join("src.txt").exists());
            }
        }
    }
}
