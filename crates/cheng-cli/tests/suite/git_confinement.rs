//! `cheng run tools/workspace_git` never reads a repository outside the workspace: the reported
//! attack (a `.git` file naming another repository), alternates by hash, and `GIT_DIR`-style
//! variables in cheng's own environment.

use super::support::*;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

const NODE: &str = "tools/workspace_git";
const SECRET: &str = "outside-secret-subject";

/// A repository outside the workspace with a commit whose subject is [`SECRET`]; its HEAD hash.
fn outside_repo(root: &Path) -> String {
    git(root, &["-c", "init.defaultBranch=main", "init", "-q", "."]);
    git(root, &["commit", "-q", "--allow-empty", "-m", SECRET]);
    let out = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(root)
        .output()
        .expect("git runs");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn plain_git(dir: &Path, args: &[&str]) -> String {
    String::from_utf8_lossy(&cheng_test_support::plain_git(dir, args).stdout).into_owned()
}

/// Exit status, error kind and message of a run that must fail; stdout and stderr together must
/// not carry the outside repository's subject.
fn refused(ws: &Path, input: &Value) -> String {
    let (code, out, stderr) = run_node(NODE, ws, input, &[]);
    assert_ne!(code, 0, "{input} was not refused: {out} {stderr}");
    let all = format!("{out}{stderr}");
    assert!(
        !all.contains(SECRET),
        "{input} showed the outside repository: {all}"
    );
    assert!(
        all.contains("LOCAL_EXECUTOR_PATH_OUTSIDE_WORKSPACE"),
        "{input}: {all}"
    );
    all
}

#[test]
fn gitdir_file_and_alternates_pointing_outside_are_refused() {
    let outside = tempfile::tempdir().expect("tempdir");
    let other = outside.path().canonicalize().expect("canonical");
    let head = outside_repo(&other);

    // The reported attack: mkdir w3; echo "gitdir: /other/.git" > w3/.git; show HEAD.
    let (_d, ws) = temp_workspace();
    std::fs::write(
        ws.join(".git"),
        format!("gitdir: {}\n", other.join(".git").display()),
    )
    .expect("write");
    assert!(
        plain_git(&ws, &["show", "HEAD"]).contains(SECRET),
        "plain git follows the gitdir file"
    );
    let all = refused(&ws, &json!({"operation": "show", "revision": "HEAD"}));
    assert!(
        all.contains(".git (gitdir: ") && all.contains(&other.join(".git").display().to_string()),
        "{all}"
    );

    // Alternates: the outside commit shown by its hash.
    let (_d2, ws2) = temp_workspace();
    git(&ws2, &["-c", "init.defaultBranch=main", "init", "-q", "."]);
    git(&ws2, &["commit", "-q", "--allow-empty", "-m", "inside"]);
    let alternates = ws2.join(".git/objects/info/alternates");
    std::fs::write(
        &alternates,
        format!("{}\n", other.join(".git/objects").display()),
    )
    .expect("write");
    assert!(
        plain_git(&ws2, &["show", &head]).contains(SECRET),
        "plain git reads the alternate"
    );
    for op in ["status", "diff", "log", "show", "branch"] {
        let all = refused(&ws2, &json!({"operation": op}));
        assert!(all.contains(".git/objects/info/alternates"), "{op}: {all}");
    }
    let all = refused(&ws2, &json!({"operation": "show", "revision": head}));
    assert!(all.contains(".git/objects/info/alternates"), "{all}");
}

#[test]
fn git_dir_variables_in_chengs_environment_are_ignored() {
    let outside = tempfile::tempdir().expect("tempdir");
    let other = outside.path().canonicalize().expect("canonical");
    outside_repo(&other);
    let (_d, ws) = temp_workspace();
    git(&ws, &["-c", "init.defaultBranch=main", "init", "-q", "."]);
    git(
        &ws,
        &["commit", "-q", "--allow-empty", "-m", "inside-subject"],
    );
    let input = json!({"operation": "log"}).to_string();
    let gitdir = other.join(".git");
    let output = cheng()
        .args([
            "run",
            NODE,
            "--workspace",
            ws.to_str().unwrap_or("."),
            "--input",
            &input,
        ])
        .env("GIT_DIR", &gitdir)
        .env("GIT_COMMON_DIR", &gitdir)
        .env("GIT_OBJECT_DIRECTORY", gitdir.join("objects"))
        .env("GIT_ALTERNATE_OBJECT_DIRECTORIES", gitdir.join("objects"))
        .env("GIT_WORK_TREE", &other)
        .output()
        .expect("cheng runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("inside-subject") && !stdout.contains(SECRET),
        "{stdout}"
    );
}
