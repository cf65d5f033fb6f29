//! tools/code_python's memory limit against the real sandbox: a delegated cgroup v2 group
//! replaces RLIMIT_AS and is removed after the run, an unusable one falls back and says so.

use super::sandbox_support::*;
use cheng_nodes_code::python::CodePython;
use cheng_sandbox::CgroupV2;
use cheng_sandbox::{Sandbox, SandboxRequest};
use serde_json::json;

/// A fake delegated cgroup v2 group (a plain directory with the interface files a real one has).
fn fake_cgroup(subtree_control_writable: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in [
        ("cgroup.controllers", "cpu memory pids\n"),
        ("cgroup.procs", ""),
        ("memory.swap.max", "max\n"),
    ] {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    if subtree_control_writable {
        std::fs::write(dir.path().join("cgroup.subtree_control"), "memory pids\n").unwrap();
    } else {
        // A directory in its place makes enabling the controllers fail, as EBUSY/EACCES would.
        std::fs::create_dir(dir.path().join("cgroup.subtree_control")).unwrap();
    }
    dir
}

fn leftover_groups(parent: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(parent)
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| n.starts_with(cheng_sandbox::cgroup::RUN_PREFIX))
        .collect()
}

async fn sandboxed_ulimit(ws: &std::path::Path, cgroup: CgroupV2) -> cheng_sandbox::SandboxRun {
    let mut req = SandboxRequest::new(
        ws.to_path_buf(),
        vec!["/bin/sh".into(), "-c".into(), "ulimit -v".into()],
    );
    req.memory_mb = 96;
    req.memory_cgroup = Some(cgroup);
    let run = Sandbox::prepare(req)
        .unwrap()
        .run(&cheng_node::CancellationToken::new())
        .await
        .unwrap();
    assert!(run.output.success(), "{:?}", run.output);
    run
}

#[tokio::test]
async fn a_delegated_cgroup_replaces_rlimit_as_and_is_removed_after() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    let parent = fake_cgroup(true);
    let run = sandboxed_ulimit(&ws, CgroupV2::Delegated(parent.path().to_path_buf())).await;
    // No address-space limit inside: memory.max is the limit.
    assert_eq!(run.output.stdout.text, "unlimited\n", "{:?}", run.output);
    let memory = &run.enforcement.memory;
    assert!(
        memory.starts_with("cgroup v2 memory.max 96 MiB (memory.swap.max 0, pids.max 256) in "),
        "{memory}"
    );
    assert!(memory.contains(parent.path().to_str().unwrap()), "{memory}");
    assert!(
        run.enforcement
            .warnings
            .iter()
            .any(|w| w.contains("memory_mb enforced as cgroup v2 memory.max 96 MiB")),
        "{:?}",
        run.enforcement.warnings
    );
    assert_eq!(run.enforcement.to_json()["memory"], json!(memory));
    assert!(run.cgroup.is_some());
    // The parent's controllers were already enabled (left alone); the run group is gone.
    assert_eq!(
        std::fs::read_to_string(parent.path().join("cgroup.subtree_control")).unwrap(),
        "memory pids\n"
    );
    assert!(leftover_groups(parent.path()).is_empty());
}

#[tokio::test]
async fn an_unusable_cgroup_falls_back_to_rlimit_as_and_says_so() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    let parent = fake_cgroup(false);
    let run = sandboxed_ulimit(&ws, CgroupV2::Delegated(parent.path().to_path_buf())).await;
    assert_eq!(
        run.output.stdout.text,
        format!("{}\n", 96 * 1024),
        "{:?}",
        run.output
    );
    assert_eq!(
        run.enforcement.memory,
        "RLIMIT_AS 96 MiB (address space, not resident memory)"
    );
    let warnings = run.enforcement.warnings.join("\n");
    assert!(
        warnings.contains("cgroup v2 memory limit not applied (")
            && warnings.contains("cgroup.subtree_control"),
        "{warnings}"
    );
    assert!(
        warnings.contains("memory_mb enforced as RLIMIT_AS 96 MiB"),
        "{warnings}"
    );
    assert!(run.cgroup.is_none());
    assert!(leftover_groups(parent.path()).is_empty());
}

#[tokio::test]
async fn on_this_machine_the_node_reports_which_memory_limit_it_used() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    let out = run(&CodePython, &ws, json!({"script": "import resource\nresult = resource.getrlimit(resource.RLIMIT_AS)[0]", "memory_mb": 200})).await;
    assert_eq!(out["success"], true, "{out:?}");
    // Post-run sandbox notes live in metrics; `warnings` is for pre-execution validation only.
    assert_eq!(out["warnings"], json!([]), "{out:?}");
    let warnings = out["metrics"]["sandbox_notes"].to_string();
    match CgroupV2::detect_once() {
        CgroupV2::Unavailable(why) => {
            assert!(!why.is_empty());
            assert_eq!(out["result"], 200u64 << 20, "{out:?}");
            assert_eq!(
                out["metrics"]["limits"]["memory"],
                "RLIMIT_AS 200 MiB (address space, not resident memory)"
            );
            assert!(
                warnings.contains("memory_mb enforced as RLIMIT_AS 200 MiB"),
                "{warnings}"
            );
            assert!(
                warnings.contains("no cgroup v2 memory limit here"),
                "{warnings}"
            );
            assert!(out["metrics"]["memory_peak_bytes"].is_null());
        }
        CgroupV2::Delegated(dir) => {
            // A host with a delegated subtree: memory.max (or a fallback that says why).
            eprintln!(
                "this host delegates {}: checking the cgroup report",
                dir.display()
            );
            let memory = out["metrics"]["limits"]["memory"].as_str().unwrap_or("");
            assert!(
                memory.starts_with("cgroup v2 memory.max 200 MiB")
                    || warnings.contains("not applied"),
                "{out:?}"
            );
        }
    }
}
