//! tools/apply_patch's guarantees, each attacked: all or nothing across files, symlink escapes,
//! protected names, the freshness gate, the syntax gate, the approval card, encodings, and the
//! undo of a write that fails half-way.

use super::apply_patch_support::*;
use cheng_engine::NodeStatus;
use cheng_node::Decision;
use serde_json::json;
use std::os::unix::fs::symlink;

fn patch(body: &str) -> String {
    format!("*** Begin Patch\n{body}\n*** End Patch\n")
}

#[test]
fn a_patch_that_applies_to_one_file_and_fails_on_another_writes_nothing() {
    let ws = Ws::new();
    ws.write("a.txt", "one\ntwo\n");
    ws.write("b.txt", "three\n");
    ws.write("gone.txt", "bye\n");
    ws.seen_all();
    let before = ws.tree();
    let text = patch(
        "*** Add File: new/dir/c.txt\n+c\n*** Update File: a.txt\n@@\n-two\n+2\n*** Delete File: gone.txt\n*** Update File: b.txt\n@@\n-four\n+4",
    );
    // Each operation but the last applies on its own (what Codex would have left on disk).
    let (kind, message) = error_of(&ws.apply(&text));
    assert_eq!(kind, "LOCAL_EXECUTOR_INVALID_INPUT");
    assert!(
        message.starts_with(
            "'b.txt' (patch line 9), hunk 1 at patch line 10: could not find the lines to change"
        ),
        "{message}"
    );
    assert_eq!(ws.tree(), before, "nothing may be written");
    // The same patch without the failing operation applies.
    let ok = ws.apply(&text.replace("*** Update File: b.txt\n@@\n-four\n+4\n", ""));
    assert_eq!(ok.status, NodeStatus::Succeeded, "{:?}", ok.outputs);
    assert_eq!(ws.read("new/dir/c.txt"), b"c\n");
    assert_eq!(ws.read("a.txt"), b"one\n2\n");
    assert!(!ws.root.join("gone.txt").exists());
}

#[test]
fn symlink_escapes_are_refused() {
    let outside = tempfile::tempdir().unwrap();
    let out = outside.path().canonicalize().unwrap();
    std::fs::write(out.join("secret.txt"), "secret\n").unwrap();
    let ws = Ws::new();
    ws.write("src.txt", "src\n");
    symlink(out.join("secret.txt"), ws.root.join("file_link")).unwrap();
    symlink(&out, ws.root.join("dir_link")).unwrap();
    symlink(out.join("missing.txt"), ws.root.join("dangling")).unwrap();
    ws.seen("src.txt");
    // Without a policy the attack lands outside: a write under the linked directory creates the
    // file in `out` (shown on a scratch link, so `out` stays clean for the real checks).
    let scratch = tempfile::tempdir().unwrap();
    symlink(&out, scratch.path().join("link")).unwrap();
    std::fs::write(scratch.path().join("link/proof.txt"), "x").unwrap();
    assert!(out.join("proof.txt").exists());
    std::fs::remove_file(out.join("proof.txt")).unwrap();

    let before_ws = ws.tree();
    let before_out = tree(&out);
    for (what, body) in [
        (
            "update through a file link",
            "*** Update File: file_link\n@@\n-secret\n+owned",
        ),
        ("delete through a file link", "*** Delete File: file_link"),
        (
            "add under a linked directory",
            "*** Add File: dir_link/new.txt\n+owned",
        ),
        (
            "add through a dangling link",
            "*** Add File: dangling\n+owned",
        ),
        (
            "move target outside",
            "*** Update File: src.txt\n*** Move to: dir_link/moved.txt\n@@\n-src\n+moved",
        ),
        ("climb out lexically", "*** Add File: ../escape.txt\n+owned"),
        (
            "absolute path outside",
            &format!("*** Add File: {}/abs.txt\n+owned", out.display()),
        ),
    ] {
        // With a harmless operation first: it must not be written either.
        let text = patch(&format!("*** Add File: harmless.txt\n+ok\n{body}"));
        let (kind, message) = error_of(&ws.apply(&text));
        assert_eq!(
            kind, "LOCAL_EXECUTOR_PATH_OUTSIDE_WORKSPACE",
            "{what}: {message}"
        );
        assert!(message.contains("patch line 4: path"), "{what}: {message}");
        assert_eq!(ws.tree(), before_ws, "{what}");
        assert_eq!(tree(&out), before_out, "{what}");
    }
    assert_eq!(std::fs::read(out.join("secret.txt")).unwrap(), b"secret\n");
}

#[test]
fn protected_names_are_refused_at_any_depth() {
    let ws = Ws::new();
    let before = ws.tree();
    for path in [
        ".git/hooks/pre-commit",
        "sub/.git/config",
        ".cheng/x",
        ".aws/credentials",
    ] {
        let (kind, message) = error_of(&ws.apply(&patch(&format!(
            "*** Add File: ok.txt\n+ok\n*** Add File: {path}\n+#!/bin/sh"
        ))));
        assert_eq!(kind, "LOCAL_EXECUTOR_POLICY_DENIED", "{path}: {message}");
        assert_eq!(ws.tree(), before, "{path}");
    }
}

#[test]
fn other_tools_config_and_credentials_are_refused_in_any_case() {
    let ws = Ws::new();
    let before = ws.tree();
    let paths = super::support::OTHER_TOOLS_PROTECTED
        .iter()
        .flat_map(|p| super::support::in_any_case(p))
        .chain(
            super::support::GIT_HOOK_SPELLINGS
                .iter()
                .map(|p| p.to_string()),
        );
    for path in paths {
        let (kind, message) = error_of(&ws.apply(&patch(&format!(
            "*** Add File: ok.txt\n+ok\n*** Add File: {path}\n+#!/bin/sh"
        ))));
        assert_eq!(kind, "LOCAL_EXECUTOR_POLICY_DENIED", "{path}: {message}");
        assert_eq!(ws.tree(), before, "{path}");
    }
    // A move onto a protected name in another case is refused too.
    ws.write("hook.sh", "#!/bin/sh\n");
    ws.seen("hook.sh");
    let before = ws.tree();
    let (kind, message) = error_of(&ws.apply(&patch(
        "*** Update File: hook.sh\n*** Move to: .HG/hgrc\n@@\n-#!/bin/sh\n+[hooks]",
    )));
    assert_eq!(kind, "LOCAL_EXECUTOR_POLICY_DENIED", "{message}");
    assert_eq!(ws.tree(), before);
    // Control: the same file under a name that is not protected is added.
    assert_eq!(
        ws.apply(&patch("*** Add File: hg/hgrc\n+[hooks]")).status,
        NodeStatus::Succeeded
    );
}

#[test]
fn a_move_onto_an_existing_file_says_so_on_the_card() {
    let ws = Ws::new();
    ws.write("from.txt", "moved\n");
    ws.write("existing.txt", "twenty-four bytes here.\n");
    ws.seen_all();
    let approver = Recorder::new(Decision::Approved);
    let result = ws.apply_with(
        &patch("*** Update File: from.txt\n*** Move to: existing.txt\n@@\n-moved\n+moved!"),
        json!({}),
        approver.clone(),
    );
    assert_eq!(result.status, NodeStatus::Succeeded, "{:?}", result.outputs);
    let cards = approver.cards.lock().unwrap();
    assert!(
        cards[0].command_display.contains(
            "move from.txt -> existing.txt (6 B -> 7 B; replaces existing existing.txt, 24 B)"
        ),
        "{}",
        cards[0].command_display
    );
    assert_eq!(ws.read("existing.txt"), b"moved!\n");
}

#[test]
fn the_freshness_gate_refuses_unread_and_changed_files() {
    let ws = Ws::new();
    ws.write("a.txt", "one\n");
    let text = patch("*** Update File: a.txt\n@@\n-one\n+two");
    // Never read in this scope.
    let (kind, message) = error_of(&ws.apply(&text));
    assert_eq!(kind, "LOCAL_EXECUTOR_FILE_CHANGED");
    assert!(message.contains("a.txt was never read"), "{message}");
    assert_eq!(ws.read("a.txt"), b"one\n");
    // Read, then changed from outside (same length, so only the content tells).
    ws.seen("a.txt");
    ws.write("a.txt", "ONE\n");
    let (kind, message) = error_of(&ws.apply(&patch("*** Update File: a.txt\n@@\n-ONE\n+two")));
    assert_eq!(kind, "LOCAL_EXECUTOR_FILE_CHANGED");
    assert!(
        message.contains("changed since the model last read it"),
        "{message}"
    );
    assert_eq!(ws.read("a.txt"), b"ONE\n");
    // Replacing or deleting an unread file is gated too; a new file is not.
    let (kind, _) = error_of(&ws.apply(&patch("*** Add File: a.txt\n+replaced")));
    assert_eq!(kind, "LOCAL_EXECUTOR_FILE_CHANGED");
    let (kind, _) = error_of(&ws.apply(&patch("*** Delete File: a.txt")));
    assert_eq!(kind, "LOCAL_EXECUTOR_FILE_CHANGED");
    assert_eq!(
        ws.apply(&patch("*** Add File: fresh.txt\n+new")).status,
        NodeStatus::Succeeded
    );
    // The author can switch the gate off; the output says so.
    let result = ws.apply_with(
        &patch("*** Update File: a.txt\n@@\n-ONE\n+two"),
        json!({"read_tracking": false}),
        Recorder::new(Decision::Approved),
    );
    assert_eq!(result.status, NodeStatus::Succeeded, "{:?}", result.outputs);
    assert!(
        result.outputs["warnings"][0]
            .as_str()
            .unwrap()
            .contains("read_tracking"),
        "{:?}",
        result.outputs
    );
    assert_eq!(ws.read("a.txt"), b"two\n");
}

#[test]
fn the_syntax_gate_refuses_a_worse_file_and_nothing_is_written() {
    let ws = Ws::new();
    ws.write("conf.json", "{\"a\": 1}\n");
    ws.write("notes.txt", "n\n");
    ws.seen_all();
    let before = ws.tree();
    let (kind, message) = error_of(&ws.apply(&patch("*** Update File: notes.txt\n@@\n-n\n+m\n*** Update File: conf.json\n@@\n-{\"a\": 1}\n+{\"a\": 1")));
    assert_eq!(kind, "LOCAL_EXECUTOR_SYNTAX_WORSE", "{message}");
    assert!(message.contains("conf.json"), "{message}");
    assert_eq!(ws.tree(), before);
    // Fixing half of a broken file is allowed (not worse).
    ws.write("broken.json", "{\"a\": \n");
    ws.seen("broken.json");
    assert_eq!(
        ws.apply(&patch(
            "*** Update File: broken.json\n@@\n-{\"a\": \n+{\"a\": 2"
        ))
        .status,
        NodeStatus::Succeeded
    );
}

#[test]
fn the_card_shows_every_files_diff_and_a_denial_writes_nothing() {
    let ws = Ws::new();
    ws.write("a.txt", "keep\nold\n");
    ws.write("gone.txt", "bye\n");
    ws.write("from.txt", "m\n");
    ws.seen_all();
    let before = ws.tree();
    let text = patch(
        "*** Add File: new.txt\n+hello\n*** Update File: a.txt\n@@\n-old\n+new\n*** Delete File: gone.txt\n*** Update File: from.txt\n*** Move to: to.txt\n@@\n-m\n+M",
    );
    let denier = Recorder::new(Decision::Denied);
    let (kind, _) = error_of(&ws.apply_with(&text, json!({}), denier.clone()));
    assert_eq!(kind, "LOCAL_EXECUTOR_APPROVAL_DENIED");
    assert_eq!(ws.tree(), before);
    let cards = denier.cards.lock().unwrap();
    assert_eq!(cards.len(), 1);
    let card = &cards[0];
    assert!(card.command_display.starts_with("apply_patch: create new.txt (6 B); write a.txt (9 B -> 9 B); delete gone.txt (4 B); move from.txt -> to.txt"), "{}", card.command_display);
    let details = card.details.as_deref().unwrap();
    for part in [
        "--- /dev/null\n+++ b/new.txt\n",
        "+hello\n",
        "--- a/a.txt\n+++ b/a.txt\n",
        " keep\n-old\n+new\n",
        "--- a/from.txt\n+++ b/to.txt\n",
        "-m\n+M\n",
    ] {
        assert!(details.contains(part), "{part:?} missing from:\n{details}");
    }
}

#[test]
fn a_file_changed_while_the_card_is_shown_is_not_written() {
    // With the freshness gate off (the author's switch), only the comparison with the card
    // stands between the approved diff and a different write.
    let ws = Ws::new();
    ws.write(
        "a.txt",
        "keep
old
",
    );
    let path = ws.root.join("a.txt");
    let approver = std::sync::Arc::new(Recorder {
        decision: Decision::Approved,
        cards: Default::default(),
        meanwhile: Some(Box::new(move || {
            std::fs::write(
                &path,
                "inserted
keep
old
",
            )
            .unwrap()
        })),
    });
    let result = ws.apply_with(
        &patch("*** Update File: a.txt\n@@\n-old\n+new"),
        json!({"read_tracking": false}),
        approver,
    );
    let (kind, message) = error_of(&result);
    assert_eq!(kind, "LOCAL_EXECUTOR_FILE_CHANGED");
    assert!(
        message.contains("a.txt changed since it was approved"),
        "{message}"
    );
    assert_eq!(ws.read("a.txt"), b"inserted\nkeep\nold\n");
}

#[test]
fn encodings_and_line_endings_are_written_back_as_read() {
    let ws = Ws::new();
    ws.write("crlf.txt", "a\r\nb\r\nc\r\n");
    let utf16: Vec<u8> = [0xFF, 0xFE]
        .into_iter()
        .chain("x\ny\n".encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    ws.write("u16.txt", &utf16);
    ws.write("bom.txt", b"\xEF\xBB\xBFone\ntwo\n");
    // GBK: "中文" then a line.
    ws.write("gbk.txt", b"\xD6\xD0\xCE\xC4\nold\n");
    ws.write("bin.dat", b"a\0b\n");
    ws.seen_all();
    let result = ws.apply(&patch(
        "*** Update File: crlf.txt\n@@\n a\n-b\n+B\n+B2\n*** Update File: u16.txt\n@@\n-y\n+z\n*** Update File: bom.txt\n@@\n-two\n+2\n*** Update File: gbk.txt\n@@\n-old\n+新",
    ));
    assert_eq!(result.status, NodeStatus::Succeeded, "{:?}", result.outputs);
    assert_eq!(ws.read("crlf.txt"), b"a\r\nB\r\nB2\r\nc\r\n");
    let want16: Vec<u8> = [0xFF, 0xFE]
        .into_iter()
        .chain("x\nz\n".encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    assert_eq!(ws.read("u16.txt"), want16);
    assert_eq!(ws.read("bom.txt"), b"\xEF\xBB\xBFone\n2\n");
    assert_eq!(ws.read("gbk.txt"), b"\xD6\xD0\xCE\xC4\n\xD0\xC2\n");
    // A binary file is refused, never guessed.
    let (kind, message) = error_of(&ws.apply(&patch("*** Update File: bin.dat\n@@\n-a\n+b")));
    assert_eq!(kind, "LOCAL_EXECUTOR_INVALID_INPUT");
    assert!(message.contains("binary"), "{message}");
}

/// Runs `case` as uid 65534 (a read-only directory stops nobody as root): the test binary is run
/// again through setpriv with only this test selected and `CHENG_TEST_AS_NOBODY` set.
fn as_nobody(test: &str, case: impl FnOnce()) {
    if std::env::var_os("CHENG_TEST_AS_NOBODY").is_some() || not_root() {
        case();
        return;
    }
    if !cheng_test_support::require_or_skip("setpriv") {
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(&exe)
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env("CHENG_TEST_AS_NOBODY", "1")
        .env("TMPDIR", "/tmp")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "as uid 65534:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn not_root() -> bool {
    // The owner of /proc/self is this process's uid.
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self")
        .map(|m| m.uid() != 0)
        .unwrap_or(false)
}

#[test]
fn a_write_that_fails_half_way_is_undone() {
    as_nobody(
        "suite::apply_patch_safety::a_write_that_fails_half_way_is_undone",
        || {
            use std::os::unix::fs::PermissionsExt;
            let ws = Ws::new();
            ws.write("a.txt", "one\n");
            ws.write("ro/b.txt", "bee\n");
            ws.write("ro/c.txt", "sea\n");
            ws.seen_all();
            std::fs::set_permissions(ws.root.join("ro"), std::fs::Permissions::from_mode(0o555))
                .unwrap();
            let before = ws.tree();
            // A write into the read-only directory fails while staging: nothing was touched yet.
            let (kind, message) = error_of(&ws.apply(&patch(
                "*** Update File: a.txt\n@@\n-one\n+1\n*** Update File: ro/c.txt\n@@\n-sea\n+C",
            )));
            assert_eq!(kind, "LOCAL_EXECUTOR_WRITE_FAILED");
            assert!(
                message.contains("could not write 'ro/c.txt'")
                    && message.contains("no file was changed"),
                "{message}"
            );
            assert_eq!(ws.tree(), before);
            // Moving out of it: the new file and a.txt are written, then removing ro/b.txt fails;
            // both must be undone.
            let (_, message) = error_of(&ws.apply(&patch(
            "*** Update File: a.txt\n@@\n-one\n+1\n*** Add File: made/new.txt\n+n\n*** Update File: ro/b.txt\n*** Move to: b.txt\n@@\n-bee\n+B",
        )));
            assert!(
                message.contains("could not remove 'ro/b.txt'")
                    && message.contains("no file was changed"),
                "{message}"
            );
            std::fs::set_permissions(ws.root.join("ro"), std::fs::Permissions::from_mode(0o755))
                .unwrap();
            let mut after = ws.tree();
            after.insert("ro".into(), None);
            assert_eq!(after, before);
        },
    );
}

#[test]
fn directories_special_files_and_huge_files_are_refused() {
    let ws = Ws::new();
    std::fs::create_dir(ws.root.join("dir")).unwrap();
    let (kind, message) = error_of(&ws.apply(&patch("*** Update File: dir\n@@\n-a\n+b")));
    assert_eq!(kind, "LOCAL_EXECUTOR_INVALID_INPUT");
    assert!(
        message.contains("cannot update 'dir': it is a directory"),
        "{message}"
    );
    let (_, message) = error_of(&ws.apply(&patch("*** Add File: dir\n+x")));
    assert!(
        message.contains("cannot add 'dir': it is a directory"),
        "{message}"
    );
    // Over the limit: refused from its size, never read whole (a sparse file costs no disk).
    let big = std::fs::File::create(ws.root.join("big.txt")).unwrap();
    big.set_len(cheng_nodes_files::apply_patch::MAX_FILE_BYTES + 1)
        .unwrap();
    let (kind, message) = error_of(&ws.apply(&patch("*** Update File: big.txt\n@@\n-a\n+b")));
    assert_eq!(kind, "LOCAL_EXECUTOR_INVALID_INPUT");
    assert!(message.contains("patch line 2: path \"big.txt\" is 16.0 MiB (16777217 bytes), over the 16.0 MiB the file nodes edit"), "{message}");
}
