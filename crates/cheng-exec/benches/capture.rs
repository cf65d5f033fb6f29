//! Capture throughput: a child (`dd`, 1 MiB writes) writes 1 GiB to stdout; cheng-exec captures it
//! with a 1 MiB cap per stream.
//!
//! Baselines measured in the same run: the same child writing to /dev/null (no pipe at all), and
//! the same child piped to a plain blocking read loop that discards (the cost of the pipe itself).
//! Also reports this process's peak RSS (VmHWM), which must stay within cap + 16 MiB.
//!
//! `cargo bench -p cheng-exec --bench capture` (set CHENG_BENCH_BYTES to change the size).
// A benchmark: `unwrap`/`expect` are allowed here (denied in library code, [workspace.lints]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use cheng_exec::{ProcessSpec, Termination};
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const CAP: usize = 1 << 20;
const ROUNDS: usize = 5;

fn main() {
    let bytes: u64 = std::env::var("CHENG_BENCH_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1 << 30);
    // dd writes 1 MiB blocks, so the writer is not the bottleneck (`head -c` writes 8 KiB at a time).
    let blocks = format!("count={}", bytes >> 20);
    let argv = ["if=/dev/zero", "bs=1M", blocks.as_str(), "status=none"];
    let bytes = (bytes >> 20) << 20;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let rss_start = vm_hwm_kb();

    let captured_run = || {
        let spec = ProcessSpec::new("dd", argv, std::env::temp_dir())
            .caps(CAP, CAP)
            .timeout(Duration::from_secs(600));
        let started = Instant::now();
        let out = rt.block_on(cheng_exec::run(spec, &CancellationToken::new()));
        let took = started.elapsed();
        assert_eq!(out.termination, Termination::Exited);
        assert_eq!(out.stdout.total_bytes, bytes);
        assert!(out.stdout.text.len() <= CAP + 64);
        took
    };
    // The same with a live output callback that sees every chunk (and counts its bytes).
    let live_run = || {
        let seen = std::sync::Arc::new(Counter::default());
        let spec = ProcessSpec::new("dd", argv, std::env::temp_dir())
            .caps(CAP, CAP)
            .timeout(Duration::from_secs(600))
            .output(cheng_io::Output::new(seen.clone()));
        let started = Instant::now();
        let out = rt.block_on(cheng_exec::run(spec, &CancellationToken::new()));
        let took = started.elapsed();
        assert_eq!(out.termination, Termination::Exited);
        assert_eq!(
            seen.0.load(std::sync::atomic::Ordering::Relaxed),
            bytes,
            "the callback saw every byte"
        );
        took
    };
    let raw_pipe_run = || {
        let started = Instant::now();
        let mut child = Command::new("dd")
            .args(argv)
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn dd");
        let mut stdout = child.stdout.take().expect("stdout");
        let mut buf = vec![0u8; 256 * 1024];
        let mut total = 0u64;
        loop {
            match stdout.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => total += n as u64,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => panic!("read: {e}"),
            }
        }
        child.wait().expect("wait");
        assert_eq!(total, bytes);
        started.elapsed()
    };
    // Interleaved, so load from other processes hits both sides alike; best of ROUNDS each.
    let (mut captured, mut raw_pipe, mut live) = (Duration::MAX, Duration::MAX, Duration::MAX);
    for _ in 0..ROUNDS {
        captured = captured.min(captured_run());
        live = live.min(live_run());
        raw_pipe = raw_pipe.min(raw_pipe_run());
    }
    let rss_after = vm_hwm_kb();

    let dev_null = best_of(|| {
        let started = Instant::now();
        let status = Command::new("dd")
            .args(argv)
            .stdout(Stdio::null())
            .status()
            .expect("spawn dd");
        assert!(status.success());
        started.elapsed()
    });

    let gib = bytes as f64 / (1u64 << 30) as f64;
    let rate = |d: Duration| gib / d.as_secs_f64();
    println!(
        "capture of {} from `dd if=/dev/zero bs=1M {blocks}`, best of {ROUNDS}:",
        cheng_io::text::human_bytes(bytes)
    );
    println!(
        "  cheng_exec::run (cap {} per stream): {:>6.2} GiB/s  ({:?})",
        cheng_io::text::human_bytes(CAP as u64),
        rate(captured),
        captured
    );
    println!(
        "  cheng_exec::run + live output callback: {:>6.2} GiB/s  ({:?})  callback on / off time {:.2}x",
        rate(live),
        live,
        live.as_secs_f64() / captured.as_secs_f64()
    );
    println!("  raw std pipe + read loop (discard):   {:>6.2} GiB/s  ({:?})  cheng time / raw time {:.2}x", rate(raw_pipe), raw_pipe, captured.as_secs_f64() / raw_pipe.as_secs_f64());
    println!(
        "  child writing to /dev/null (no pipe): {:>6.2} GiB/s  ({:?})",
        rate(dev_null),
        dev_null
    );

    // The same through `head -c` (8 KiB writes): bound by the writer, shown for comparison.
    let size = bytes.to_string();
    let head_argv = ["-c", size.as_str(), "/dev/zero"];
    let head_captured = best_of(|| {
        let spec = ProcessSpec::new("head", head_argv, std::env::temp_dir())
            .caps(CAP, CAP)
            .timeout(Duration::from_secs(600));
        let started = Instant::now();
        let out = rt.block_on(cheng_exec::run(spec, &CancellationToken::new()));
        assert_eq!(out.stdout.total_bytes, bytes);
        started.elapsed()
    });
    let head_raw = best_of(|| {
        let started = Instant::now();
        let mut child = Command::new("head")
            .args(head_argv)
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn head");
        let mut stdout = child.stdout.take().expect("stdout");
        std::io::copy(&mut stdout, &mut std::io::sink()).expect("read");
        child.wait().expect("wait");
        started.elapsed()
    });
    println!(
        "  writer-bound `head -c {bytes} /dev/zero`: cheng_exec {:.2} GiB/s, raw pipe {:.2} GiB/s",
        rate(head_captured),
        rate(head_raw)
    );
    let cap_mib = 2.0 * CAP as f64 / (1 << 20) as f64;
    println!(
        "  peak RSS (VmHWM) of this process: {:.1} MiB before, {:.1} MiB after capture; budget cap ({cap_mib:.0} MiB, both streams) + 16 MiB = {:.0} MiB",
        rss_start as f64 / 1024.0,
        rss_after as f64 / 1024.0,
        cap_mib + 16.0
    );
}

/// A live output sink that counts the bytes it is shown.
#[derive(Default)]
struct Counter(std::sync::atomic::AtomicU64);

impl cheng_io::OutputSink for Counter {
    fn chunk(&self, _stream: cheng_io::OutputStream, bytes: &[u8], offset: u64) {
        assert_eq!(
            offset,
            self.0.load(std::sync::atomic::Ordering::Relaxed),
            "contiguous offsets"
        );
        self.0
            .fetch_add(bytes.len() as u64, std::sync::atomic::Ordering::Relaxed);
    }
}

fn best_of(mut f: impl FnMut() -> Duration) -> Duration {
    (0..ROUNDS).map(|_| f()).min().unwrap_or_default()
}

/// Peak resident set size of this process in KiB, from /proc/self/status.
fn vm_hwm_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}
