//! Nothing a command starts outlives its run, through the real `cheng` binary: `setsid -f`, a
//! double fork and `nohup … &` in a new session all leave the command's process group, and each
//! must be gone when cheng is interrupted (SIGINT), when cheng itself is killed, and when the
//! command ran in the sandbox. That they are gone when a run exits, times out, is cancelled or is
//! dropped, and that one run's end spares another's, is shown a layer down, in cheng-exec's
//! descendants suite. Processes are found by exact argv (sleep durations unique to the test and,
//! with this test process's id in them, to the run: two checkouts running the suite at once never
//! see or kill each other's) with a bounded poll, and every survivor a test finds is killed by
//! the test.

use super::support::*;
use serde_json::{json, Value};
use std::process::{Child, Stdio};
use std::time::Duration;

const SHELL: &str = "tools/workspace_shell";

/// Pids of live (non-zombie) processes whose argv is exactly `argv`.
fn processes(argv: &[&str]) -> Vec<i32> {
    let want: Vec<u8> = argv.iter().flat_map(|a| a.bytes().chain([0])).collect();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == want))
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| {
                    s.rsplit(')')
                        .next()
                        .and_then(|r| r.trim_start().chars().next())
                })
                .is_some_and(|state| state != 'Z' && state != 'X')
        })
        .collect()
}

/// Kills every process running one of these sleeps when dropped (the test's own cleanup).
struct Sweep(Vec<&'static str>);

impl Drop for Sweep {
    fn drop(&mut self) {
        for secs in &self.0 {
            for pid in processes(&["sleep", secs]) {
                send_signal(pid, "KILL");
            }
        }
    }
}

/// `durations` made unique to this test process: its id appended to each fraction.
fn tagged<const N: usize>(durations: [&str; N]) -> [&'static str; N] {
    durations.map(|d| &*Box::leak(format!("{d}{}", std::process::id()).into_boxed_str()))
}

fn all_gone(sleeps: &[&str]) -> bool {
    eventually(Duration::from_secs(10), || {
        sleeps.iter().all(|s| processes(&["sleep", s]).is_empty())
    })
}

fn all_running(sleeps: &[&str]) -> bool {
    eventually(Duration::from_secs(20), || {
        sleeps.iter().all(|s| !processes(&["sleep", s]).is_empty())
    })
}

fn survivors(sleeps: &[&str]) -> Vec<(String, Vec<i32>)> {
    sleeps
        .iter()
        .map(|s| (s.to_string(), processes(&["sleep", s])))
        .collect()
}

/// setsid -f, a double fork, and nohup in the background in a new session; prints `started`
/// once all three run (bounded wait), then runs `then`.
fn escaping(sleeps: &[&str; 3], then: &str) -> String {
    let [a, b, c] = sleeps;
    format!(
        "setsid -f sleep {a}; (sleep {b} &) & nohup setsid sleep {c} >/dev/null 2>&1 & \
         i=0; until pgrep -xf 'sleep {a}' >/dev/null && pgrep -xf 'sleep {b}' >/dev/null && pgrep -xf 'sleep {c}' >/dev/null; do \
         i=$((i+1)); [ $i -gt 200 ] && break; sleep 0.05; done; [ $i -le 200 ] && echo started; {then}"
    )
}

fn shell_input(script: &str) -> String {
    json!({"command": "sh", "args": ["-c", script]}).to_string()
}

fn spawn_cheng(args: &[&str]) -> Child {
    cheng()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn cheng")
}

#[test]
fn an_interrupt_leaves_no_escaped_grandchild() {
    let sleeps = tagged(["82.9301", "82.9302", "82.9303"]);
    let _sweep = Sweep(sleeps.to_vec());
    let (_d, ws) = temp_workspace();
    let input = shell_input(&escaping(&sleeps, "sleep 1000"));
    let child = spawn_cheng(&[
        "run",
        SHELL,
        "--workspace",
        ws.to_str().unwrap(),
        "--input",
        &input,
        "--approve",
    ]);
    assert!(
        all_running(&sleeps),
        "the escapes did not start: {:?}",
        survivors(&sleeps)
    );
    assert!(send_signal(child.id(), "INT"), "kill -INT {}", child.id());
    let out = child.wait_with_output().expect("cheng exits");
    let value: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert_eq!(out.status.code(), Some(130), "{value}");
    assert_eq!(value["termination"], "cancelled", "{value}");
    assert!(all_gone(&sleeps), "left behind: {:?}", survivors(&sleeps));
}

#[test]
fn killing_cheng_itself_leaves_nothing_running() {
    // SIGKILL gives cheng no chance to clean up: the per-run reaper sees cheng go and kills the
    // command, its group and everything that escaped it.
    let sleeps = tagged(["82.9401", "82.9402", "82.9403"]);
    let [group_member] = tagged(["82.9404"]);
    let _sweep = Sweep(vec![sleeps[0], sleeps[1], sleeps[2], group_member]);
    let (_d, ws) = temp_workspace();
    let input = shell_input(&escaping(&sleeps, &format!("sleep {group_member}")));
    let mut child = spawn_cheng(&[
        "run",
        SHELL,
        "--workspace",
        ws.to_str().unwrap(),
        "--input",
        &input,
        "--approve",
    ]);
    assert!(
        all_running(&[sleeps[0], sleeps[1], sleeps[2], group_member]),
        "{:?}",
        survivors(&sleeps)
    );
    child.kill().expect("SIGKILL cheng");
    let _ = child.wait();
    let every = [sleeps[0], sleeps[1], sleeps[2], group_member];
    assert!(all_gone(&every), "left behind: {:?}", survivors(&every));
}

#[test]
fn nothing_escapes_the_sandbox_either() {
    // bwrap's pid namespace ends with the script; the reaper covers what bwrap would not.
    if !bwrap_works() {
        assert!(
            std::env::var_os("CI").is_none(),
            "bubblewrap is required when CI is set"
        );
        eprintln!("skipped: bubblewrap cannot create namespaces here");
        return;
    }
    let sleeps = tagged(["82.9601", "82.9602", "82.9603"]);
    let _sweep = Sweep(sleeps.to_vec());
    let (_d, ws) = temp_workspace();
    let input = json!({"script": escaping(&sleeps, "echo done")});
    let (code, out, stderr) = run_node("tools/code_shell", &ws, &input, &[]);
    assert_eq!(code, 0, "{out} {stderr}");
    assert_eq!(out["stdout"], "started\ndone\n", "{out}");
    assert!(all_gone(&sleeps), "left behind: {:?}", survivors(&sleeps));
}
