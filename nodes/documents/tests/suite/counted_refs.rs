//! Undefined references past the most any operation shows are counted, not kept (millions of
//! `[a][b]` in 16 MiB made diagnostics build millions of findings to show 5 000): the counts in
//! the summaries stay exact, and the findings shown are the same first ones by position.

use super::support::*;
use cheng_nodes_documents::markdown::document::KEPT_BROKEN_REFS;
use cheng_nodes_documents::markdown::rules::UNDEFINED_REFERENCE;
use cheng_nodes_documents::markdown::{Document, MAX_DIAGNOSTICS};
use cheng_nodes_documents::WorkspaceMarkdown;
use serde_json::{json, Value};

/// Undefined references (some on lines with trailing whitespace, another rule) interleaved, so
/// that the shown findings mix rules, and more references than are kept.
fn text(refs: usize) -> String {
    let mut s = String::from("# Title\n\n");
    for i in 0..refs {
        s.push_str(&format!(
            "[t{i}][u{i}]{}\n",
            if i % 3 == 0 { "  x " } else { "" }
        ));
    }
    s
}

#[test]
fn past_the_kept_references_the_rest_are_counted_exactly() {
    let refs = KEPT_BROKEN_REFS + 1234;
    let text = text(refs);
    let doc = Document::parse(&text);
    assert_eq!(
        (doc.broken_refs.len(), doc.broken_refs_omitted),
        (KEPT_BROKEN_REFS, 1234)
    );
    assert!(
        doc.broken_refs
            .windows(2)
            .all(|w| w[0].range.start < w[1].range.start),
        "kept in text order"
    );
    assert_eq!(doc.broken_refs[0].label, "u0");

    let (_d, root) = temp_workspace();
    std::fs::write(root.join("r.md"), &text).expect("write");
    let out = run(
        &WorkspaceMarkdown,
        &root,
        json!({"operation": "diagnostics", "path": "r.md"}),
    )
    .expect("diagnostics");
    let summary = out["summary"].as_str().unwrap_or("");
    let trailing = refs.div_ceil(3);
    assert!(
        summary.contains(&format!("{} findings", refs + trailing)),
        "{summary}"
    );
    assert!(
        summary.contains(&format!("{UNDEFINED_REFERENCE} ×{refs}")),
        "{summary}"
    );
    assert!(
        summary.ends_with(&format!("showing the first {MAX_DIAGNOSTICS}")),
        "{summary}"
    );
    let shown = out["diagnostics"].as_array().cloned().unwrap_or_default();
    assert_eq!(shown.len(), MAX_DIAGNOSTICS);
    let lines: Vec<u64> = shown
        .iter()
        .map(|d| d["line"].as_u64().unwrap_or(0))
        .collect();
    assert!(lines.windows(2).all(|w| w[0] <= w[1]), "by position");
    // The shown ones are the first lines': line 3 on, both rules where both apply.
    let last_line = lines.last().copied().unwrap_or(0);
    let refs_shown = shown
        .iter()
        .filter(|d| d["rule"] == UNDEFINED_REFERENCE)
        .count() as u64;
    assert_eq!(
        refs_shown,
        last_line - 2,
        "every line up to the last shown has its reference: {last_line}"
    );

    let out = run(
        &WorkspaceMarkdown,
        &root,
        json!({"operation": "link_check_local", "path": "r.md"}),
    )
    .expect("links");
    let summary = out["summary"].as_str().unwrap_or("");
    assert!(
        summary.contains(&format!("; {refs} undefined references")),
        "{summary}"
    );
    let shown: Vec<Value> = out["diagnostics"].as_array().cloned().unwrap_or_default();
    assert_eq!(shown.len(), MAX_DIAGNOSTICS);
    assert_eq!(
        shown.last().map(|d| d["line"].clone()),
        Some(json!(MAX_DIAGNOSTICS + 2))
    );

    let out = run(
        &WorkspaceMarkdown,
        &root,
        json!({"operation": "format_suggestions", "path": "r.md"}),
    )
    .expect("suggestions");
    let summary = out["summary"].as_str().unwrap_or("");
    assert!(
        summary.contains(&format!(
            "fixing {trailing} of {} findings",
            refs + trailing
        )),
        "{summary}"
    );
}
