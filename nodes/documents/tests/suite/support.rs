//! Helpers shared by the suite.
#![allow(dead_code)]

use cheng_node::{Node, NodeError, Values};
use std::path::{Path, PathBuf};

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/markdown")
        .canonicalize()
        .expect("fixtures/markdown")
}

pub use cheng_test_support::temp_workspace;

/// Runs a node the way the engine does: spec defaults applied, then `run`.
pub fn run(node: &dyn Node, root: &Path, input: serde_json::Value) -> Result<Values, NodeError> {
    cheng_test_support::run_denied(node, root, input)
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
