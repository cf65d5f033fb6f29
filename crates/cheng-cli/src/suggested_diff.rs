//! `--format diff`: workspace_markdown's `suggested_edits` as one unified diff to review or pipe
//! into `git apply` (paths `a/…` and `b/…` relative to the workspace, so run it there).
//!
//! The edits are applied in order to the file as it is now, each `old_string` required to occur
//! exactly once at that point (the node's own promise); a file that changed since the suggestions
//! were made is refused rather than patched by guess. Nothing is written.

use cheng_node::Values;
use serde_json::Value;
use std::path::Path;

/// The diff of every file the edits touch, in the order first touched.
pub fn render(workspace: &Path, out: &Values) -> Result<String, String> {
    let Some(edits) = out.get("suggested_edits").and_then(Value::as_array) else {
        return Err(
            "--format diff: this operation suggests no edits (format_suggestions does)".into(),
        );
    };
    let mut files: Vec<(String, String, String)> = Vec::new();
    for (i, edit) in edits.iter().enumerate() {
        let (Some(path), Some(old), Some(new)) = (
            edit["path"].as_str(),
            edit["old_string"].as_str(),
            edit["new_string"].as_str(),
        ) else {
            return Err(format!("--format diff: suggested_edits[{i}] lacks path, old_string or new_string; this is a bug in cheng"));
        };
        let index = match files.iter().position(|(p, _, _)| p == path) {
            Some(index) => index,
            None => {
                let file = cheng_node::paths::resolve_existing(workspace, Some(path), "path")
                    .map_err(|e| format!("--format diff: {}", e.message))?;
                let text = std::fs::read_to_string(&file)
                    .map_err(|e| format!("--format diff: cannot read {path}: {e}"))?;
                files.push((path.to_string(), text.clone(), text));
                files.len() - 1
            }
        };
        let current = &mut files[index].2;
        match current.match_indices(old).count() {
            1 => *current = current.replacen(old, new, 1),
            n => {
                return Err(format!(
                    "--format diff: suggested_edits[{i}] (line {}) finds its text {n} times in {path}, not once: the file changed since the suggestions were made; run again",
                    edit["line"]
                ))
            }
        }
    }
    let mut diff = String::new();
    for (path, before, after) in &files {
        if before != after {
            let unified = similar::TextDiff::from_lines(before, after);
            diff.push_str(
                &unified
                    .unified_diff()
                    .context_radius(3)
                    .header(&format!("a/{path}"), &format!("b/{path}"))
                    .to_string(),
            );
        }
    }
    Ok(diff)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn outputs(edits: Value) -> Values {
        Values::from_iter([("suggested_edits".to_string(), edits)])
    }

    #[test]
    fn edits_apply_in_order_and_become_one_diff() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("t.md"), "# T\nSome text   \n\n\n\nend").unwrap();
        let out = outputs(json!([
            {"path": "t.md", "old_string": "\nSome text   \n", "new_string": "\n\nSome text\n", "line": 2},
            {"path": "t.md", "old_string": "\n\n\nend", "new_string": "\nend", "line": 4},
            {"path": "t.md", "old_string": "\nend", "new_string": "\nend\n", "line": 6},
        ]));
        let diff = render(dir.path(), &out).unwrap();
        assert!(diff.starts_with("--- a/t.md\n+++ b/t.md\n"), "{diff}");
        assert!(
            diff.contains("-Some text   \n") && diff.contains("+Some text\n"),
            "{diff}"
        );
        assert!(diff.contains("\\ No newline at end of file"), "{diff}");
    }

    #[test]
    fn a_changed_file_is_refused_not_guessed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("t.md"), "a\na\n").unwrap();
        let err = render(
            dir.path(),
            &outputs(
                json!([{"path": "t.md", "old_string": "a\n", "new_string": "b\n", "line": 1}]),
            ),
        )
        .unwrap_err();
        assert!(err.contains("2 times") && err.contains("changed"), "{err}");
        let err = render(dir.path(), &outputs(Value::Null)).unwrap_err();
        assert!(err.contains("format_suggestions"), "{err}");
    }
}
