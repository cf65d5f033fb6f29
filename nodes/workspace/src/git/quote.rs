//! Paths as git prints them, and as we report them.
//!
//! `status` reads raw `-z` bytes; the numstat of `diff`/`show` is read as text, where raw
//! non-UTF-8 bytes would not survive. With `core.quotePath=true` git prints every path that holds
//! a control character, a quote, a backslash or a byte >= 0x80 as a C-style quoted string
//! (`"caf\303\251"`), which is plain ASCII: undoing that quoting gives back the exact bytes.
//!
//! A reported path is `path` (UTF-8 text, exact whenever the bytes are valid UTF-8) plus, only when
//! they are not, `path_bytes_base64` (the exact bytes, standard base64) so nothing is lost.

use base64::Engine;
use serde_json::{Map, Value};

/// Undoes git's C-style quoting. An unquoted field is returned as is; `None` for malformed input.
pub fn unquote(field: &str) -> Option<Vec<u8>> {
    let Some(inner) = field.strip_prefix('"') else {
        return Some(field.as_bytes().to_vec());
    };
    let inner = inner.strip_suffix('"')?;
    let bytes = inner.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b != b'\\' {
            out.push(b);
            i += 1;
            continue;
        }
        let esc = *bytes.get(i + 1)?;
        i += 2;
        let plain = match esc {
            b'a' => 0x07,
            b'b' => 0x08,
            b't' => b'\t',
            b'n' => b'\n',
            b'v' => 0x0b,
            b'f' => 0x0c,
            b'r' => b'\r',
            b'"' => b'"',
            b'\\' => b'\\',
            b'0'..=b'3' => {
                let digits = bytes.get(i..i + 2)?;
                if !digits.iter().all(|d| (b'0'..=b'7').contains(d)) {
                    return None;
                }
                i += 2;
                ((esc - b'0') << 6) | ((digits[0] - b'0') << 3) | (digits[1] - b'0')
            }
            _ => return None,
        };
        out.push(plain);
    }
    Some(out)
}

/// Inserts `key` (text) and, for non-UTF-8 bytes, `key_bytes_base64` into `entry`.
pub fn insert_path(entry: &mut Map<String, Value>, key: &str, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(text) => {
            entry.insert(key.to_string(), Value::String(text.to_string()));
        }
        Err(_) => {
            entry.insert(
                key.to_string(),
                Value::String(String::from_utf8_lossy(bytes).into_owned()),
            );
            let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
            entry.insert(format!("{key}_bytes_base64"), Value::String(encoded));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_fields_pass_through() {
        assert_eq!(unquote("src/a b.rs").unwrap(), b"src/a b.rs");
    }

    #[test]
    fn escapes_and_octal_bytes_are_undone() {
        assert_eq!(unquote(r#""a\nb\t\"c\\""#).unwrap(), b"a\nb\t\"c\\");
        assert_eq!(unquote(r#""caf\303\251""#).unwrap(), "café".as_bytes());
        assert_eq!(unquote(r#""bad\377name""#).unwrap(), b"bad\xffname");
    }

    #[test]
    fn malformed_quoting_is_refused() {
        for bad in [r#""open"#, r#""x\q""#, r#""x\4""#, r#""x\3a1""#, r#""x\""#] {
            assert!(unquote(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn non_utf8_paths_keep_their_bytes() {
        let mut entry = Map::new();
        insert_path(&mut entry, "path", b"ok.txt");
        assert_eq!(entry["path"], "ok.txt");
        assert!(!entry.contains_key("path_bytes_base64"));
        insert_path(&mut entry, "orig_path", b"\xff.txt");
        assert_eq!(entry["orig_path"], "\u{FFFD}.txt");
        assert_eq!(entry["orig_path_bytes_base64"], "/y50eHQ=");
    }
}
