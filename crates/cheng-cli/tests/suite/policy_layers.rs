//! The operator's policy in layers through the real binary: the machine policy's read_paths
//! mounted without asking, and a user policy that may only tighten the machine policy (refused
//! when it would loosen it, listed beside it by `policy show` when it tightens).

use super::policy::policy_file;
use super::support::*;
use serde_json::json;
use std::path::Path;

const CODE: &str = "tools/code_shell";
const SHELL: &str = "tools/workspace_shell";

/// The operator's `read_paths`: mounted read-only in every sandboxed run without asking; a
/// requested path under one needs no approval; others still do; the mount stays read-only.
#[test]
fn operator_read_paths_are_mounted_without_asking() {
    if !bwrap_works() {
        return;
    }
    let (d, ws) = temp_workspace();
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("set.csv"), "a,b\n").unwrap();
    let root = data.path().canonicalize().unwrap();
    let policy = policy_file(
        d.path(),
        &format!(
            "[nodes.\"tools/code_shell\"]\nread_paths = [\"{}\"]\n",
            root.display()
        ),
    );
    let p = policy.to_str().unwrap();
    // Not requested, not approved (--deny): readable all the same.
    let read = json!({"script": format!("cat '{}/set.csv'", root.display())});
    let (code, out, stderr) = run_node(CODE, &ws, &read, &["--policy", p, "--deny"]);
    assert_eq!(code, 0, "{out} {stderr}");
    assert_eq!(out["stdout"], "a,b\n");
    // Control: without the policy the path is not there.
    let (_, out, _) = run_node(CODE, &ws, &read, &["--deny"]);
    assert_eq!(out["success"], false, "{out}");
    // Requested under the operator's root: nothing to ask.
    let requested = json!({"script": format!("cat '{}/set.csv'", root.display()), "request_read_paths": [root.display().to_string()]});
    let (code, out, _) = run_node(CODE, &ws, &requested, &["--policy", p, "--deny"]);
    assert_eq!(code, 0, "{out}");
    // Read-only, even with workspace writes allowed.
    let write =
        json!({"script": format!("echo x > '{}/new'", root.display()), "allow_filesystem": true});
    run_node(
        CODE,
        &ws,
        &write,
        &["--policy", p, "--config", "{\"allow_filesystem\": true}"],
    );
    assert!(
        !root.join("new").exists(),
        "the operator's read path was written"
    );
    // `policy show` lists it; a relative entry or one for a node without a sandbox is refused.
    let shown = text(&run_cheng(&["--policy", p, "policy", "show"]).stdout);
    assert!(
        shown.contains(&format!("read_paths = [\"{}\"]", root.display())),
        "{shown}"
    );
    for (bad, says) in [
        (
            "[all]\nread_paths = [\"data\"]\n",
            "not an absolute host path",
        ),
        (
            "[nodes.\"tools/workspace_git\"]\nread_paths = [\"/srv\"]\n",
            "runs no sandbox",
        ),
    ] {
        let bad_policy = policy_file(d.path(), bad);
        let out = run_cheng(&["--policy", bad_policy.to_str().unwrap(), "nodes"]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(text(&out.stderr).contains(says), "{}", text(&out.stderr));
    }
}

/// `cheng` seeing `machine` as the machine policy (`None`: no machine policy): run in a private
/// mount namespace (bubblewrap) where /etc is a tmpfs holding the host's entries, and
/// /etc/cheng/policy.toml the given file. The host's /etc is never written, and no other test or
/// process sees the file. `None` when bubblewrap cannot run here (outside CI).
fn cheng_with_machine_policy(machine: Option<&Path>) -> Option<std::process::Command> {
    if !bwrap_works() {
        return None;
    }
    let mut cmd = std::process::Command::new("bwrap");
    // --dev-bind: a plain --bind would mount /dev without devices (no /dev/null).
    cmd.args([
        "--die-with-parent",
        "--dev-bind",
        "/",
        "/",
        "--tmpfs",
        "/etc",
    ]);
    for entry in std::fs::read_dir("/etc").expect("read /etc").flatten() {
        let path = entry.path();
        if path == Path::new("/etc/cheng") {
            continue;
        }
        match std::fs::read_link(&path) {
            Ok(target) => cmd.arg("--symlink").arg(target).arg(&path),
            Err(_) => cmd.arg("--ro-bind").arg(&path).arg(&path),
        };
    }
    if let Some(machine) = machine {
        cmd.arg("--ro-bind")
            .arg(machine)
            .arg(cheng_node::policy::SYSTEM_PATH);
    }
    cmd.arg("--")
        .arg(env!("CARGO_BIN_EXE_cheng"))
        .env_remove("CHENG_ENABLE_CODE_PYTHON")
        .env_remove("CHENG_ENABLE_CODE_JS")
        .env_remove("CHENG_POLICY")
        .env("LANG", "C")
        .env("LC_ALL", "C")
        .stdin(std::process::Stdio::null());
    without_terminal(&mut cmd);
    Some(cmd)
}

const MACHINE_POLICY: &str = "honour_approve_flag = false\n[all]\nmax = { timeout_ms = 120000 }\n[nodes.\"tools/code_shell\"]\nallow_network = false\n";

#[test]
fn a_user_policy_cannot_loosen_the_machine_policy() {
    let (d, ws) = temp_workspace();
    let machine = d.path().join("machine.toml");
    std::fs::write(&machine, MACHINE_POLICY).unwrap();
    let user = d.path().join("user.toml");
    std::fs::write(
        &user,
        "honour_approve_flag = true\n[nodes.\"tools/code_shell\"]\nallow_network = true\n",
    )
    .unwrap();
    let marker = ws.join("ran");
    let input = json!({"command": "touch", "args": ["ran"]}).to_string();
    let ws_arg = ws.to_str().unwrap();
    let attack = [
        "run",
        SHELL,
        "--workspace",
        ws_arg,
        "--input",
        &input,
        "--approve",
    ];
    // Without a machine policy the user file is the whole policy: the attack would work.
    let Some(mut control) = cheng_with_machine_policy(None) else {
        return;
    };
    let out = control
        .args(["--policy", user.to_str().unwrap()])
        .args(attack)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(marker.exists(), "the positive control did not run");
    std::fs::remove_file(&marker).unwrap();
    // With the machine policy, --policy and $CHENG_POLICY alike are refused before anything runs.
    for by_env in [false, true] {
        let mut cmd = cheng_with_machine_policy(Some(&machine)).unwrap();
        if by_env {
            cmd.env("CHENG_POLICY", &user);
        } else {
            cmd.args(["--policy", user.to_str().unwrap()]);
        }
        let out = cmd.args(attack).output().unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            !marker.exists(),
            "a loosening user policy let the command run"
        );
        for needle in [
            user.to_str().unwrap(),
            "/etc/cheng/policy.toml",
            "honour_approve_flag = true",
            "[nodes.\"tools/code_shell\"] allow_network = true",
            "may only tighten",
        ] {
            assert!(stderr.contains(needle), "{needle:?} missing: {stderr}");
        }
    }
    // The machine policy alone applies to everyone: --approve is not honoured.
    let out = cheng_with_machine_policy(Some(&machine))
        .unwrap()
        .args(attack)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--approve is not honoured"));
    assert!(!marker.exists());
}

#[test]
fn a_user_policy_that_tightens_is_applied_and_policy_show_lists_both_layers() {
    let (d, ws) = temp_workspace();
    let machine = d.path().join("machine.toml");
    std::fs::write(&machine, MACHINE_POLICY).unwrap();
    let user = d.path().join("user.toml");
    std::fs::write(&user, "[all]\nmax = { timeout_ms = 1000 }\n").unwrap();
    let input = json!({"command": "true", "timeout_ms": 5000}).to_string();
    let ws_arg = ws.to_str().unwrap();
    let run = ["run", SHELL, "--workspace", ws_arg, "--input", &input];
    let Some(mut cmd) = cheng_with_machine_policy(Some(&machine)) else {
        return;
    };
    let out = cmd
        .args(["--policy", user.to_str().unwrap()])
        .args(run)
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("above the operator's limit 1000") && stderr.contains("user.toml"),
        "{stderr}"
    );
    // The machine's own ceiling is higher: the same call passes validation without the user file.
    let out = cheng_with_machine_policy(Some(&machine))
        .unwrap()
        .args(run)
        .output()
        .unwrap();
    assert!(
        !text(&out.stderr).contains("operator's limit"),
        "{}",
        text(&out.stderr)
    );
    let out = cheng_with_machine_policy(Some(&machine))
        .unwrap()
        .args(["--policy", user.to_str().unwrap(), "policy", "show"])
        .output()
        .unwrap();
    let shown = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        shown.contains("machine policy: /etc/cheng/policy.toml"),
        "{shown}"
    );
    assert!(
        shown.contains(&format!(
            "user policy:    {} (from --policy)",
            user.display()
        )),
        "{shown}"
    );
    let line = |key: &str| {
        shown
            .lines()
            .find(|l| l.trim_start().starts_with(key))
            .unwrap_or_default()
            .to_string()
    };
    // Effective value, the layer it came from, and the machine's value it tightened.
    let timeout = line("max.timeout_ms = 1000");
    assert!(
        timeout.contains("user.toml [all]")
            && timeout.contains("(machine policy: 120000, policy /etc/cheng/policy.toml [all])"),
        "{shown}"
    );
    assert!(
        line("honour_approve_flag = false").contains("policy /etc/cheng/policy.toml [top level]"),
        "{shown}"
    );
}
