//! `artifact_summary`: metadata for any file, read in one streaming pass (memory stays bounded
//! whatever the size) — size, MIME type from magic bytes with an extension fallback, text vs
//! binary, encoding, line count, image dimensions, JSON top-level keys, CSV columns and row
//! count, and the SHA-256 of the content.

use cheng_node::text::human_bytes;
use cheng_node::{CancellationToken, ErrorKind, NodeError};
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::io::{BufReader, Read};
use std::path::Path;

/// JSON files larger than this get no key listing (parsing keeps the whole value in memory).
pub const MAX_JSON_BYTES: u64 = 16 * 1024 * 1024;
/// Most JSON keys and CSV columns listed.
pub const MAX_KEYS: usize = 200;
/// Bytes sniffed for magic numbers and the text/binary decision.
const SNIFF: usize = 8192;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Metadata {
    pub path: Option<String>,
    pub size_bytes: u64,
    pub size: String,
    pub mime: String,
    /// "magic" (content signature), "extension", or "content" (text/binary guess).
    pub mime_source: &'static str,
    /// "text" or "binary".
    pub kind: &'static str,
    /// ascii, utf-8, utf-8-bom, utf-16le, utf-16be, unknown-8bit (text that is not UTF-8), or null.
    pub encoding: Option<&'static str>,
    pub lines: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<ImageInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub json: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub csv: Option<Value>,
    pub sha256: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ImageInfo {
    pub width: usize,
    pub height: usize,
}

/// The metadata object as `key  value` rows (nested values as compact JSON): the preview a
/// reader sees.
pub fn rows(metadata: &Value) -> String {
    let Value::Object(map) = metadata else {
        return metadata.to_string();
    };
    let width = map.keys().map(String::len).max().unwrap_or(0);
    let mut text = String::new();
    for (key, value) in map {
        let shown = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        text.push_str(&format!("{key:<width$}  {shown}\n"));
    }
    text
}

/// Streams `reader` once: hash, line count, encoding.
struct Scan {
    size: u64,
    head: Vec<u8>,
    newlines: u64,
    last_byte: Option<u8>,
    ascii: bool,
    utf8: bool,
    /// Bytes of an incomplete UTF-8 sequence carried to the next chunk.
    carry: Vec<u8>,
    hasher: Sha256,
}

fn scan(mut reader: impl Read, cancel: &CancellationToken) -> Result<Scan, NodeError> {
    let mut s = Scan {
        size: 0,
        head: Vec::with_capacity(SNIFF),
        newlines: 0,
        last_byte: None,
        ascii: true,
        utf8: true,
        carry: Vec::new(),
        hasher: Sha256::new(),
    };
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        if cancel.is_cancelled() {
            return Err(NodeError::new(
                ErrorKind::Cancelled,
                "cancelled while reading the file",
            ));
        }
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(NodeError::new(
                    ErrorKind::NotFound,
                    format!("the file cannot be read: {e}"),
                ))
            }
        };
        let chunk = &buf[..n];
        s.size += n as u64;
        s.hasher.update(chunk);
        if s.head.len() < SNIFF {
            let take = (SNIFF - s.head.len()).min(n);
            s.head.extend_from_slice(&chunk[..take]);
        }
        s.newlines += chunk.iter().filter(|b| **b == b'\n').count() as u64;
        s.last_byte = chunk.last().copied();
        if s.ascii && !chunk.is_ascii() {
            s.ascii = false;
        }
        if s.utf8 && !s.ascii {
            let mut joined = std::mem::take(&mut s.carry);
            joined.extend_from_slice(chunk);
            match std::str::from_utf8(&joined) {
                Ok(_) => {}
                Err(e) if e.error_len().is_none() => s.carry = joined[e.valid_up_to()..].to_vec(),
                Err(_) => s.utf8 = false,
            }
        }
    }
    if !s.carry.is_empty() {
        s.utf8 = false;
    }
    Ok(s)
}

/// Summarises a workspace file (already resolved and checked to be a regular file), every open
/// through the workspace handle `fs`.
pub fn summarize_file(
    fs: &cheng_fs::WorkspaceFs,
    path: &Path,
    display: &str,
    cancel: &CancellationToken,
) -> Result<Metadata, NodeError> {
    let file = fs.open_read(path).map_err(|e| {
        NodeError::new(
            ErrorKind::NotFound,
            format!("path {display:?} cannot be opened: {e}"),
        )
    })?;
    let scanned = scan(BufReader::new(file), cancel)?;
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let mut meta = describe(&scanned, extension.as_deref(), Some(display.to_string()));
    if meta.mime.starts_with("image/") {
        if let Ok(file) = fs.open_read(path) {
            if let Ok(size) = imagesize::reader_size(BufReader::new(file)) {
                meta.image = Some(ImageInfo {
                    width: size.width,
                    height: size.height,
                });
            }
        }
    }
    if is_json(&meta, extension.as_deref()) {
        if scanned.size <= MAX_JSON_BYTES {
            match fs.read(path) {
                Ok(bytes) => meta.json = Some(json_shape(&bytes, &mut meta.notes)),
                Err(e) => meta.notes.push(format!("JSON keys not read: {e}")),
            }
        } else {
            meta.notes.push(format!(
                "JSON keys not listed: the file is over {}",
                human_bytes(MAX_JSON_BYTES)
            ));
        }
    }
    if let Some(delimiter) = csv_delimiter(&meta, extension.as_deref()) {
        match fs.open_read(path) {
            Ok(file) => {
                meta.csv = csv_shape(BufReader::new(file), delimiter, cancel, &mut meta.notes)?
            }
            Err(e) => meta.notes.push(format!("CSV not read: {e}")),
        }
    }
    Ok(meta)
}

/// Summarises inline content (no file involved).
pub fn summarize_bytes(bytes: &[u8], cancel: &CancellationToken) -> Result<Metadata, NodeError> {
    let scanned = scan(bytes, cancel)?;
    let mut meta = describe(&scanned, None, None);
    if meta.mime.starts_with("image/") {
        if let Ok(size) = imagesize::blob_size(bytes) {
            meta.image = Some(ImageInfo {
                width: size.width,
                height: size.height,
            });
        }
    }
    let trimmed = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if meta.kind == "text"
        && matches!(trimmed, Some(b'{') | Some(b'['))
        && serde_json::from_slice::<Value>(bytes).is_ok()
    {
        meta.mime = "application/json".into();
        meta.json = Some(json_shape(bytes, &mut meta.notes));
    }
    Ok(meta)
}

fn describe(s: &Scan, extension: Option<&str>, path: Option<String>) -> Metadata {
    let head = &s.head;
    let (bom_encoding, utf16) = if head.starts_with(&[0xEF, 0xBB, 0xBF]) {
        (Some("utf-8-bom"), false)
    } else if head.starts_with(&[0xFF, 0xFE]) {
        (Some("utf-16le"), true)
    } else if head.starts_with(&[0xFE, 0xFF]) {
        (Some("utf-16be"), true)
    } else {
        (None, false)
    };
    let text = utf16 || !head.contains(&0);
    let encoding = if !text {
        None
    } else if let Some(bom) = bom_encoding {
        Some(bom)
    } else if s.ascii {
        Some("ascii")
    } else if s.utf8 {
        Some("utf-8")
    } else {
        Some("unknown-8bit")
    };
    let magic = infer::get(head).map(|t| t.mime_type().to_string());
    let (mime, mime_source) = match (magic, extension.and_then(mime_from_extension)) {
        (Some(m), _) => (m, "magic"),
        (None, Some(m)) => (m.to_string(), "extension"),
        (None, None) if text => ("text/plain".to_string(), "content"),
        (None, None) => ("application/octet-stream".to_string(), "content"),
    };
    let lines =
        (text && !utf16).then(|| s.newlines + u64::from(s.last_byte.is_some_and(|b| b != b'\n')));
    Metadata {
        path,
        size_bytes: s.size,
        size: human_bytes(s.size),
        mime,
        mime_source,
        kind: if text { "text" } else { "binary" },
        encoding,
        lines,
        image: None,
        json: None,
        csv: None,
        sha256: hex(&s.hasher.clone().finalize()),
        notes: Vec::new(),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn mime_from_extension(ext: &str) -> Option<&'static str> {
    Some(match ext {
        "md" | "markdown" | "mdx" => "text/markdown",
        "txt" | "log" | "text" => "text/plain",
        "json" | "jsonl" | "ndjson" => "application/json",
        "csv" => "text/csv",
        "tsv" => "text/tab-separated-values",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "js" | "mjs" | "cjs" => "text/javascript",
        "ts" | "tsx" => "text/x-typescript",
        "rs" => "text/x-rust",
        "py" => "text/x-python",
        "go" => "text/x-go",
        "c" | "h" => "text/x-c",
        "cpp" | "cc" | "hpp" => "text/x-c++",
        "java" => "text/x-java",
        "sh" | "bash" => "text/x-shellscript",
        "toml" => "application/toml",
        "yaml" | "yml" => "application/yaml",
        "xml" => "application/xml",
        "svg" => "image/svg+xml",
        "wasm" => "application/wasm",
        _ => return None,
    })
}

fn is_json(meta: &Metadata, extension: Option<&str>) -> bool {
    meta.kind == "text"
        && (extension == Some("json")
            || meta.mime == "application/json"
                && extension != Some("jsonl")
                && extension != Some("ndjson"))
}

fn csv_delimiter(meta: &Metadata, extension: Option<&str>) -> Option<u8> {
    if meta.kind != "text" {
        return None;
    }
    match extension {
        Some("csv") => Some(b','),
        Some("tsv") => Some(b'\t'),
        _ if meta.mime == "text/csv" => Some(b','),
        _ => None,
    }
}

fn json_shape(bytes: &[u8], notes: &mut Vec<String>) -> Value {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(map)) => serde_json::json!({
            "type": "object",
            "key_count": map.len(),
            "keys": map.keys().take(MAX_KEYS).collect::<Vec<_>>(),
        }),
        Ok(Value::Array(items)) => serde_json::json!({ "type": "array", "length": items.len() }),
        Ok(other) => serde_json::json!({ "type": json_type(&other) }),
        Err(e) => {
            notes.push(format!("not valid JSON: {e}"));
            serde_json::json!({ "type": "invalid", "error": e.to_string() })
        }
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn csv_shape(
    reader: impl Read,
    delimiter: u8,
    cancel: &CancellationToken,
    notes: &mut Vec<String>,
) -> Result<Option<Value>, NodeError> {
    let mut csv = csv::ReaderBuilder::new()
        .delimiter(delimiter)
        .has_headers(true)
        .flexible(true)
        .from_reader(reader);
    let columns: Vec<String> = match csv.headers() {
        Ok(h) => h.iter().map(str::to_string).collect(),
        Err(e) => {
            notes.push(format!("CSV header not read: {e}"));
            return Ok(None);
        }
    };
    let mut rows: u64 = 0;
    let mut record = csv::ByteRecord::new();
    loop {
        if rows & 0xFFFF == 0 && cancel.is_cancelled() {
            return Err(NodeError::new(
                ErrorKind::Cancelled,
                "cancelled while counting CSV rows",
            ));
        }
        match csv.read_byte_record(&mut record) {
            Ok(true) => rows += 1,
            Ok(false) => break,
            Err(e) => {
                notes.push(format!("CSV parsing stopped after {rows} rows: {e}"));
                break;
            }
        }
    }
    Ok(Some(serde_json::json!({
        "delimiter": (delimiter as char).to_string(),
        "column_count": columns.len(),
        "columns": columns.iter().take(MAX_KEYS).collect::<Vec<_>>(),
        "rows": rows,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_metadata_counts_lines_and_hashes() {
        let meta = summarize_bytes(b"a\nb\nc", &CancellationToken::new()).unwrap();
        assert_eq!(meta.lines, Some(3));
        assert_eq!(meta.encoding, Some("ascii"));
        assert_eq!(meta.kind, "text");
        assert_eq!(meta.sha256.len(), 64);
        let empty = summarize_bytes(b"", &CancellationToken::new()).unwrap();
        assert_eq!(
            empty.sha256,
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(empty.lines, Some(0));
    }

    #[test]
    fn utf8_split_across_chunks_is_still_utf8() {
        let mut text = "x".repeat(64 * 1024 - 1).into_bytes();
        text.extend_from_slice("é and more".as_bytes());
        let meta = summarize_bytes(&text, &CancellationToken::new()).unwrap();
        assert_eq!(meta.encoding, Some("utf-8"));
        let meta = summarize_bytes(b"caf\xe9\n", &CancellationToken::new()).unwrap();
        assert_eq!(meta.encoding, Some("unknown-8bit"));
    }
}
