//! tools/code_shell against the real sandbox. Every security test attempts the attack and checks
//! the host afterwards.

use super::sandbox_support::*;
use cheng_node::{Decision, ErrorKind};
use cheng_nodes_code::shell::CodeShell;
use cheng_sandbox::{Sandbox, SandboxRequest};
use serde_json::json;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A directory outside both the workspace and /tmp (which is private inside the sandbox),
/// world-writable (see [`world_writable_dir`]).
pub(super) fn outside_dir() -> tempfile::TempDir {
    world_writable_dir()
}

#[tokio::test]
async fn input_reaches_the_script_and_json_stdout_is_the_result() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    let out = run(&CodeShell, &ws, json!({"script": "printf '%s' \"$INPUT\" | sed 's/1/2/'; test -r \"$INPUT_FILE\"", "input": {"a": 1}})).await;
    assert_eq!(out["success"], true, "{out:?}");
    assert_eq!(out["result"], json!({"a": 2}));
    assert_eq!(out["isolation_level"], "bubblewrap");
    for key in [
        "duration_ms",
        "sandbox_setup_ms",
        "exit_code",
        "termination",
        "signal",
        "peak_rss_kb",
        "cpu_user_ms",
        "cpu_sys_ms",
        "stdout_bytes",
        "stderr_bytes",
        "limits",
    ] {
        assert!(
            out["metrics"].get(key).is_some(),
            "metrics.{key} missing: {}",
            out["metrics"]
        );
    }
    let text = run(&CodeShell, &ws, json!({"script": "echo hello"})).await;
    assert_eq!(text["result"], "hello");
}

#[tokio::test]
async fn non_zero_exit_fails_with_output_intact() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    let out = run(
        &CodeShell,
        &ws,
        json!({"script": "echo partial; echo oops >&2; exit 3"}),
    )
    .await;
    assert_eq!(out["success"], false);
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_NON_ZERO_EXIT");
    assert_eq!(out["stdout"], "partial\n");
    assert_eq!(out["stderr"], "oops\n");
    assert_eq!(out["metrics"]["exit_code"], 3);
}

#[tokio::test]
async fn host_secrets_are_invisible_without_full_disk_readonly() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    let script =
        format!("cat /etc/shadow; ls -a '{home}'; cat /etc/passwd >/dev/null && echo passwd-ok");
    let out = run(&CodeShell, &ws, json!({"script": script})).await;
    let stdout = out["stdout"].as_str().unwrap();
    assert!(!stdout.contains("root:"), "shadow leaked: {stdout}");
    assert!(
        stdout.contains("passwd-ok"),
        "the attempt did not run: {out:?}"
    );
    // Not merely unreadable (a permission error would also name the file): not there at all.
    let stderr = out["stderr"].as_str().unwrap();
    assert!(
        stderr.contains("cat: /etc/shadow: No such file or directory"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "ls: cannot access '{home}': No such file or directory"
        )),
        "{stderr}"
    );
    assert_eq!(
        stdout, "passwd-ok\n",
        "something of /etc/shadow or {home} was shown"
    );
}

/// A one-shot HTTP listener on 127.0.0.1; the flag says whether anything connected.
fn listener() -> (u16, Arc<AtomicBool>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let hit = Arc::new(AtomicBool::new(false));
    let flag = hit.clone();
    std::thread::spawn(move || {
        for stream in l.incoming().flatten() {
            flag.store(true, Ordering::SeqCst);
            let mut s = stream;
            let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
            let _ = s.read(&mut [0u8; 1024]);
            let _ = s.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 7\r\n\r\nreached");
        }
    });
    (port, hit)
}

#[tokio::test]
async fn loopback_and_dns_are_unreachable_without_allow_network() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    let (port, hit) = listener();
    if !require_or_skip("curl") {
        return;
    }
    // curl's exit status is the positive control: 7 (could not connect) proves curl ran and
    // tried; 127 (not found inside) or anything else would make the test prove nothing.
    let script = format!("curl -s -m 2 http://127.0.0.1:{port}/; echo \"curl=$?\"; getent hosts example.com || echo no-dns");
    let out = run(&CodeShell, &ws, json!({"script": script})).await;
    assert!(
        !hit.load(Ordering::SeqCst),
        "the sandbox reached the host listener: {out:?}"
    );
    assert!(!out["stdout"].as_str().unwrap().contains("reached"));
    assert!(
        out["stdout"].as_str().unwrap().contains("curl=7\n"),
        "curl did not fail to connect: {out:?}"
    );
    assert!(
        out["stdout"].as_str().unwrap().contains("no-dns"),
        "{out:?}"
    );
    assert!(
        out["warnings"].to_string().contains("allow_network"),
        "{}",
        out["warnings"]
    );
    // With allow_network the way out is the filtering proxy, bridged in by the init step, which
    // this test binary does not have: the run fails closed and nothing reaches the listener.
    // Through the `cheng` binary the proxy is there, and the host's loopback is reached only
    // through a rule naming it (crates/cheng-cli/tests/suite/network.rs).
    let script = format!("curl -s -m 5 http://127.0.0.1:{port}/");
    let failed = match run_with(
        &CodeShell,
        &ws,
        json!({"script": script, "allow_network": true}),
        Decision::Approved,
    )
    .await
    {
        Ok(out) => format!("{}: {}", out["error_kind"], out["error"]),
        Err(e) => e.to_string(),
    };
    assert!(
        failed.contains("SANDBOX_UNAVAILABLE") && failed.contains("init step"),
        "{failed}"
    );
    assert!(!hit.load(Ordering::SeqCst));
}

#[tokio::test]
async fn a_fork_bomb_is_bounded() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    // Bounded attempt first: 1000 sleeping children must not all start.
    let script = "i=0; while [ $i -lt 1000 ]; do sleep 5 & i=$((i+1)); done; echo started $i";
    let out = run(
        &CodeShell,
        &ws,
        json!({"script": script, "timeout_ms": 4000}),
    )
    .await;
    assert!(
        !out["stdout"].as_str().unwrap().contains("started 1000"),
        "1000 processes started: {out:?}"
    );
    assert_eq!(out["success"], false, "{out:?}");
    // Stopped by the bound, not by the timeout (which a slow loop could reach first): the shell
    // says it could not fork, and the run ended before its time.
    assert!(
        out["stderr"].as_str().unwrap().contains("Cannot fork"),
        "{out:?}"
    );
    assert_ne!(out["error_kind"], "LOCAL_EXECUTOR_TIMED_OUT", "{out:?}");
    // The real thing, under a short timeout (the script outlasts it, so it can never pass by exiting 0 in time).
    // Named after this test process, so that only its own processes are looked for (and killed).
    let bomb = format!("bomb_7731_{}", std::process::id());
    let _guard = KillOnDrop::new(&["-f", &bomb]);
    let script = format!("{bomb}() {{ {bomb} | {bomb} & }}; {bomb}; sleep 5");
    let out = run(
        &CodeShell,
        &ws,
        json!({"script": script, "timeout_ms": 2000}),
    )
    .await;
    assert_eq!(out["success"], false, "{out:?}");
    // Nothing of either run survives on the host.
    assert!(
        none_left(&["-f", &bomb]),
        "fork bomb processes survived: {:?}",
        pgrep(&["-f", &bomb])
    );
}

#[tokio::test]
async fn a_memory_hog_fails_with_memory_limit() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    // tail keeps the whole newline-free stream in memory.
    let out = run(&CodeShell, &ws, json!({"script": "head -c 400000000 /dev/zero | tail -c 300000000 > /dev/null", "memory_mb": 64})).await;
    assert_eq!(out["success"], false, "{out:?}");
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_MEMORY_LIMIT", "{out:?}");
}

#[tokio::test]
async fn a_gibibyte_of_output_is_capped() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    let out = run(
        &CodeShell,
        &ws,
        json!({"script": "head -c 1073741824 /dev/zero", "timeout_ms": 120000}),
    )
    .await;
    assert_eq!(
        out["metrics"]["stdout_bytes"],
        1u64 << 30,
        "{}",
        out["metrics"]
    );
    assert_eq!(out["metrics"]["stdout_truncated"], true);
    // The documented 1 MiB stdout cap, head and tail, and the marker counts the rest.
    let (head, tail) = assert_cut_to(
        "code_shell stdout",
        out["stdout"].as_str().unwrap(),
        1 << 30,
        1 << 20,
    );
    assert!(head.bytes().chain(tail.bytes()).all(|b| b == 0));
    assert_eq!(out["result"], serde_json::Value::Null);
}

#[tokio::test]
async fn a_timeout_kills_grandchildren() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    // Durations unique to this test process, so that pgrep -f finds only these sleeps.
    let tag = format!("97.3{}", std::process::id());
    let pattern = format!("^sleep {tag}[123]$");
    let _guard = KillOnDrop::new(&["-f", &pattern]);
    let script = format!("sh -c 'sleep {tag}1' & (setsid sleep {tag}2 &); sleep {tag}3");
    // The three sleeps seen running on the host before the timeout: without that, a timeout that
    // fired before they started would leave nothing behind however the kill worked.
    let watcher = {
        let pattern = pattern.clone();
        tokio::task::spawn_blocking(move || {
            eventually(Duration::from_secs(20), || {
                pgrep(&["-f", &pattern]).len() == 3
            })
        })
    };
    let out = run(
        &CodeShell,
        &ws,
        json!({"script": script, "timeout_ms": 5000}),
    )
    .await;
    assert!(
        watcher.await.unwrap(),
        "the script's processes never all started: {out:?}"
    );
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_TIMED_OUT", "{out:?}");
    assert_eq!(out["metrics"]["termination"], "timed_out");
    assert!(
        none_left(&["-f", &pattern]),
        "left behind: {:?}",
        pgrep(&["-f", &pattern])
    );
}

#[tokio::test]
async fn working_subdir_cannot_climb_or_follow_symlinks_out() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    let err = run_with(
        &CodeShell,
        &ws,
        json!({"script": "pwd", "working_subdir": "../"}),
        Decision::Approved,
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::PathOutsideWorkspace);
    assert!(err.message.contains("working_subdir"));
    let outside = outside_dir();
    std::fs::write(outside.path().join("secret.txt"), "top secret").unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.join("link")).unwrap();
    let err = run_with(
        &CodeShell,
        &ws,
        json!({"script": "pwd", "working_subdir": "link"}),
        Decision::Approved,
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::PathOutsideWorkspace);
    // Following the symlink from inside the sandbox finds nothing, and writes do not land.
    let out = run(
        &CodeShell,
        &ws,
        json!({"script": "cat link/secret.txt; echo x > link/new.txt", "allow_filesystem": true}),
    )
    .await;
    assert!(
        !out["stdout"].as_str().unwrap().contains("top secret"),
        "{out:?}"
    );
    assert!(!outside.path().join("new.txt").exists());
}

#[tokio::test]
async fn a_missing_or_broken_bwrap_fails_closed() {
    let (_d, ws) = workspace();
    let mut req = SandboxRequest::new(ws.clone(), vec!["/bin/true".into()]);
    req.bwrap = Some("/nonexistent/bwrap".into());
    let err = Sandbox::prepare(req.clone()).unwrap_err();
    assert_eq!(err.kind, ErrorKind::SandboxUnavailable);
    assert!(
        err.terminal && err.message.contains("/nonexistent/bwrap"),
        "{err}"
    );
    // A bwrap that cannot create namespaces (simulated by one that always fails).
    let fake = ws.join("bwrap");
    std::fs::write(&fake, "#!/bin/sh\necho 'bwrap: No permissions to create new namespace, likely because the kernel does not allow non-privileged user namespaces.' >&2\nexit 1\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    req.bwrap = Some(fake.clone());
    let cancel = cheng_node::CancellationToken::new();
    let err = Sandbox::prepare(req.clone())
        .unwrap()
        .run(&cancel)
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::SandboxUnavailable);
    assert!(
        err.message
            .contains("No permissions to create new namespace"),
        "{err}"
    );
    assert!(
        err.message
            .contains("kernel.apparmor_restrict_unprivileged_userns=0"),
        "{err}"
    );
    assert!(err.message.contains("never falls back"), "{err}");
    // A stand-in that fails without a word (as /bin/false would): the probe classifies it, and
    // once it has failed in this process later runs fail before starting anything.
    let silent = ws.join("silent-bwrap");
    std::fs::write(&silent, "#!/bin/sh\nexit 1\n").unwrap();
    std::fs::set_permissions(&silent, std::fs::Permissions::from_mode(0o755)).unwrap();
    req.bwrap = Some(silent);
    let err = Sandbox::prepare(req.clone())
        .unwrap()
        .run(&cancel)
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::SandboxUnavailable);
    assert!(
        err.message
            .contains("bubblewrap cannot create the sandbox here"),
        "{err}"
    );
    let err = Sandbox::prepare(req).unwrap_err();
    assert_eq!(err.kind, ErrorKind::SandboxUnavailable);
}

#[tokio::test]
async fn large_inputs_go_through_the_input_file() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    let big = "x".repeat(300_000);
    let out = run(
        &CodeShell,
        &ws,
        json!({"script": "test -z \"$INPUT\" && wc -c < \"$INPUT_FILE\"", "input": big}),
    )
    .await;
    assert_eq!(out["result"], 300_002, "{out:?}");
    assert!(out["warnings"].to_string().contains("INPUT_FILE"));
}

#[tokio::test]
async fn the_io_directory_is_read_only_inside() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    let script = "echo forged > \"$INPUT_FILE\"; echo x > /run/cheng-io/new.txt; mkdir /run/cheng-io/d; wc -c < \"$INPUT_FILE\"";
    // Both ways the directory reaches the sandbox: copies in the read-only root (a small input)
    // and a read-only bind of the host directory (an input past the copy limit).
    let big = "x".repeat(cheng_sandbox::mounts::COPY_MAX_BYTES as usize + 1);
    for input in [json!({"k": "v"}), json!(big)] {
        let out = run(
            &CodeShell,
            &ws,
            json!({"script": script, "input": input, "allow_filesystem": true}),
        )
        .await;
        // The input file keeps its length (`forged` would be 7 bytes).
        assert_eq!(
            out["result"],
            input.to_string().len(),
            "the input was changed: {out:?}"
        );
        // EROFS, not EACCES: the directory is root-owned 0755 and the script runs unprivileged,
        // so a permission error would also come from a writable mount.
        let stderr = out["stderr"].as_str().unwrap();
        for what in [
            "/run/cheng-io/input.json",
            "/run/cheng-io/new.txt",
            "/run/cheng-io/d",
        ] {
            let line = stderr
                .lines()
                .find(|l| l.contains(what))
                .unwrap_or_default();
            assert!(line.ends_with("Read-only file system"), "{what}: {stderr}");
        }
    }
}

#[tokio::test]
async fn a_private_workspace_is_readable_read_only() {
    if !sandbox_available() {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let (_d, ws) = workspace();
    std::fs::write(ws.join("notes.txt"), "private notes").unwrap();
    std::fs::set_permissions(ws.join("notes.txt"), std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::set_permissions(&ws, std::fs::Permissions::from_mode(0o700)).unwrap();
    let out = run(
        &CodeShell,
        &ws,
        json!({"script": "cat notes.txt; echo changed > notes.txt; touch new.txt"}),
    )
    .await;
    assert_eq!(out["stdout"], "private notes", "{out:?}");
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.txt")).unwrap(),
        "private notes"
    );
    assert!(!ws.join("new.txt").exists());
}

/// The workspace's entries, sorted.
pub(super) fn entries(ws: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(ws)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn masking_placeholders_are_removed_however_the_run_ends() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    std::fs::write(ws.join("keep.txt"), "x").unwrap();
    let before = entries(&ws);
    let writable = |script: &str, timeout_ms: u64| json!({"script": script, "allow_filesystem": true, "timeout_ms": timeout_ms});

    // A failing run: the placeholders existed (as masks) while it ran, and are gone after.
    let out = run(&CodeShell, &ws, writable("ls -a; exit 3", 5000)).await;
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_NON_ZERO_EXIT", "{out:?}");
    assert!(
        out["stdout"].as_str().unwrap().contains(".bashrc"),
        "no mask was in place: {out:?}"
    );
    assert_eq!(entries(&ws), before, "after a failing run");

    // A run killed at its timeout.
    let out = run(&CodeShell, &ws, writable("sleep 30", 300)).await;
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_TIMED_OUT", "{out:?}");
    assert_eq!(entries(&ws), before, "after a timeout");

    // A cancelled run.
    let ctx =
        cheng_node::RunContext::for_workspace("tools/code_shell", ws.clone(), Decision::Approved);
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    });
    let out = cheng_node::Node::run(
        &CodeShell,
        &ctx,
        with_defaults(&CodeShell, writable("sleep 30", 20000)),
    )
    .await
    .unwrap();
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_CANCELLED", "{out:?}");
    assert_eq!(entries(&ws), before, "after cancellation");

    // A run whose future is dropped mid-run (the engine abandoning it).
    let ctx =
        cheng_node::RunContext::for_workspace("tools/code_shell", ws.clone(), Decision::Approved);
    let input = with_defaults(&CodeShell, writable("sleep 30", 20000));
    let abandoned = tokio::time::timeout(
        Duration::from_millis(300),
        cheng_node::Node::run(&CodeShell, &ctx, input),
    )
    .await;
    assert!(abandoned.is_err(), "the run should still have been going");
    assert_eq!(entries(&ws), before, "after the run was dropped");

    // A sandbox prepared and never run.
    let mut req = SandboxRequest::new(ws.clone(), vec!["/bin/true".into()]);
    req.writable = true;
    let prepared = Sandbox::prepare(req).unwrap();
    assert!(ws.join(".bashrc").exists(), "prepare made no placeholder");
    drop(prepared);
    assert_eq!(entries(&ws), before, "after a prepared sandbox was dropped");
}

#[tokio::test]
async fn no_per_run_directory_outlives_its_run() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    let parent = cheng_sandbox::io_parent();
    // The run's own I/O directory, found from inside through $INPUT_FILE's mount source (an
    // input past the copy limit, so that the directory is bound, not copied into the view).
    let input = "x".repeat(cheng_sandbox::mounts::COPY_MAX_BYTES as usize + 1);
    let out = run(
        &CodeShell,
        &ws,
        json!({"script": "grep ' /run/cheng-io ' /proc/self/mountinfo | head -n1", "input": input}),
    )
    .await;
    assert_eq!(out["success"], true, "{out:?}");
    let mountinfo = out["result"].as_str().unwrap_or("").to_string();
    // Field 4 is the root of the mount inside its file system: .../cheng-sandbox-XXXX/io.
    let root = mountinfo.split(' ').nth(3).unwrap_or("");
    let run_dir = root
        .trim_end_matches("/io")
        .rsplit('/')
        .next()
        .unwrap_or("")
        .to_string();
    assert!(
        run_dir.starts_with("cheng-sandbox-"),
        "unexpected mountinfo: {mountinfo}"
    );
    assert!(
        !parent.join(&run_dir).exists(),
        "{} was left behind",
        parent.join(&run_dir).display()
    );
}

#[tokio::test]
async fn the_script_runs_with_no_new_privs_and_no_capabilities() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    let out = run(
        &CodeShell,
        &ws,
        json!({"script": "grep -E '^(NoNewPrivs|CapEff|CapPrm|CapBnd):' /proc/self/status"}),
    )
    .await;
    assert_eq!(out["success"], true, "{out:?}");
    let status = out["stdout"].as_str().unwrap();
    assert!(
        status
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["NoNewPrivs:", "1"]),
        "{status}"
    );
    for cap in ["CapEff:", "CapPrm:", "CapBnd:"] {
        let line = status
            .lines()
            .find(|l| l.starts_with(cap))
            .unwrap_or_else(|| panic!("{cap} missing: {status}"));
        assert!(
            line.ends_with("0000000000000000"),
            "a capability survived: {line}"
        );
    }
    // The attempt a capability would allow: a mount.
    let out = run(
        &CodeShell,
        &ws,
        json!({"script": "mount -t tmpfs none /tmp && echo mounted"}),
    )
    .await;
    assert!(
        !out["stdout"].as_str().unwrap().contains("mounted"),
        "{out:?}"
    );
}

/// Cancelling a run mid-way (the engine's CancellationToken) kills the script's children and
/// grandchildren, including one that left the process group with setsid: counted on the host
/// before and after.
#[tokio::test]
async fn cancelling_mid_run_kills_grandchildren() {
    if !sandbox_available() || !require_or_skip("pgrep") {
        return;
    }
    let (_d, ws) = workspace();
    // Durations unique to this test process, so that pgrep -f finds only these sleeps.
    let tag = format!("97.6{}", std::process::id());
    let script = format!("sh -c 'sleep {tag}1' & (setsid sleep {tag}2 &); sleep {tag}3");
    let ctx =
        cheng_node::RunContext::for_workspace("tools/code_shell", ws.clone(), Decision::Approved);
    let cancel = ctx.cancel.clone();
    let input = with_defaults(&CodeShell, json!({"script": script, "timeout_ms": 60000}));
    let pattern = format!("sleep {tag}");
    // Cleans up, by pid, whatever the sandbox failed to.
    let _guard = KillOnDrop::new(&["-f", &pattern]);
    let watcher = {
        let pattern = pattern.clone();
        tokio::task::spawn_blocking(move || {
            // The three sleeps themselves running (not merely a shell naming them): then cancel.
            let sleeps = format!("^{pattern}[123]$");
            let started = eventually(Duration::from_secs(20), || {
                pgrep(&["-f", &sleeps]).len() == 3
            });
            cancel.cancel();
            started
        })
    };
    let out = cheng_node::Node::run(&CodeShell, &ctx, input)
        .await
        .unwrap();
    assert!(
        watcher.await.unwrap(),
        "the script's processes never all started: {out:?}"
    );
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_CANCELLED", "{out:?}");
    assert_eq!(out["metrics"]["termination"], "cancelled", "{out:?}");
    assert!(
        none_left(&["-f", &pattern]),
        "left behind after cancellation: {:?}",
        pgrep(&["-f", &pattern])
    );
}
