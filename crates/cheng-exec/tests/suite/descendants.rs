//! Nothing a command starts outlives its run: not what left its process group (`setsid -f`), not
//! a double fork, not `nohup … &`, whether the command exits, times out, is cancelled or its run
//! is dropped; and one run's end never touches another run's processes.
//!
//! Processes are found by their exact argv (`sleep 82.123<pid>`: a duration no other test uses,
//! with this test process's id in it, so that two checkouts running the suite at once never see
//! or kill each other's), polled with a bounded loop; every test kills any survivor it finds, so
//! a failure leaves nothing behind.

use super::support::*;
use cheng_exec::{ProcessSpec, Termination};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Pids of live (non-zombie) processes whose argv is exactly `argv`.
fn processes(argv: &[&str]) -> Vec<i32> {
    let want: Vec<u8> = argv.iter().flat_map(|a| a.bytes().chain([0])).collect();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == want) && alive(*pid)
        })
        .collect()
}

/// Kills every process with one of these argvs when dropped (the test's own cleanup).
struct Sweep(Vec<Vec<&'static str>>);

impl Drop for Sweep {
    fn drop(&mut self) {
        for argv in &self.0 {
            for pid in processes(argv) {
                // SAFETY: kill has no memory-safety preconditions; the pid runs a test's sleep.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
    }
}

/// Whether none of these processes is left, polling up to 10 s.
fn all_gone(argvs: &[Vec<&str>]) -> bool {
    eventually(Duration::from_secs(10), || {
        argvs.iter().all(|a| processes(a).is_empty())
    })
}

/// `duration` made unique to this test process: its id appended to the fraction.
fn tagged(duration: &str) -> &'static str {
    Box::leak(format!("{duration}{}", std::process::id()).into_boxed_str())
}

fn escapes(tag: &'static str) -> Vec<Vec<&'static str>> {
    // `tag` is the unique fractional part; the three ways out of a process group.
    let leak = |s: &'static str| vec!["sleep", tagged(s)];
    match tag {
        "exit" => vec![leak("82.101"), leak("82.102"), leak("82.103")],
        "timeout" => vec![leak("82.201"), leak("82.202"), leak("82.203")],
        "cancel" => vec![leak("82.301"), leak("82.302"), leak("82.303")],
        "drop" => vec![leak("82.401"), leak("82.402"), leak("82.403")],
        _ => unreachable!(),
    }
}

/// A script that starts each sleep in `argvs` by a different escape: setsid -f, a double fork,
/// nohup in the background (in a new session, so not even the group kill reaches it). It prints
/// `started` once all three run (bounded wait), then runs `then`.
fn escaping_script(argvs: &[Vec<&str>], then: &str) -> String {
    let (a, b, c) = (argvs[0][1], argvs[1][1], argvs[2][1]);
    format!(
        "setsid -f sleep {a}; (sleep {b} &) & nohup setsid sleep {c} >/dev/null 2>&1 & \
         i=0; until pgrep -xf 'sleep {a}' >/dev/null && pgrep -xf 'sleep {b}' >/dev/null && pgrep -xf 'sleep {c}' >/dev/null; do \
         i=$((i+1)); [ $i -gt 200 ] && break; sleep 0.05; done; [ $i -le 200 ] && echo started; {then}"
    )
}

#[test]
fn escaped_processes_survive_a_plain_process_group_kill() {
    // The attack, without cheng: sh leads its group, which is killed after it exits; the escaped
    // sleep is still there.
    let leak = vec!["sleep", tagged("82.501")];
    let _sweep = Sweep(vec![leak.clone()]);
    let mut child = std::process::Command::new("setsid")
        .args(["sh", "-c", &format!("setsid -f sleep {}", leak[1])])
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    child.wait().unwrap();
    // Once sleep runs, setsid has already moved it to a new session.
    assert!(
        eventually(Duration::from_secs(10), || !processes(&leak).is_empty()),
        "the sleep never started"
    );
    // SAFETY: kill has no memory-safety preconditions; `pid` led the group we just started.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        !processes(&leak).is_empty(),
        "setsid -f did not escape the group kill"
    );
}

#[test]
fn nothing_outlives_a_command_that_exits() {
    let argvs = escapes("exit");
    let _sweep = Sweep(argvs.clone());
    let out = run_within(
        Duration::from_secs(60),
        sh(&escaping_script(&argvs, "echo done")),
    );
    assert_eq!(out.termination, Termination::Exited, "{}", out.stderr.text);
    assert_eq!(out.stdout.text, "started\ndone\n", "{}", out.stderr.text);
    assert!(
        all_gone(&argvs),
        "left behind: {:?}",
        argvs.iter().map(|a| processes(a)).collect::<Vec<_>>()
    );
}

#[test]
fn nothing_outlives_a_timeout() {
    let argvs = escapes("timeout");
    let _sweep = Sweep(argvs.clone());
    let spec = sh(&escaping_script(&argvs, "sleep 1000")).timeout(Duration::from_millis(5000));
    let out = run(spec);
    assert_eq!(out.termination, Termination::TimedOut);
    assert_eq!(out.stdout.text, "started\n", "{}", out.stderr.text);
    assert!(
        all_gone(&argvs),
        "left behind: {:?}",
        argvs.iter().map(|a| processes(a)).collect::<Vec<_>>()
    );
}

#[test]
fn nothing_outlives_a_cancellation() {
    let argvs = escapes("cancel");
    let _sweep = Sweep(argvs.clone());
    let token = CancellationToken::new();
    let script = escaping_script(&argvs, "sleep 1000");
    let out = runtime().block_on(async {
        let canceller = token.clone();
        let watched = argvs.clone();
        tokio::task::spawn_blocking(move || {
            // Cancel once every escape is running (or after 20 s, and the test fails below).
            eventually(Duration::from_secs(20), || {
                watched.iter().all(|a| !processes(a).is_empty())
            });
            canceller.cancel();
        });
        cheng_exec::run(sh(&script), &token).await
    });
    assert_eq!(out.termination, Termination::Cancelled);
    assert!(
        all_gone(&argvs),
        "left behind: {:?}",
        argvs.iter().map(|a| processes(a)).collect::<Vec<_>>()
    );
}

#[test]
fn nothing_outlives_a_dropped_run() {
    let argvs = escapes("drop");
    let _sweep = Sweep(argvs.clone());
    let script = escaping_script(&argvs, "sleep 1000");
    let rt = runtime();
    let token = CancellationToken::new();
    let finished = rt.block_on(async {
        let run = cheng_exec::run(sh(&script), &token);
        let watched = argvs.clone();
        let all_started = async move {
            while watched.iter().any(|a| processes(a).is_empty()) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        tokio::select! {
            _ = run => true,
            _ = tokio::time::timeout(Duration::from_secs(20), all_started) => false,
        }
    });
    assert!(!finished);
    assert!(
        all_gone(&argvs),
        "left behind: {:?}",
        argvs.iter().map(|a| processes(a)).collect::<Vec<_>>()
    );
}

#[test]
fn one_runs_end_does_not_kill_another_runs_escaped_processes() {
    // Run A ends while run B's escaped sleep must keep running until B ends.
    let a_leak = vec!["sleep", tagged("82.601")];
    let b_leak = vec!["sleep", tagged("82.602")];
    let _sweep = Sweep(vec![a_leak.clone(), b_leak.clone()]);
    let (a_sleep, b) = (a_leak[1], b_leak[1]);
    let rt = runtime();
    let (a, b) = rt.block_on(async {
        let token = CancellationToken::new();
        let b = tokio::spawn({
            let token = token.clone();
            async move {
                // Wait (bounded) until A has finished, then check the escaped sleep is alive.
                let script = format!("setsid -f sleep {b}; \
                              i=0; while [ ! -e \"$MARK\" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; \
                              sleep 0.3; pgrep -xf 'sleep {b}' >/dev/null && echo alive");
                let dir = std::env::temp_dir().join(format!("cheng-exec-b-{}", std::process::id()));
                let _ = std::fs::remove_file(&dir);
                let spec = ProcessSpec::new("sh", ["-c", &script], std::env::temp_dir())
                    .env(vec![("PATH".into(), "/usr/bin:/bin".into()), ("MARK".into(), dir.clone().into_os_string())]);
                let out = cheng_exec::run(spec, &token).await;
                let _ = std::fs::remove_file(&dir);
                out
            }
        });
        let a = cheng_exec::run(sh(&format!("setsid -f sleep {a_sleep}; sleep 0.3")), &token).await;
        let mark = std::env::temp_dir().join(format!("cheng-exec-b-{}", std::process::id()));
        std::fs::write(&mark, "").unwrap();
        (a, b.await.unwrap())
    });
    assert!(a.success());
    assert_eq!(b.stdout.text, "alive\n", "{}", b.stderr.text);
    assert!(all_gone(&[a_leak, b_leak]));
}

#[test]
fn resource_usage_still_counts_the_command() {
    let leak = vec!["sleep", tagged("82.701")];
    let _sweep = Sweep(vec![leak.clone()]);
    let out = run(sh(&format!("{BURN_CPU}; setsid -f sleep {}", leak[1])));
    let usage = out.usage.expect("the reaper reports usage");
    assert!(usage.peak_rss_kb > 0);
    assert!(usage.cpu_user_ms + usage.cpu_sys_ms > 0, "{usage:?}");
    assert!(all_gone(&[leak]));
}
