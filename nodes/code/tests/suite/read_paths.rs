//! tools/code_shell's request_read_paths against the real sandbox: approval per path, swaps
//! after approval, descriptors, what the card and the run each saw.

use super::sandbox_support::*;
use super::shell::outside_dir;
use cheng_node::{Decision, ErrorKind};
use cheng_nodes_code::shell::CodeShell;
use cheng_sandbox::{Sandbox, SandboxRequest};
use serde_json::json;
use std::path::Path;
use std::sync::Arc;

#[tokio::test]
async fn request_read_paths_need_approval_per_path() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    let outside = outside_dir();
    let secret = outside.path().join("notes.txt");
    std::fs::write(&secret, "approved content").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let dir = outside.path().to_str().unwrap().to_string();
    let input = json!({"script": format!("cat '{dir}/notes.txt'"), "request_read_paths": [dir]});
    // The denied run would leave a marker (writes allowed) had anything run.
    let marking = json!({"script": format!("echo ran > marker.txt; cat '{dir}/notes.txt'"), "request_read_paths": [dir], "allow_filesystem": true});
    let err = run_with(&CodeShell, &ws, marking.clone(), Decision::Denied)
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::ApprovalDenied);
    assert!(
        err.message.contains(outside.path().to_str().unwrap()),
        "{}",
        err.message
    );
    assert!(
        !ws.join("marker.txt").exists(),
        "the script ran although its read path was denied"
    );
    // Control: the same run approved leaves the marker.
    let out = run(&CodeShell, &ws, marking).await;
    assert_eq!(out["result"], "approved content", "{out:?}");
    assert_eq!(
        std::fs::read_to_string(ws.join("marker.txt")).unwrap(),
        "ran\n"
    );
    // Without the request the path is invisible, not merely unreadable: a world-readable file
    // beside the 0600 one is not there either (the script's uid could read it on the host).
    let public = world_writable_file(outside.path(), "public.txt", "public content");
    let out = run(
        &CodeShell,
        &ws,
        json!({"script": format!("cat '{dir}/notes.txt' '{}'", public.display())}),
    )
    .await;
    assert_eq!(out["success"], false, "{out:?}");
    for path in [secret.as_path(), public.as_path()] {
        assert!(
            out["stderr"].as_str().unwrap().contains(&format!(
                "cat: {}: No such file or directory",
                path.display()
            )),
            "{out:?}"
        );
    }
    // With an approval it is readable (even 0600).
    let out = run(&CodeShell, &ws, input).await;
    assert_eq!(out["result"], "approved content", "{out:?}");
    let out = run(&CodeShell, &ws, json!({"script": format!("echo x > '{dir}/new'"), "request_read_paths": [dir], "allow_filesystem": true})).await;
    assert!(!outside.path().join("new").exists(), "{out:?}");
    // The directory is 0777: only the read-only bind refuses the write.
    assert!(
        out["stderr"]
            .as_str()
            .unwrap()
            .trim_end()
            .ends_with("Read-only file system"),
        "{out:?}"
    );
    let err = run_with(
        &CodeShell,
        &ws,
        json!({"script": "true", "request_read_paths": ["relative/path"]}),
        Decision::Approved,
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidInput);
}

/// Approves every request, but first moves the directory at `path` to `moved` and puts
/// `swap_in` in its place (a symlink to it, or itself renamed there): the path changes after the
/// person looked at it.
struct SwappingApprover {
    path: std::path::PathBuf,
    moved: std::path::PathBuf,
    swap_in: std::path::PathBuf,
    symlink: bool,
}

#[cheng_node::async_trait]
impl cheng_node::Approver for SwappingApprover {
    async fn decide(&self, request: &cheng_node::ApprovalRequest) -> Decision {
        let shown = self.path.display().to_string();
        if request.requested_paths.contains(&shown) && !self.moved.exists() {
            std::fs::rename(&self.path, &self.moved).expect("move the approved directory away");
            if self.symlink {
                std::os::unix::fs::symlink(&self.swap_in, &self.path).expect("symlink");
            } else {
                std::fs::rename(&self.swap_in, &self.path).expect("rename into place");
            }
        }
        Decision::Approved
    }
}

/// A read path replaced after it was approved, by a symlink to another directory or by another
/// directory renamed into place: the sandbox shows the approved directory (mounted from the
/// descriptor opened before the approval) or refuses to run, and never shows the swapped-in
/// one. The control: mounted by path, the same path now shows the swapped-in directory.
#[tokio::test]
async fn a_read_path_swapped_after_approval_never_shows_the_swapped_in_directory() {
    if !sandbox_available() {
        return;
    }
    for symlink in [true, false] {
        let (_d, ws) = workspace();
        let outside = outside_dir();
        let root = outside.path().canonicalize().unwrap();
        let (approved, other) = (root.join("approved"), root.join("other"));
        for (dir, text) in [
            (&approved, "approved content"),
            (&other, "swapped-in content"),
        ] {
            std::fs::create_dir(dir).unwrap();
            std::fs::write(dir.join("notes.txt"), text).unwrap();
        }
        let dir = approved.display().to_string();
        let input = json!({
            "script": format!("echo ran > marker.txt; cat '{dir}/notes.txt'"),
            "request_read_paths": [dir],
            "allow_filesystem": true,
        });
        let approver = Arc::new(SwappingApprover {
            path: approved.clone(),
            moved: root.join("moved"),
            swap_in: other.clone(),
            symlink,
        });
        let result = run_approved_by(&CodeShell, &ws, input, approver).await;
        assert!(root.join("moved").exists(), "the swap did not happen");
        match result {
            // Mounted from its descriptor: what was approved.
            Ok(out) => assert_eq!(
                out["result"], "approved content",
                "symlink {symlink}: {out:?}"
            ),
            // Shown through an idmapped clone (cheng as root), which is attached at the path
            // only while that is still the approved directory: refused before anything ran.
            Err(e) => {
                assert_eq!(e.kind, ErrorKind::SandboxUnavailable, "{e}");
                assert!(
                    e.message.contains(&dir)
                        && e.message
                            .contains("no longer the directory that was approved"),
                    "symlink {symlink}: {e}"
                );
                assert!(!ws.join("marker.txt").exists(), "the script ran: {e}");
            }
        }
        // Control: a by-path mount of the same path shows the swapped-in directory.
        let mut req = SandboxRequest::new(
            ws.clone(),
            vec!["/bin/cat".into(), approved.join("notes.txt").into()],
        );
        req.extra_ro = vec![approved.clone()];
        let cancel = cheng_node::CancellationToken::new();
        let by_path = Sandbox::prepare(req).unwrap().run(&cancel).await.unwrap();
        assert_eq!(
            by_path.output.stdout.text, "swapped-in content",
            "symlink {symlink}: {:?}",
            by_path.output
        );
    }
}

/// bwrap mounts an approved read path from its descriptor and closes it: no descriptor naming
/// the path (from which `..` would lead out of the mount) reaches the script, which does see
/// its own stdin, stdout and stderr (the control that the listing works).
#[tokio::test]
async fn no_descriptor_of_a_read_path_reaches_the_script() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    let outside = outside_dir();
    let dir = outside.path().canonicalize().unwrap().display().to_string();
    let script = "for f in /proc/self/fd/*; do echo \"${f##*/} $(readlink $f)\"; done";
    let out = run(
        &CodeShell,
        &ws,
        json!({"script": script, "request_read_paths": [dir]}),
    )
    .await;
    let listed = out["stdout"].as_str().unwrap_or("");
    for fd in ["0 ", "1 ", "2 "] {
        assert!(listed.lines().any(|l| l.starts_with(fd)), "{out:?}");
    }
    assert!(
        !listed.contains(&dir),
        "a descriptor of {dir} reached the script: {listed}"
    );
    assert!(!listed.contains("/var/tmp"), "{listed}");
}

/// Denies every request, keeping each.
#[derive(Default)]
struct RecordingDenier {
    seen: std::sync::Mutex<Vec<cheng_node::ApprovalRequest>>,
}

#[cheng_node::async_trait]
impl cheng_node::Approver for RecordingDenier {
    async fn decide(&self, request: &cheng_node::ApprovalRequest) -> Decision {
        self.seen.lock().unwrap().push(request.clone());
        Decision::Denied
    }
}

/// The approval card records which directory each read path named, and the run's own request
/// for the path names the directory it opened: another directory renamed into the path's place
/// between the two shows as a different identity, so the card's approval does not cover the
/// run's request (the engine asks again). The control: without the swap both name the same.
#[tokio::test]
async fn the_card_and_the_run_name_the_directory_each_saw() {
    use cheng_node::{Node, PathIdentity, RunContext};
    use std::os::unix::fs::MetadataExt;
    for swap in [false, true] {
        let (_d, ws) = workspace();
        let outside = outside_dir();
        let root = outside.path().canonicalize().unwrap();
        let (approved, other) = (root.join("approved"), root.join("other"));
        std::fs::create_dir(&approved).unwrap();
        std::fs::create_dir(&other).unwrap();
        let dir = approved.display().to_string();
        let identity = |path: &Path| {
            let meta = std::fs::metadata(path).unwrap();
            PathIdentity {
                path: dir.clone(),
                dev: meta.dev(),
                ino: meta.ino(),
            }
        };
        let (approved_id, other_id) = (identity(&approved), identity(&other));
        let input = json!({"script": "true", "request_read_paths": [dir]});
        let ctx = RunContext::for_workspace("tools/code_shell", ws.clone(), Decision::Denied);
        let card = CodeShell
            .approval_request(&ctx, &with_defaults(&CodeShell, input.clone()))
            .unwrap();
        assert_eq!(card.requested_paths, std::slice::from_ref(&dir));
        assert_eq!(card.path_identities, std::slice::from_ref(&approved_id));
        if swap {
            std::fs::rename(&approved, root.join("moved")).unwrap();
            std::fs::rename(&other, &approved).unwrap();
        }
        let approver = Arc::new(RecordingDenier::default());
        let err = run_approved_by(&CodeShell, &ws, input, approver.clone())
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::ApprovalDenied, "{err}");
        let seen = approver.seen.lock().unwrap();
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert_eq!(seen[0].requested_paths, std::slice::from_ref(&dir));
        let opened = if swap { other_id } else { approved_id };
        assert_eq!(seen[0].path_identities, [opened], "swap {swap}");
    }
}
