//! The text content of a tool result: what a model reads when its host passes on the text and
//! keeps `structuredContent` for programs. The node's main payload as `cheng run` shows it
//! (`cheng_node::view`, without colour), the command's stderr and the node's warnings, then the
//! summary and, on failure, the error. The payload and stderr share a cap; past it the middle is
//! cut and a note says how much and where the whole is.

use cheng_node::view::{self, Style};
use cheng_node::{ErrorKind, Values};
use serde_json::Value;

/// Most bytes of payload and stderr together in one text content (about 25 000 tokens, what
/// common hosts pass on of one tool result).
pub const MAX_TEXT_BYTES: usize = 100_000;

/// The text for `outputs` of a `node_type` run offered as the tool `name`, with the server's
/// `notes` last.
pub fn text(name: &str, node_type: &str, outputs: &Values, notes: &[String]) -> String {
    let success = outputs.get("success") != Some(&Value::Bool(false));
    let view = view::render(node_type, outputs, Style::plain());
    let mut body = view.payload;
    if !view.stderr.is_empty() {
        body.push_str("stderr:\n");
        body.push_str(&view.stderr);
    }
    let mut text = bounded(body);
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    for warning in &view.warnings {
        text.push_str(&format!("warning: {warning}\n"));
    }
    let summary = outputs
        .get("summary")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    match summary {
        Some(summary) => text.push_str(summary),
        None if success => text.push_str(&format!("tool `{name}` succeeded")),
        None => {}
    }
    if !success {
        let code = outputs
            .get("error_kind")
            .and_then(Value::as_str)
            .unwrap_or(ErrorKind::Internal.code());
        let error = outputs
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or("the tool reported success: false");
        if !summary.is_some_and(|s| s.contains(error)) {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!("tool `{name}` failed: {code}: {error}"));
        }
    }
    for note in notes {
        text.push('\n');
        text.push_str(note);
    }
    text
}

/// `body` within [`MAX_TEXT_BYTES`]: head and tail kept, the cut named.
fn bounded(body: String) -> String {
    if body.len() <= MAX_TEXT_BYTES {
        return body;
    }
    let cut = cheng_node::text::head_tail(body.as_bytes(), MAX_TEXT_BYTES);
    format!(
        "{}\n[the text content is capped at {MAX_TEXT_BYTES} bytes: {} of {} were cut from the middle; structuredContent holds every output in full, or narrow the call (a smaller range, a filter, a limit)]\n",
        cut.text.trim_end_matches('\n'),
        cut.omitted_bytes,
        cut.total_bytes
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn outputs(value: Value) -> Values {
        match value {
            Value::Object(map) => map,
            _ => Values::new(),
        }
    }

    #[test]
    fn a_file_read_carries_its_lines_then_the_summary() {
        let out = outputs(json!({
            "success": true,
            "content": "[README.md#5CD2]\nL1: # cheng\nL2: \nL3: text",
            "summary": "read README.md lines 1-3 (3 lines, tag 5CD2)"
        }));
        assert_eq!(
            text("read_file", "tools/read_file", &out, &[]),
            "[README.md#5CD2]\nL1: # cheng\nL2: \nL3: text\nread README.md lines 1-3 (3 lines, tag 5CD2)"
        );
    }

    #[test]
    fn a_failure_names_its_code_and_error_after_the_streams() {
        let out = outputs(json!({
            "success": false,
            "stdout": "building\n",
            "stderr": "error: no\n",
            "summary": "exit 1",
            "error_kind": "LOCAL_EXECUTOR_COMMAND_FAILED",
            "error": "the command exited with 1"
        }));
        assert_eq!(
            text("workspace_shell", "tools/workspace_shell", &out, &["note".to_string()]),
            "building\nstderr:\nerror: no\nexit 1\ntool `workspace_shell` failed: LOCAL_EXECUTOR_COMMAND_FAILED: the command exited with 1\nnote"
        );
    }

    #[test]
    fn a_long_payload_is_cut_at_the_cap_and_says_so() {
        let long = "x".repeat(MAX_TEXT_BYTES * 3);
        let out = outputs(json!({"success": true, "stdout": long, "summary": "ok"}));
        let shown = text("workspace_shell", "tools/workspace_shell", &out, &[]);
        assert!(shown.len() < MAX_TEXT_BYTES + 400, "{}", shown.len());
        let cut = MAX_TEXT_BYTES * 3 + 1 - MAX_TEXT_BYTES;
        assert!(
            shown.contains(&format!("{cut} of {} were cut", MAX_TEXT_BYTES * 3 + 1)),
            "{}",
            &shown[shown.len() - 400..]
        );
        assert!(shown.ends_with("ok"));
    }
}
