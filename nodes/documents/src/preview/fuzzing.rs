//! Properties the fuzzer checks on workspace_preview's rendering (fuzz/fuzz_targets/).

use super::{bound, render, sanitize, Budget, Operation};
use cheng_node::CancellationToken;
use std::time::{Duration, Instant};

/// Input: two bytes of `max_bytes` (big-endian, at least 1), then the document. The preview is
/// at most `max_bytes`; a Markdown preview is HTML the sanitiser leaves unchanged.
fn preview(operation: Operation, data: &[u8]) {
    let [hi, lo, rest @ ..] = data else {
        return;
    };
    let max_bytes = usize::from(u16::from_be_bytes([*hi, *lo])).max(1);
    let text = String::from_utf8_lossy(rest);
    let cancel = CancellationToken::new();
    let limit = Duration::from_secs(60);
    let budget = Budget {
        cancel: &cancel,
        deadline: Instant::now() + limit,
        limit,
    };
    let rendered = match render(operation, &text, max_bytes, &budget) {
        Ok(rendered) => rendered,
        Err(e) => panic!("rendering failed: {e}"),
    };
    let shown = if rendered.bounded {
        rendered.text
    } else {
        bound(operation, &rendered.text, max_bytes).0
    };
    assert!(
        shown.len() <= max_bytes,
        "a {}-byte preview for max_bytes {max_bytes}",
        shown.len()
    );
    // Markdown's preview is sanitised HTML the sanitiser leaves as it is, except markup that
    // cannot be cut small enough, which is shown as escaped text instead (no `<` at all, its
    // entities kept as entities; the sanitiser would decode them to the same text).
    if operation == Operation::Markdown && sanitize::sanitize(&shown) != shown {
        assert!(
            !shown.contains('<'),
            "the sanitiser changes the preview again: {shown:?}"
        );
        let again = sanitize::sanitize(&shown);
        assert_eq!(
            sanitize::sanitize(&again),
            again,
            "the sanitiser is not stable on {shown:?}"
        );
    }
}

pub fn preview_markdown(data: &[u8]) {
    preview(Operation::Markdown, data)
}

pub fn preview_html(data: &[u8]) {
    preview(Operation::Html, data)
}
