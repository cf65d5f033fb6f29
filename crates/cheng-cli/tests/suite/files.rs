//! The file nodes through the real binary: read → edit → read across separate `cheng run`
//! processes sharing `--session NAME` (the freshness table persisted in the state directory),
//! an outside change between runs refused, and a single run's gate off with a warning.

use super::support::*;
use serde_json::json;

#[test]
fn read_edit_read_across_runs_of_one_session() {
    let (_d, ws) = temp_workspace();
    let (_s, state) = temp_workspace();
    std::fs::write(ws.join("notes.txt"), "alpha\r\nbeta\r\n").unwrap();
    let session = ["--session", "work"];
    let (code, out, err) = run_in(
        &state,
        "tools/read_file",
        &ws,
        json!({"file_path": "notes.txt"}),
        &session,
    );
    assert_eq!(code, 0, "{err}");
    let tag = out["tag"].as_str().unwrap().to_string();
    assert_eq!(
        out["content"],
        format!("[notes.txt#{tag}]\nL1: alpha\nL2: beta")
    );
    let table = std::fs::read_to_string(state.join("cheng/sessions/work/freshness.json")).unwrap();
    assert!(table.contains(&tag), "{table}");

    let edit = json!({"file_path": "notes.txt", "old": "beta", "new": "gamma"});
    let mut approve = session.to_vec();
    approve.push("--approve");
    let (code, out, err) = run_in(&state, "tools/edit_file", &ws, edit, &approve);
    assert_eq!(code, 0, "{err}\n{out}");
    assert!(
        err.contains("edit_file: write notes.txt (13 B -> 14 B)"),
        "the approval names the change: {err}"
    );
    assert_eq!(out["warnings"], json!([]));
    assert_eq!(
        std::fs::read(ws.join("notes.txt")).unwrap(),
        b"alpha\r\ngamma\r\n"
    );

    // The edit registered its new tag: the next edit in the session needs no new read...
    let (code, _, err) = run_in(
        &state,
        "tools/edit_file",
        &ws,
        json!({"file_path": "notes.txt", "old": "alpha", "new": "one"}),
        &approve,
    );
    assert_eq!(code, 0, "{err}");
    // ...but after an outside change it is refused, before anyone is asked.
    std::fs::write(ws.join("notes.txt"), "one\r\ngamma!\r\n").unwrap();
    let (code, out, err) = run_in(
        &state,
        "tools/edit_file",
        &ws,
        json!({"file_path": "notes.txt", "old": "one", "new": "two"}),
        &approve,
    );
    assert_eq!(code, 1, "{err}");
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_FILE_CHANGED", "{out}");
    assert!(
        !err.contains("approved"),
        "a stale edit is refused before the approval: {err}"
    );
    assert_eq!(
        std::fs::read(ws.join("notes.txt")).unwrap(),
        b"one\r\ngamma!\r\n"
    );
    // Another session never read it.
    let (code, out, _) = run_in(
        &state,
        "tools/edit_file",
        &ws,
        json!({"file_path": "notes.txt", "old": "one", "new": "two"}),
        &["--session", "other", "--approve"],
    );
    assert_eq!(code, 1);
    assert!(
        out["error"]
            .as_str()
            .unwrap()
            .contains("never read in session \"other\""),
        "{out}"
    );
    // Read again, then the edit goes through.
    run_in(
        &state,
        "tools/read_file",
        &ws,
        json!({"file_path": "notes.txt"}),
        &session,
    );
    let (code, _, err) = run_in(
        &state,
        "tools/edit_file",
        &ws,
        json!({"file_path": "notes.txt", "old": "one", "new": "two"}),
        &approve,
    );
    assert_eq!(code, 0, "{err}");
    let (_, out, _) = run_in(
        &state,
        "tools/read_file",
        &ws,
        json!({"file_path": "notes.txt"}),
        &session,
    );
    assert!(
        out["content"]
            .as_str()
            .unwrap()
            .ends_with("\nL1: two\nL2: gamma!"),
        "{out}"
    );
}

#[test]
fn without_a_session_the_gate_is_off_and_says_so() {
    let (_d, ws) = temp_workspace();
    let (_s, state) = temp_workspace();
    std::fs::write(ws.join("a.txt"), "x\n").unwrap();
    let (code, out, err) = run_in(
        &state,
        "tools/edit_file",
        &ws,
        json!({"file_path": "a.txt", "old": "x", "new": "y"}),
        &["--approve"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        out["warnings"][0]
            .as_str()
            .unwrap()
            .contains("--session NAME"),
        "{out}"
    );
    assert!(!state.join("cheng").exists(), "a single run keeps no state");
}

/// A write that could only fail is refused before the approval card: the same error as the
/// write would give, and nobody is asked (no terminal here, so asking would deny it).
#[test]
fn a_missing_directory_is_refused_before_anyone_is_asked() {
    let (_d, ws) = temp_workspace();
    let (_s, state) = temp_workspace();
    let (code, out, err) = run_in(
        &state,
        "tools/write_file",
        &ws,
        json!({"file_path": "nodir/x.txt", "content": "x"}),
        &[],
    );
    assert_eq!(code, 1, "{err}");
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_NOT_FOUND", "{out}");
    assert!(
        out["error"]
            .as_str()
            .unwrap()
            .contains("the directory of \"nodir/x.txt\" does not exist; set create_parents"),
        "{out}"
    );
    assert!(
        !err.contains("write_file: create"),
        "a card was drawn: {err}"
    );
    assert!(!ws.join("nodir").exists());
    // With create_parents the same write is asked about (and, without a terminal, denied).
    let (_, out, err) = run_in(
        &state,
        "tools/write_file",
        &ws,
        json!({"file_path": "nodir/x.txt", "content": "x", "create_parents": true}),
        &[],
    );
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_APPROVAL_DENIED", "{out}");
    assert!(err.contains("write_file: create nodir/x.txt"), "{err}");
}

/// Every file under `dir` with its bytes, for checking that nothing changed.
fn snapshot(dir: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files.push((path.clone(), Vec::new()));
                dirs.push(path);
            } else {
                files.push((path.clone(), std::fs::read(&path).unwrap()));
            }
        }
    }
    files.sort();
    files
}

/// Whatever can be known to fail without changing anything fails before the approval card, with
/// the error the run would give: nobody is asked (without a terminal, asking would deny it and
/// say so), and the workspace is unchanged. The control: a change that can succeed is asked.
#[test]
fn calls_that_could_only_fail_are_refused_before_anyone_is_asked() {
    let (_d, ws) = temp_workspace();
    let (_s, state) = temp_workspace();
    std::fs::write(ws.join("a.txt"), "hello\nworld\n").unwrap();
    std::fs::write(ws.join("b.txt"), "x\nx\n").unwrap();
    std::fs::create_dir(ws.join("d")).unwrap();
    let before = snapshot(&ws);
    let patch = |body: &str| json!({"input": format!("*** Begin Patch\n{body}*** End Patch\n")});
    let cases = [
        (
            "tools/edit_file",
            json!({"file_path": "a.txt", "old": "absent", "new": "x"}),
            "LOCAL_EXECUTOR_INVALID_INPUT",
            "old was not found in a.txt",
        ),
        (
            "tools/edit_file",
            json!({"file_path": "b.txt", "old": "x", "new": "y"}),
            "LOCAL_EXECUTOR_INVALID_INPUT",
            "old matches 2 places in b.txt",
        ),
        (
            "tools/apply_patch",
            patch("*** Update File: a.txt\n@@\n-absent\n+x\n"),
            "LOCAL_EXECUTOR_INVALID_INPUT",
            "could not find the lines to change",
        ),
        (
            "tools/apply_patch",
            patch("*** Update File: a.txt\n*** Move to: d\n@@\n-hello\n+x\n"),
            "LOCAL_EXECUTOR_INVALID_INPUT",
            "cannot move a file onto 'd': it is a directory",
        ),
        (
            "tools/write_file",
            json!({"file_path": ".git/hooks/pre-commit", "content": "x"}),
            "LOCAL_EXECUTOR_POLICY_DENIED",
            "a protected name",
        ),
        (
            "tools/write_file",
            json!({"file_path": "../out.txt", "content": "x"}),
            "LOCAL_EXECUTOR_PATH_OUTSIDE_WORKSPACE",
            "climbs above the workspace root",
        ),
        (
            "tools/delete_path",
            json!({"path": "missing.txt"}),
            "LOCAL_EXECUTOR_NOT_FOUND",
            "does not exist",
        ),
        (
            "tools/write_stdin",
            json!({"session_id": 1, "chars": "ls\n"}),
            "LOCAL_EXECUTOR_NOT_FOUND",
            "a single `cheng run` keeps no sessions",
        ),
    ];
    for (node, input, kind, message) in cases {
        let (code, out, err) = run_in(&state, node, &ws, input.clone(), &[]);
        assert_eq!(code, 1, "{node} {input}: {err}");
        assert_eq!(out["error_kind"], kind, "{node} {input}: {out}");
        assert!(
            out["error"].as_str().unwrap_or("").contains(message),
            "{node} {input}: {out}"
        );
        assert!(
            !err.contains("needs approval"),
            "{node} {input} asked: {err}"
        );
        assert_eq!(
            snapshot(&ws),
            before,
            "{node} {input} changed the workspace"
        );
    }
    // The control: an edit that can apply is asked about (and denied, with no terminal).
    let (_, out, err) = run_in(
        &state,
        "tools/edit_file",
        &ws,
        json!({"file_path": "a.txt", "old": "hello", "new": "bye"}),
        &[],
    );
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_APPROVAL_DENIED", "{out}");
    assert!(err.contains("needs approval"), "{err}");
    assert_eq!(snapshot(&ws), before);
}

#[test]
fn denied_writes_change_nothing_and_bad_session_names_are_usage_errors() {
    let (_d, ws) = temp_workspace();
    let (_s, state) = temp_workspace();
    let (code, out, err) = run_in(
        &state,
        "tools/write_file",
        &ws,
        json!({"file_path": "a.txt", "content": "x"}),
        &[],
    );
    assert_eq!(code, 1, "{err}");
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_APPROVAL_DENIED");
    assert!(err.contains("write_file: create a.txt (1 B)"), "{err}");
    assert!(!ws.join("a.txt").exists());
    for bad in ["../x", ".hidden", "a/b", ""] {
        let (code, _, err) = run_in(
            &state,
            "tools/read_file",
            &ws,
            json!({"file_path": "a.txt"}),
            &["--session", bad],
        );
        assert_eq!(code, 2, "{bad}: {err}");
        assert!(err.contains("session name"), "{err}");
    }
}
