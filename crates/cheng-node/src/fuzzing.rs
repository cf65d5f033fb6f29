//! Properties the fuzzer checks (fuzz/fuzz_targets/): each function takes the fuzzer's bytes
//! and panics when a property does not hold. The ordinary tests run the checked-in seeds of
//! every target through the same functions.

use crate::display::{self, is_hidden, CONTINUATION, MIN_WIDTH};

pub use crate::policy::fuzzing::policy;

/// The approval card's display escaper. Input: first byte the screen width, the rest the text.
/// Nothing hidden (no control byte, bidi control or invisible character) survives, a line
/// has no line break, a block keeps its lines behind the continuation marker, the escape is
/// bounded, fitting keeps every row within the width, and JSON stays the same JSON.
pub fn display(data: &[u8]) {
    let Some((&width, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let shown = display::line(&text);
    assert!(
        !shown.as_str().chars().any(is_hidden),
        "hidden character in {shown:?}"
    );
    assert!(
        shown.as_str().len() <= 10 * text.len(),
        "escape of {} bytes grew to {}",
        text.len(),
        shown.as_str().len()
    );
    let block = display::block(&text);
    let indent = "  ";
    let indented = block.indented(indent);
    for (i, row) in indented.split('\n').enumerate() {
        assert!(!row.chars().any(is_hidden), "hidden character in {row:?}");
        if i > 0 {
            assert!(
                row.starts_with(&format!("{indent}{CONTINUATION}")),
                "continuation row without its marker: {row:?}"
            );
        }
    }
    let whole = text.strip_suffix('\n').unwrap_or(&text);
    assert_eq!(
        block.joined(),
        display::line(whole),
        "a joined block is not the line"
    );

    let width = usize::from(width);
    let fitted = display::fit(&indented, width, indent);
    assert_eq!(
        fitted.replace(&format!("\n{indent}{CONTINUATION}"), ""),
        indented.replace(&format!("\n{indent}{CONTINUATION}"), ""),
        "fitting changed the text"
    );
    for row in fitted.split('\n') {
        let columns: usize = row
            .chars()
            .map(|c| unicode_width::UnicodeWidthChar::width(c).unwrap_or(0))
            .sum();
        assert!(
            columns <= width.max(MIN_WIDTH),
            "row of {columns} columns on a {width}-column screen: {row:?}"
        );
        assert!(!row.chars().any(is_hidden), "hidden character in {row:?}");
    }

    if let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) {
        let safe = display::json(&text);
        assert!(!safe.chars().any(is_hidden), "hidden character in {safe:?}");
        let again: serde_json::Value = match serde_json::from_str(&safe) {
            Ok(again) => again,
            Err(e) => panic!("escaped JSON does not parse: {e}"),
        };
        assert_eq!(again, value, "escaped JSON is another value");
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::path::PathBuf;

    /// The checked-in seeds of a fuzz target (at least one, so a moved folder fails).
    pub(crate) fn seeds(target: &str) -> Vec<Vec<u8>> {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../fuzz/corpus")
            .join(target);
        let seeds: Vec<Vec<u8>> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| std::fs::read(e.unwrap().path()).unwrap())
            .collect();
        assert!(!seeds.is_empty(), "no seeds in {}", dir.display());
        seeds
    }

    #[test]
    fn the_display_seeds_hold_the_properties() {
        for seed in seeds("display") {
            super::display(&seed);
        }
    }

    #[test]
    fn the_policy_seeds_hold_the_properties() {
        for seed in seeds("policy") {
            super::policy(&seed);
        }
    }
}
