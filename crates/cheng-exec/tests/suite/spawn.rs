//! argv spawning: no shell, exact environment, own process group, stdin, rlimits, spawn errors.

use super::support::*;
use cheng_exec::{ProcessSpec, RlimitResource, Termination};
use std::time::Duration;

#[test]
fn arguments_reach_the_program_verbatim_without_a_shell() {
    let out = run(ProcessSpec::new(
        "echo",
        ["$HOME;id", "a b", "`whoami`"],
        std::env::temp_dir(),
    ));
    assert_eq!(out.termination, Termination::Exited);
    assert_eq!(out.exit_code, Some(0));
    assert_eq!(out.stdout.text, "$HOME;id a b `whoami`\n");
    assert!(out.success());
}

#[test]
fn exit_codes_are_reported() {
    let out = run(sh("echo oops >&2; exit 3"));
    assert_eq!(out.termination, Termination::Exited);
    assert_eq!(out.exit_code, Some(3));
    assert_eq!(out.stderr.text, "oops\n");
    assert!(!out.success());
}

#[test]
fn a_missing_program_is_a_spawn_failure_naming_it() {
    let out = run(ProcessSpec::new(
        "no-such-program-cheng",
        Vec::<String>::new(),
        std::env::temp_dir(),
    ));
    assert_eq!(out.termination, Termination::SpawnFailed);
    assert_eq!(out.exit_code, None);
    let message = out.spawn_error.unwrap_or_default();
    assert!(
        message.contains("program \"no-such-program-cheng\" was not found on PATH"),
        "{message}"
    );
}

#[test]
fn a_missing_working_directory_is_a_spawn_failure() {
    let out = run(ProcessSpec::new(
        "true",
        Vec::<String>::new(),
        "/nonexistent/cheng/dir",
    ));
    assert_eq!(out.termination, Termination::SpawnFailed);
    assert!(out
        .spawn_error
        .unwrap_or_default()
        .contains("/nonexistent/cheng/dir"));
}

#[test]
fn a_non_executable_file_is_a_spawn_failure() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("script"), "echo hi\n").unwrap();
    let out = run(ProcessSpec::new(
        "./script",
        Vec::<String>::new(),
        dir.path(),
    ));
    assert_eq!(out.termination, Termination::SpawnFailed);
    assert!(out
        .spawn_error
        .unwrap_or_default()
        .contains("not executable"));
}

#[test]
fn stdin_is_null_by_default() {
    // `cat` would block forever on an inherited terminal or pipe.
    let out = run(
        ProcessSpec::new("cat", Vec::<String>::new(), std::env::temp_dir())
            .timeout(Duration::from_secs(20)),
    );
    assert_eq!(out.termination, Termination::Exited);
    assert_eq!(out.stdout.total_bytes, 0);
}

#[test]
fn stdin_bytes_are_fed_while_output_is_drained() {
    // 4 MiB exceeds every pipe buffer: feeding and draining must run concurrently.
    let input: Vec<u8> = (0..4u32 << 20).map(|i| b'a' + (i % 26) as u8).collect();
    let spec = ProcessSpec::new("cat", Vec::<String>::new(), std::env::temp_dir())
        .stdin(input.clone())
        .caps(8 << 20, 1024)
        .timeout(Duration::from_secs(60));
    let out = run(spec);
    assert_eq!(out.termination, Termination::Exited);
    assert_eq!(out.stdout.total_bytes, input.len() as u64);
    assert_eq!(out.stdout.text.as_bytes(), &input[..]);
}

#[test]
fn the_environment_is_exactly_the_given_one() {
    let spec = ProcessSpec::new("env", Vec::<String>::new(), std::env::temp_dir()).env(vec![
        ("PATH".into(), "/usr/bin:/bin".into()),
        ("ONLY_THIS".into(), "1".into()),
    ]);
    let out = run(spec);
    let mut lines: Vec<&str> = out.stdout.text.lines().collect();
    lines.sort_unstable();
    assert_eq!(lines, ["ONLY_THIS=1", "PATH=/usr/bin:/bin"]);
}

#[test]
fn the_default_environment_is_the_minimal_base() {
    let out = run(ProcessSpec::new(
        "env",
        Vec::<String>::new(),
        std::env::temp_dir(),
    ));
    for line in out.stdout.text.lines() {
        let name = line.split('=').next().unwrap_or_default();
        let allowed = ["PATH", "HOME", "LANG", "TERM", "TMPDIR", "USER"].contains(&name)
            || name.starts_with("LC_");
        assert!(allowed, "unexpected variable {name} in the child");
        let upper = name.to_ascii_uppercase();
        for marker in ["KEY", "SECRET", "TOKEN", "PASSWORD"] {
            assert!(!upper.contains(marker), "{name}");
        }
    }
    assert!(out.stdout.text.contains("PATH="));
}

#[test]
fn the_child_leads_its_own_process_group_and_keeps_argv0() {
    let out = run(ProcessSpec::new(
        "cat",
        ["/proc/self/stat"],
        std::env::temp_dir(),
    ));
    let stat = &out.stdout.text;
    let pid: i32 = stat.split_whitespace().next().unwrap().parse().unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 1..];
    let pgrp: i32 = rest.split_whitespace().nth(2).unwrap().parse().unwrap();
    assert_eq!(pid, pgrp);
    // SAFETY: getpgrp cannot fail.
    assert_ne!(pgrp, unsafe { libc::getpgrp() });

    let out = run(ProcessSpec::new(
        "cat",
        ["/proc/self/cmdline"],
        std::env::temp_dir(),
    ));
    assert_eq!(out.stdout.text, "cat\0/proc/self/cmdline\0");
}

#[test]
fn rlimits_apply_to_the_child() {
    let spec = sh("ulimit -n; ulimit -t")
        .rlimit(RlimitResource::OpenFiles, 64)
        .rlimit(RlimitResource::CpuSeconds, 7);
    let out = run(spec);
    assert_eq!(out.stdout.text, "64\n7\n");
}

#[test]
fn a_file_size_limit_stops_a_big_write() {
    let dir = tempfile::tempdir().unwrap();
    let spec = ProcessSpec::new("sh", ["-c", "head -c 100000 /dev/zero > big"], dir.path())
        .rlimit(RlimitResource::FileSize, 4096);
    let out = run(spec);
    assert!(!out.success());
    assert!(std::fs::metadata(dir.path().join("big")).unwrap().len() <= 4096);
}

#[test]
fn death_by_signal_is_signalled() {
    let out = run(sh("kill -KILL $$"));
    assert_eq!(out.termination, Termination::Signalled);
    assert_eq!(out.signal, Some(9));
    assert_eq!(out.exit_code, None);
    assert!(
        out.summary("sh").contains("SIGKILL"),
        "{}",
        out.summary("sh")
    );
}

#[test]
fn resource_usage_is_reported() {
    let out = run(sh(BURN_CPU));
    let usage = out.usage.expect("wait4 reports usage");
    assert!(usage.peak_rss_kb > 0);
    assert!(usage.cpu_user_ms + usage.cpu_sys_ms > 0, "{usage:?}");
}

#[test]
fn many_runs_in_parallel_do_not_mix_up_children() {
    let rt = runtime();
    let outs = rt.block_on(async {
        let token = tokio_util::sync::CancellationToken::new();
        let runs = (0..16).map(|i| {
            let token = token.clone();
            tokio::spawn(async move {
                cheng_exec::run(sh(&format!("echo {i}; exit {i}")), &token).await
            })
        });
        let mut outs = Vec::new();
        for handle in runs.collect::<Vec<_>>() {
            outs.push(handle.await.unwrap());
        }
        outs
    });
    for (i, out) in outs.iter().enumerate() {
        assert_eq!(out.exit_code, Some(i as i32));
        assert_eq!(out.stdout.text, format!("{i}\n"));
    }
}

#[test]
fn stdout_bytes_are_kept_exactly_when_asked() {
    let spec = sh(r"printf 'a\377\000b'; printf 'x%.0s' $(seq 1 100)").caps(16, 1024);
    let raw = runtime().block_on(cheng_exec::run_with_stdout_bytes(
        spec,
        &tokio_util::sync::CancellationToken::new(),
    ));
    assert_eq!(raw.output.exit_code, Some(0));
    assert_eq!(
        raw.stdout_bytes, b"a\xff\x00bxxxxxxxxxxxx",
        "the first stdout_cap bytes, unaltered"
    );
    assert!(raw.output.stdout.truncated);
    assert_eq!(raw.output.stdout.total_bytes, 104);
    assert!(
        raw.output.stdout.text.starts_with("a\u{FFFD}\0b"),
        "the text form is unchanged"
    );

    let missing = ProcessSpec::new(
        "no-such-program-for-cheng",
        Vec::<String>::new(),
        std::env::temp_dir(),
    );
    let raw = runtime().block_on(cheng_exec::run_with_stdout_bytes(
        missing,
        &tokio_util::sync::CancellationToken::new(),
    ));
    assert_eq!(raw.output.termination, Termination::SpawnFailed);
    assert!(raw.stdout_bytes.is_empty());
}
