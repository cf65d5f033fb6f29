//! tools/code_python against the real sandbox.

use super::sandbox_support::*;
use cheng_node::{Decision, ErrorKind, Registry};
use cheng_nodes_code::python::CodePython;
use serde_json::json;
use std::net::TcpListener;
use std::path::Path;
use std::time::Duration;

#[tokio::test]
async fn result_comes_back_through_the_private_channel() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    let script = "print('from the script')\nresult = sum(input['values'])";
    let out = run(
        &CodePython,
        &ws,
        json!({"script": script, "input": {"values": [1, 2, 3]}}),
    )
    .await;
    assert_eq!(out["success"], true, "{out:?}");
    assert_eq!(out["result"], 6);
    assert_eq!(out["stdout"], "from the script\n");
    assert_eq!(out["isolation_level"], "bubblewrap");
    assert!(
        out["metrics"]["sandbox_notes"]
            .to_string()
            .contains("cgroup v2"),
        "{out:?}"
    );
    assert_eq!(
        out["warnings"],
        json!([]),
        "post-run notes are metrics, not warnings"
    );
    let out = run(&CodePython, &ws, json!({"script": "x = 1"})).await;
    assert_eq!(
        (out["success"].clone(), out["result"].clone()),
        (json!(true), json!(null))
    );
}

#[tokio::test]
async fn syntax_errors_name_the_line() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    let out = run(
        &CodePython,
        &ws,
        json!({"script": "a = 1\nb = (\nresult = a"}),
    )
    .await;
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_SCRIPT_ERROR", "{out:?}");
    assert!(
        out["error"].as_str().unwrap().contains("line 2"),
        "{}",
        out["error"]
    );
    let out = run(
        &CodePython,
        &ws,
        json!({"script": "a = 1\nraise ValueError('bad value')"}),
    )
    .await;
    assert!(
        out["error"]
            .as_str()
            .unwrap()
            .contains("ValueError: bad value at line 2"),
        "{}",
        out["error"]
    );
    assert!(out["stderr"].as_str().unwrap().contains("Traceback"));
}

#[tokio::test]
async fn unserialisable_results_name_their_type() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    let out = run(&CodePython, &ws, json!({"script": "result = {1, 2}"})).await;
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_SCRIPT_ERROR");
    assert!(
        out["error"].as_str().unwrap().contains("type set"),
        "{}",
        out["error"]
    );
}

#[tokio::test]
async fn a_memory_hog_fails_with_memory_limit() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    let out = run(
        &CodePython,
        &ws,
        json!({"script": "x = bytearray(400 * 1024 * 1024)\nresult = len(x)", "memory_mb": 128}),
    )
    .await;
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_MEMORY_LIMIT", "{out:?}");
}

#[tokio::test]
async fn an_endless_loop_times_out() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    let out = run(
        &CodePython,
        &ws,
        json!({"script": "while True:\n    pass", "timeout_ms": 700}),
    )
    .await;
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_TIMED_OUT", "{out:?}");
}

#[tokio::test]
async fn the_network_is_always_off() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let port = l.local_addr().unwrap().port();
    let script = format!(
        "import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n    result = 'connected'\nexcept OSError as e:\n    result = 'blocked: ' + type(e).__name__ + ' ' + str(e.errno)"
    );
    let out = run(&CodePython, &ws, json!({"script": script})).await;
    // Refused before any packet: without the network no AF_INET socket can be made at all
    // (EAFNOSUPPORT, 97), let alone reach the host's listener.
    assert_eq!(out["result"], "blocked: OSError 97", "{out:?}");
    // No wait needed: a connect() that succeeded had its handshake completed by the kernel, so the
    // connection would already be queued on the listener when the script returned.
    assert!(l.accept().is_err(), "the listener saw a connection");
}

#[tokio::test]
async fn writes_follow_allow_filesystem() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    // A 0777 directory and a 0666 file outside: only the sandbox can stop these writes.
    let outside = outside_dir();
    let escape = outside.path().join("escape.txt");
    let existing = world_writable_file(outside.path(), "existing.txt", "original\n");
    let script = format!(
        "import os\nout = []\nfor p, m in [('inside.txt', 'w'), ('.git/config', 'w'), ({:?}, 'w'), ({:?}, 'a')]:\n    try:\n        open(p, m).write('x')\n        out.append('written')\n    except OSError as e:\n        out.append(e.strerror)\nresult = out",
        escape.to_str().unwrap(),
        existing.to_str().unwrap()
    );
    std::fs::create_dir(ws.join(".git")).unwrap();
    let out = run(&CodePython, &ws, json!({"script": script.clone()})).await;
    assert_eq!(out["success"], true, "{out:?}");
    assert!(!ws.join("inside.txt").exists() && !escape.exists());
    let out = run(
        &CodePython,
        &ws,
        json!({"script": script, "allow_filesystem": true}),
    )
    .await;
    assert!(ws.join("inside.txt").exists(), "{out:?}");
    assert!(
        !ws.join(".git/config").exists() && !escape.exists(),
        "{out:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&existing).unwrap(),
        "original\n",
        "{out:?}"
    );
    // The outside paths are not there at all (not a permission refusal).
    assert_eq!(out["result"][2], "No such file or directory", "{out:?}");
    assert_eq!(out["result"][3], "No such file or directory", "{out:?}");
}

#[test]
fn code_python_is_absent_without_its_env_var() {
    let registry = Registry::from_inventory_with(|_| false);
    assert!(!registry.ids().contains(&"tools/code_python"));
    assert!(registry.ids().contains(&"tools/code_shell"));
    match registry.lookup("tools/code_python") {
        cheng_node::Lookup::Gated(var) => assert_eq!(var, "CHENG_ENABLE_CODE_PYTHON"),
        _ => panic!("code_python should be gated"),
    }
    let registry = Registry::from_inventory_with(|v| v == "CHENG_ENABLE_CODE_PYTHON");
    assert!(registry.ids().contains(&"tools/code_python"));
}

#[tokio::test]
async fn values_cross_the_channel_exactly_as_json_would_carry_them() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    let input = json!({"text": "é\n\"q\"\u{1F600}", "big": 12345678901234567890u64, "f": 2.5, "n": null, "t": true, "nested": [[{}], []]});
    let script = "result = {'echo': input, 'tuple': (1, 2), 'keys': {1: 'int key'}, 'neg': -0.5, 'types': [type(input['big']).__name__, type(input['f']).__name__]}";
    let out = run(
        &CodePython,
        &ws,
        json!({"script": script, "input": input.clone()}),
    )
    .await;
    assert_eq!(out["success"], true, "{out:?}");
    assert_eq!(out["result"]["echo"], input);
    assert_eq!(out["result"]["tuple"], json!([1, 2]));
    assert_eq!(out["result"]["keys"], json!({"1": "int key"}));
    assert_eq!(out["result"]["neg"], json!(-0.5));
    assert_eq!(out["result"]["types"], json!(["int", "float"]));
    // What json.dumps(allow_nan=False) refuses is refused, naming the type.
    for (script, kind) in [
        ("result = float('nan')", "float"),
        ("result = [1, object()]", "list"),
        ("a = []\na.append(a)\nresult = a", "list"),
    ] {
        let out = run(&CodePython, &ws, json!({"script": script})).await;
        assert_eq!(
            out["error_kind"], "LOCAL_EXECUTOR_SCRIPT_ERROR",
            "{script}: {out:?}"
        );
        assert!(
            out["error"]
                .as_str()
                .unwrap()
                .contains(&format!("type {kind}")),
            "{script}: {}",
            out["error"]
        );
    }
}

#[tokio::test]
async fn only_the_result_channel_is_writable_in_the_io_directory() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    // EROFS by name, not any OSError: the directory is root-owned 0755 and the script runs
    // unprivileged, so a writable mount would refuse these with EACCES.
    let script = "import errno, os\nblocked = []\nfor p in ['/run/cheng-io/runner.py', '/run/cheng-io/input.json', '/run/cheng-io/new.txt']:\n    try:\n        open(p, 'w').write('x')\n    except OSError as e:\n        blocked.append([os.path.basename(p), errno.errorcode.get(e.errno, str(e.errno))])\nresult = blocked";
    let big = "x".repeat(cheng_sandbox::mounts::COPY_MAX_BYTES as usize + 1);
    // Copies in the read-only root (a small input) and a read-only bind (a large one).
    for input in [json!({"k": "v"}), json!(big)] {
        let out = run(&CodePython, &ws, json!({"script": script, "input": input})).await;
        assert_eq!(
            out["result"],
            json!([
                ["runner.py", "EROFS"],
                ["input.json", "EROFS"],
                ["new.txt", "EROFS"]
            ]),
            "{out:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The attacks of the shell suite, from Python: each one is attempted and the host checked.
// ---------------------------------------------------------------------------------------------

/// A directory outside both the workspace and /tmp (which is private inside the sandbox),
/// world-writable (see [`world_writable_dir`]).
fn outside_dir() -> tempfile::TempDir {
    world_writable_dir()
}

#[tokio::test]
async fn host_secrets_and_home_are_invisible_without_full_disk_readonly() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    let script = format!(
        "import os\nout = {{}}\nfor k, f in [('shadow', lambda: open('/etc/shadow').read()), ('home', lambda: os.listdir({home:?}))]:\n    try:\n        out[k] = f()\n    except OSError as e:\n        out[k] = type(e).__name__\nout['passwd'] = 'root:' in open('/etc/passwd').read()\nresult = out"
    );
    let out = run(&CodePython, &ws, json!({"script": script})).await;
    assert_eq!(out["success"], true, "{out:?}");
    // Not merely unreadable: not there at all.
    assert_eq!(out["result"]["shadow"], "FileNotFoundError", "{out:?}");
    assert_eq!(
        out["result"]["passwd"], true,
        "the attempt did not run: {out:?}"
    );
    // $HOME is absent, or (an interpreter installed under it) shows only the way to it.
    let python = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.base_prefix)"])
        .output()
        .unwrap();
    let prefix = String::from_utf8_lossy(&python.stdout).trim().to_string();
    if let Some(listed) = out["result"]["home"].as_array() {
        for entry in std::fs::read_dir(&home).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !Path::new(&prefix).starts_with(Path::new(&home).join(&name)) {
                assert!(
                    !listed.contains(&json!(name)),
                    "{home}/{name} is visible: {listed:?}"
                );
            }
        }
    } else {
        assert_eq!(out["result"]["home"], "FileNotFoundError", "{out:?}");
    }
}

#[tokio::test]
async fn dns_and_loopback_datagrams_do_not_leave_the_sandbox() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    // A UDP listener the host can reach (checked first: the attack would work from here).
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let port = udp.local_addr().unwrap().port();
    std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .send_to(b"control", ("127.0.0.1", port))
        .unwrap();
    let mut buf = [0u8; 64];
    let n = udp.recv(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"control");
    let script = format!(
        "import socket\nout = {{}}\ntry:\n    socket.getaddrinfo('example.com', 443)\n    out['dns'] = 'resolved'\nexcept OSError as e:\n    out['dns'] = 'blocked'\ntry:\n    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n    s.sendto(b'\\x12\\x34\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x07example\\x03com\\x00\\x00\\x01\\x00\\x01', ('127.0.0.1', {port}))\n    out['udp'] = 'sent'\nexcept OSError as e:\n    out['udp'] = 'blocked'\nresult = out"
    );
    let out = run(&CodePython, &ws, json!({"script": script})).await;
    assert_eq!(out["success"], true, "{out:?}");
    assert_eq!(out["result"]["dns"], "blocked", "{out:?}");
    // Sending into the private namespace's own loopback may succeed; the host must see nothing.
    assert!(
        udp.recv(&mut buf).is_err(),
        "a datagram from the sandbox reached the host's 127.0.0.1:{port}"
    );
}

#[tokio::test]
async fn a_fork_bomb_is_bounded() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    // Bounded attempt first: 1000 sleeping children must not all start.
    let script = "import os, time\nn, err = 0, None\nfor i in range(1000):\n    try:\n        pid = os.fork()\n    except OSError as e:\n        err = type(e).__name__\n        break\n    if pid == 0:\n        time.sleep(5)\n        os._exit(0)\n    n += 1\nresult = [n, err]";
    let out = run(
        &CodePython,
        &ws,
        json!({"script": script, "timeout_ms": 4000}),
    )
    .await;
    assert_eq!(out["success"], true, "{out:?}");
    assert!(
        out["result"][0].as_u64().unwrap() < 1000,
        "1000 processes started: {out:?}"
    );
    assert!(out["result"][1].is_string(), "{out:?}");
    // The real thing, under a short timeout, named so the host can look for survivors.
    // (Each process naps when the bound refuses a fork, so that the bomb does not also starve the
    // CPU of the tests running beside it.)
    // The name (15 bytes at most: a comm) carries this test process's id, so that only its own
    // processes are looked for (and killed).
    let name = format!("pf{}", std::process::id());
    let _guard = KillOnDrop::new(&["-x", &name]);
    let script = format!("import ctypes, os, time\nctypes.CDLL(None).prctl(15, b'{name}', 0, 0, 0)\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        time.sleep(0.05)");
    let out = run(
        &CodePython,
        &ws,
        json!({"script": script, "timeout_ms": 2000}),
    )
    .await;
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_TIMED_OUT", "{out:?}");
    assert!(
        none_left(&["-x", &name]),
        "fork bomb processes survived: {:?}",
        pgrep(&["-x", &name])
    );
}

#[tokio::test]
async fn a_gibibyte_of_output_is_capped_and_the_result_still_arrives() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    let script = "import sys\nchunk = b'\\0' * (1 << 20)\nfor _ in range(1024):\n    sys.stdout.buffer.write(chunk)\nsys.stdout.flush()\nresult = 'flooded'";
    let out = run(
        &CodePython,
        &ws,
        json!({"script": script, "timeout_ms": 120000}),
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
        "code_python stdout",
        out["stdout"].as_str().unwrap(),
        1 << 30,
        1 << 20,
    );
    assert!(head.bytes().chain(tail.bytes()).all(|b| b == 0));
    assert_eq!(out["result"], "flooded", "{}", out["error"]);
}

#[tokio::test]
async fn a_timeout_kills_grandchildren() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    // Durations unique to this test process, so that pgrep -f finds only these sleeps.
    let tag = format!("97.4{}", std::process::id());
    let pattern = format!("sleep {tag}[12]$");
    let _guard = KillOnDrop::new(&["-f", &pattern]);
    let script = format!("import subprocess, time\nsubprocess.Popen(['sh', '-c', 'sleep {tag}1'])\nsubprocess.Popen(['setsid', 'sleep', '{tag}2'])\ntime.sleep(97.43)");
    // Both sleeps themselves seen running on the host before the timeout: without that, a
    // timeout that fired before they started would leave nothing behind however the kill worked.
    let watcher = {
        let sleeps = format!("^{pattern}");
        tokio::task::spawn_blocking(move || {
            eventually(Duration::from_secs(20), || {
                pgrep(&["-f", &sleeps]).len() == 2
            })
        })
    };
    let out = run(
        &CodePython,
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
        &CodePython,
        &ws,
        json!({"script": "result = 1", "working_subdir": "../"}),
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
        &CodePython,
        &ws,
        json!({"script": "result = 1", "working_subdir": "link"}),
        Decision::Approved,
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::PathOutsideWorkspace);
    // Following the symlink from inside finds nothing, and writes through it do not land.
    let script = "out = []\nfor f in [lambda: open('link/secret.txt').read(), lambda: open('link/new.txt', 'w').write('x')]:\n    try:\n        out.append(f())\n    except OSError as e:\n        out.append(type(e).__name__)\nresult = out";
    let out = run(
        &CodePython,
        &ws,
        json!({"script": script, "allow_filesystem": true}),
    )
    .await;
    assert_eq!(out["success"], true, "{out:?}");
    assert!(!out["result"].to_string().contains("top secret"), "{out:?}");
    assert!(!outside.path().join("new.txt").exists(), "{out:?}");
}

#[tokio::test]
async fn request_read_paths_need_approval_per_path() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    let (a, b) = (outside_dir(), outside_dir());
    world_writable_file(a.path(), "notes.txt", "approved content");
    std::fs::write(b.path().join("notes.txt"), "other content").unwrap();
    let (da, db) = (
        a.path().to_str().unwrap().to_string(),
        b.path().to_str().unwrap().to_string(),
    );
    let script = format!("result = open({:?}).read()", format!("{da}/notes.txt"));
    let input = json!({"script": script, "request_read_paths": [da.clone(), db.clone()]});
    // The denied runs would leave a marker (writes allowed) had anything run.
    let mut marking = input.clone();
    marking["script"] = json!(format!("open('marker.txt', 'w').write('ran')\n{script}"));
    marking["allow_filesystem"] = json!(true);
    let err = run_with(&CodePython, &ws, marking.clone(), Decision::Denied)
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::ApprovalDenied);
    assert!(err.message.contains(&da), "{}", err.message);
    assert!(
        !ws.join("marker.txt").exists(),
        "the script ran although its read paths were denied"
    );
    // One approval per path: approving the first and denying the second fails naming the second.
    let approver = std::sync::Arc::new(PathApprover {
        deny: db.clone(),
        seen: Default::default(),
    });
    let err = run_approved_by(&CodePython, &ws, marking.clone(), approver.clone())
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::ApprovalDenied);
    assert!(
        err.message.contains(&db) && !err.message.contains(&da),
        "{}",
        err.message
    );
    assert_eq!(
        *approver.seen.lock().unwrap(),
        vec![vec![da.clone()], vec![db.clone()]]
    );
    assert!(
        !ws.join("marker.txt").exists(),
        "the script ran although one of its read paths was denied"
    );
    // Control: approved, the same run leaves the marker.
    let out = run(&CodePython, &ws, marking).await;
    assert_eq!(out["result"], "approved content", "{out:?}");
    assert_eq!(
        std::fs::read_to_string(ws.join("marker.txt")).unwrap(),
        "ran"
    );
    // Without the request the path is invisible (the file is world-readable: not a permission
    // error); with the approvals it is readable, not writable.
    let out = run(&CodePython, &ws, json!({"script": script})).await;
    assert_eq!(out["success"], false, "{out:?}");
    assert!(
        out["error"].to_string().contains("FileNotFoundError")
            || out["stderr"].to_string().contains("FileNotFoundError"),
        "{out:?}"
    );
    let out = run(&CodePython, &ws, input).await;
    assert_eq!(out["result"], "approved content", "{out:?}");
    let write = format!("open({:?}, 'w').write('x')", format!("{db}/new"));
    let out = run(
        &CodePython,
        &ws,
        json!({"script": write, "request_read_paths": [db], "allow_filesystem": true}),
    )
    .await;
    assert_eq!(out["success"], false, "{out:?}");
    assert!(!b.path().join("new").exists(), "{out:?}");
    // The directory is 0777: only the read-only bind refuses the write.
    assert!(
        out["error"].to_string().contains("Read-only file system")
            || out["stderr"].to_string().contains("Read-only file system"),
        "{out:?}"
    );
}
