#![allow(unused_imports)]
use super::support::*;
use serde_json::json;

#[test]
fn code_shell_runs_in_the_sandbox_with_landlock() {
    if !bwrap_works() {
        eprintln!("skipped: bubblewrap cannot create namespaces here");
        return;
    }
    let (_d, ws) = temp_workspace();
    let (code, out, stderr) = run_node("tools/code_shell", &ws, &json!({"script": "echo hi > inside.txt; echo done"}), &[
        "--config",
        r#"{"allow_filesystem": true}"#,
    ]);
    assert_eq!(code, 0, "{out} {stderr}");
    assert_eq!(out["result"], "done");
    assert!(out["metrics"]["limits"]["landlock"].as_str().unwrap_or("").starts_with("enforced"), "{out}");
    assert!(ws.join("inside.txt").exists());
}

#[test]
fn an_agent_cannot_turn_on_the_network_itself() {
    let (_d, ws) = temp_workspace();
    let (code, _out, stderr) = run_node("tools/code_shell", &ws, &json!({"script": "true", "allow_network": true}), &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("allow_network"), "{stderr}");
}

#[test]
fn a_missing_bwrap_fails_closed() {
    let (_d, ws) = temp_workspace();
    let input = json!({"script": "echo should-not-run"}).to_string();
    let out = cheng()
        .env("CHENG_BWRAP", "/nonexistent/bwrap")
        .args(["run", "tools/code_shell", "--workspace", ws.to_str().unwrap(), "--input", &input])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_ne!(out.status.code(), Some(0));
    assert!(stdout.contains("LOCAL_EXECUTOR_SANDBOX_UNAVAILABLE"), "{stdout}");
    assert!(!stdout.contains("should-not-run"));
}
