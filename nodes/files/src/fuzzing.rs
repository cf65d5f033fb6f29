//! Properties the fuzzer checks (fuzz/fuzz_targets/): each function takes the fuzzer's bytes
//! and panics when a property does not hold. The ordinary tests run the checked-in seeds of
//! every target through the same functions.

use crate::glob::compile;
use crate::read_file::{
    block, read_window, slice, split_lines, Indentation, CUT_MARK, MAX_LINE_LENGTH,
};
use serde_json::json;
use std::path::Path;

/// The glob compiler. Input: `PATTERN\0PATH...` (paths separated by NUL). A pattern compiles
/// or is refused naming the port; a pattern without glob syntax matches exactly itself.
pub fn glob(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut parts = text.split('\0');
    let pattern = parts.next().unwrap_or_default();
    let set = match compile(pattern, "pattern") {
        Ok(set) => set,
        Err(e) => {
            assert!(
                e.message.starts_with("pattern "),
                "the error does not name the port: {}",
                e.message
            );
            return;
        }
    };
    for path in parts {
        let _ = set.is_match(Path::new(path));
    }
    if !pattern.is_empty() && !pattern.contains(['*', '?', '[', ']', '{', '}', '\\', ',']) {
        assert!(
            set.is_match(Path::new(pattern)),
            "{pattern:?} does not match itself"
        );
    }
}

/// read_file's slice and indentation modes. Input: offset, limit, anchor_line and max_lines
/// (a byte each, 0 meaning unset where that is allowed), max_levels (8 bytes, any size an
/// agent may send), a flags byte (include_siblings, include_header), then the file. At most
/// `limit` lines, each numbered in order and cut to the line limit; the streaming slice gives
/// what the whole-file slice gives.
pub fn read_file(data: &[u8]) {
    let [offset, limit, anchor, max_lines, l0, l1, l2, l3, l4, l5, l6, l7, flags, rest @ ..] = data
    else {
        return;
    };
    let offset = usize::from(*offset).max(1);
    let limit = usize::from(*limit).max(1);
    let max_levels = u64::from_be_bytes([*l0, *l1, *l2, *l3, *l4, *l5, *l6, *l7]);
    let text = String::from_utf8_lossy(rest);
    let lines = split_lines(&text);
    let longest = format!("L{}: ", lines.len()).len() + MAX_LINE_LENGTH + CUT_MARK.len();

    let sliced = slice(&lines, offset, limit);
    if let Ok(out) = &sliced {
        assert!(out.len() <= limit);
        for (i, line) in out.iter().enumerate() {
            assert!(
                line.starts_with(&format!("L{}: ", offset + i)),
                "line {i} is {line:?}"
            );
            assert!(line.len() <= longest, "a {}-byte line", line.len());
        }
        // The stream reader (files too large to load) agrees; a file of one bare line break is
        // no line to split_lines but one empty line to the stream, so it is left out, and so is
        // text that is not UTF-8 (the stream replaces bad bytes after cutting a long line).
        if text != "\n" && std::str::from_utf8(rest).is_ok() {
            match read_window(rest, offset, limit) {
                Ok(window) => assert_eq!(&window.lines, out, "the streamed slice differs"),
                Err(e) => panic!("reading from memory failed: {e}"),
            }
        }
    }

    let mut options = serde_json::Map::new();
    if *anchor > 0 {
        options.insert("anchor_line".into(), json!(anchor));
    }
    if *max_lines > 0 {
        options.insert("max_lines".into(), json!(max_lines));
    }
    options.insert("max_levels".into(), json!(max_levels));
    options.insert("include_siblings".into(), json!(flags & 1 == 1));
    options.insert("include_header".into(), json!(flags & 2 == 2));
    let options = match Indentation::from_value(Some(&serde_json::Value::Object(options))) {
        Ok(options) => options,
        Err(e) => panic!("valid indentation options refused: {e}"),
    };
    let Ok(out) = block(&lines, offset, limit, &options) else {
        return;
    };
    let most = limit.min(options.max_lines.unwrap_or(limit));
    assert!(
        out.len() <= most,
        "{} lines for a limit of {most}",
        out.len()
    );
    let mut previous = 0usize;
    for line in &out {
        let n: usize = line[1..line.find(':').unwrap_or(1)].parse().unwrap_or(0);
        assert!(
            n > previous && n <= lines.len(),
            "line {n} after {previous} of {}",
            lines.len()
        );
        assert!(line.len() <= longest, "a {}-byte line", line.len());
        previous = n;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_fuzz_seeds_hold_the_properties() {
        cheng_test_support::check_fuzz_seeds(&[
            ("glob", super::glob),
            ("read_file", super::read_file),
        ]);
    }
}
