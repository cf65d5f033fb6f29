//! Helpers shared by the suite.
#![allow(dead_code)]

use cheng_node::{Decision, Node, NodeError, RunContext, Values};
use std::path::{Path, PathBuf};

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/markdown")
        .canonicalize()
        .expect("fixtures/markdown")
}

pub fn temp_workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical tempdir");
    (dir, root)
}

/// Runs a node the way the engine does: spec defaults applied, then `run`.
pub fn run(node: &dyn Node, root: &Path, input: serde_json::Value) -> Result<Values, NodeError> {
    let spec = node.spec();
    let mut values = Values::new();
    for port in spec.inputs {
        if let Some(default) = port.default_value() {
            values.insert(port.name.to_string(), default);
        }
    }
    if let serde_json::Value::Object(map) = input {
        values.extend(map);
    }
    values.insert(
        "sandbox_root".into(),
        serde_json::json!(root.display().to_string()),
    );
    let ctx = RunContext::for_workspace(spec.id, root.to_path_buf(), Decision::Denied);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(node.run(&ctx, values))
}

/// Counts occurrences of `needle` in `hay`, overlapping ones included.
pub fn occurrences(hay: &str, needle: &str) -> usize {
    (0..hay.len())
        .filter(|&i| hay.is_char_boundary(i) && hay[i..].starts_with(needle))
        .count()
}

/// Applies edits one by one with exact-unique-match semantics, panicking when one is ambiguous.
pub fn apply_edits(text: &str, edits: &[serde_json::Value]) -> String {
    let mut text = text.to_string();
    for (i, edit) in edits.iter().enumerate() {
        let old = edit["old_string"].as_str().expect("old_string");
        let new = edit["new_string"].as_str().expect("new_string");
        let count = occurrences(&text, old);
        assert_eq!(
            count, 1,
            "edit {i} ({edit}) matches {count} times in:\n{text}"
        );
        text = text.replacen(old, new, 1);
    }
    text
}
