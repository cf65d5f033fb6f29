//! Properties the fuzzer checks on the patch parser and applier (fuzz/fuzz_targets/patch.rs);
//! the ordinary tests run the checked-in seeds through the same function. Each check panics
//! when a property does not hold, which is what the fuzzer reports.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

use crate::apply::key;
use crate::{apply, parse, parse_with, Change, ParseMode};

/// Input: `FILE\0PATCH` (no NUL: the whole input is the patch and every file is empty). Every
/// path reads as FILE except those whose name starts with `missing`, which do not exist.
pub fn patch(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (file, patch_text) = match text.split_once('\0') {
        Some((file, patch)) => (file, patch),
        None => ("", &*text),
    };
    let parsed = match parse(patch_text) {
        Ok(parsed) => parsed,
        Err(e) => {
            // An error names a line inside the text (or the text has no operation at all).
            if let crate::PatchError::Parse { line, .. } = e {
                assert!(
                    line <= patch_text.lines().count() + 1,
                    "error line {line} past the text"
                );
            }
            return;
        }
    };
    // Strict parsing accepts nothing lenient parsing refuses, and agrees when both accept.
    if let Ok(strict) = parse_with(patch_text, ParseMode::Strict) {
        assert_eq!(strict, parsed, "strict and lenient parses differ");
    }
    let read = |path: &Path| -> io::Result<String> {
        if path.to_string_lossy().starts_with("missing") {
            Err(io::Error::from(io::ErrorKind::NotFound))
        } else {
            Ok(file.to_string())
        }
    };
    let Ok(changes) = apply(&parsed, read) else {
        // All or nothing: an error returns no change at all (nothing to write).
        return;
    };
    // Whole: one change per operation, in order, each starting from the operation's path.
    assert_eq!(changes.len(), parsed.operations.len());
    for (change, op) in changes.iter().zip(&parsed.operations) {
        assert_eq!(change.path(), op.path());
    }
    // Written in order onto a map of the files, every Update starts from what is there, and the
    // new text is bounded by the old text plus the patch (lines come from one or the other).
    let mut files: HashMap<PathBuf, String> = HashMap::new();
    for change in &changes {
        match change {
            Change::Add { path, content } => {
                assert!(
                    content.len() <= patch_text.len() + 1,
                    "added text longer than the patch"
                );
                files.insert(key(path), content.clone());
            }
            Change::Delete { path } => {
                files.remove(&key(path));
            }
            Change::Update {
                path,
                move_to,
                old_content,
                new_content,
            } => {
                let current = files
                    .get(&key(path))
                    .cloned()
                    .unwrap_or_else(|| file.to_string());
                assert_eq!(
                    old_content, &current,
                    "an update does not start from the file's text"
                );
                assert!(
                    new_content.len() <= old_content.len() + 2 * patch_text.len() + 2,
                    "updated text {} bytes from {} and a {}-byte patch",
                    new_content.len(),
                    old_content.len(),
                    patch_text.len()
                );
                match move_to {
                    Some(to) => {
                        files.remove(&key(path));
                        files.insert(key(to), new_content.clone());
                    }
                    None => {
                        files.insert(key(path), new_content.clone());
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    /// Every checked-in seed of the fuzz target holds the properties.
    #[test]
    fn the_fuzz_seeds_hold_the_properties() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fuzz/corpus/patch");
        let mut n = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            super::patch(&std::fs::read(entry.unwrap().path()).unwrap());
            n += 1;
        }
        assert!(n > 0, "no seeds in {dir}");
    }
}
