//! Timeouts, cancellation and abandoned runs kill the whole process group, grandchildren too.

use super::support::*;
use cheng_exec::kill::live_group_members;
use cheng_exec::{ProcessSpec, Termination};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Pids printed one per line by a script.
fn pids(text: &str) -> Vec<i32> {
    text.lines().filter_map(|l| l.trim().parse().ok()).collect()
}

fn assert_all_gone(pids: &[i32]) {
    assert!(!pids.is_empty(), "the script printed no pids");
    let group = pids[0];
    assert!(
        eventually(Duration::from_secs(10), || pids.iter().all(|p| !alive(*p))
            && live_group_members(group).is_empty()),
        "left behind: {:?}",
        live_group_members(group)
    );
}

#[test]
fn timeout_kills_the_backgrounded_grandchild_too() {
    let spec = sh("echo $$; sleep 1000 & echo $!; sleep 1000").timeout(Duration::from_millis(500));
    let out = run_within(Duration::from_secs(100), spec);
    assert_eq!(out.termination, Termination::TimedOut);
    let pids = pids(&out.stdout.text);
    assert_eq!(pids.len(), 2, "{}", out.stdout.text);
    assert_all_gone(&pids);
    assert_eq!(out.error_kind(), Some(cheng_io::ErrorKind::TimedOut));
}

#[test]
fn a_child_ignoring_sigterm_is_killed_after_the_grace() {
    let spec = sh("trap '' TERM; echo $$; sleep 1000 & echo $!; while :; do sleep 1; done")
        .timeout(Duration::from_millis(300))
        .kill_grace(Duration::from_millis(200));
    let out = run(spec);
    assert_eq!(out.termination, Termination::TimedOut);
    assert_eq!(out.signal, Some(libc::SIGKILL));
    assert_all_gone(&pids(&out.stdout.text));
}

#[test]
fn cancellation_kills_the_group() {
    let rt = runtime();
    let token = CancellationToken::new();
    let out = rt.block_on(async {
        let canceller = token.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            canceller.cancel();
        });
        cheng_exec::run(sh("echo $$; sleep 1000 & echo $!; sleep 1000"), &token).await
    });
    assert_eq!(out.termination, Termination::Cancelled);
    assert_eq!(out.error_kind(), Some(cheng_io::ErrorKind::Cancelled));
    assert_all_gone(&pids(&out.stdout.text));
}

#[test]
fn a_cancelled_token_starts_nothing() {
    let token = CancellationToken::new();
    token.cancel();
    let dir = tempfile::tempdir().unwrap();
    let spec = ProcessSpec::new("touch", ["marker"], dir.path());
    let out = runtime().block_on(cheng_exec::run(spec, &token));
    assert_eq!(out.termination, Termination::Cancelled);
    assert!(!dir.path().join("marker").exists());
}

#[test]
fn background_children_do_not_outlive_their_leader_or_hold_capture_open() {
    let out = run_within(
        Duration::from_secs(100),
        sh("echo $$; sleep 1000 & echo $!"),
    );
    assert_eq!(out.termination, Termination::Exited);
    assert_eq!(out.exit_code, Some(0));
    assert_all_gone(&pids(&out.stdout.text));
}

#[test]
fn a_process_that_left_the_group_cannot_hold_the_run_open() {
    // setsid escapes the process group; the drain after exit is bounded, so the run ends long
    // before the escaped sleep does.
    // A duration unique to this test process, so that the guard kills this sleep and no other.
    let secs = format!("1000.{}", std::process::id());
    let _guard = cheng_test_support::KillOnDrop::new(&["-xf", &format!("sleep {secs}")]);
    let out = run_within(
        Duration::from_secs(60),
        sh(&format!("setsid sleep {secs} & echo hi")),
    );
    assert_eq!(out.stdout.text, "hi\n");
}

#[test]
fn dropping_the_run_kills_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let spec = ProcessSpec::new(
        "sh",
        ["-c", "echo $$ > pids; sleep 1000 & echo $! >> pids; wait"],
        dir.path(),
    );
    let rt = runtime();
    let finished = rt.block_on(async {
        let token = CancellationToken::new();
        let run = cheng_exec::run(spec, &token);
        tokio::time::timeout(Duration::from_millis(500), run)
            .await
            .is_ok()
    });
    assert!(!finished);
    let text = std::fs::read_to_string(dir.path().join("pids")).unwrap_or_default();
    assert_all_gone(&pids(&text));
}
