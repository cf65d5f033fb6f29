//! tools/workspace_git against real repositories, hostile ones included.

use super::common::*;
use base64::Engine;
use cheng_nodes_workspace::WorkspaceGit;
use serde_json::{json, Value};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::Command;

/// Builds the booby-trapped repository from fixtures/repos/hostile.sh.
fn hostile_repo(repo: &Path, marker: &Path) {
    let status = Command::new("sh")
        .arg(fixtures().join("repos/hostile.sh"))
        .arg(repo)
        .arg(marker)
        .status()
        .expect("sh runs");
    assert!(status.success(), "hostile.sh failed");
    assert!(
        !marker.exists(),
        "building the fixture must not fire its own traps"
    );
}

/// Plain git with the repository's own configuration, as any user would run it.
fn plain_git(repo: &Path, args: &[&str]) {
    let _ = cheng_test_support::plain_git(repo, args);
}

#[tokio::test]
async fn hostile_repository_never_runs_its_programs() {
    let (_dir, ws) = temp_workspace();
    let outside = tempfile::tempdir().expect("tempdir");
    let marker = outside.path().join("pwned");
    let repo = ws.join("repo");
    hostile_repo(&repo, &marker);

    // The traps are armed: plain git status, diff and show each fire them.
    for args in [
        &["status", "--porcelain=v2"][..],
        &["diff", "HEAD"],
        &["show", "HEAD"],
    ] {
        plain_git(&repo, args);
        assert!(
            marker.exists(),
            "fixture trap did not fire for plain git {args:?}; the test would prove nothing"
        );
        std::fs::remove_file(&marker).expect("rm marker");
    }
    // Plain git may have left stray files; rebuild a pristine copy.
    std::fs::remove_dir_all(&repo).expect("rm repo");
    hostile_repo(&repo, &marker);

    let inputs = [
        json!({"operation": "status", "cwd": "repo"}),
        json!({"operation": "status", "cwd": "repo", "pathspecs": ["plain.txt", "*.md"]}),
        json!({"operation": "diff", "cwd": "repo"}),
        json!({"operation": "diff", "cwd": "repo", "pathspecs": ["notes.md"]}),
        json!({"operation": "log", "cwd": "repo"}),
        json!({"operation": "log", "cwd": "repo", "pathspecs": ["notes.md"], "max_count": 1}),
        json!({"operation": "show", "cwd": "repo"}),
        json!({"operation": "show", "cwd": "repo", "revision": "topic"}),
        json!({"operation": "show", "cwd": "repo", "revision": "HEAD~1"}),
        json!({"operation": "branch", "cwd": "repo"}),
    ];
    for input in inputs {
        let out = run(&WorkspaceGit, &ws, input.clone())
            .await
            .unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_eq!(out["success"], true, "{input}: {out:?}");
        assert!(
            !marker.exists(),
            "{input} ran a program named by the repository"
        );
    }
    assert!(!repo.join("2").exists() && !marker.exists());

    // And the operations still did their work.
    let status = run(
        &WorkspaceGit,
        &ws,
        json!({"operation": "status", "cwd": "repo"}),
    )
    .await
    .expect("status");
    let files = status["files"].as_array().expect("files");
    let find = |p: &str| {
        files
            .iter()
            .find(|f| f["path"] == p)
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert_eq!(find("plain.txt")["worktree_status"], "M", "{files:?}");
    assert_eq!(find("notes.md")["staged"], true, "{files:?}");
    assert_eq!(find("new.txt")["untracked"], true, "{files:?}");
    assert_eq!(status["current_branch"], "main");

    let diff = run(
        &WorkspaceGit,
        &ws,
        json!({"operation": "diff", "cwd": "repo"}),
    )
    .await
    .expect("diff");
    let stdout = diff["stdout"].as_str().unwrap_or_default();
    assert!(stdout.contains("+changed"), "{stdout}");
    assert!(
        stdout.contains("+staged change"),
        "diff shows staged changes too: {stdout}"
    );
    let plain = diff["files"]
        .as_array()
        .and_then(|f| f.iter().find(|e| e["path"] == "plain.txt").cloned());
    assert_eq!(plain.expect("plain.txt in diff")["added"], 1);
    assert!(!marker.exists());
}

#[tokio::test]
async fn option_injection_through_pathspecs_and_revision_is_refused() {
    let (_dir, ws) = temp_workspace();
    init_repo(&ws, &[("a.txt", "a\n")]);
    let target = tempfile::tempdir().expect("tempdir");
    let written = target.path().join("x");
    let out_opt = format!("--output={}", written.display());
    let cases = [
        json!({"operation": "diff", "pathspecs": [out_opt]}),
        json!({"operation": "log", "pathspecs": ["a.txt", out_opt]}),
        json!({"operation": "status", "pathspecs": ["-c"]}),
        json!({"operation": "status", "pathspecs": [":(top)a.txt"]}),
        json!({"operation": "diff", "pathspecs": ["/etc/passwd"]}),
        json!({"operation": "diff", "pathspecs": ["../outside"]}),
        json!({"operation": "show", "revision": out_opt}),
        json!({"operation": "show", "revision": "-ccore.pager=touch /tmp/x"}),
        json!({"operation": "show", "revision": "HEAD --output=/tmp/x"}),
        json!({"operation": "show", "revision": "HEAD:a.txt"}),
        json!({"operation": "show", "revision": "HEAD@{0}"}),
        json!({"operation": "show", "revision": "HEAD..HEAD"}),
        json!({"operation": "log", "revision": "--all"}),
    ];
    for input in cases {
        let result = run(&WorkspaceGit, &ws, input.clone()).await;
        let err = result
            .err()
            .unwrap_or_else(|| panic!("{input} was accepted"));
        assert_eq!(err.kind.code(), "LOCAL_EXECUTOR_INVALID_INPUT", "{input}");
        assert!(
            err.message.contains("pathspecs[") || err.message.contains("revision"),
            "{}",
            err.message
        );
        assert!(!written.exists(), "{input} wrote a file");
    }
}

#[tokio::test]
async fn status_paths_with_spaces_newlines_and_raw_bytes_survive() {
    let (_dir, ws) = temp_workspace();
    init_repo(&ws, &[("keep.txt", "k\n")]);
    std::fs::write(ws.join("with space.txt"), "x").expect("write");
    std::fs::write(ws.join("new\nline.txt"), "x").expect("write");
    let raw = std::ffi::OsStr::from_bytes(b"raw\xffbyte.txt");
    std::fs::write(ws.join(raw), "x").expect("write");
    std::fs::write(ws.join("keep.txt"), "changed\n").expect("write");
    git(&ws, &["mv", "keep.txt", "kept name.txt"]);

    let out = run(&WorkspaceGit, &ws, json!({"operation": "status"}))
        .await
        .expect("status");
    let files = out["files"].as_array().expect("files").clone();
    let paths: Vec<&str> = files.iter().filter_map(|f| f["path"].as_str()).collect();
    assert!(paths.contains(&"with space.txt"), "{paths:?}");
    assert!(paths.contains(&"new\nline.txt"), "{paths:?}");
    let renamed = files
        .iter()
        .find(|f| f["path"] == "kept name.txt")
        .expect("rename entry");
    assert_eq!(renamed["orig_path"], "keep.txt");
    assert_eq!(renamed["index_status"], "R");
    let raw_entry = files
        .iter()
        .find(|f| f.get("path_bytes_base64").is_some())
        .expect("non-UTF-8 entry");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(raw_entry["path_bytes_base64"].as_str().unwrap_or_default())
        .expect("base64");
    assert_eq!(bytes, b"raw\xffbyte.txt");
}

#[tokio::test]
async fn empty_repository_and_detached_head_are_reported_not_crashed() {
    let (_dir, ws) = temp_workspace();
    init_repo(&ws, &[]);
    let status = run(&WorkspaceGit, &ws, json!({"operation": "status"}))
        .await
        .expect("status");
    assert!(
        status["summary"]
            .as_str()
            .unwrap_or_default()
            .contains("no commits yet"),
        "{status:?}"
    );
    let branch = run(&WorkspaceGit, &ws, json!({"operation": "branch"}))
        .await
        .expect("branch");
    assert_eq!(branch["current_branch"], "main");
    assert_eq!(branch["branches"], json!([]));
    assert!(branch["summary"]
        .as_str()
        .unwrap_or_default()
        .contains("no commits yet"));
    let log = run(&WorkspaceGit, &ws, json!({"operation": "log"}))
        .await
        .expect("log");
    assert_eq!(log["commits"], json!([]));
    std::fs::write(ws.join("f.txt"), "x\n").expect("write");
    git(&ws, &["add", "f.txt"]);
    let diff = run(&WorkspaceGit, &ws, json!({"operation": "diff"}))
        .await
        .expect("diff");
    assert_eq!(diff["files"][0]["path"], "f.txt", "{diff:?}");
    let show = run(&WorkspaceGit, &ws, json!({"operation": "show"})).await;
    assert_eq!(error_code(&show), "LOCAL_EXECUTOR_NOT_FOUND");

    git(&ws, &["commit", "-qm", "one"]);
    git(&ws, &["commit", "-q", "--allow-empty", "-m", "two"]);
    git(&ws, &["checkout", "-q", "--detach", "HEAD~1"]);
    let branch = run(&WorkspaceGit, &ws, json!({"operation": "branch"}))
        .await
        .expect("branch");
    assert_eq!(branch["current_branch"], Value::Null);
    assert!(
        branch["summary"]
            .as_str()
            .unwrap_or_default()
            .contains("detached"),
        "{branch:?}"
    );
    assert_eq!(branch["branches"][0]["name"], "main");
    assert_eq!(branch["branches"][0]["current"], false);
    let status = run(&WorkspaceGit, &ws, json!({"operation": "status"}))
        .await
        .expect("status");
    assert!(
        status["summary"]
            .as_str()
            .unwrap_or_default()
            .contains("detached"),
        "{status:?}"
    );
}

#[tokio::test]
async fn log_and_show_return_structured_commits() {
    let (_dir, ws) = temp_workspace();
    init_repo(&ws, &[("a.txt", "a\n")]);
    for i in 0..3 {
        std::fs::write(ws.join("a.txt"), format!("{i}\n")).expect("write");
        git(&ws, &["commit", "-qam", &format!("change {i}")]);
    }
    let log = run(
        &WorkspaceGit,
        &ws,
        json!({"operation": "log", "max_count": 2}),
    )
    .await
    .expect("log");
    let commits = log["commits"].as_array().expect("commits");
    assert_eq!(commits.len(), 2);
    assert_eq!(commits[0]["subject"], "change 2");
    assert_eq!(commits[0]["author"], "Fixture");
    assert_eq!(commits[0]["email"], "fixture@example.invalid");
    assert_eq!(commits[0]["hash"].as_str().map(str::len), Some(40));
    assert!(
        commits[0]["date"]
            .as_str()
            .unwrap_or_default()
            .contains('T'),
        "ISO 8601: {:?}",
        commits[0]["date"]
    );

    let over = run(
        &WorkspaceGit,
        &ws,
        json!({"operation": "log", "max_count": 101}),
    )
    .await;
    let err = over.expect_err("max_count 101 rejected");
    assert!(err.message.contains("100"), "{}", err.message);

    let show = run(
        &WorkspaceGit,
        &ws,
        json!({"operation": "show", "revision": "HEAD~1"}),
    )
    .await
    .expect("show");
    assert_eq!(show["commits"][0]["subject"], "change 1");
    assert_eq!(show["files"][0]["path"], "a.txt");
    assert!(
        show["stdout"].as_str().unwrap_or_default().contains("+1"),
        "{show:?}"
    );

    let missing = run(
        &WorkspaceGit,
        &ws,
        json!({"operation": "show", "revision": "no-such-branch"}),
    )
    .await;
    assert_eq!(error_code(&missing), "LOCAL_EXECUTOR_NOT_FOUND");

    // A remote-tracking ref exists locally but is refused, by full name and by short name.
    let head = git(&ws, &["rev-parse", "HEAD"]);
    git(
        &ws,
        &["update-ref", "refs/remotes/origin/main", head.trim()],
    );
    for revision in ["origin/main", "refs/remotes/origin/main", "origin/main~1"] {
        let out = run(
            &WorkspaceGit,
            &ws,
            json!({"operation": "show", "revision": revision}),
        )
        .await;
        let err = out.err().unwrap_or_else(|| panic!("{revision} accepted"));
        assert_eq!(err.kind.code(), "LOCAL_EXECUTOR_INVALID_INPUT");
        assert!(err.message.contains("remote-tracking"), "{}", err.message);
    }
}

#[tokio::test]
async fn diff_patch_is_capped_head_and_tail() {
    let (_dir, ws) = temp_workspace();
    init_repo(&ws, &[("big.txt", "start\n")]);
    let body: String = (0..5000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(ws.join("big.txt"), body).expect("write");
    let out = run(
        &WorkspaceGit,
        &ws,
        json!({"operation": "diff", "max_bytes": 2048}),
    )
    .await
    .expect("diff");
    assert_eq!(out["stdout_truncated"], true);
    let stdout = out["stdout"].as_str().unwrap_or_default();
    assert!(stdout.len() < 2200, "{}", stdout.len());
    assert!(stdout.contains("omitted"));
    assert!(stdout.contains("line 4999"), "tail kept");
    assert_eq!(out["files"][0]["added"], 5000);
}

#[tokio::test]
async fn repositories_must_live_inside_the_workspace() {
    // Not a repository at all.
    let (_dir, ws) = temp_workspace();
    let out = run(&WorkspaceGit, &ws, json!({"operation": "status"})).await;
    assert_eq!(error_code(&out), "LOCAL_EXECUTOR_NOT_A_REPOSITORY");

    // A workspace inside a larger repository: discovery stops at the workspace root.
    let (_outer_dir, outer) = temp_workspace();
    init_repo(&outer, &[("top.txt", "t\n")]);
    std::fs::create_dir_all(outer.join("inner")).expect("mkdir");
    let inner = outer.join("inner");
    let out = run(&WorkspaceGit, &inner, json!({"operation": "log"})).await;
    assert_eq!(error_code(&out), "LOCAL_EXECUTOR_NOT_A_REPOSITORY");

    // A repository whose core.worktree points outside the workspace.
    let (_d2, ws2) = temp_workspace();
    init_repo(&ws2.join("r"), &[("a.txt", "a\n")]);
    let elsewhere = tempfile::tempdir().expect("tempdir");
    git(
        &ws2.join("r"),
        &[
            "config",
            "core.worktree",
            elsewhere.path().to_str().unwrap_or("/"),
        ],
    );
    let out = run(
        &WorkspaceGit,
        &ws2,
        json!({"operation": "status", "cwd": "r"}),
    )
    .await;
    assert_eq!(error_code(&out), "LOCAL_EXECUTOR_PATH_OUTSIDE_WORKSPACE");

    // cwd escaping the workspace.
    let out = run(
        &WorkspaceGit,
        &ws2,
        json!({"operation": "status", "cwd": "../"}),
    )
    .await;
    assert_eq!(error_code(&out), "LOCAL_EXECUTOR_PATH_OUTSIDE_WORKSPACE");
}

#[tokio::test]
async fn status_does_not_write_the_index() {
    let (_dir, ws) = temp_workspace();
    init_repo(&ws, &[("a.txt", "a\n")]);
    // Fresh mtimes make a refreshing status want to rewrite the index.
    Command::new("touch")
        .args(["-d", "@1893456000"])
        .arg(ws.join("a.txt"))
        .status()
        .expect("touch");
    let index = ws.join(".git/index");
    let before = std::fs::read(&index).expect("index");
    let meta_before = std::fs::metadata(&index)
        .and_then(|m| m.modified())
        .expect("mtime");
    run(&WorkspaceGit, &ws, json!({"operation": "status"}))
        .await
        .expect("status");
    assert_eq!(
        std::fs::read(&index).expect("index"),
        before,
        "status rewrote the index"
    );
    run(&WorkspaceGit, &ws, json!({"operation": "diff"}))
        .await
        .expect("diff");
    assert_eq!(std::fs::read(&index).expect("index"), before);
    assert_eq!(
        std::fs::metadata(&index)
            .and_then(|m| m.modified())
            .expect("mtime"),
        meta_before
    );
}

#[tokio::test]
async fn status_paths_that_quoting_would_mangle_survive_the_nul_framing() {
    let (_dir, ws) = temp_workspace();
    init_repo(&ws, &[("plain.txt", "p\n")]);
    std::fs::write(
        ws.join(std::ffi::OsStr::from_bytes(b"old\xfename.txt")),
        "same content\n",
    )
    .expect("write");
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-qm", "raw name"]);
    // A staged rename away from a non-UTF-8 name, and untracked names with a tab, quotes, a
    // backslash and a leading "# " (which a line parser could take for a header).
    std::fs::rename(
        ws.join(std::ffi::OsStr::from_bytes(b"old\xfename.txt")),
        ws.join("new name.txt"),
    )
    .expect("rename");
    git(&ws, &["add", "-A"]);
    let odd = [
        "tab\there.txt",
        "\"quoted\".txt",
        "back\\slash.txt",
        "# branch.head evil",
    ];
    for name in odd {
        std::fs::write(ws.join(name), "u\n").expect("write");
    }
    let out = run(&WorkspaceGit, &ws, json!({"operation": "status"}))
        .await
        .expect("status");
    assert_eq!(
        out["current_branch"], "main",
        "a file named like a header is not a header: {out:?}"
    );
    let files = out["files"].as_array().expect("files").clone();
    for name in odd {
        let entry = files
            .iter()
            .find(|f| f["path"] == name)
            .unwrap_or_else(|| panic!("{name:?} missing: {files:?}"));
        assert_eq!(entry["untracked"], true);
    }
    let renamed = files
        .iter()
        .find(|f| f["path"] == "new name.txt")
        .expect("rename entry");
    assert_eq!(renamed["index_status"], "R", "{renamed:?}");
    let orig = base64::engine::general_purpose::STANDARD
        .decode(
            renamed["orig_path_bytes_base64"]
                .as_str()
                .unwrap_or_default(),
        )
        .expect("base64");
    assert_eq!(orig, b"old\xfename.txt");
    assert_eq!(files.len(), odd.len() + 1, "{files:?}");
}

#[tokio::test]
async fn pathspecs_narrow_status_diff_and_log() {
    let (_dir, ws) = temp_workspace();
    init_repo(&ws, &[("a.txt", "a\n"), ("sub/b.txt", "b\n")]);
    std::fs::write(ws.join("sub/b.txt"), "b2\n").expect("write");
    git(&ws, &["commit", "-qam", "touch b"]);
    std::fs::write(ws.join("a.txt"), "a2\n").expect("write");
    std::fs::write(ws.join("sub/b.txt"), "b3\n").expect("write");

    let status = run(
        &WorkspaceGit,
        &ws,
        json!({"operation": "status", "pathspecs": ["sub"]}),
    )
    .await
    .expect("status");
    assert_eq!(
        status["files"].as_array().map(Vec::len),
        Some(1),
        "{status:?}"
    );
    assert_eq!(status["files"][0]["path"], "sub/b.txt");

    let diff = run(
        &WorkspaceGit,
        &ws,
        json!({"operation": "diff", "pathspecs": ["a.txt"]}),
    )
    .await
    .expect("diff");
    assert_eq!(
        diff["files"],
        json!([{"path": "a.txt", "added": 1, "deleted": 1, "binary": false}])
    );
    let patch = diff["stdout"].as_str().unwrap_or_default();
    assert!(patch.contains("+a2") && !patch.contains("b3"), "{patch}");

    let log = run(
        &WorkspaceGit,
        &ws,
        json!({"operation": "log", "pathspecs": ["a.txt"]}),
    )
    .await
    .expect("log");
    let subjects: Vec<&str> = log["commits"]
        .as_array()
        .expect("commits")
        .iter()
        .filter_map(|c| c["subject"].as_str())
        .collect();
    assert_eq!(
        subjects,
        ["initial commit"],
        "the commit touching only sub/b.txt is left out"
    );
}

#[tokio::test]
async fn defaults_max_count_20_max_bytes_262144_and_show_head() {
    let (_dir, ws) = temp_workspace();
    init_repo(&ws, &[("a.txt", "0\n")]);
    for i in 1..25 {
        std::fs::write(ws.join("a.txt"), format!("{i}\n")).expect("write");
        git(&ws, &["commit", "-qam", &format!("change {i}")]);
    }
    let log = run(&WorkspaceGit, &ws, json!({"operation": "log"}))
        .await
        .expect("log");
    assert_eq!(log["commits"].as_array().map(Vec::len), Some(20));
    let over = run(
        &WorkspaceGit,
        &ws,
        json!({"operation": "log", "max_count": 101}),
    )
    .await
    .expect_err("101");
    assert_eq!(over.kind.code(), "LOCAL_EXECUTOR_INVALID_INPUT");
    assert!(over.message.contains("maximum 100"), "{}", over.message);

    let show = run(&WorkspaceGit, &ws, json!({"operation": "show"}))
        .await
        .expect("show");
    assert_eq!(
        show["commits"][0]["subject"], "change 24",
        "revision defaults to HEAD"
    );

    // A patch over 256 KiB is cut at the default cap.
    let body: String = (0..40_000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(ws.join("a.txt"), body).expect("write");
    let diff = run(&WorkspaceGit, &ws, json!({"operation": "diff"}))
        .await
        .expect("diff");
    assert_eq!(diff["stdout_truncated"], true);
    let len = diff["stdout"].as_str().map_or(0, str::len);
    assert!(
        (262_144..262_144 + 100).contains(&len),
        "default max_bytes 262144: {len}"
    );
    assert_eq!(diff["files"][0]["added"], 40_000);
}

#[tokio::test]
async fn show_needs_a_commit_not_a_tree_or_blob() {
    let (_dir, ws) = temp_workspace();
    init_repo(&ws, &[("a.txt", "a\n")]);
    let blob = git(&ws, &["rev-parse", "HEAD:a.txt"]);
    let tree = git(&ws, &["rev-parse", "HEAD^{tree}"]);
    git(&ws, &["tag", "blob-tag", blob.trim()]);
    for revision in [blob.trim(), tree.trim(), "blob-tag"] {
        let out = run(
            &WorkspaceGit,
            &ws,
            json!({"operation": "show", "revision": revision}),
        )
        .await;
        let err = out.err().unwrap_or_else(|| panic!("{revision} accepted"));
        assert_eq!(err.kind.code(), "LOCAL_EXECUTOR_NOT_FOUND", "{revision}");
        assert!(
            err.message.contains("does not resolve to a commit"),
            "{}",
            err.message
        );
    }
}

#[tokio::test]
async fn status_and_branch_report_upstream_ahead_and_behind() {
    let (_dir, ws) = temp_workspace();
    init_repo(&ws, &[("a.txt", "a\n")]);
    std::fs::write(ws.join("a.txt"), "b\n").expect("write");
    git(&ws, &["commit", "-qam", "second"]);
    // A local stand-in for a fetched remote: origin/main one commit behind main.
    let parent = git(&ws, &["rev-parse", "HEAD~1"]);
    git(
        &ws,
        &["update-ref", "refs/remotes/origin/main", parent.trim()],
    );
    git(
        &ws,
        &[
            "config",
            "remote.origin.url",
            "https://example.invalid/never-contacted.git",
        ],
    );
    git(
        &ws,
        &[
            "config",
            "remote.origin.fetch",
            "+refs/heads/*:refs/remotes/origin/*",
        ],
    );
    git(&ws, &["config", "branch.main.remote", "origin"]);
    git(&ws, &["config", "branch.main.merge", "refs/heads/main"]);

    let status = run(&WorkspaceGit, &ws, json!({"operation": "status"}))
        .await
        .expect("status");
    let current = &status["branches"][0];
    assert_eq!(current["upstream"], "origin/main", "{status:?}");
    assert_eq!(
        (current["ahead"].as_u64(), current["behind"].as_u64()),
        (Some(1), Some(0))
    );
    assert!(status["summary"]
        .as_str()
        .unwrap_or_default()
        .contains("tracking origin/main (ahead 1, behind 0)"));

    let branch = run(&WorkspaceGit, &ws, json!({"operation": "branch"}))
        .await
        .expect("branch");
    assert_eq!(branch["branches"][0]["upstream"], "origin/main");
    assert_eq!(branch["branches"][0]["ahead"], 1);
    assert_eq!(branch["branches"][0]["current"], true);
}
