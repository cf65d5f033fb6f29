//! Inherited descriptors: whatever the caller of cheng left open without FD_CLOEXEC must not
//! reach what cheng runs. Each test starts the real `cheng` binary from a shell that did
//! `exec 7>leak.txt` (as in the attack), and the child lists its descriptors and tries
//! `echo PWNED >&7`: the listing must be 0 1 2 (plus the one `ls` opens) and the file empty.

use super::support::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The descriptors a child lists with `ls /proc/self/fd`: 0, 1, 2 and the directory ls opens.
const CLEAN: &str = "0\n1\n2\n3\n";

/// Tests needing an outside tool fail under CI instead of skipping (and record the skip).
fn require(available: bool, what: &str) -> bool {
    require_or_skip_that(what, available)
}

/// A directory holding the leak target; the file is created by the shell.
struct Leak {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Leak {
    fn new() -> Leak {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("leak.txt");
        Leak { _dir: dir, path }
    }

    fn contents(&self) -> String {
        std::fs::read_to_string(&self.path)
            .unwrap_or_else(|e| panic!("{}: {e}", self.path.display()))
    }
}

/// `sh -c 'exec 7>LEAK; exec cheng ARGS...'` with `envs`.
fn cheng_with_fd7(leak: &Leak, args: &[&str], envs: &[(&str, &str)]) -> Output {
    Command::new("sh")
        .args(["-c", "exec 7>\"$LEAK\"; exec \"$CHENG\" \"$@\"", "sh"])
        .args(args)
        .env("LEAK", &leak.path)
        .env("CHENG", env!("CARGO_BIN_EXE_cheng"))
        .env_remove("CHENG_ENABLE_CODE_PYTHON")
        .env_remove("CHENG_ENABLE_CODE_JS")
        .envs(envs.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("sh runs cheng")
}

fn run_with_fd7(
    leak: &Leak,
    node: &str,
    ws: &Path,
    input: &Value,
    extra: &[&str],
    envs: &[(&str, &str)],
) -> Value {
    let input = input.to_string();
    let mut args = vec![
        "run",
        node,
        "--workspace",
        ws.to_str().expect("utf-8"),
        "--input",
        &input,
    ];
    args.extend_from_slice(extra);
    let out = cheng_with_fd7(leak, &args, envs);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "{node}: no JSON output; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

const PROBE: &str = "ls /proc/self/fd; echo PWNED >&7";

#[test]
fn without_cheng_a_child_of_the_shell_writes_through_descriptor_7() {
    // The attack's premise: a descriptor opened with `exec 7>` reaches a plain child.
    let leak = Leak::new();
    let out = Command::new("sh")
        .args([
            "-c",
            "exec 7>\"$LEAK\"; sh -c 'ls /proc/self/fd; echo PWNED >&7'",
        ])
        .env("LEAK", &leak.path)
        .output()
        .expect("sh runs");
    assert!(String::from_utf8_lossy(&out.stdout)
        .lines()
        .any(|l| l == "7"));
    assert_eq!(leak.contents(), "PWNED\n");
}

#[test]
fn workspace_shell_children_see_only_stdio() {
    let leak = Leak::new();
    let (_d, ws) = temp_workspace();
    let out = run_with_fd7(
        &leak,
        "tools/workspace_shell",
        &ws,
        &json!({"command": "sh", "args": ["-c", PROBE]}),
        &["--approve"],
        &[],
    );
    assert_eq!(out["stdout"], CLEAN, "{out}");
    assert!(
        out["stderr"]
            .as_str()
            .unwrap_or("")
            .contains("Bad file descriptor"),
        "{out}"
    );
    assert_eq!(leak.contents(), "");
}

#[test]
fn workspace_tests_run_children_see_only_stdio() {
    let leak = Leak::new();
    let (_d, ws) = temp_workspace();
    let input = json!({"operation": "run", "command": "sh", "args": ["-c", PROBE]});
    let out = run_with_fd7(
        &leak,
        "tools/workspace_tests",
        &ws,
        &input,
        &["--approve"],
        &[],
    );
    assert_eq!(out["stdout"], CLEAN, "{out}");
    assert_eq!(leak.contents(), "");
}

#[test]
fn workspace_git_sees_only_stdio() {
    if !require(
        Command::new("git")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success()),
        "git",
    ) {
        return;
    }
    let leak = Leak::new();
    let (_d, ws) = temp_workspace();
    git(&ws, &["init", "-q"]);
    // A `git` first on PATH that records what it inherited, tries the descriptor, then runs git.
    let bin = tempfile::tempdir().expect("tempdir");
    let records = tempfile::tempdir().expect("tempdir");
    let real_git = ["/usr/bin/git", "/bin/git", "/usr/local/bin/git"]
        .into_iter()
        .find(|p| Path::new(p).is_file())
        .expect("git is installed");
    // One record per invocation (the node runs some gits concurrently).
    let script = format!(
        "#!/bin/sh\nls /proc/self/fd > '{}'/$$.txt\necho PWNED >&7 2>/dev/null\nexec {real_git} \"$@\"\n",
        records.path().display()
    );
    let fake = bin.path().join("git");
    std::fs::write(&fake, script).expect("write fake git");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", bin.path().display());
    let out = run_with_fd7(
        &leak,
        "tools/workspace_git",
        &ws,
        &json!({"operation": "status"}),
        &[],
        &[("PATH", &path)],
    );
    assert_eq!(out["success"], true, "{out}");
    let listings: Vec<String> = std::fs::read_dir(records.path())
        .expect("records")
        .map(|e| std::fs::read_to_string(e.expect("entry").path()).expect("record"))
        .collect();
    assert!(!listings.is_empty(), "the git on PATH never ran");
    for listing in &listings {
        assert_eq!(listing, CLEAN, "{listings:?}");
    }
    assert_eq!(leak.contents(), "");
}

#[test]
fn code_shell_scripts_see_only_stdio() {
    if !require(bwrap_works(), "bubblewrap") {
        return;
    }
    let leak = Leak::new();
    let (_d, ws) = temp_workspace();
    let out = run_with_fd7(
        &leak,
        "tools/code_shell",
        &ws,
        &json!({"script": PROBE}),
        &[],
        &[],
    );
    assert_eq!(out["stdout"], CLEAN, "{out}");
    assert_eq!(leak.contents(), "");
}

#[test]
fn code_python_scripts_see_only_stdio() {
    if !require(bwrap_works(), "bubblewrap") {
        return;
    }
    let leak = Leak::new();
    let (_d, ws) = temp_workspace();
    let script = "import os\n\
                  print(sorted(int(n) for n in os.listdir('/proc/self/fd')))\n\
                  try:\n    os.write(7, b'PWNED')\n    result = 'written'\n\
                  except OSError as e:\n    result = e.strerror\n";
    let out = run_with_fd7(
        &leak,
        "tools/code_python",
        &ws,
        &json!({"script": script}),
        &[],
        &[("CHENG_ENABLE_CODE_PYTHON", "1")],
    );
    assert_eq!(out["result"], "Bad file descriptor", "{out}");
    let listed: Vec<i64> =
        serde_json::from_str(out["stdout"].as_str().unwrap_or("").trim()).unwrap_or_default();
    assert!(!listed.is_empty() && !listed.contains(&7), "{out}");
    assert_eq!(leak.contents(), "");
}

#[test]
fn the_sandbox_init_step_closes_what_reached_it() {
    // Whatever starts bwrap (a test harness, an embedder) may hand it descriptors; the init
    // step is the last program before the script and closes them. Run it directly.
    let leak = Leak::new();
    let out = cheng_with_fd7(&leak, &["__sandbox-init", "--", "sh", "-c", PROBE], &[]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        CLEAN,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(leak.contents(), "");
}
