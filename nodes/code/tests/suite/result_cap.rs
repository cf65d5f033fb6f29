//! The result limit (16 MiB of JSON) of code_python and code_js, the result channel that stores
//! nothing on the host, and stream byte counts that add up exactly.

use super::sandbox_support::*;
use cheng_node::{Decision, Registry, RunContext, Values};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

const LIMIT: usize = 16 << 20;
const LIMIT_WORDS: &str = "16 MiB result limit";
const OUTPUT_LIMIT: &str = "LOCAL_EXECUTOR_OUTPUT_LIMIT";

/// `N` of the `...[omitted N bytes]...` marker in `text` and the bytes kept around it.
fn omitted_and_kept(text: &str) -> (u64, u64) {
    let start = text
        .find("\n...[omitted ")
        .unwrap_or_else(|| panic!("no marker in {} bytes", text.len()));
    let rest = &text[start + "\n...[omitted ".len()..];
    let digits = rest.find(" bytes]...\n").expect("marker ends");
    let n: u64 = rest[..digits].parse().expect("marker count");
    let marker_len = "\n...[omitted ".len() + digits + " bytes]...\n".len();
    (n, (text.len() - marker_len) as u64)
}

/// The outcome without the (possibly huge) result and streams, for assertion messages.
fn brief(out: &Values) -> String {
    let size = out["result"].to_string().len();
    format!(
        "success={} error_kind={} error={} result: {size} bytes of JSON, stderr starts {:?}",
        out["success"],
        out["error_kind"],
        out["error"],
        out["stderr"]
            .as_str()
            .unwrap_or_default()
            .chars()
            .take(200)
            .collect::<String>()
    )
}

/// Asserts that a truncated stream's marker and byte count account for exactly `written` bytes.
fn assert_accounts_for(out: &Values, stream: &str, written: u64) {
    let text = out[stream].as_str().unwrap_or_default();
    let (omitted, kept) = omitted_and_kept(text);
    assert_eq!(
        omitted + kept,
        written,
        "{stream}: omitted {omitted} + kept {kept} != written {written}"
    );
    assert_eq!(
        out["metrics"][format!("{stream}_bytes")].as_u64(),
        Some(written),
        "{stream}_bytes: {:#?}",
        out["metrics"]
    );
}

// ---------------------------------------------------------------------------------------------
// code_python
// ---------------------------------------------------------------------------------------------

#[cfg(feature = "python")]
mod python {
    use super::*;
    use cheng_nodes_code::python::CodePython;

    /// Writes a valid result envelope of 400 MiB straight into the channel and exits before
    /// the runner can write its own (the attack that made cheng return it whole, at 1.2 GiB of
    /// RSS), keeping the channel open for a while first so that a file would stay on the host.
    pub const FLOOD: &str = "import os, time\n\
        f = open('/run/cheng-io/result.json', 'w')\n\
        f.write('{\"ok\": true, \"result\": \"')\n\
        chunk = 'x' * (1 << 20)\n\
        for _ in range(400):\n    f.write(chunk)\n\
        f.write('\"}')\nf.flush()\n\
        time.sleep(1.5)\nf.close()\nos._exit(0)\n";

    #[tokio::test]
    async fn a_400_mib_result_written_by_the_script_fails_naming_the_limit() {
        if !sandbox_available() {
            return;
        }
        let (_d, ws) = workspace();
        let out = run(
            &CodePython,
            &ws,
            json!({"script": FLOOD, "memory_mb": 64, "timeout_ms": 120000}),
        )
        .await;
        assert_eq!(out["error_kind"], OUTPUT_LIMIT, "{}", brief(&out));
        let error = out["error"].as_str().unwrap_or_default();
        assert!(error.contains(LIMIT_WORDS), "{error}");
        assert!(
            error.contains("419430426 bytes"),
            "the whole flood was counted: {error}"
        );
        assert_eq!(out["result"], Value::Null);
    }

    #[tokio::test]
    async fn a_result_over_the_limit_from_the_runner_fails_naming_the_limit() {
        if !sandbox_available() {
            return;
        }
        let (_d, ws) = workspace();
        // JSON text of LIMIT + 1 bytes: the string plus its two quotes.
        let script = format!("result = 'x' * {}", LIMIT - 1);
        let out = run(
            &CodePython,
            &ws,
            json!({"script": script, "memory_mb": 512, "timeout_ms": 60000}),
        )
        .await;
        assert_eq!(out["error_kind"], OUTPUT_LIMIT, "{:?}", out["error"]);
        let error = out["error"].as_str().unwrap_or_default();
        assert!(
            error.contains(LIMIT_WORDS) && error.contains(&format!("{} bytes", LIMIT + 1)),
            "{error}"
        );
        assert!(
            error.contains("workspace"),
            "says what to do instead: {error}"
        );
    }

    #[tokio::test]
    async fn a_result_of_exactly_the_limit_comes_back_whole() {
        if !sandbox_available() {
            return;
        }
        let (_d, ws) = workspace();
        let script = format!("result = 'x' * {}", LIMIT - 2);
        let out = run(
            &CodePython,
            &ws,
            json!({"script": script, "memory_mb": 512, "timeout_ms": 60000}),
        )
        .await;
        assert_eq!(out["success"], true, "{:?}", out["error"]);
        assert_eq!(out["result"].as_str().map(str::len), Some(LIMIT - 2));
    }

    /// Bytes in use on host /dev/shm.
    fn shm_used() -> u64 {
        let out = std::process::Command::new("df")
            .args(["--output=used", "-B1", "/dev/shm"])
            .output()
            .expect("df runs");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .nth(1)
            .and_then(|l| l.trim().parse().ok())
            .expect("df prints a number")
    }

    /// The largest regular file named result.json in a per-run I/O directory on the host.
    fn largest_channel_file(parent: &Path) -> u64 {
        let mut largest = 0;
        for entry in std::fs::read_dir(parent).into_iter().flatten().flatten() {
            if !entry
                .file_name()
                .to_string_lossy()
                .starts_with("cheng-sandbox-")
            {
                continue;
            }
            if let Ok(meta) = std::fs::symlink_metadata(entry.path().join("io/result.json")) {
                if meta.is_file() {
                    largest = largest.max(meta.len());
                }
            }
        }
        largest
    }

    #[tokio::test]
    async fn flooding_the_exchange_directory_leaves_host_shm_unchanged() {
        if !sandbox_available() {
            return;
        }
        let parent = cheng_sandbox::io_parent();
        let (_d, ws) = workspace();
        // Everything else in the exchange directory is read-only; the channel is the one way in.
        let script = format!(
            "import os\nrefused = []\nfor p in ['/run/cheng-io/fill.bin', '/run/cheng-io/input.json']:\n    try:\n        open(p, 'w').write('x')\n    except OSError:\n        refused.append(os.path.basename(p))\nos.write(2, repr(refused).encode())\n{FLOOD}"
        );
        let before = shm_used();
        let run = run(
            &CodePython,
            &ws,
            json!({"script": script, "memory_mb": 64, "timeout_ms": 120000}),
        );
        tokio::pin!(run);
        let (mut peak_used, mut peak_file) = (before, 0);
        let out = loop {
            tokio::select! {
                out = &mut run => break out,
                _ = tokio::time::sleep(Duration::from_millis(50)) => {
                    peak_used = peak_used.max(shm_used());
                    peak_file = peak_file.max(largest_channel_file(&parent));
                }
            }
        };
        assert!(
            out["stderr"]
                .as_str()
                .unwrap_or_default()
                .starts_with("['fill.bin', 'input.json']"),
            "{}",
            brief(&out)
        );
        assert!(
            peak_file < 1 << 20,
            "a {peak_file}-byte result file appeared in {}",
            parent.display()
        );
        // Other runs on this machine use /dev/shm too: 400 MiB would be far beyond their noise.
        let grew = peak_used.saturating_sub(before);
        assert!(
            grew < 128 << 20,
            "host {} grew by {grew} bytes during the run",
            parent.display()
        );
        assert_eq!(out["error_kind"], OUTPUT_LIMIT, "{}", brief(&out));
    }

    #[tokio::test]
    async fn stdout_flood_is_counted_exactly() {
        if !sandbox_available() {
            return;
        }
        let (_d, ws) = workspace();
        let script = "import sys\nfor i in range(50000):\n    sys.stdout.write('%07d %s\\n' % (i, 'p' * 91))\nsys.stderr.write('e' * 3000001)\nresult = 1";
        let out = run(
            &CodePython,
            &ws,
            json!({"script": script, "timeout_ms": 60000}),
        )
        .await;
        assert_eq!(out["success"], true, "{:?}", out["error"]);
        assert_accounts_for(&out, "stdout", 50_000 * 100);
        assert_accounts_for(&out, "stderr", 3_000_001);
    }

    /// Runs only when the test below starts this binary for it (VmHWM is per process, and the
    /// other tests of this binary would move it).
    #[tokio::test]
    #[ignore = "started by cheng_memory_stays_bounded_while_a_script_floods_its_result"]
    async fn peak_memory_probe() {
        if std::env::var_os("CHENG_PEAK_PROBE").is_none() {
            return;
        }
        let (_d, ws) = workspace();
        // Warm up (interpreter lookup, thread pools) before the baseline.
        let warm = run(&CodePython, &ws, json!({"script": "result = 1"})).await;
        assert_eq!(warm["success"], true, "{warm:?}");
        let before = vm_hwm_kb();
        let out = run(
            &CodePython,
            &ws,
            json!({"script": FLOOD, "memory_mb": 64, "timeout_ms": 120000}),
        )
        .await;
        let after = vm_hwm_kb();
        println!(
            "PEAK_PROBE error_kind={} before_kb={before} after_kb={after}",
            out["error_kind"]
        );
    }

    fn vm_hwm_kb() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmHWM")
    }

    #[test]
    fn cheng_memory_stays_bounded_while_a_script_floods_its_result() {
        if !sandbox_available() {
            return;
        }
        let exe = std::env::current_exe().expect("test binary");
        let out = std::process::Command::new(exe)
            .args([
                "--ignored",
                "--exact",
                "suite::result_cap::python::peak_memory_probe",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("CHENG_PEAK_PROBE", "1")
            .output()
            .expect("the probe starts");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // libtest prints the test's name on the same line.
        let line = stdout
            .lines()
            .find_map(|l| l.find("PEAK_PROBE ").map(|at| &l[at..]))
            .unwrap_or_else(|| panic!("no probe line in {stdout}"));
        let field = |name: &str| -> u64 {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(name))
                .and_then(|v| v.parse().ok())
                .expect("probe field")
        };
        assert!(
            line.contains(&format!("error_kind=\"{OUTPUT_LIMIT}\"")),
            "{line}"
        );
        let grew_kb = field("after_kb=").saturating_sub(field("before_kb="));
        // The script wrote 400 MiB; cheng may keep at most the 16 MiB limit of it.
        assert!(
            grew_kb < 64 * 1024,
            "cheng's peak RSS grew by {grew_kb} KiB while the script wrote 400 MiB: {line}"
        );
    }
}

#[tokio::test]
async fn code_shell_stdout_flood_is_counted_exactly() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    let script = "head -c 5000000 /dev/zero | tr '\\0' s; i=0; while [ $i -lt 20000 ]; do echo 'eeeeeeeee' >&2; i=$((i+1)); done";
    let out = run(
        &cheng_nodes_code::shell::CodeShell,
        &ws,
        json!({"script": script, "timeout_ms": 60000}),
    )
    .await;
    assert_eq!(out["success"], true, "{:?}", out["error"]);
    assert_accounts_for(&out, "stdout", 5_000_000);
    assert_eq!(
        out["metrics"]["stderr_bytes"], 200_000,
        "{:#?}",
        out["metrics"]
    );
}

// ---------------------------------------------------------------------------------------------
// code_js
// ---------------------------------------------------------------------------------------------

#[cfg(feature = "js")]
mod js {
    use super::*;

    async fn run_js(input: Value) -> Values {
        crate::suite::sandbox_support::use_js_worker();
        let registry = Registry::from_inventory_with(|_| true);
        let node = registry
            .get("tools/code_js")
            .expect("tools/code_js is registered");
        let ctx =
            RunContext::for_workspace("tools/code_js", std::env::temp_dir(), Decision::Denied);
        node.run(&ctx, input.as_object().cloned().expect("object"))
            .await
            .expect("failures are outputs")
    }

    #[tokio::test]
    async fn a_100_mb_string_result_fails_naming_the_limit() {
        let out =
            run_js(json!({"script": "'x'.repeat(100e6)", "memory_mb": 512, "timeout_ms": 60000}))
                .await;
        assert_eq!(out["error_kind"], OUTPUT_LIMIT, "{:?}", out["error"]);
        let error = out["error"].as_str().unwrap_or_default();
        assert!(
            error.contains(LIMIT_WORDS) && error.contains("result is a string of 100000000 bytes"),
            "{error}"
        );
        assert_eq!(out["result"], Value::Null);
    }

    #[tokio::test]
    async fn results_are_measured_as_json_text() {
        // Exactly the limit: the string and its two quotes.
        let out = run_js(json!({"script": format!("'x'.repeat({})", LIMIT - 2), "memory_mb": 512, "timeout_ms": 60000})).await;
        assert_eq!(out["success"], true, "{:?}", out["error"]);
        assert_eq!(out["result"].as_str().map(str::len), Some(LIMIT - 2));
        // One byte more.
        let out = run_js(json!({"script": format!("'x'.repeat({})", LIMIT - 1), "memory_mb": 512, "timeout_ms": 60000})).await;
        assert_eq!(out["error_kind"], OUTPUT_LIMIT, "{:?}", out["error"]);
        // Escapes count: 3 million control characters are 18 MB of JSON (\u0001 each).
        let out = run_js(
            json!({"script": "'\\u0001'.repeat(3e6)", "memory_mb": 512, "timeout_ms": 60000}),
        )
        .await;
        assert_eq!(out["error_kind"], OUTPUT_LIMIT, "{:?}", out["error"]);
        assert!(
            out["error"]
                .as_str()
                .unwrap_or_default()
                .contains(LIMIT_WORDS),
            "{:?}",
            out["error"]
        );
        // Many small values add up: 2 million 8-letter strings are 22 MB of JSON.
        let out = run_js(json!({"script": "Array.from({length: 2e6}, () => 'abcdefgh')", "memory_mb": 1024, "timeout_ms": 60000})).await;
        assert_eq!(out["error_kind"], OUTPUT_LIMIT, "{:?}", out["error"]);
        assert!(
            out["error"]
                .as_str()
                .unwrap_or_default()
                .contains(LIMIT_WORDS),
            "{:?}",
            out["error"]
        );
    }

    #[tokio::test]
    async fn one_huge_console_write_is_counted_exactly() {
        for (call, stream) in [("console.error", "stderr"), ("console.log", "stdout")] {
            let script = format!("{call}('y'.repeat(30000000)); 1");
            let out =
                run_js(json!({"script": script, "memory_mb": 512, "timeout_ms": 60000})).await;
            assert_eq!(out["success"], true, "{:?}", out["error"]);
            // The text and its newline.
            assert_accounts_for(&out, stream, 30_000_001);
        }
        // Several arguments: joined by spaces.
        let out = run_js(json!({"script": "console.log('a'.repeat(2e6), 'b'.repeat(2e6), 7); 1", "memory_mb": 512})).await;
        assert_accounts_for(&out, "stdout", 4_000_004);
    }

    #[tokio::test]
    async fn many_console_writes_are_counted_exactly() {
        for (call, stream) in [("console.error", "stderr"), ("console.log", "stdout")] {
            let script = format!("for (let i = 0; i < 100000; i++) {call}(String(i).padStart(6, '0') + 'z'.repeat(93)); 1");
            let out =
                run_js(json!({"script": script, "memory_mb": 512, "timeout_ms": 60000})).await;
            assert_eq!(out["success"], true, "{:?}", out["error"]);
            assert_accounts_for(&out, stream, 100_000 * 100);
        }
    }
}

/// An output in the exchange directory must be a channel (FIFO): a regular file there would
/// store what the script writes on the host, up to RLIMIT_FSIZE.
#[tokio::test]
async fn a_regular_output_file_is_refused_and_a_channel_accepted() {
    use cheng_sandbox::{channel::Channel, Sandbox, SandboxRequest};
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    let (_io_guard, io) = cheng_nodes_code::sandboxed::io_dir().expect("io dir");
    std::fs::write(io.join("out.json"), "").expect("regular file");
    let request = |name: &str| {
        let script = format!("printf hello > /run/cheng-io/{name}");
        let mut req = SandboxRequest::new(
            ws.clone(),
            vec!["/bin/sh".into(), "-c".into(), script.into()],
        );
        req.io_dir = Some(io.clone());
        req.io_outputs = vec![name.to_string()];
        req
    };
    let err = Sandbox::prepare(request("out.json")).expect_err("a regular file is refused");
    assert!(
        err.message.contains("out.json") && err.message.contains("FIFO"),
        "{}",
        err.message
    );
    let channel = Channel::create(&io, "channel", 3).expect("fifo");
    let sandbox = Sandbox::prepare(request("channel")).expect("a channel is accepted");
    let (run, received) = channel
        .collect(sandbox.run(&cheng_node::CancellationToken::new()))
        .await;
    assert!(run.expect("ran").output.success());
    assert_eq!(
        (
            received.bytes.as_slice(),
            received.total_bytes,
            received.exceeded()
        ),
        (&b"hel"[..], 5, true)
    );
}
