//! `tools/workspace_preview`: bounded, sanitised previews — Markdown to safe HTML, HTML to a
//! text summary, or file metadata. Read-only.
//!
//! `path` takes precedence over `content`. The preview is head+tail truncated to `max_bytes`
//! (default and maximum 524288), the omission marker included. For `artifact_summary`
//! (`format: "metadata"`) the metadata is the `metadata` output, a JSON object for programs, and
//! the preview shows the same fields as `key  value` rows for a reader.

pub mod artifact;
pub mod flatten;
#[doc(hidden)]
pub mod fuzzing;
pub mod html_text;
pub mod marks;
pub mod prefix;
pub mod sanitize;

use crate::source::{read_text, resolve_file, MAX_TEXT_BYTES};
use cheng_node::input::{self, non_empty_str, opt_str};
use cheng_node::paths::display_relative;
use cheng_node::text::{head_tail, human_bytes, omitted_marker};
use cheng_node::CancellationToken;
use cheng_node::{
    failure, Effects, ErrorKind, Node, NodeError, NodeSpec, PortSpec, PortType, RunContext, Values,
};
use flatten::MAX_DEPTH;
use sanitize::MarkdownHtml;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

pub const OPERATIONS: &[&str] = &["markdown", "html", "artifact_summary"];
/// Default and largest preview size.
pub const MAX_PREVIEW_BYTES: i64 = 524_288;

/// `max_bytes`: the spec is the only place its default (the maximum) and range live.
const MAX_BYTES: PortSpec = PortSpec::input(
    "max_bytes",
    PortType::Integer,
    "Preview byte cap (default and max 524288)",
)
.default("524288")
.min(1)
.max(MAX_PREVIEW_BYTES);

pub static SPEC: NodeSpec = NodeSpec {
    id: "tools/workspace_preview",
    title: "Workspace Preview",
    description: "Render bounded, sanitized previews: Markdown to safe HTML, HTML to a text summary, or artifact metadata. Markup nested deeper than 256 levels is flattened (the summary says so). Read-only; persisting output goes through file operations.",
    category: "workspace",
    inputs: &[
        PortSpec::input("operation", PortType::String, "Preview operation: markdown, html, or artifact_summary")
            .required()
            .choices(OPERATIONS),
        PortSpec::input(
            "path",
            PortType::String,
            "Source file relative to the workspace root. Takes precedence over content.",
        )
        .default("null"),
        PortSpec::input("content", PortType::String, "Inline source text when no workspace file is involved").default("null"),
        MAX_BYTES,
        PortSpec::sandbox_root(),
    ],
    outputs: &[
        PortSpec::output("operation", PortType::String, "Preview operation that was executed"),
        failure::success("Whether the preview succeeded"),
        PortSpec::output("summary", PortType::String, "Human-readable summary of the preview result"),
        PortSpec::output("format", PortType::String, "Output format: html, text, or metadata"),
        PortSpec::output("preview", PortType::String, "Rendered or derived preview text (bounded)"),
        PortSpec::output(
            "preview_truncated",
            PortType::Boolean,
            "True when the preview was head+tail truncated due to byte cap",
        ),
        PortSpec::output("source_bytes", PortType::Integer, "Size of the source content in bytes"),
        PortSpec::output("source_path", PortType::String, "Source file path when the preview was from a workspace file"),
        PortSpec::output(
            "metadata",
            PortType::Object,
            "artifact_summary: the file's metadata as a JSON object (path, size, mime, kind, encoding, lines, image, json, csv, sha256); null for the other operations",
        ),
        failure::ERROR_KIND,
        failure::TERMINAL,
        failure::ERROR,
    ],
    gate: None,
    effects: Effects::ReadOnly,
};

pub struct WorkspacePreview;

cheng_node::inventory::submit! { cheng_node::NodeRegistration::new(&WorkspacePreview) }

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Markdown,
    Html,
    ArtifactSummary,
}

impl Operation {
    pub fn parse(input: &Values) -> Result<Self, NodeError> {
        let choices = OPERATIONS.join(", ");
        match non_empty_str(input, "operation") {
            None => Err(NodeError::invalid_input(format!(
                "operation is required: one of {choices}"
            ))),
            Some("markdown") => Ok(Operation::Markdown),
            Some("html") => Ok(Operation::Html),
            Some("artifact_summary") => Ok(Operation::ArtifactSummary),
            Some(other) => Err(NodeError::invalid_input(format!(
                "operation {other:?} is not one of {choices}"
            ))),
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Operation::Markdown => "markdown",
            Operation::Html => "html",
            Operation::ArtifactSummary => "artifact_summary",
        }
    }
}

/// Where the source comes from, after `path`-over-`content` precedence.
enum Source {
    Path(String),
    Content(String),
}

#[cheng_node::async_trait]
impl Node for WorkspacePreview {
    fn spec(&self) -> &'static NodeSpec {
        &SPEC
    }

    async fn run(&self, ctx: &RunContext, input: Values) -> Result<Values, NodeError> {
        let operation = Operation::parse(&input)?;
        let max_bytes = usize::try_from(input::int(&input, &MAX_BYTES)?).map_err(|_| {
            NodeError::internal("max_bytes passed its range check but is not a size")
        })?;
        let source = match (non_empty_str(&input, "path"), opt_str(&input, "content")) {
            (Some(path), _) => Source::Path(path.to_string()),
            (None, Some(content)) => Source::Content(content.to_string()),
            (None, None) => {
                return Err(NodeError::invalid_input(
                    "give path (a workspace file) or content (inline text); both are unset",
                ))
            }
        };
        let ctx = ctx.clone();
        tokio::task::spawn_blocking(move || preview(&ctx, operation, source, max_bytes, TIME_LIMIT))
            .await
            .map_err(|e| NodeError::internal(format!("preview stopped unexpectedly: {e}")))?
    }
}

/// Longest a preview may run; its steps check this (and cancellation) at bounded intervals of
/// work. Every input up to the size cap takes far less (docs/performance.md): this only stops a
/// run on a machine too loaded to finish it.
pub const TIME_LIMIT: Duration = Duration::from_secs(60);

/// Cancellation and the time limit, checked inside every long step.
struct Budget<'a> {
    cancel: &'a CancellationToken,
    deadline: Instant,
    limit: Duration,
}

impl Budget<'_> {
    fn check(&self) -> Result<(), NodeError> {
        if self.cancel.is_cancelled() {
            return Err(NodeError::new(
                ErrorKind::Cancelled,
                "cancelled while rendering the preview",
            ));
        }
        if Instant::now() >= self.deadline {
            return Err(NodeError::new(
                ErrorKind::TimedOut,
                format!("the preview took longer than its {} s limit and was stopped; preview a smaller file", self.limit.as_secs()),
            ));
        }
        Ok(())
    }
}

fn preview(
    ctx: &RunContext,
    operation: Operation,
    source: Source,
    max_bytes: usize,
    limit: Duration,
) -> Result<Values, NodeError> {
    let budget = Budget {
        cancel: &ctx.cancel,
        deadline: Instant::now() + limit,
        limit,
    };
    let root = &ctx.workspace;
    let mut out = Values::new();
    out.insert("operation".into(), json!(operation.name()));
    out.insert("success".into(), json!(true));
    for port in [
        "summary",
        "format",
        "preview",
        "preview_truncated",
        "source_bytes",
        "source_path",
        "metadata",
        "error_kind",
        "terminal",
        "error",
    ] {
        out.insert(port.into(), Value::Null);
    }
    failure::fill::<()>(&mut out, &Ok(()));
    let mut flattened_count = 0usize;
    let mut plain_marks = 0usize;
    let mut pre_bounded = false;
    let (source_path, source_bytes, text, summary_head) = match (operation, &source) {
        (Operation::ArtifactSummary, _) => {
            let meta = match &source {
                Source::Path(rel) => {
                    let (path, _) = resolve_file(root, rel, "path")?;
                    let display = display_relative(root, &path);
                    out.insert("source_path".into(), json!(display));
                    let fs = crate::source::workspace_fs(root)?;
                    artifact::summarize_file(&fs, &path, &display, &ctx.cancel)?
                }
                Source::Content(content) => {
                    artifact::summarize_bytes(content.as_bytes(), &ctx.cancel)?
                }
            };
            let value = serde_json::to_value(&meta)
                .map_err(|e| NodeError::internal(format!("metadata could not be rendered: {e}")))?;
            let text = artifact::rows(&value);
            out.insert("metadata".into(), value);
            let mut head = format!(
                "{}: {}, {} ({})",
                meta.path.as_deref().unwrap_or("content"),
                meta.size,
                meta.mime,
                meta.kind
            );
            if let Some(lines) = meta.lines {
                head.push_str(&format!(
                    ", {lines} line{}",
                    if lines == 1 { "" } else { "s" }
                ));
            }
            if let Some(img) = &meta.image {
                head.push_str(&format!(", {}x{}", img.width, img.height));
            }
            out.insert("format".into(), json!("metadata"));
            (meta.path.clone(), meta.size_bytes, text, head)
        }
        (_, Source::Path(rel)) => {
            let file = read_text(root, rel, "path", MAX_TEXT_BYTES)?;
            let rendered = render(operation, &file.text, max_bytes, &budget)?;
            out.insert("format".into(), json!(rendered.format));
            flattened_count = rendered.flattened;
            plain_marks = rendered.plain_marks;
            pre_bounded = rendered.bounded;
            let text = rendered.text;
            (Some(file.display.clone()), file.bytes, text, file.display)
        }
        (_, Source::Content(content)) => {
            if content.len() as u64 > MAX_TEXT_BYTES {
                return Err(NodeError::invalid_input(format!(
                    "content is {}, over the {} cap; pass a smaller text",
                    human_bytes(content.len() as u64),
                    human_bytes(MAX_TEXT_BYTES)
                )));
            }
            let rendered = render(operation, content, max_bytes, &budget)?;
            out.insert("format".into(), json!(rendered.format));
            flattened_count = rendered.flattened;
            plain_marks = rendered.plain_marks;
            pre_bounded = rendered.bounded;
            let text = rendered.text;
            (None, content.len() as u64, text, "content".to_string())
        }
    };
    let (preview, truncated) = if pre_bounded {
        (text, true)
    } else {
        bound(operation, &text, max_bytes)
    };
    let mut summary = format!(
        "{summary_head}: {} preview of {} source",
        operation.name(),
        human_bytes(source_bytes)
    );
    if operation == Operation::ArtifactSummary {
        summary = summary_head;
    }
    if flattened_count > 0 {
        summary.push_str(&format!(
            "; nesting deeper than {MAX_DEPTH} levels was flattened ({flattened_count} element{} kept as plain content of their ancestor)",
            if flattened_count == 1 { "" } else { "s" }
        ));
    }
    if plain_marks > 0 {
        summary.push_str(&marks::warning(plain_marks));
    }
    if truncated {
        summary.push_str(&format!(
            " (preview head+tail truncated to {})",
            human_bytes(max_bytes as u64)
        ));
    }
    out.insert("summary".into(), json!(summary));
    out.insert("preview".into(), json!(preview));
    out.insert("preview_truncated".into(), json!(truncated));
    out.insert("source_bytes".into(), json!(source_bytes));
    if let Some(path) = source_path {
        out.insert("source_path".into(), json!(path));
    }
    budget.check()?;
    Ok(out)
}

/// Flattened HTML longer than this many times `max_bytes` is cut head+tail before it is
/// sanitised (see [`render`]).
const PRE_CUT_FACTOR: usize = 4;

/// What [`render`] made.
struct Rendered {
    format: &'static str,
    text: String,
    /// Elements flattened past [`MAX_DEPTH`].
    flattened: usize,
    /// Inline marks past [`marks::MAX_MARKS`], shown as plain text.
    plain_marks: usize,
    /// Already head+tail cut to `max_bytes` (and sanitised after the cut).
    bounded: bool,
}

/// Renders the preview text. For `markdown`, a rendering far longer than the preview (more
/// than [`PRE_CUT_FACTOR`] × `max_bytes`) is cut head+tail *before* sanitising, exactly as
/// [`bound`] cuts (outside tags, then the splice is sanitised): the sanitiser's tree is then
/// built for what the preview shows, not for 16 MiB of elements nobody sees. The flattened
/// HTML has no raw-text regions, so such a cut always falls between text and elements.
fn render(
    operation: Operation,
    text: &str,
    max_bytes: usize,
    budget: &Budget,
) -> Result<Rendered, NodeError> {
    budget.check()?;
    Ok(match operation {
        Operation::Markdown => {
            let keep = PRE_CUT_FACTOR * max_bytes;
            let mut rendered = sanitize::render_markdown_kept(text, keep, || budget.check())?;
            let plain_marks = rendered.plain_marks;
            if let Some(cut) = rendered.cut.take() {
                // Only the rendering's ends were kept: each is flattened on its own (raw HTML
                // elements are then counted in the ends alone), then cut as below.
                let raw_html = rendered.raw_html;
                let head = sanitize::flatten_rendered(rendered, || budget.check())?;
                let tail = MarkdownHtml {
                    html: cut.tail,
                    flattened: 0,
                    raw_html,
                    plain_marks: 0,
                    cut: None,
                };
                let tail = sanitize::flatten_rendered(tail, || budget.check())?;
                let parts = Parts {
                    head: &head.html,
                    tail: &tail.html,
                    tail_at: head.html.len() + cut.omitted,
                };
                let text = bound_html(parts, max_bytes);
                return Ok(Rendered {
                    format: "html",
                    text,
                    flattened: head.dropped + tail.dropped,
                    plain_marks,
                    bounded: true,
                });
            }
            let flat = sanitize::flatten_rendered(rendered, || budget.check())?;
            let flattened = flat.dropped;
            if flat.html.len() > PRE_CUT_FACTOR * max_bytes {
                let (text, _) = bound(Operation::Markdown, &flat.html, max_bytes);
                Rendered {
                    format: "html",
                    text,
                    flattened,
                    plain_marks,
                    bounded: true,
                }
            } else {
                let text = sanitize::sanitize(&flat.html);
                Rendered {
                    format: "html",
                    text,
                    flattened,
                    plain_marks,
                    bounded: false,
                }
            }
        }
        Operation::Html => {
            let (text, dropped) = html_text::readable_text(text, || budget.check())?;
            budget.check()?;
            Rendered {
                format: "text",
                text,
                flattened: dropped,
                plain_marks: 0,
                bounded: false,
            }
        }
        Operation::ArtifactSummary => Rendered {
            format: "metadata",
            text: String::new(),
            flattened: 0,
            plain_marks: 0,
            bounded: false,
        },
    })
}

/// Head+tail truncation to at most `max_bytes`, the omission marker included. Sanitised HTML
/// is cut only outside tags, so the marker lands in text and a cut can never splice two attribute
/// fragments into something executable; the spliced result is sanitised again anyway (closing
/// what the head left open) and re-cut until it fits. A cap too small for the marker keeps a
/// prefix alone (plain text) or nothing (HTML), still reported as truncated.
pub fn bound(operation: Operation, text: &str, max_bytes: usize) -> (String, bool) {
    if text.len() <= max_bytes {
        return (text.to_string(), false);
    }
    // The longest marker this text can need: at most every byte is omitted.
    let keep = max_bytes.saturating_sub(omitted_marker(text.len() as u64).len());
    if keep == 0 {
        let prefix = if operation == Operation::Markdown {
            ""
        } else {
            &text[..floor_char_boundary(text, max_bytes)]
        };
        return (prefix.to_string(), true);
    }
    if operation != Operation::Markdown {
        return (head_tail(text.as_bytes(), keep).text, true);
    }
    (
        bound_html(
            Parts {
                head: text,
                tail: text,
                tail_at: 0,
            },
            max_bytes,
        ),
        true,
    )
}

/// Sanitised HTML to head+tail cut: the whole text (`head` and `tail` both the text,
/// `tail_at` 0), or the two ends of a rendering too long to keep whole (`tail` starts
/// `tail_at` bytes into it, outside any tag).
#[derive(Clone, Copy)]
struct Parts<'t> {
    head: &'t str,
    tail: &'t str,
    tail_at: usize,
}

impl Parts<'_> {
    fn len(&self) -> usize {
        self.tail_at + self.tail.len()
    }

    /// [`html_cut_points`] across the parts, the tail's point counted in the whole.
    fn cut_points(&self, head: usize, tail: usize) -> (usize, usize) {
        if self.tail_at == 0 {
            return html_cut_points(self.tail, head, tail);
        }
        let (head_end, _) = html_cut_points(self.head, head, self.head.len());
        let (_, tail_start) = html_cut_points(self.tail, 0, tail.saturating_sub(self.tail_at));
        (head_end, self.tail_at + tail_start)
    }
}

/// [`bound`] for sanitised HTML longer than `max_bytes`.
fn bound_html(parts: Parts, max_bytes: usize) -> String {
    let len = parts.len();
    let keep = max_bytes.saturating_sub(omitted_marker(len as u64).len());
    if keep == 0 {
        return String::new();
    }
    let mut cap = keep;
    for _ in 0..16 {
        let (head_end, tail_start) = parts.cut_points(cap / 2, len - (cap - cap / 2));
        let omitted = (tail_start - head_end) as u64;
        let spliced = format!(
            "{}{}{}",
            &parts.head[..head_end],
            omitted_marker(omitted),
            &parts.tail[tail_start - parts.tail_at..]
        );
        let safe = sanitize::sanitize(&spliced);
        if safe.len() <= max_bytes {
            return safe;
        }
        let over = safe.len() - max_bytes;
        cap = cap.saturating_sub(over + 16);
        if cap == 0 {
            break;
        }
    }
    // Markup that cannot be cut small enough: escaped text, which is always safe (an entity cut
    // at the end stays text).
    let text = if parts.tail_at == 0 {
        head_tail(parts.tail.as_bytes(), keep / 6).text
    } else {
        let half = keep / 12;
        let head_end = floor_char_boundary(parts.head, half);
        let mut tail_start = parts.tail.len().saturating_sub(half);
        while !parts.tail.is_char_boundary(tail_start) {
            tail_start += 1;
        }
        let omitted = (parts.tail_at + tail_start - head_end) as u64;
        format!(
            "{}{}{}",
            &parts.head[..head_end],
            omitted_marker(omitted),
            &parts.tail[tail_start..]
        )
    };
    let escaped = ammonia::clean_text(&text);
    escaped[..floor_char_boundary(&escaped, max_bytes)].to_string()
}

/// The largest char boundary at or below `at`.
fn floor_char_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The last position at or before `head` and the first at or after `tail` that lie outside any
/// tag (attribute values may hold raw `<` and `>`, so quotes are tracked) on a char boundary.
fn html_cut_points(html: &str, head: usize, tail: usize) -> (usize, usize) {
    // Text runs are found with memchr (the cut is made up to 16 times on texts of many MiB).
    let bytes = html.as_bytes();
    let mut head_end = 0;
    let mut tail_start = html.len();
    let mut i = 0;
    while i < bytes.len() {
        // Text from `i` up to and including the next `<` (at `open`).
        let open = memchr::memchr(b'<', &bytes[i..]).map_or(bytes.len(), |k| i + k);
        let last = open.min(bytes.len() - 1);
        if i <= head {
            let mut p = last.min(head);
            while p > i && !html.is_char_boundary(p) {
                p -= 1;
            }
            if html.is_char_boundary(p) {
                head_end = p;
            }
        }
        let mut p = i.max(head + 1).max(tail).max(head_end);
        while p <= last && !html.is_char_boundary(p) {
            p += 1;
        }
        if p <= last {
            tail_start = p;
            break;
        }
        // Inside a tag from `open + 1`: quoted attribute values may hold `>`.
        let mut j = open + 1;
        loop {
            let Some(k) = bytes
                .get(j..)
                .and_then(|rest| memchr::memchr3(b'>', b'"', b'\'', rest))
            else {
                j = bytes.len();
                break;
            };
            let at = j + k;
            if bytes[at] == b'>' {
                j = at + 1;
                break;
            }
            j = match memchr::memchr(bytes[at], &bytes[at + 1..]) {
                Some(close) => at + 1 + close + 1,
                None => bytes.len(),
            };
        }
        i = j;
    }
    (head_end, tail_start.max(head_end))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cheng_node::Decision;

    /// The byte-at-a-time scan [`html_cut_points`] replaced.
    fn cut_points_bytewise(html: &str, head: usize, tail: usize) -> (usize, usize) {
        #[derive(PartialEq)]
        enum State {
            Text,
            Tag,
            Double,
            Single,
        }
        let mut state = State::Text;
        let mut head_end = 0;
        let mut tail_start = html.len();
        for (i, b) in html.bytes().enumerate() {
            if state == State::Text && html.is_char_boundary(i) {
                if i <= head {
                    head_end = i;
                } else if i >= tail && i >= head_end {
                    tail_start = i;
                    break;
                }
            }
            state = match (state, b) {
                (State::Text, b'<') => State::Tag,
                (State::Tag, b'>') => State::Text,
                (State::Tag, b'"') => State::Double,
                (State::Tag, b'\'') => State::Single,
                (State::Double, b'"') | (State::Single, b'\'') => State::Tag,
                (s, _) => s,
            };
        }
        (head_end, tail_start.max(head_end))
    }

    #[test]
    fn cut_points_match_the_bytewise_scan() {
        let samples = [
            "<p>héllo <a href=\"x>y\" title='a\"b>'>wörld</a> &amp; <b>z</b></p><p>tail ü</p>",
            "plain text only, no tags at all ééé",
            "<a href=\"unterminated",
            "<<<>>> <x y='>'> text",
            "",
        ];
        for html in samples {
            for head in 0..=html.len() + 1 {
                for tail in [
                    0,
                    head,
                    head + 1,
                    html.len() / 2,
                    html.len().saturating_sub(3),
                    html.len(),
                    html.len() + 2,
                ] {
                    assert_eq!(
                        html_cut_points(html, head, tail),
                        cut_points_bytewise(html, head, tail),
                        "{html:?} {head} {tail}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_time_limit_stops_a_preview_inside_the_pipeline() {
        let ctx = RunContext::for_workspace(SPEC.id, std::env::temp_dir(), Decision::Denied);
        for operation in [Operation::Markdown, Operation::Html] {
            let source = Source::Content("<div>".repeat(100_000));
            let err = preview(&ctx, operation, source, 1000, Duration::ZERO)
                .err()
                .map(|e| (e.kind, e.message));
            let (kind, message) = err.unwrap_or((ErrorKind::Internal, String::new()));
            assert_eq!(kind, ErrorKind::TimedOut, "{operation:?}: {message}");
            assert!(
                message.contains("60 s") || message.contains("0 s limit"),
                "{message}"
            );
        }
    }
}
