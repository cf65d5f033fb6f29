//! Resolving user-supplied paths inside the workspace root.
//!
//! Every workspace node goes through here, so the rules are one set: relative paths only, no
//! climbing above the root lexically, and the canonical (symlink-resolved) result must still be
//! inside the canonical root.

use crate::{ErrorKind, NodeError};
use std::path::{Component, Path, PathBuf};

/// Names inside a writable boundary that must not be written. A name belongs here when a write
/// there could run code later (version-control hooks and config, shell start-up files, editor,
/// agent and CI configuration, settings of tools that run programs they name) or hand out or
/// replace credentials. The sandbox protects each at the top of its writable boundary, a whole
/// directory at a time (`.ssh` covers `.ssh/authorized_keys`, `.config` covers
/// `.config/git/config` and `.config/gcloud`, `.github` covers `.github/workflows/`); the file
/// nodes refuse writes to each at any depth. docs/guides/sandbox.md lists where each entry comes
/// from (Anthropic's sandbox-runtime, Codex CLI, cheng's own review).
///
/// Entries are lower case: they are matched without regard to case ([`fold_name`]), since on a
/// case-insensitive file system `.GIT/hooks` is `.git/hooks`. An entry with a `/` names a path
/// (`.cargo/config.toml`): its components in a row, at any depth for the file nodes. A tool's
/// family of names is spelled out (`.yarnrc`, `.yarnrc.yml`; cargo's `config` and
/// `config.toml`): the sandbox can only mask paths it can name, and the tools read only these.
pub const PROTECTED_NAMES: &[&str] = &[
    // Version control: hooks, config, submodule URLs, and the other systems' metadata (hooks in
    // `.hg/hgrc` and Sapling's `.sl/config` run on the next command; jj's repository config
    // names programs; `.svn` and `.bzr` hold what the next commit or revert sends or restores).
    ".git",
    ".gitconfig",
    ".gitmodules",
    ".git-credentials",
    ".hg",
    ".jj",
    ".sl",
    ".svn",
    ".bzr",
    // Shell start-up and log-out files (bash, sh, zsh), and direnv's per-directory script.
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".bash_aliases",
    ".profile",
    ".zshenv",
    ".zprofile",
    ".zshrc",
    ".zlogin",
    ".zlogout",
    ".envrc",
    // Everything under the XDG config directory (git, fish, direnv, gcloud, systemd user units …).
    ".config",
    // Credentials and remote logins; cloud and cluster tools that also run programs their
    // settings name (AWS `credential_process`, kubeconfig exec plugins, docker credential
    // helpers).
    ".ssh",
    ".gnupg",
    ".netrc",
    ".aws",
    ".azure",
    ".kube",
    ".docker",
    // Package managers and tools that run commands named in their settings or hold upload
    // tokens: cargo's config (`runner`, `rustc-wrapper`, aliases) and credentials, npm, yarn,
    // PyPI, Terraform (provider installation and credentials), ripgrep (`--pre`). The rest of a
    // project's `.cargo` stays writable.
    ".cargo/config",
    ".cargo/config.toml",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".pypirc",
    ".terraformrc",
    ".ripgreprc",
    // Commit hooks managed outside .git, and CI.
    ".husky",
    ".pre-commit-config.yaml",
    ".github",
    // Editors, dev containers and coding agents (settings, tasks, hooks, MCP servers, commands).
    ".vscode",
    ".idea",
    ".devcontainer",
    ".mcp.json",
    ".claude",
    ".cursor",
    ".codex",
    ".agents",
    ".cheng",
];

/// The first protected entry `rel` (a path relative to a boundary) reaches: an entry's
/// components in a row anywhere in `rel`, each compared folded ([`fold_name`]).
pub fn protected_component(rel: &Path) -> Option<&'static str> {
    let folded: Vec<String> = rel
        .components()
        .map(|c| match c {
            Component::Normal(name) => fold_name(&name.to_string_lossy()),
            // Never equal to a folded name: `..` and the root do not match an entry.
            _ => String::from("/"),
        })
        .collect();
    (0..folded.len()).find_map(|at| {
        PROTECTED_NAMES.iter().copied().find(|entry| {
            let parts = entry.split('/');
            let n = parts.clone().count();
            folded.len() - at >= n && parts.zip(&folded[at..]).all(|(p, f)| p == f)
        })
    })
}

/// A file name as a case-insensitive file system may take it, for comparing with
/// [`PROTECTED_NAMES`]. Folds more than any one file system does, so that no spelling that one
/// of them takes for a protected name gets through:
///
/// - Unicode lower case (`to_lowercase`), so `.GIT` and `.Git` are `.git`, and the Kelvin sign
///   `K` is `k` (ext4's and APFS's case folding);
/// - a character whose upper case is an ASCII letter is that letter, so the dotless `ı` is `i`
///   and the long `ſ` is `s` (NTFS compares upper-cased names: `.gıt` is `.GIT` there); the
///   dotted `İ` folds to `i̇` (two characters) and matches nothing, as on those file systems;
/// - the code points HFS+ ignores in names are dropped (`.g\u{200c}it` is `.git` there, as git
///   itself checks), and trailing dots and spaces, which vfat drops.
pub fn fold_name(name: &str) -> String {
    let ignorable = |c: char| matches!(c, '\u{200c}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{206a}'..='\u{206f}' | '\u{feff}');
    let mut out = String::with_capacity(name.len());
    for c in name.chars().filter(|&c| !ignorable(c)) {
        let mut upper = c.to_uppercase();
        match (upper.next(), upper.next()) {
            (Some(u), None) if u.is_ascii_alphabetic() => out.push(u.to_ascii_lowercase()),
            _ => out.extend(c.to_lowercase()),
        }
    }
    let kept = out.trim_end_matches(['.', ' ']).len();
    // A name of dots only (`.`, `..`) stays as it is.
    if kept > 0 {
        out.truncate(kept);
    }
    out
}

/// How many symlinks [`real_path`] follows before giving up (the kernel's own limit).
const MAX_LINK_HOPS: usize = 40;

/// The real (symlink-resolved) path of `path`, which need not exist: the longest existing
/// prefix is canonicalised, a dangling symlink is followed to where it points (so a link to a
/// missing file outside resolves outside), and the missing rest is appended.
pub fn real_path(path: &Path) -> std::io::Result<PathBuf> {
    real_path_hops(path, 0)
}

fn real_path_hops(path: &Path, hops: usize) -> std::io::Result<PathBuf> {
    if hops > MAX_LINK_HOPS {
        return Err(std::io::Error::other(format!(
            "{} has too many levels of symbolic links",
            path.display()
        )));
    }
    match path.canonicalize() {
        Ok(real) => return Ok(real),
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        Err(_) => {}
    }
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("{} cannot be resolved", path.display()),
        ));
    };
    let parent = real_path_hops(parent, hops)?;
    let here = parent.join(name);
    match std::fs::symlink_metadata(&here) {
        // A dangling symlink: resolve where it points.
        Ok(meta) if meta.file_type().is_symlink() => {
            let target = std::fs::read_link(&here)?;
            real_path_hops(&parent.join(target), hops + 1)
        }
        _ => Ok(here),
    }
}

/// Canonicalises the workspace root; the engine injects this value as `sandbox_root`.
pub fn canonical_root(root: &Path) -> Result<PathBuf, NodeError> {
    let canonical = root.canonicalize().map_err(|e| {
        NodeError::new(
            ErrorKind::NotFound,
            format!("workspace {} cannot be opened: {e}", root.display()),
        )
    })?;
    if !canonical.is_dir() {
        return Err(NodeError::invalid_input(format!(
            "workspace {} is not a directory",
            root.display()
        )));
    }
    Ok(canonical)
}

/// Resolves `rel` (a field value such as `cwd`) to an existing path inside `root`.
///
/// `None`, `""` and `"."` mean the root itself. `root` must already be canonical.
pub fn resolve_existing(root: &Path, rel: Option<&str>, field: &str) -> Result<PathBuf, NodeError> {
    let joined = join_lexically(root, rel, field)?;
    let canonical = joined.canonicalize().map_err(|e| {
        let kind = if e.kind() == std::io::ErrorKind::NotFound {
            ErrorKind::NotFound
        } else {
            ErrorKind::InvalidInput
        };
        NodeError::new(
            kind,
            format!(
                "{field} {:?} does not exist in the workspace: {e}",
                rel.unwrap_or("")
            ),
        )
    })?;
    ensure_inside(root, &canonical, rel, field)?;
    Ok(canonical)
}

/// Resolves `rel` to a path inside `root` that may not exist yet: the nearest existing ancestor
/// is canonicalised (so a symlinked parent cannot lead out) and the rest is appended.
pub fn resolve_new(root: &Path, rel: &str, field: &str) -> Result<PathBuf, NodeError> {
    let joined = join_lexically(root, Some(rel), field)?;
    let canonical = real_path(&joined).map_err(|e| {
        NodeError::invalid_input(format!("{field} {rel:?} cannot be resolved: {e}"))
    })?;
    ensure_inside(root, &canonical, Some(rel), field)?;
    Ok(canonical)
}

/// `path` relative to `root` for display (`"."` for the root itself).
pub fn display_relative(root: &Path, path: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

/// Joins `rel` onto `root`, rejecting absolute paths outside the root, NUL bytes and `..` that
/// climbs above the root. An absolute path under the root (what a person pastes from a terminal)
/// is taken relative to it; the rules below still apply to what follows the root. Nothing is
/// resolved: the result is the lexical path (`..` folded), which may name a symlink.
pub fn join_lexically(root: &Path, rel: Option<&str>, field: &str) -> Result<PathBuf, NodeError> {
    let rel = rel.unwrap_or("");
    if rel.contains('\0') {
        return Err(NodeError::invalid_input(format!(
            "{field} contains a NUL byte"
        )));
    }
    let path = Path::new(rel);
    let path = match path.strip_prefix(root) {
        Ok(inside) if path.is_absolute() => inside,
        _ => path,
    };
    let mut joined = root.to_path_buf();
    let mut depth = 0usize;
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => {
                return Err(outside(
                    field,
                    rel,
                    "must be relative to the workspace root (or an absolute path inside it)",
                ));
            }
            Component::CurDir => {}
            Component::ParentDir => {
                if depth == 0 {
                    return Err(outside(field, rel, "climbs above the workspace root"));
                }
                depth -= 1;
                joined.pop();
            }
            Component::Normal(name) => {
                depth += 1;
                joined.push(name);
            }
        }
    }
    Ok(joined)
}

/// `Err(PATH_OUTSIDE_WORKSPACE)` naming `field` and the real path unless `canonical` is under `root`.
pub fn ensure_inside(
    root: &Path,
    canonical: &Path,
    rel: Option<&str>,
    field: &str,
) -> Result<(), NodeError> {
    if canonical.starts_with(root) {
        Ok(())
    } else {
        Err(outside(
            field,
            rel.unwrap_or(""),
            &format!("resolves to {} (through a symlink)", canonical.display()),
        ))
    }
}

fn outside(field: &str, rel: &str, why: &str) -> NodeError {
    NodeError::new(
        ErrorKind::PathOutsideWorkspace,
        format!("{field} {rel:?} {why}; it must name a path inside the workspace"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("sub/deeper")).unwrap();
        (dir, root)
    }

    #[test]
    fn empty_and_dot_mean_the_root() {
        let (_d, root) = workspace();
        assert_eq!(resolve_existing(&root, None, "cwd").unwrap(), root);
        assert_eq!(resolve_existing(&root, Some("."), "cwd").unwrap(), root);
        assert_eq!(
            resolve_existing(&root, Some("sub/./deeper/.."), "cwd").unwrap(),
            root.join("sub")
        );
    }

    #[test]
    fn dotdot_escape_is_rejected_even_when_the_target_exists() {
        let (_d, root) = workspace();
        for rel in ["..", "sub/../..", "../../etc", "sub/deeper/../../../"] {
            let err = resolve_existing(&root, Some(rel), "cwd").unwrap_err();
            assert_eq!(err.kind, ErrorKind::PathOutsideWorkspace, "{rel}");
            assert!(err.message.contains("cwd"), "{}", err.message);
        }
    }

    #[test]
    fn absolute_paths_outside_are_rejected_and_inside_are_taken_relative() {
        let (_d, root) = workspace();
        let err = resolve_existing(&root, Some("/etc"), "cwd").unwrap_err();
        assert_eq!(err.kind, ErrorKind::PathOutsideWorkspace);
        let inside = root.join("sub");
        assert_eq!(
            resolve_existing(&root, inside.to_str(), "cwd").unwrap(),
            inside
        );
        assert_eq!(resolve_existing(&root, root.to_str(), "cwd").unwrap(), root);
        assert_eq!(
            resolve_new(&root, &format!("{}/sub/new.txt", root.display()), "path").unwrap(),
            root.join("sub/new.txt")
        );
        // The root is a prefix by components, and what follows it still may not climb out.
        let sibling = format!("{}-other", root.display());
        let escapes = [
            sibling.clone(),
            format!("{}/../x", root.display()),
            format!("{}/sub/../..", root.display()),
        ];
        for rel in &escapes {
            let err = resolve_existing(&root, Some(rel), "cwd").unwrap_err();
            assert_eq!(err.kind, ErrorKind::PathOutsideWorkspace, "{rel}");
        }
        let err = resolve_new(&root, &format!("{sibling}/new.txt"), "path").unwrap_err();
        assert_eq!(err.kind, ErrorKind::PathOutsideWorkspace);
    }

    #[test]
    fn symlink_pointing_out_is_rejected() {
        let (_d, root) = workspace();
        let outside_dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside_dir.path(), root.join("link")).unwrap();
        let err = resolve_existing(&root, Some("link"), "cwd").unwrap_err();
        assert_eq!(err.kind, ErrorKind::PathOutsideWorkspace);
        let err = resolve_new(&root, "link/new.txt", "path").unwrap_err();
        assert_eq!(err.kind, ErrorKind::PathOutsideWorkspace);
    }

    #[test]
    fn dangling_symlink_pointing_out_is_rejected_for_new_paths() {
        let (_d, root) = workspace();
        let outside_dir = tempfile::tempdir().unwrap();
        let target = outside_dir
            .path()
            .canonicalize()
            .unwrap()
            .join("missing.txt");
        std::os::unix::fs::symlink(&target, root.join("dangling")).unwrap();
        assert_eq!(real_path(&root.join("dangling")).unwrap(), target);
        let err = resolve_new(&root, "dangling", "path").unwrap_err();
        assert_eq!(err.kind, ErrorKind::PathOutsideWorkspace);
        // A dangling link to a missing name inside stays inside.
        std::os::unix::fs::symlink(root.join("sub/new.txt"), root.join("inner")).unwrap();
        assert_eq!(
            resolve_new(&root, "inner", "path").unwrap(),
            root.join("sub/new.txt")
        );
    }

    #[test]
    fn protected_names_are_found_at_any_depth() {
        assert_eq!(
            protected_component(Path::new("a/.git/config")),
            Some(".git")
        );
        assert_eq!(
            protected_component(Path::new(".aws/credentials")),
            Some(".aws")
        );
        assert_eq!(protected_component(Path::new("src/.cheng")), Some(".cheng"));
        assert_eq!(protected_component(Path::new("src/git/x.rs")), None);
        for name in [".git", ".agents", ".codex", ".aws", ".cheng"] {
            assert!(PROTECTED_NAMES.contains(&name), "{name}");
        }
    }

    #[test]
    fn protected_names_match_in_any_case_and_spelling_a_file_system_folds() {
        for (path, entry) in [
            (".GIT/hooks/pre-commit", ".git"),
            (".HG/hgrc", ".hg"),
            (".Kube/config", ".kube"),
            ("sub/.DOCKER/config.json", ".docker"),
            // The Kelvin sign lower-cases to k; the dotless i and the long s upper-case to I, S.
            (".\u{212a}ube/config", ".kube"),
            (".g\u{131}t/config", ".git"),
            (".\u{17f}sh/authorized_keys", ".ssh"),
            // Ignored by HFS+, and trailing dots and spaces (vfat).
            (".g\u{200c}it/config", ".git"),
            (".git. /config", ".git"),
            (".npmrc.", ".npmrc"),
            // Entries of several components, in a row, at any depth.
            (".cargo/config.toml", ".cargo/config.toml"),
            ("crates/x/.CARGO/Config", ".cargo/config"),
            (".cargo/credentials.toml", ".cargo/credentials.toml"),
        ] {
            assert_eq!(protected_component(Path::new(path)), Some(entry), "{path}");
        }
        for path in [
            ".cargo/registry/x.rs",
            "config/.cargo",
            ".cargo",
            "src/config.toml",
            "a/cargo/config.toml",
            // The dotted capital I folds to two characters, as on the file systems.
            ".G\u{130}T/config",
            ".gitignore",
            ".github-pages/x",
        ] {
            assert_eq!(protected_component(Path::new(path)), None, "{path}");
        }
        // Entries are written folded, so that a folded name can equal them.
        for entry in PROTECTED_NAMES {
            for part in entry.split('/') {
                assert_eq!(fold_name(part), part, "{entry}");
            }
        }
        assert_eq!(fold_name(".."), "..");
        assert_eq!(fold_name("."), ".");
    }

    #[test]
    fn symlink_pointing_inside_is_followed() {
        let (_d, root) = workspace();
        std::os::unix::fs::symlink(root.join("sub/deeper"), root.join("alias")).unwrap();
        assert_eq!(
            resolve_existing(&root, Some("alias"), "cwd").unwrap(),
            root.join("sub/deeper")
        );
    }

    #[test]
    fn missing_paths_are_not_found() {
        let (_d, root) = workspace();
        let err = resolve_existing(&root, Some("nope"), "path").unwrap_err();
        assert_eq!(err.kind, ErrorKind::NotFound);
        assert_eq!(
            resolve_new(&root, "sub/new/file.md", "path").unwrap(),
            root.join("sub/new/file.md")
        );
    }

    #[test]
    fn display_is_relative() {
        let (_d, root) = workspace();
        assert_eq!(display_relative(&root, &root), ".");
        assert_eq!(display_relative(&root, &root.join("sub")), "sub");
    }
}
