//! `tools/read_file`: a window of a text file, each line prefixed `L{n}: `, under a
//! `[path#TAG]` header that registers the tag with the freshness gate.
//!
//! Codex CLI's contract: offset 1, limit 2000 lines, lines over 500 bytes cut (on a character
//! boundary), tab width 4 for indentation; slice mode (lines `offset..offset+limit`) and
//! indentation mode (the block around an anchor line by indentation level). Files up to
//! [`MAX_EDIT_BYTES`] are read whole (they are tagged and decoded like the editors decode them:
//! UTF-16/32 with BOM, GBK, CRLF); a larger file is read only as far as the window needs,
//! untagged, so a 100 MB file costs what its window costs.

use crate::files::{self, MAX_EDIT_BYTES};
use crate::freshness::{Freshness, READ_TRACKING};
use crate::policy::{Access, PathPolicy, READ_ROOTS};
use crate::text::{Editable, TextError};
use cheng_node::input::{non_empty_str, port};
use cheng_node::{
    failure, Effects, ErrorKind, Field, Node, NodeError, NodeSpec, PortSpec, PortType, RunContext,
    Values,
};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::io::BufRead;

/// Lines longer than this many bytes are cut.
pub const MAX_LINE_LENGTH: usize = 500;
/// Columns a tab counts for when measuring indentation.
pub const TAB_WIDTH: usize = 4;
/// Lines starting with these (after indentation) are comments for `include_header`.
const COMMENT_PREFIXES: &[&str] = &["#", "//", "--"];
/// Bytes checked for NUL to call a file binary.
const BINARY_PROBE: usize = 8192;

pub const MODES: &[&str] = &["slice", "indentation"];

pub static SPEC: NodeSpec = NodeSpec {
    id: "tools/read_file",
    title: "Read File",
    description: "Read a text file by lines: a window (offset, limit) or the block around an anchor line by indentation, each line prefixed L{n}: under a [path#TAG] header that records what the model has seen for the editing tools.",
    category: "files",
    inputs: &[
        PortSpec::input("file_path", PortType::String, "Path of the file: relative to the workspace root, or absolute inside it (or inside a read-only root)").required(),
        PortSpec::input("offset", PortType::Integer, "The line number to start reading from (1-indexed)").default("1").min(1),
        PortSpec::input("limit", PortType::Integer, "The maximum number of lines to return").default("2000").min(1).max(2000),
        PortSpec::input("mode", PortType::String, "slice: lines offset..offset+limit; indentation: the block around an anchor line by indentation level")
            .default("\"slice\"")
            .choices(MODES),
        PortSpec::input(
            "indentation",
            PortType::Object,
            "Indentation mode options: anchor_line (default offset), max_levels (0: no limit), include_siblings (false), include_header (true: comments above the block), max_lines (default limit)",
        )
        .default("null")
        .fields(INDENTATION_FIELDS),
        READ_ROOTS,
        READ_TRACKING,
        PortSpec::sandbox_root(),
    ],
    outputs: &[
        PortSpec::output("content", PortType::String, "The [path#TAG] header line, then the lines, each prefixed L{n}: "),
        PortSpec::output("path", PortType::String, "The file that was read, relative to the workspace root"),
        PortSpec::output("tag", PortType::String, "Content tag of the whole file (FNV-1a, 8 hex digits); null for a file too large to tag"),
        PortSpec::output("lines", PortType::Integer, "Number of lines returned"),
        PortSpec::output("warnings", PortType::Array(&PortType::String), "What the reader should know: cut lines, an undecodable file, no tag"),
        failure::success("Whether the file was read"),
        PortSpec::output("summary", PortType::String, "Human-readable summary"),
        failure::ERROR_KIND,
        failure::TERMINAL,
        failure::ERROR,
    ],
    gate: None,
    effects: Effects::ReadOnly,
};

/// The fields `indentation` takes, as its description names them.
static INDENTATION_FIELDS: &[Field] = &[
    Field::new(
        "anchor_line",
        PortType::Integer,
        "The line the block is found around (default offset)",
    ),
    Field::new(
        "max_levels",
        PortType::Integer,
        "How many indentation levels up to include (0: no limit)",
    ),
    Field::new(
        "include_siblings",
        PortType::Boolean,
        "Include the blocks beside it at the same level (default false)",
    ),
    Field::new(
        "include_header",
        PortType::Boolean,
        "Include the comments above the block (default true)",
    ),
    Field::new(
        "max_lines",
        PortType::Integer,
        "At most this many lines (default limit)",
    ),
];

pub struct ReadFile;

cheng_node::inventory::submit! { cheng_node::NodeRegistration::new(&ReadFile) }

/// Indentation mode options (Codex's defaults).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Indentation {
    pub anchor_line: Option<usize>,
    pub max_levels: usize,
    pub include_siblings: bool,
    pub include_header: bool,
    pub max_lines: Option<usize>,
}

impl Default for Indentation {
    fn default() -> Self {
        Indentation {
            anchor_line: None,
            max_levels: 0,
            include_siblings: false,
            include_header: true,
            max_lines: None,
        }
    }
}

impl Indentation {
    pub(crate) fn from_value(value: Option<&Value>) -> Result<Self, NodeError> {
        let mut out = Indentation::default();
        let Some(obj) = value.and_then(Value::as_object) else {
            return Ok(out);
        };
        for (key, v) in obj {
            let bad = |what: &str| {
                NodeError::invalid_input(format!("indentation.{key} must be {what}, got {v}"))
            };
            match key.as_str() {
                "anchor_line" => out.anchor_line = if v.is_null() { None } else { Some(positive(v).ok_or_else(|| bad("a line number of 1 or more"))?) },
                "max_lines" => out.max_lines = if v.is_null() { None } else { Some(positive(v).ok_or_else(|| bad("1 or more"))?) },
                "max_levels" => out.max_levels = v.as_u64().and_then(|n| usize::try_from(n).ok()).ok_or_else(|| bad("0 or more"))?,
                "include_siblings" => out.include_siblings = v.as_bool().ok_or_else(|| bad("a boolean"))?,
                "include_header" => out.include_header = v.as_bool().ok_or_else(|| bad("a boolean"))?,
                other => {
                    return Err(NodeError::invalid_input(format!(
                        "indentation.{other} is not an option; use anchor_line, max_levels, include_siblings, include_header, max_lines"
                    )))
                }
            }
        }
        Ok(out)
    }
}

fn positive(v: &Value) -> Option<usize> {
    v.as_u64()
        .filter(|n| *n >= 1)
        .and_then(|n| usize::try_from(n).ok())
}

/// What one read produced.
#[derive(Debug, Clone)]
pub struct Read {
    pub header: String,
    pub lines: Vec<String>,
    pub display: String,
    pub tag: Option<String>,
    pub warnings: Vec<String>,
}

#[cheng_node::async_trait]
impl Node for ReadFile {
    fn spec(&self) -> &'static NodeSpec {
        &SPEC
    }

    async fn run(&self, ctx: &RunContext, input: Values) -> Result<Values, NodeError> {
        let ctx = ctx.clone();
        let result = tokio::task::spawn_blocking(move || read(&ctx, &input))
            .await
            .map_err(|e| NodeError::internal(format!("read_file stopped unexpectedly: {e}")))?;
        Ok(match result {
            Ok(read) => outputs(read),
            Err(e) => e.to_outputs(),
        })
    }
}

fn outputs(read: Read) -> Values {
    let count = read.lines.len();
    let mut content = read.header.clone();
    for line in &read.lines {
        content.push('\n');
        content.push_str(line);
    }
    let first = read
        .lines
        .first()
        .and_then(|l| l.strip_prefix('L'))
        .and_then(|l| l.split(':').next())
        .unwrap_or("");
    let last = read
        .lines
        .last()
        .and_then(|l| l.strip_prefix('L'))
        .and_then(|l| l.split(':').next())
        .unwrap_or("");
    let summary = match (count, &read.tag) {
        (0, _) => format!("{} is empty", read.display),
        (_, Some(tag)) => format!(
            "read {} lines {first}-{last} ({count} lines, tag {tag})",
            read.display
        ),
        (_, None) => format!(
            "read {} lines {first}-{last} ({count} lines, untagged)",
            read.display
        ),
    };
    let mut out = Values::new();
    out.insert("content".into(), json!(content));
    out.insert("path".into(), json!(read.display));
    out.insert("tag".into(), json!(read.tag));
    out.insert("lines".into(), json!(count));
    out.insert("warnings".into(), json!(read.warnings));
    out.insert("summary".into(), json!(summary));
    failure::with(out, &Ok::<(), NodeError>(()))
}

/// The node's work: policy, read, format, register the tag.
pub fn read(ctx: &RunContext, input: &Values) -> Result<Read, NodeError> {
    let Some(rel) = non_empty_str(input, "file_path") else {
        return Err(NodeError::invalid_input(
            "file_path is required: the file to read, relative to the workspace root",
        ));
    };
    let offset = usize_of(cheng_node::input::int(input, port(&SPEC, "offset")?)?);
    let limit = usize_of(cheng_node::input::int(input, port(&SPEC, "limit")?)?);
    let mode = non_empty_str(input, "mode").unwrap_or("slice");
    let indentation = match mode {
        "slice" => None,
        "indentation" => Some(Indentation::from_value(input.get("indentation"))?),
        other => {
            return Err(NodeError::invalid_input(format!(
                "mode {other:?} is not one of: slice, indentation"
            )))
        }
    };
    let policy = PathPolicy::from_input(&ctx.workspace, input)?;
    let target = policy.resolve(rel, "file_path", Access::Read)?;
    let display = target.display.clone();
    let fs = files::fs_for(&policy, &target.real)?;
    let Some((file, len)) = files::open_regular(&fs, &target.real, &display, "file_path")? else {
        return Err(NodeError::new(
            ErrorKind::NotFound,
            format!("file_path {rel:?} does not exist"),
        ));
    };
    let mut warnings = Vec::new();
    let (lines, tag) = if len <= MAX_EDIT_BYTES {
        let loaded = files::load(&fs, &target.real, &display, "file_path", MAX_EDIT_BYTES)?
            .ok_or_else(|| {
                NodeError::new(
                    ErrorKind::NotFound,
                    format!("file_path {rel:?} does not exist"),
                )
            })?;
        drop(file);
        let text = match Editable::decode(&loaded.bytes) {
            Ok(editable) => {
                if editable.encoding != crate::text::Encoding::Utf8 {
                    warnings.push(format!("{display} is {}; the editing tools write it back the same way", editable.describe()));
                }
                editable.text
            }
            Err(TextError::Binary) => {
                return Err(NodeError::invalid_input(format!("{display} is a binary file (it contains NUL bytes); read_file shows text files only")))
            }
            Err(e) => {
                warnings.push(format!("{display} {e}; it is shown with invalid bytes replaced (U+FFFD)"));
                String::from_utf8_lossy(&loaded.bytes).into_owned()
            }
        };
        let all: Vec<&str> = split_lines(&text);
        let lines = match &indentation {
            None => slice(&all, offset, limit)?,
            Some(options) => block(&all, offset, limit, options)?,
        };
        (lines, Some(loaded.tag))
    } else {
        if indentation.is_some() {
            return Err(NodeError::invalid_input(format!(
                "{display} is {} bytes, over the {} indentation mode reads whole; use mode \"slice\" with an offset",
                len,
                cheng_node::text::human_bytes(MAX_EDIT_BYTES)
            )));
        }
        let mut reader = std::io::BufReader::with_capacity(64 * 1024, file);
        let probe = reader.fill_buf().map_err(|e| {
            NodeError::new(
                ErrorKind::NotFound,
                format!("{display} cannot be read: {e}"),
            )
        })?;
        if crate::text::looks_binary(&probe[..probe.len().min(BINARY_PROBE)]) {
            return Err(NodeError::invalid_input(format!("{display} is a binary file (it contains NUL bytes); read_file shows text files only")));
        }
        let window = read_window(reader, offset, limit).map_err(|e| {
            NodeError::new(
                ErrorKind::NotFound,
                format!("{display} cannot be read: {e}"),
            )
        })?;
        if window.lines.is_empty() && window.seen > 0 {
            return Err(past_end(offset, window.seen));
        }
        warnings.push(format!(
            "{display} is {}, over the {} the editing tools change: it was read only as far as this window and has no tag",
            cheng_node::text::human_bytes(len),
            cheng_node::text::human_bytes(MAX_EDIT_BYTES)
        ));
        (window.lines, None)
    };
    if lines.iter().any(|l| l.ends_with(CUT_MARK)) {
        warnings.push(format!(
            "lines longer than {MAX_LINE_LENGTH} bytes were cut (marked {CUT_MARK:?})"
        ));
    }
    let header = match &tag {
        Some(tag) => format!("[{display}#{tag}]"),
        None => format!("[{display}]"),
    };
    if let Some(tag) = &tag {
        let freshness = Freshness::for_call(ctx, input)?;
        let mut ledger = freshness.open()?;
        ledger.record(&target.real, tag);
        ledger.commit()?;
    }
    Ok(Read {
        header,
        lines,
        display,
        tag,
        warnings,
    })
}

fn usize_of(n: i64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

fn past_end(offset: usize, total: usize) -> NodeError {
    NodeError::invalid_input(format!("offset {offset} is past the end of the file ({total} lines); use an offset from 1 to {total}"))
}

/// The file's lines: split on LF, a trailing CR dropped, no empty last line after a final LF.
pub fn split_lines(text: &str) -> Vec<&str> {
    let text = text.strip_suffix('\n').unwrap_or(text);
    if text.is_empty() {
        return Vec::new();
    }
    text.split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect()
}

/// Appended to a line that was cut.
pub const CUT_MARK: &str = " [...]";

/// `raw` cut to [`MAX_LINE_LENGTH`] bytes on a character boundary.
pub fn format_line(raw: &str) -> String {
    if raw.len() <= MAX_LINE_LENGTH {
        return raw.to_string();
    }
    let mut end = MAX_LINE_LENGTH;
    while !raw.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{CUT_MARK}", &raw[..end])
}

fn numbered(n: usize, raw: &str) -> String {
    format!("L{n}: {}", format_line(raw))
}

/// Slice mode over the whole file's lines.
pub fn slice(lines: &[&str], offset: usize, limit: usize) -> Result<Vec<String>, NodeError> {
    if lines.is_empty() {
        return Ok(Vec::new());
    }
    if offset > lines.len() {
        return Err(past_end(offset, lines.len()));
    }
    Ok(lines
        .iter()
        .enumerate()
        .skip(offset - 1)
        .take(limit)
        .map(|(i, l)| numbered(i + 1, l))
        .collect())
}

/// A window read from a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    pub lines: Vec<String>,
    /// Lines seen (all of them when the window ended at the end of the file).
    pub seen: usize,
    /// Bytes consumed from the reader.
    pub bytes_read: u64,
}

/// Slice mode over a stream: reads only up to the last line of the window, keeps at most
/// [`MAX_LINE_LENGTH`] bytes (plus a character) of any line, whatever its length.
pub fn read_window<R: BufRead>(
    mut reader: R,
    offset: usize,
    limit: usize,
) -> std::io::Result<Window> {
    let last = offset.saturating_add(limit).saturating_sub(1);
    let mut lines = Vec::new();
    let mut seen = 0usize;
    let mut bytes_read = 0u64;
    let mut current: Vec<u8> = Vec::new();
    let mut in_line = false;
    let keep = MAX_LINE_LENGTH + 4;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            if in_line {
                seen += 1;
                if seen >= offset {
                    lines.push(finish_line(seen, &current));
                }
            }
            break;
        }
        let (chunk, ends_line) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], true),
            None => (buf, false),
        };
        let wanted = seen + 1 >= offset;
        if wanted && current.len() < keep {
            let take = (keep - current.len()).min(chunk.len());
            current.extend_from_slice(&chunk[..take]);
        }
        let consumed = chunk.len() + usize::from(ends_line);
        reader.consume(consumed);
        bytes_read += consumed as u64;
        in_line = !ends_line;
        if ends_line {
            seen += 1;
            if seen >= offset {
                lines.push(finish_line(seen, &current));
            }
            current.clear();
            if seen >= last {
                break;
            }
        }
    }
    Ok(Window {
        lines,
        seen,
        bytes_read,
    })
}

fn finish_line(n: usize, bytes: &[u8]) -> String {
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    numbered(n, &String::from_utf8_lossy(bytes))
}

fn indent_of(line: &str) -> usize {
    line.chars()
        .take_while(|c| matches!(c, ' ' | '\t'))
        .map(|c| if c == '\t' { TAB_WIDTH } else { 1 })
        .sum()
}

fn is_blank(line: &str) -> bool {
    line.trim().is_empty()
}

fn is_comment(line: &str) -> bool {
    let trimmed = line.trim();
    COMMENT_PREFIXES.iter().any(|p| trimmed.starts_with(p))
}

/// Indentation mode (Codex's algorithm): from the anchor line, grow up and down while lines are
/// at least `min_indent` deep (blank lines take the indentation of the line above), stopping at
/// the second line at `min_indent` on either side unless `include_siblings`; comment lines at
/// that level above the block count as its header when `include_header`.
pub fn block(
    lines: &[&str],
    offset: usize,
    limit: usize,
    options: &Indentation,
) -> Result<Vec<String>, NodeError> {
    let anchor_line = options.anchor_line.unwrap_or(offset);
    if lines.is_empty() || anchor_line > lines.len() {
        return Err(NodeError::invalid_input(format!(
            "anchor_line {anchor_line} is past the end of the file ({} lines)",
            lines.len()
        )));
    }
    let guard = options.max_lines.unwrap_or(limit);
    let anchor = anchor_line - 1;
    let mut effective = Vec::with_capacity(lines.len());
    let mut previous = 0usize;
    for line in lines {
        if !is_blank(line) {
            previous = indent_of(line);
        }
        effective.push(previous);
    }
    let anchor_indent = effective[anchor];
    let min_indent = if options.max_levels == 0 {
        0
    } else {
        // max_levels is any count an agent sends: saturate rather than overflow.
        anchor_indent.saturating_sub(options.max_levels.saturating_mul(TAB_WIDTH))
    };
    let final_limit = limit.min(guard).min(lines.len());
    if final_limit == 1 {
        return Ok(vec![numbered(anchor_line, lines[anchor])]);
    }
    let mut up: Option<usize> = anchor.checked_sub(1);
    let mut down = anchor + 1;
    let mut up_at_min = 0usize;
    let mut down_at_min = 0usize;
    let mut out: VecDeque<usize> = VecDeque::from([anchor]);
    while out.len() < final_limit {
        let mut progressed = 0isize;
        if let Some(i) = up {
            if effective[i] >= min_indent {
                out.push_front(i);
                progressed += 1;
                up = i.checked_sub(1);
                if effective[i] == min_indent && !options.include_siblings {
                    let header_comment = options.include_header && is_comment(lines[i]);
                    if header_comment || up_at_min == 0 {
                        up_at_min += 1;
                    } else {
                        // A sibling above: not part of the block.
                        out.pop_front();
                        progressed -= 1;
                        up = None;
                    }
                }
                if out.len() >= final_limit {
                    break;
                }
            } else {
                up = None;
            }
        }
        if down < lines.len() {
            let j = down;
            if effective[j] >= min_indent {
                out.push_back(j);
                progressed += 1;
                down += 1;
                if effective[j] == min_indent && !options.include_siblings {
                    if down_at_min > 0 {
                        // A sibling below: not part of the block.
                        out.pop_back();
                        progressed -= 1;
                        down = lines.len();
                    }
                    down_at_min += 1;
                }
            } else {
                down = lines.len();
            }
        }
        if progressed == 0 {
            break;
        }
    }
    while out.front().is_some_and(|&i| is_blank(lines[i])) {
        out.pop_front();
    }
    while out.back().is_some_and(|&i| is_blank(lines[i])) {
        out.pop_back();
    }
    Ok(out.into_iter().map(|i| numbered(i + 1, lines[i])).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_max_levels_means_no_limit_instead_of_overflowing() {
        let lines = ["fn f() {", "    if x {", "        y();", "    }", "}"];
        let options = Indentation {
            anchor_line: Some(3),
            max_levels: usize::MAX,
            ..Indentation::default()
        };
        let out = block(&lines, 1, 10, &options).unwrap();
        assert_eq!(out.len(), 5, "{out:?}");
    }
}
