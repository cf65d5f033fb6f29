//! The path policy every file node asks before it touches a path.
//!
//! - The workspace is the one writable root. The author may add read-only roots (`read_roots`
//!   in the node's config; the operator's policy can forbid them, `read_roots = false`).
//! - Every decision is made twice: on the lexical path (`..` folded, through
//!   [`cheng_node::paths::join_lexically`]) and on the real path (symlinks resolved, dangling ones
//!   included, through [`cheng_node::paths::real_path`]). A symlink whose target leaves the
//!   allowed roots is refused, and the message says where it leads.
//! - Writes never touch a protected name ([`cheng_node::paths::PROTECTED_NAMES`]: `.git`,
//!   `.agents`, `.codex`, `.aws`, `.cheng`, `.cargo/config.toml`, ...) at any depth, on either
//!   path, in any case (`.GIT/hooks` is `.git/hooks` on a case-insensitive file system).
//! - The workspace root itself is never written, deleted or replaced.
//!
//! ```
//! use cheng_nodes_files::policy::{Access, PathPolicy};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let root = dir.path().canonicalize().unwrap();
//! let policy = PathPolicy::new(root.clone(), Vec::new());
//! let target = policy.resolve("src/new.rs", "file_path", Access::Write).unwrap();
//! assert_eq!(target.real, root.join("src/new.rs"));
//! assert!(policy.resolve(".git/config", "file_path", Access::Write).is_err());
//! assert!(policy.resolve("../x", "file_path", Access::Read).is_err());
//! ```

use cheng_node::paths::{join_lexically, protected_component, real_path};
use cheng_node::{Audience, ErrorKind, NodeError, PortSpec, PortType, Values};
use std::path::{Path, PathBuf};

/// The author port naming read-only roots (absolute host directories).
pub const READ_ROOTS: PortSpec = PortSpec::input(
    "read_roots",
    PortType::Array(&PortType::String),
    "Absolute host directories the node may also read (never write); the operator's policy can forbid them (read_roots = false)",
)
.default("[]")
.audience(Audience::Author)
.capability(&cheng_node::capability::READ_ROOTS);

/// Whether the path is to be read or written (created, replaced, deleted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

/// A path the policy allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The lexical path (`..` folded, symlinks not resolved): what a walk or a delete names.
    pub lexical: PathBuf,
    /// The real path (symlinks resolved; missing components appended): what reads and writes open.
    pub real: PathBuf,
    /// The path for messages and outputs: relative to the workspace root when inside it.
    pub display: String,
    /// Whether the path lies in a read-only root (never true for [`Access::Write`]).
    pub read_only_root: bool,
}

impl Target {
    /// Whether the path (as named) is a symlink: then `real` differs from `lexical`.
    pub fn through_symlink(&self) -> bool {
        self.lexical != self.real
    }
}

/// The workspace root plus the read-only roots.
#[derive(Debug, Clone)]
pub struct PathPolicy {
    root: PathBuf,
    read_roots: Vec<PathBuf>,
}

impl PathPolicy {
    /// `root` must be canonical (`RunContext::workspace` is); `read_roots` too.
    pub fn new(root: PathBuf, read_roots: Vec<PathBuf>) -> Self {
        PathPolicy { root, read_roots }
    }

    /// The policy for one call: the context's workspace and the config's `read_roots` (each must
    /// be an absolute, existing directory; a missing one is an error naming it, not skipped).
    pub fn from_input(workspace: &Path, input: &Values) -> Result<Self, NodeError> {
        let mut roots = Vec::new();
        for root in cheng_node::input::string_list(input, READ_ROOTS.name)? {
            let path = Path::new(&root);
            if !path.is_absolute() {
                return Err(NodeError::invalid_input(format!(
                    "read_roots: {root:?} must be an absolute directory"
                )));
            }
            let real = path.canonicalize().map_err(|e| {
                NodeError::invalid_input(format!(
                    "read_roots: {root:?} cannot be opened ({e}); fix the node's config"
                ))
            })?;
            if !real.is_dir() {
                return Err(NodeError::invalid_input(format!(
                    "read_roots: {root:?} is not a directory"
                )));
            }
            roots.push(real);
        }
        Ok(PathPolicy::new(workspace.to_path_buf(), roots))
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn read_roots(&self) -> &[PathBuf] {
        &self.read_roots
    }

    /// Resolves `rel` (a field value; relative to the workspace, or absolute inside the workspace
    /// or, for reads, a read-only root) and checks it for `access`.
    pub fn resolve(&self, rel: &str, field: &str, access: Access) -> Result<Target, NodeError> {
        if rel.is_empty() {
            return Err(NodeError::invalid_input(format!(
                "{field} is required: a path relative to the workspace root"
            )));
        }
        // An absolute path inside a read-only root (the workspace's own absolute paths are
        // handled by the lexical join).
        let (base, in_read_root) = match self.read_root_of(rel) {
            Some(base) if !Path::new(rel).starts_with(&self.root) => (base, true),
            _ => (self.root.as_path(), false),
        };
        if in_read_root && access == Access::Write {
            return Err(NodeError::new(
                ErrorKind::PathOutsideWorkspace,
                format!("{field} {rel:?} is in a read-only root; only paths inside the workspace ({}) can be written", self.root.display()),
            ));
        }
        let lexical = join_lexically(base, Some(rel), field)?;
        if access == Access::Write {
            if lexical == self.root {
                return Err(NodeError::policy_denied(format!("{field} {rel:?} names the workspace root itself, which file nodes never write or delete")));
            }
            self.refuse_protected(&lexical, rel, field)?;
        }
        let real = real_path(&lexical).map_err(|e| {
            NodeError::invalid_input(format!("{field} {rel:?} cannot be resolved: {e}"))
        })?;
        let allowed = match access {
            Access::Write => real.starts_with(&self.root),
            Access::Read => {
                real.starts_with(&self.root) || self.read_roots.iter().any(|r| real.starts_with(r))
            }
        };
        if !allowed {
            let roots = if access == Access::Read && !self.read_roots.is_empty() {
                "the workspace or a read-only root"
            } else {
                "the workspace"
            };
            let verb = if access == Access::Write {
                "written"
            } else {
                "read"
            };
            return Err(NodeError::new(
                ErrorKind::PathOutsideWorkspace,
                format!("{field} {rel:?} is a symlink (or lies under one) that leads to {}, outside {roots}; it cannot be {verb} through the link", real.display()),
            ));
        }
        if access == Access::Write {
            if real == self.root {
                return Err(NodeError::policy_denied(format!("{field} {rel:?} resolves to the workspace root itself, which file nodes never write or delete")));
            }
            self.refuse_protected(&real, rel, field)?;
        }
        let read_only_root = !real.starts_with(&self.root);
        let display = match lexical.strip_prefix(&self.root) {
            Ok(inside) => inside.display().to_string(),
            Err(_) => lexical.display().to_string(),
        };
        Ok(Target {
            lexical,
            real,
            display,
            read_only_root,
        })
    }

    fn read_root_of(&self, rel: &str) -> Option<&Path> {
        let path = Path::new(rel);
        path.is_absolute()
            .then(|| {
                self.read_roots
                    .iter()
                    .find(|r| path.starts_with(r))
                    .map(PathBuf::as_path)
            })
            .flatten()
    }

    fn refuse_protected(&self, path: &Path, rel: &str, field: &str) -> Result<(), NodeError> {
        let inside = path.strip_prefix(&self.root).unwrap_or(path);
        match protected_component(inside) {
            Some(name) => Err(NodeError::policy_denied(format!(
                "{field} {rel:?} is inside `{name}`, a protected name file nodes never write (at any depth): a write there could run code later or expose credentials"
            ))),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn ws() -> (tempfile::TempDir, tempfile::TempDir, PathPolicy) {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.rs"), "a").unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        (dir, outside, PathPolicy::new(root, Vec::new()))
    }

    #[test]
    fn protected_names_refused_at_any_depth_on_both_paths() {
        let (_d, _o, policy) = ws();
        for rel in [
            ".git/config",
            "sub/.git/hooks/pre-commit",
            ".aws/credentials",
            "a/.cheng",
            ".agents/x",
            ".codex/config.toml",
        ] {
            let err = policy.resolve(rel, "file_path", Access::Write).unwrap_err();
            assert_eq!(err.kind, ErrorKind::PolicyDenied, "{rel}");
        }
        // Through a symlink whose name is harmless.
        std::fs::create_dir(policy.root().join(".git")).unwrap();
        symlink(policy.root().join(".git"), policy.root().join("innocent")).unwrap();
        let err = policy
            .resolve("innocent/config", "file_path", Access::Write)
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::PolicyDenied);
        // Reading is fine.
        assert!(policy.resolve(".git", "file_path", Access::Read).is_ok());
    }

    #[test]
    fn symlinks_out_are_refused_for_reads_and_writes_file_dir_and_dangling() {
        let (_d, outside, policy) = ws();
        let out = outside.path().canonicalize().unwrap();
        symlink(out.join("secret"), policy.root().join("file_link")).unwrap();
        symlink(&out, policy.root().join("dir_link")).unwrap();
        symlink(out.join("missing"), policy.root().join("dangling")).unwrap();
        for (rel, access) in [
            ("file_link", Access::Read),
            ("file_link", Access::Write),
            ("dir_link/secret", Access::Read),
            ("dir_link/new", Access::Write),
            ("dangling", Access::Read),
            ("dangling", Access::Write),
        ] {
            let err = policy.resolve(rel, "file_path", access).unwrap_err();
            assert_eq!(
                err.kind,
                ErrorKind::PathOutsideWorkspace,
                "{rel} {access:?}"
            );
            assert!(
                err.message.contains(&out.display().to_string()),
                "{}",
                err.message
            );
        }
    }

    #[test]
    fn read_roots_are_read_only() {
        let (_d, outside, policy) = ws();
        let out = outside.path().canonicalize().unwrap();
        let policy = PathPolicy::new(policy.root().to_path_buf(), vec![out.clone()]);
        let abs = out.join("secret");
        let target = policy
            .resolve(abs.to_str().unwrap(), "file_path", Access::Read)
            .unwrap();
        assert!(target.read_only_root);
        let err = policy
            .resolve(abs.to_str().unwrap(), "file_path", Access::Write)
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::PathOutsideWorkspace);
        // A symlink in the workspace into the read root: readable, not writable.
        symlink(&out, policy.root().join("docs")).unwrap();
        assert!(policy
            .resolve("docs/secret", "file_path", Access::Read)
            .is_ok());
        assert!(policy
            .resolve("docs/secret", "file_path", Access::Write)
            .is_err());
    }

    #[test]
    fn the_root_itself_is_never_written() {
        let (_d, _o, policy) = ws();
        for rel in [".", "src/..", ""] {
            assert!(policy.resolve(rel, "path", Access::Write).is_err(), "{rel}");
        }
    }
}
