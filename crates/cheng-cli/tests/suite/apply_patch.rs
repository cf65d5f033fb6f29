//! tools/apply_patch through the real binary: read with tools/read_file, then a patch over the
//! file and a new one in the same `--session` (the approval line names both), a
//! second patch after an outside change refused, and a single run's gate off with a warning.

use super::support::*;
use serde_json::json;

#[test]
fn read_then_patch_in_one_session() {
    let (_d, ws) = temp_workspace();
    let (_s, state) = temp_workspace();
    std::fs::write(ws.join("main.py"), "def f():\n    return 1\n").unwrap();
    let patch = "*** Begin Patch\n*** Update File: main.py\n@@ def f():\n-    return 1\n+    return 2\n*** Add File: docs/notes.md\n+# Notes\n*** End Patch\n";
    let approve = ["--session", "p", "--approve"];
    // Never read in the session: refused before anybody is asked.
    let (code, out, err) = run_in(
        &state,
        "tools/apply_patch",
        &ws,
        json!({"input": patch}),
        &approve,
    );
    assert_eq!(code, 1, "{err}");
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_FILE_CHANGED", "{out}");
    assert!(!ws.join("docs").exists());

    let (code, _, err) = run_in(
        &state,
        "tools/read_file",
        &ws,
        json!({"file_path": "main.py"}),
        &["--session", "p"],
    );
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = run_in(
        &state,
        "tools/apply_patch",
        &ws,
        json!({"input": patch}),
        &approve,
    );
    assert_eq!(code, 0, "{err}\n{out}");
    assert!(
        err.contains("apply_patch: write main.py (22 B -> 22 B); create docs/notes.md (8 B)"),
        "the card names the changes: {err}"
    );
    assert_eq!(
        out["summary"],
        "Success. Updated the following files:\nM main.py\nA docs/notes.md"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("main.py")).unwrap(),
        "def f():\n    return 2\n"
    );

    // The written tags were registered; an outside change after them is caught.
    std::fs::write(ws.join("main.py"), "def f():\n    return 3\n").unwrap();
    let again = "*** Begin Patch\n*** Update File: main.py\n@@\n-    return 3\n+    return 4\n*** End Patch\n";
    let (code, out, _) = run_in(
        &state,
        "tools/apply_patch",
        &ws,
        json!({"input": again}),
        &approve,
    );
    assert_eq!(code, 1);
    assert!(
        out["error"]
            .as_str()
            .unwrap()
            .contains("main.py changed since the model last read it"),
        "{out}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("main.py")).unwrap(),
        "def f():\n    return 3\n"
    );

    // A single run has no table: the gate is off, and the output says so.
    let (code, out, err) = run_in(
        &state,
        "tools/apply_patch",
        &ws,
        json!({"input": again}),
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
}
