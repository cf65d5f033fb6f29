//! Bounded, concurrent capture of stdout and stderr.

use super::support::*;
use cheng_exec::Termination;
use std::time::Duration;

#[test]
fn an_output_flood_is_bounded_with_head_and_tail() {
    let out = run(sh("seq 1 2000000").caps(4096, 1024));
    assert_eq!(out.termination, Termination::Exited);
    assert!(out.stdout.truncated);
    assert!(out.stdout.text.starts_with("1\n2\n3\n"));
    assert!(out.stdout.text.ends_with("1999999\n2000000\n"));
    assert!(out.stdout.text.contains("...[omitted "));
    assert!(
        out.stdout.text.len() <= 4096 + 64,
        "{}",
        out.stdout.text.len()
    );
    assert_eq!(
        out.stdout.total_bytes,
        (1..=2_000_000u64)
            .map(|i| i.to_string().len() as u64 + 1)
            .sum::<u64>()
    );
}

#[test]
fn a_stderr_flood_does_not_deadlock() {
    // 16 MiB on stderr before anything on stdout: reading stdout alone would block forever.
    let spec = sh("head -c 16777216 /dev/zero >&2; echo done")
        .caps(1024, 1024)
        .timeout(Duration::from_secs(120));
    let out = run(spec);
    assert_eq!(
        out.termination,
        Termination::Exited,
        "{:?}",
        out.spawn_error
    );
    assert_eq!(out.stdout.text, "done\n");
    assert_eq!(out.stderr.total_bytes, 16 << 20);
    assert!(out.stderr.truncated);
}

#[test]
fn interleaved_floods_on_both_streams_are_counted_exactly() {
    let spec = sh("for i in 1 2 3 4 5 6 7 8; do head -c 1048576 /dev/zero; head -c 1048576 /dev/zero >&2; done")
        .caps(1 << 16, 1 << 16)
        .timeout(Duration::from_secs(120));
    let out = run(spec);
    assert_eq!(out.stdout.total_bytes, 8 << 20);
    assert_eq!(out.stderr.total_bytes, 8 << 20);
}

#[test]
fn truncation_never_splits_a_character() {
    let out =
        run(sh("i=0; while [ $i -lt 3000 ]; do printf 'é😀'; i=$((i+1)); done").caps(1001, 1001));
    assert!(out.stdout.truncated);
    assert!(!out.stdout.text.contains('\u{FFFD}'), "{}", out.stdout.text);
}

#[test]
fn small_output_is_kept_whole() {
    let out = run(sh("printf 'one\\ntwo'; printf 'err' >&2"));
    assert_eq!(out.stdout.text, "one\ntwo");
    assert!(!out.stdout.truncated);
    assert_eq!(out.stderr.text, "err");
}
