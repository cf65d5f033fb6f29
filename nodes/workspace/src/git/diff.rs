//! `--numstat` (quoted paths, renames off) into per-file line counts.
//!
//! Each entry: `path` (+ `path_bytes_base64` when not UTF-8), `added`, `deleted` (null for binary
//! files) and `binary`.

use super::quote::{insert_path, unquote};
use serde_json::{json, Map, Value};

/// Parses numstat lines; returns the entries and the number of lines that did not parse.
pub fn parse_numstat(text: &str) -> (Vec<Value>, usize) {
    let mut files = Vec::new();
    let mut unparsed = 0;
    for line in text.lines().filter(|l| !l.is_empty()) {
        match numstat_line(line) {
            Some(entry) => files.push(entry),
            None => unparsed += 1,
        }
    }
    (files, unparsed)
}

fn numstat_line(line: &str) -> Option<Value> {
    let mut parts = line.splitn(3, '\t');
    let added = parts.next()?;
    let deleted = parts.next()?;
    let path = unquote(parts.next()?)?;
    let binary = added == "-" && deleted == "-";
    let count = |field: &str| -> Option<Value> {
        if binary {
            Some(Value::Null)
        } else {
            field.parse::<u64>().ok().map(|n| json!(n))
        }
    };
    let mut entry = Map::new();
    insert_path(&mut entry, "path", &path);
    entry.insert("added".into(), count(added)?);
    entry.insert("deleted".into(), count(deleted)?);
    entry.insert("binary".into(), json!(binary));
    Some(Value::Object(entry))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_binaries_and_quoted_paths() {
        let (files, bad) =
            parse_numstat("1\t0\ta b.txt\n-\t-\timage.png\n3\t4\t\"caf\\351\"\nnonsense\n");
        assert_eq!(bad, 1);
        assert_eq!(files[0]["added"], 1);
        assert_eq!(files[0]["path"], "a b.txt");
        assert_eq!(files[1]["binary"], true);
        assert_eq!(files[1]["added"], Value::Null);
        assert_eq!(files[2]["deleted"], 4);
        assert_eq!(files[2]["path_bytes_base64"], "Y2Fm6Q==");
    }
}
