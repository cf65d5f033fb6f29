//! tools/workspace_git must never read a repository outside the workspace.
//!
//! Each attack builds a repository inside the workspace that names another one outside it, first
//! shows that plain git does read the outside repository through it (so the fixture is real),
//! then that every operation is refused with LOCAL_EXECUTOR_PATH_OUTSIDE_WORKSPACE and a message
//! naming the file that points out. Positive controls show that the same layouts kept inside the
//! workspace still work.

use super::common::*;
use cheng_nodes_workspace::WorkspaceGit;
use serde_json::json;
use std::path::{Path, PathBuf};

const SECRET: &str = "outside-secret-subject";
const OPERATIONS: [&str; 5] = ["status", "diff", "log", "show", "branch"];

/// A repository outside any workspace, with a commit whose subject is [`SECRET`], a branch only it
/// has, and a dirty work tree. Returns its (canonical) root and HEAD hash.
fn outside_repo() -> (tempfile::TempDir, PathBuf, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical").join("other");
    init_repo(&root, &[("secret.txt", "SECRET-CONTENT\n")]);
    git(&root, &["commit", "-q", "--allow-empty", "-m", SECRET]);
    git(&root, &["branch", "outside-only-branch"]);
    let head = git(&root, &["rev-parse", "HEAD"]).trim().to_string();
    (dir, root, head)
}

/// Plain git in `dir`, as a user would run it (host configuration ignored): stdout and stderr.
fn plain_git(dir: &Path, args: &[&str]) -> String {
    let out = cheng_test_support::plain_git(dir, args);
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Every operation on `cwd` is refused as outside the workspace, naming `file` and `target`, and
/// nothing of the outside repository comes back.
async fn all_refused(ws: &Path, cwd: &str, file: &str, target: &Path) {
    for op in OPERATIONS {
        let input = json!({"operation": op, "cwd": cwd});
        let result = run(&WorkspaceGit, ws, input.clone()).await;
        assert_eq!(
            error_code(&result),
            "LOCAL_EXECUTOR_PATH_OUTSIDE_WORKSPACE",
            "{input}: {result:?}"
        );
        let message = match &result {
            Err(e) => e.message.clone(),
            Ok(out) => out["error"].as_str().unwrap_or_default().to_string(),
        };
        assert!(
            message.starts_with(&format!("{file} ")),
            "{input}: the message names {file}: {message}"
        );
        assert!(
            message.contains(&target.display().to_string()),
            "{input}: the message says where it points: {message}"
        );
        assert!(!message.contains(SECRET), "{message}");
    }
}

/// Every operation on `cwd` succeeds.
async fn all_work(ws: &Path, cwd: &str) {
    for op in OPERATIONS {
        let input = json!({"operation": op, "cwd": cwd});
        let out = run(&WorkspaceGit, ws, input.clone())
            .await
            .unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_eq!(out["success"], true, "{input}: {out:?}");
    }
}

#[tokio::test]
async fn gitdir_file_pointing_outside_is_refused() {
    let (_o, other, _head) = outside_repo();
    let (_d, ws) = temp_workspace();
    let gitdir = other.join(".git");
    std::fs::write(ws.join(".git"), format!("gitdir: {}\n", gitdir.display())).expect("write");
    assert!(
        plain_git(&ws, &["log", "--oneline"]).contains(SECRET),
        "plain git follows the gitdir file"
    );
    all_refused(&ws, ".", ".git", &gitdir).await;
    // From a subdirectory too: the .git found by discovery is named.
    std::fs::create_dir(ws.join("sub")).expect("mkdir");
    all_refused(&ws, "sub", ".git", &gitdir).await;
    // A relative gitdir climbing out.
    let relative = format!(
        "gitdir: {}{}\n",
        "../".repeat(ws.components().count()),
        gitdir.display()
    );
    std::fs::write(ws.join(".git"), relative).expect("write");
    assert!(
        plain_git(&ws, &["log", "--oneline"]).contains(SECRET),
        "plain git follows the relative gitdir file"
    );
    all_refused(&ws, ".", ".git", &gitdir).await;
}

#[tokio::test]
async fn dot_git_symlink_to_outside_is_refused() {
    let (_o, other, _head) = outside_repo();
    let (_d, ws) = temp_workspace();
    std::os::unix::fs::symlink(other.join(".git"), ws.join(".git")).expect("symlink");
    assert!(
        plain_git(&ws, &["log", "--oneline"]).contains(SECRET),
        "plain git follows the .git symlink"
    );
    all_refused(&ws, ".", ".git", &other.join(".git")).await;
}

#[tokio::test]
async fn alternates_pointing_outside_are_refused() {
    let (_o, other, head) = outside_repo();
    let (_d, ws) = temp_workspace();
    init_repo(&ws, &[("a.txt", "a\n")]);
    let objects = other.join(".git/objects");
    std::fs::write(
        ws.join(".git/objects/info/alternates"),
        format!("{}\n", objects.display()),
    )
    .expect("write");
    // A planted ref makes the outside commit reachable without knowing its hash.
    std::fs::write(ws.join(".git/refs/heads/planted"), format!("{head}\n")).expect("write");
    assert!(
        plain_git(&ws, &["show", &head]).contains(SECRET),
        "plain git shows the outside commit by hash"
    );
    assert!(
        plain_git(&ws, &["log", "planted"]).contains(SECRET),
        "plain git shows it through the planted ref"
    );
    all_refused(&ws, ".", ".git/objects/info/alternates", &objects).await;
    // The message quotes the entry, and a commented or blank line changes nothing.
    std::fs::write(
        ws.join(".git/objects/info/alternates"),
        format!("# comment\n\n{}\n", objects.display()),
    )
    .expect("write");
    all_refused(&ws, ".", ".git/objects/info/alternates", &objects).await;
}

#[tokio::test]
async fn nested_and_relative_alternates_pointing_outside_are_refused() {
    let (_o, other, head) = outside_repo();
    let (_d, ws) = temp_workspace();
    init_repo(&ws, &[("a.txt", "a\n")]);
    // .git/objects -> mid/objects (inside, relative) -> the outside objects (relative, climbing).
    let mid = ws.join("mid/objects");
    std::fs::create_dir_all(mid.join("info")).expect("mkdir");
    std::fs::write(
        ws.join(".git/objects/info/alternates"),
        "../../mid/objects\n",
    )
    .expect("write");
    let objects = other.join(".git/objects");
    let climb = format!(
        "{}{}\n",
        "../".repeat(mid.components().count()),
        objects.display()
    );
    std::fs::write(mid.join("info/alternates"), climb).expect("write");
    std::fs::write(ws.join(".git/refs/heads/planted"), format!("{head}\n")).expect("write");
    assert!(
        plain_git(&ws, &["show", &head]).contains(SECRET),
        "plain git follows the nested alternates"
    );
    all_refused(&ws, ".", "mid/objects/info/alternates", &objects).await;
}

#[tokio::test]
async fn http_alternates_are_refused() {
    // Only dumb-HTTP fetches read http-alternates, so plain git cannot show an effect locally;
    // an entry leading out is refused all the same.
    let (_o, other, _head) = outside_repo();
    let (_d, ws) = temp_workspace();
    init_repo(&ws, &[("a.txt", "a\n")]);
    let file = ws.join(".git/objects/info/http-alternates");
    let objects = other.join(".git/objects");
    std::fs::write(&file, format!("{}\n", objects.display())).expect("write");
    all_refused(&ws, ".", ".git/objects/info/http-alternates", &objects).await;
    std::fs::write(&file, "https://example.invalid/repo.git/objects\n").expect("write");
    let out = run(&WorkspaceGit, &ws, json!({"operation": "log"})).await;
    assert_eq!(error_code(&out), "LOCAL_EXECUTOR_PATH_OUTSIDE_WORKSPACE");
}

#[tokio::test]
async fn commondir_pointing_outside_is_refused() {
    let (_o, other, _head) = outside_repo();
    let (_d, ws) = temp_workspace();
    // A git directory inside the workspace that takes its objects and refs from outside.
    std::fs::create_dir(ws.join(".git")).expect("mkdir");
    std::fs::write(ws.join(".git/HEAD"), "ref: refs/heads/main\n").expect("write");
    std::fs::write(
        ws.join(".git/commondir"),
        format!("{}\n", other.join(".git").display()),
    )
    .expect("write");
    assert!(
        plain_git(&ws, &["log", "--oneline"]).contains(SECRET),
        "plain git follows commondir"
    );
    all_refused(&ws, ".", ".git/commondir", &other.join(".git")).await;
}

#[tokio::test]
async fn core_worktree_outside_is_refused() {
    let (_o, other, _head) = outside_repo();
    let (_d, ws) = temp_workspace();
    init_repo(&ws.join("r"), &[("a.txt", "a\n")]);
    git(
        &ws.join("r"),
        &["config", "core.worktree", &other.display().to_string()],
    );
    assert!(
        plain_git(&ws.join("r"), &["status", "--porcelain"]).contains("secret.txt"),
        "plain git reads the outside work tree"
    );
    all_refused(&ws, "r", "r/.git/config", &other).await;
    // The same through a per-worktree configuration file.
    git(&ws.join("r"), &["config", "--unset", "core.worktree"]);
    git(
        &ws.join("r"),
        &["config", "extensions.worktreeConfig", "true"],
    );
    git(
        &ws.join("r"),
        &[
            "config",
            "--worktree",
            "core.worktree",
            &other.display().to_string(),
        ],
    );
    assert!(
        plain_git(&ws.join("r"), &["status", "--porcelain"]).contains("secret.txt"),
        "plain git reads config.worktree"
    );
    all_refused(&ws, "r", "r/.git/config.worktree", &other).await;
}

#[tokio::test]
async fn objects_or_refs_symlinked_outside_are_refused() {
    let (_o, other, head) = outside_repo();
    let (_d, ws) = temp_workspace();
    init_repo(&ws, &[]);
    let objects = other.join(".git/objects");
    std::fs::remove_dir_all(ws.join(".git/objects")).expect("rm");
    std::os::unix::fs::symlink(&objects, ws.join(".git/objects")).expect("symlink");
    std::fs::write(ws.join(".git/refs/heads/main"), format!("{head}\n")).expect("write");
    assert!(
        plain_git(&ws, &["log", "--oneline"]).contains(SECRET),
        "plain git follows the objects symlink"
    );
    all_refused(&ws, ".", ".git/objects", &objects).await;

    // refs symlinked out: plain git lists the outside repository's branch names.
    let (_d2, ws2) = temp_workspace();
    init_repo(&ws2, &[("a.txt", "a\n")]);
    let refs = other.join(".git/refs");
    std::fs::remove_dir_all(ws2.join(".git/refs")).expect("rm");
    std::os::unix::fs::symlink(&refs, ws2.join(".git/refs")).expect("symlink");
    assert!(
        plain_git(&ws2, &["for-each-ref", "--format=%(refname)"]).contains("outside-only-branch"),
        "plain git follows the refs symlink"
    );
    all_refused(&ws2, ".", ".git/refs", &refs).await;

    // A single pack or a shallow file symlinked out: found by the scan, wherever it sits.
    let (_d3, ws3) = temp_workspace();
    init_repo(&ws3, &[("a.txt", "a\n")]);
    let outside_file = other.join("secret.txt");
    std::os::unix::fs::symlink(&outside_file, ws3.join(".git/objects/pack/pack-x.pack"))
        .expect("symlink");
    all_refused(&ws3, ".", ".git/objects/pack/pack-x.pack", &outside_file).await;
    std::fs::remove_file(ws3.join(".git/objects/pack/pack-x.pack")).expect("rm");
    std::os::unix::fs::symlink(&outside_file, ws3.join(".git/shallow")).expect("symlink");
    all_refused(&ws3, ".", ".git/shallow", &outside_file).await;
    std::fs::remove_file(ws3.join(".git/shallow")).expect("rm");
    std::fs::create_dir_all(ws3.join(".git/info")).expect("mkdir");
    std::os::unix::fs::symlink(&outside_file, ws3.join(".git/info/grafts")).expect("symlink");
    all_refused(&ws3, ".", ".git/info/grafts", &outside_file).await;
}

#[tokio::test]
async fn submodule_git_file_pointing_outside_is_refused() {
    let (_o, other, head) = outside_repo();
    let (_d, ws) = temp_workspace();
    init_repo(&ws, &[("a.txt", "a\n")]);
    let recorded = "1111111111111111111111111111111111111111";
    git(
        &ws,
        &[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{recorded},sub"),
        ],
    );
    git(&ws, &["commit", "-qm", "add submodule"]);
    std::fs::create_dir(ws.join("sub")).expect("mkdir");
    let gitdir = other.join(".git");
    std::fs::write(
        ws.join("sub/.git"),
        format!("gitdir: {}\n", gitdir.display()),
    )
    .expect("write");
    assert!(
        plain_git(&ws, &["diff", "HEAD", "--ignore-submodules=dirty"])
            .contains(&format!("Subproject commit {head}")),
        "plain git reads the outside repository's HEAD through the submodule"
    );
    all_refused(&ws, ".", "sub/.git", &gitdir).await;
}

#[tokio::test]
async fn repositories_kept_inside_still_work() {
    // A normal repository.
    let (_d, ws) = temp_workspace();
    init_repo(&ws.join("plain"), &[("a.txt", "a\n")]);
    all_work(&ws, "plain").await;

    // Alternates inside the workspace, absolute (git clone --shared) and relative.
    init_repo(&ws.join("base"), &[("b.txt", "b\n")]);
    git(&ws, &["clone", "-q", "--shared", "base", "shared"]);
    let alternates = std::fs::read_to_string(ws.join("shared/.git/objects/info/alternates"))
        .expect("alternates");
    assert!(
        alternates.starts_with(ws.to_str().unwrap_or("/")),
        "clone --shared wrote an absolute alternate: {alternates}"
    );
    all_work(&ws, "shared").await;
    std::fs::write(
        ws.join("shared/.git/objects/info/alternates"),
        "../../../base/.git/objects\n",
    )
    .expect("write");
    all_work(&ws, "shared").await;
    let log = run(
        &WorkspaceGit,
        &ws,
        json!({"operation": "log", "cwd": "shared"}),
    )
    .await
    .expect("log");
    assert_eq!(log["commits"][0]["subject"], "initial commit", "{log:?}");

    // A linked worktree whose git directory is inside the workspace.
    git(
        &ws.join("plain"),
        &["worktree", "add", "-q", "-b", "side", "../linked"],
    );
    all_work(&ws, "linked").await;
    let status = run(
        &WorkspaceGit,
        &ws,
        json!({"operation": "status", "cwd": "linked"}),
    )
    .await
    .expect("status");
    assert_eq!(status["current_branch"], "side", "{status:?}");

    // A submodule whose git directory is inside the superproject's .git/modules.
    init_repo(&ws.join("super"), &[("s.txt", "s\n")]);
    let modules = ws.join("super/.git/modules/sub");
    std::fs::create_dir_all(ws.join("super/.git/modules")).expect("mkdir");
    git(
        &ws.join("super"),
        &[
            "init",
            "-q",
            "--separate-git-dir",
            modules.to_str().unwrap_or("/"),
            "sub",
        ],
    );
    std::fs::write(ws.join("super/sub/x.txt"), "x\n").expect("write");
    git(&ws.join("super/sub"), &["add", "x.txt"]);
    git(&ws.join("super/sub"), &["commit", "-qm", "sub commit"]);
    let sub_head = git(&ws.join("super/sub"), &["rev-parse", "HEAD"])
        .trim()
        .to_string();
    git(
        &ws.join("super"),
        &[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{sub_head},sub"),
        ],
    );
    all_work(&ws, "super").await;
    let status = run(
        &WorkspaceGit,
        &ws,
        json!({"operation": "status", "cwd": "super"}),
    )
    .await
    .expect("status");
    let files = status["files"].as_array().cloned().unwrap_or_default();
    assert!(
        files
            .iter()
            .any(|f| f["path"] == "sub" && f["staged"] == true),
        "the staged submodule is reported: {files:?}"
    );

    // A SHA-256 repository with a submodule entry: its index (32-byte ids) is read correctly.
    let sha256 = ws.join("sha256");
    std::fs::create_dir(&sha256).expect("mkdir");
    git(
        &sha256,
        &[
            "-c",
            "init.defaultBranch=main",
            "init",
            "-q",
            "--object-format=sha256",
            ".",
        ],
    );
    std::fs::write(sha256.join("a.txt"), "a\n").expect("write");
    git(&sha256, &["add", "a.txt"]);
    git(&sha256, &["commit", "-qm", "sha256 commit"]);
    let link = "2".repeat(64);
    git(
        &sha256,
        &[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{link},sub"),
        ],
    );
    std::fs::create_dir(sha256.join("sub")).expect("mkdir");
    all_work(&ws, "sha256").await;
    // ... and a submodule .git leading out of it is still found.
    let (_o, other, _head) = outside_repo();
    std::fs::write(
        sha256.join("sub/.git"),
        format!("gitdir: {}\n", other.join(".git").display()),
    )
    .expect("write");
    all_refused(&ws, "sha256", "sha256/sub/.git", &other.join(".git")).await;
}
