#![allow(unused_imports)]
use super::support::*;
use serde_json::json;

#[test]
fn code_python_returns_its_result_when_enabled() {
    if !bwrap_works() {
        return;
    }
    let (_d, ws) = temp_workspace();
    let input = json!({"script": "print('hi')\nresult = sum(input['values'])", "input": {"values": [1, 2, 3]}}).to_string();
    let out = cheng()
        .env("CHENG_ENABLE_CODE_PYTHON", "1")
        .args([
            "run",
            "tools/code_python",
            "--workspace",
            ws.to_str().unwrap(),
            "--input",
            &input,
        ])
        .output()
        .unwrap();
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    assert_eq!(
        value["result"],
        6,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(value["stdout"], "hi\n");
    // Post-run sandbox notes are metrics; `warnings` holds only pre-execution validation warnings.
    assert!(value["metrics"]["sandbox_notes"].is_array(), "{value}");
    assert_eq!(value["warnings"], json!([]), "{value}");
}

#[test]
fn a_missing_python_fails_closed() {
    if !bwrap_works() {
        return;
    }
    let (_d, ws) = temp_workspace();
    let input = json!({"script": "result = 1"}).to_string();
    let out = cheng()
        .env("CHENG_ENABLE_CODE_PYTHON", "1")
        .env("CHENG_PYTHON", "/nonexistent/python3")
        .args([
            "run",
            "tools/code_python",
            "--workspace",
            ws.to_str().unwrap(),
            "--input",
            &input,
        ])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("LOCAL_EXECUTOR_SANDBOX_UNAVAILABLE"));
}

/// cheng as uid 65534: the interpreter is one that uid can reach (it works), or the node fails
/// closed naming python3; an interpreter it cannot reach is SANDBOX_UNAVAILABLE, never a crash.
#[test]
fn unprivileged_code_python_works_or_fails_closed() {
    use super::code_shell_unprivileged::{
        nobody_dir, run_unprivileged, unprivileged_sandbox_works,
    };
    if !unprivileged_sandbox_works() {
        return;
    }
    let (_d, ws) = nobody_dir("/tmp");
    let enable = ("CHENG_ENABLE_CODE_PYTHON", "1");
    let script =
        json!({"script": "import os\nresult = [os.getuid(), sum(input)]", "input": [1, 2, 3]});
    let (code, out, stdout, stderr) =
        run_unprivileged("tools/code_python", &ws, &script, None, &[enable]);
    if out["success"] == true {
        assert_eq!(code, 0);
        assert_eq!(out["result"], json!([65534, 6]), "{out}");
        assert_eq!(
            out["metrics"]["limits"]["identity"],
            "uid 65534 (cheng's own, in a user namespace)"
        );
    } else {
        // The only acceptable failure: no python3 that uid 65534 can use. Not under CI, which
        // provides one: there this branch would let the test pass without python ever running.
        assert!(
            std::env::var_os("CI").is_none(),
            "CI provides a python3 uid 65534 can run, so the run must succeed: {stdout} {stderr}"
        );
        assert!(
            stdout.contains("LOCAL_EXECUTOR_SANDBOX_UNAVAILABLE") && stdout.contains("python3"),
            "{stdout} {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }

    // An interpreter inside a directory only root may enter (as python under /root/.pyenv).
    use std::os::unix::fs::PermissionsExt;
    let private = tempfile::tempdir().unwrap();
    std::fs::set_permissions(private.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let hidden = private.path().join("python3");
    std::os::unix::fs::symlink("/usr/bin/python3", &hidden).unwrap();
    let pinned = ("CHENG_PYTHON", hidden.to_str().unwrap());
    let (code, out, stdout, stderr) =
        run_unprivileged("tools/code_python", &ws, &script, None, &[enable, pinned]);
    assert_ne!(code, 0, "{stdout}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let text = if out.is_object() {
        out.to_string()
    } else {
        stdout
    };
    assert!(
        text.contains("LOCAL_EXECUTOR_SANDBOX_UNAVAILABLE"),
        "{text} {stderr}"
    );
    assert!(
        text.contains("python3") && text.contains("nothing ran"),
        "{text}"
    );
}

#[test]
fn a_missing_bwrap_fails_closed_for_python_too() {
    let (_d, ws) = temp_workspace();
    let marker = ws.join("ran.txt");
    let script = format!(
        "open({:?}, 'w').write('x')\nresult = 'ran'",
        marker.to_str().unwrap()
    );
    let input = json!({"script": script, "allow_filesystem": true}).to_string();
    let out = cheng()
        .env("CHENG_ENABLE_CODE_PYTHON", "1")
        .env("CHENG_BWRAP", "/nonexistent/bwrap")
        .args([
            "run",
            "tools/code_python",
            "--workspace",
            ws.to_str().unwrap(),
            "--input",
            &input,
            "--config",
            r#"{"allow_filesystem": true}"#,
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_ne!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("LOCAL_EXECUTOR_SANDBOX_UNAVAILABLE")
            && stdout.contains("/nonexistent/bwrap"),
        "{stdout}"
    );
    assert!(!marker.exists(), "the script ran on the host");
}

/// Gated nodes are generated whatever the environment says (the committed schemas/ and docs/ are
/// the same with and without their variables), their pages naming the variable.
#[test]
fn gated_nodes_are_generated_with_their_gate_named() {
    let generate = |vars: &[(&str, &str)]| {
        let dir = tempfile::tempdir().unwrap();
        for what in ["schemas", "docs"] {
            let mut cmd = cheng();
            cmd.env_remove("CHENG_ENABLE_CODE_PYTHON")
                .env_remove("CHENG_ENABLE_CODE_JS");
            for (k, v) in vars {
                cmd.env(k, v);
            }
            let out = cmd
                .args([
                    what,
                    "--write",
                    "--dir",
                    dir.path().join(what).to_str().unwrap(),
                ])
                .output()
                .unwrap();
            assert_eq!(
                out.status.code(),
                Some(0),
                "{what}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let read = |p: &str| std::fs::read_to_string(dir.path().join(p)).unwrap_or_default();
        [
            "docs/nodes/README.md",
            "docs/nodes/code_python.md",
            "docs/nodes/code_js.md",
            "schemas/code_python.json",
            "schemas/code_js.json",
            "schemas/graph.json",
        ]
        .map(read)
    };
    let without = generate(&[]);
    let [listing, python, js, python_schema, js_schema, _] = &without;
    assert!(
        listing.contains("tools/code_python") && listing.contains("`CHENG_ENABLE_CODE_JS`"),
        "{listing}"
    );
    assert!(
        python.contains("registered only when `CHENG_ENABLE_CODE_PYTHON` is set"),
        "{python}"
    );
    assert!(
        js.contains("registered only when `CHENG_ENABLE_CODE_JS` is set"),
        "{js}"
    );
    assert!(python_schema.contains("\"script\"") && js_schema.contains("\"script\""));
    let with = generate(&[
        ("CHENG_ENABLE_CODE_PYTHON", "1"),
        ("CHENG_ENABLE_CODE_JS", "1"),
    ]);
    assert_eq!(
        without, with,
        "generated files depend on the gate variables"
    );
}

#[test]
fn full_disk_readonly_shows_host_files_to_python_and_never_lets_them_be_written() {
    use super::code_shell::{host_files, SECRET};
    if !bwrap_works() {
        return;
    }
    let host = host_files();
    let (_d, ws) = temp_workspace();
    let script = format!(
        "import os\n\
         def attempt(f):\n    try:\n        f()\n        return 'done'\n    except OSError as e:\n        return e.strerror\n\
         try:\n    text = open({secret:?}).read()\nexcept OSError as e:\n    text = e.strerror\n\
         result = {{'text': text, 'writes': [\n\
         attempt(lambda: open({secret:?}, 'a').write('evil')),\n\
         attempt(lambda: open({open:?}, 'a').write('evil')),\n\
         attempt(lambda: open({new:?}, 'w').write('evil')),\n\
         attempt(lambda: os.remove({open:?})),\n\
         attempt(lambda: os.rename({open:?}, {moved:?}))]}}",
        secret = host.secret.to_str().unwrap(),
        open = host.open.to_str().unwrap(),
        new = host.dir.join("new.txt").to_str().unwrap(),
        moved = host.dir.join("moved").to_str().unwrap(),
    );
    let run = |config: &str| {
        let input =
            json!({"script": &script, "allow_full_disk_readonly": config.contains("full_disk")})
                .to_string();
        let out = cheng()
            .env("CHENG_ENABLE_CODE_PYTHON", "1")
            .args([
                "run",
                "tools/code_python",
                "--workspace",
                ws.to_str().unwrap(),
                "--input",
                &input,
                "--config",
                config,
            ])
            .output()
            .unwrap();
        let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        (value, String::from_utf8_lossy(&out.stderr).into_owned())
    };
    // Control: without the switch the file is not there at all.
    let (out, stderr) = run("{}");
    assert_eq!(
        out["result"]["text"], "No such file or directory",
        "{out} {stderr}"
    );
    host.assert_unchanged("without allow_full_disk_readonly");
    for config in [
        r#"{"allow_full_disk_readonly": true}"#,
        r#"{"allow_full_disk_readonly": true, "allow_filesystem": true}"#,
    ] {
        let (out, stderr) = run(config);
        assert_eq!(
            out["result"]["text"], SECRET,
            "{config}: the host file is not readable: {out} {stderr}"
        );
        let writes = out["result"]["writes"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(writes.len(), 5, "{config}: {out}");
        assert!(
            writes.iter().all(|w| w != "done"),
            "{config}: a write succeeded: {writes:?}"
        );
        // The 0666 file and the 0777 directory: only the read-only view stops these.
        assert!(
            writes[1..].iter().all(|w| w == "Read-only file system"),
            "{config}: {writes:?}"
        );
        host.assert_unchanged(config);
    }
}
