//! Properties the fuzzer checks (fuzz/fuzz_targets/): each function takes the fuzzer's bytes
//! and panics when a property does not hold. The ordinary tests run the checked-in seeds of
//! every target through the same functions.

use crate::markdown::{analyze, Operation, MAX_DIAGNOSTICS, MAX_OUTLINE_ENTRIES, MAX_SUGGESTIONS};
use crate::source::TextFile;
use serde_json::Value;
use std::path::Path;

pub use crate::preview::fuzzing::{preview_html, preview_markdown};

/// workspace_markdown, every operation, on the document. Each succeeds with its lists within
/// their caps, every position inside the document, and the output bounded by the input.
pub fn markdown(data: &[u8]) {
    let text = String::from_utf8_lossy(data).into_owned();
    let invalid_utf8_at = std::str::from_utf8(data).err().map(|e| e.valid_up_to());
    // A root that does not exist: local links are checked and found missing, nothing is read.
    let root = Path::new("/nonexistent-cheng-fuzz-root");
    let file = TextFile {
        path: root.join("doc.md"),
        display: "doc.md".into(),
        bytes: data.len() as u64,
        text,
        invalid_utf8_at,
    };
    let lines = file.text.lines().count() + 1;
    for operation in [
        Operation::Outline,
        Operation::Diagnostics,
        Operation::FormatSuggestions,
        Operation::LinkCheckLocal,
    ] {
        let out = analyze(root, &file, operation);
        assert_eq!(
            out.get("success"),
            Some(&Value::Bool(true)),
            "{}: {out:?}",
            operation.name()
        );
        let count = |key: &str| out.get(key).and_then(Value::as_array).map_or(0, Vec::len);
        assert!(count("outline") <= MAX_OUTLINE_ENTRIES);
        assert!(count("diagnostics") <= MAX_DIAGNOSTICS);
        assert!(count("suggested_edits") <= MAX_SUGGESTIONS);
        for d in out
            .get("diagnostics")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(line) = d.get("line").and_then(Value::as_u64) {
                assert!(
                    line >= 1 && line as usize <= lines,
                    "diagnostic at line {line} of {lines}: {d}"
                );
            }
        }
        let size = serde_json::to_string(&out).map_or(0, |s| s.len());
        assert!(
            size <= 400 * data.len() + (1 << 16),
            "{} bytes of output for {} of input",
            size,
            data.len()
        );
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_fuzz_seeds_hold_the_properties() {
        cheng_test_support::check_fuzz_seeds(&[
            ("markdown", super::markdown),
            ("preview_markdown", super::preview_markdown),
            ("preview_html", super::preview_html),
        ]);
    }
}
