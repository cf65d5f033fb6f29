//! A Markdown preview far longer than its cap keeps only the rendering's two ends in memory
//! (`render_markdown_kept`). Without raw HTML that must change nothing: the node's preview is
//! exactly the cut of the whole rendering. With raw HTML the ends are flattened and sanitised
//! on their own: still bounded and safe.

use super::support::*;
use cheng_nodes_documents::preview::sanitize::{
    flatten_rendered, render_markdown_bounded, render_markdown_kept,
};
use cheng_nodes_documents::preview::{bound, Operation};
use cheng_nodes_documents::WorkspacePreview;
use serde_json::{json, Value};

fn node_preview(root: &std::path::Path, markdown: &str, max_bytes: usize) -> Value {
    Value::Object(
        run(
            &WorkspacePreview,
            root,
            json!({"operation": "markdown", "content": markdown, "max_bytes": max_bytes}),
        )
        .expect("preview runs"),
    )
}

/// What the preview was before the ends were kept: the whole rendering, flattened, then cut.
fn whole_then_cut(markdown: &str, max_bytes: usize) -> String {
    let rendered = render_markdown_bounded(markdown, || Ok::<(), ()>(())).expect("renders");
    let flat = flatten_rendered(rendered, || Ok::<(), ()>(())).expect("flattens");
    bound(Operation::Markdown, &flat.html, max_bytes).0
}

/// Documents, and whether their rendering can be cut (one image whose `alt` text is the whole
/// rendering cannot: its text lies inside the `<img>` tag, so it is kept whole).
fn documents() -> Vec<(String, bool)> {
    let section = |i: usize| {
        format!(
            "# Part {i}\n\nSome *emphasis*, **strong**, `code`, a [link](https://e.example/{i} \"t\") and \
             ![an image with *alt* text](i{i}.png \"title\") in one paragraph.\n\n\
             - item\n  - nested with ![alt {i}](x.png)\n\n| a | b |\n|---|--:|\n| 1 | 2 |\n\n```rust\nfn f() {{}}\n```\n\n\
             > quote {i}\n\n## Part {i}\n\n"
        )
    };
    vec![
        ((0..400).map(section).collect(), true),
        ("*a".repeat(40_000), true),
        ("[a](".repeat(20_000), true),
        (
            format!("![{}]({})", "x ".repeat(30_000), "y".repeat(1000)),
            false,
        ),
        (format!("{}x\n\n", "> ".repeat(1000)).repeat(20), true),
        (
            (0..3000)
                .map(|i| format!("![i{i}](u{i}) text {i}\n"))
                .collect(),
            true,
        ),
    ]
}

#[test]
fn without_raw_html_the_kept_ends_give_the_whole_renderings_cut() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (markdown, can_cut) in documents() {
        for max_bytes in [64, 300, 1000, 4096] {
            // The rendering really was cut, not kept whole (the node keeps 4 × max_bytes a side).
            let kept = render_markdown_kept(&markdown, 4 * max_bytes, || Ok::<(), ()>(()))
                .expect("renders");
            assert_eq!(
                kept.cut.is_some(),
                can_cut,
                "document starting {:?} at {max_bytes}",
                &markdown[..40]
            );
            let out = node_preview(dir.path(), &markdown, max_bytes);
            let expected = whole_then_cut(&markdown, max_bytes);
            assert_eq!(
                out["preview"].as_str(),
                Some(expected.as_str()),
                "max_bytes {max_bytes}, document starting {:?}",
                &markdown[..40]
            );
            assert_eq!(out["preview_truncated"], true);
        }
    }
}

#[test]
fn with_raw_html_the_kept_ends_stay_bounded_and_safe() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cases = [
        "> - *[<div><b>_`".repeat(20_000),
        format!(
            "<div>\n\n{}<script>alert(1)</script>{}\n\nend <img src=x onerror=alert(2)>",
            "<b>".repeat(30_000),
            "<!-- x".repeat(5000)
        ),
        format!(
            "{}<a href=\"javascript:alert(3)\">x</a>",
            "<span title='>'>".repeat(20_000)
        ),
    ];
    for markdown in &cases {
        for max_bytes in [64, 1000, 4096] {
            let out = node_preview(dir.path(), markdown, max_bytes);
            let preview = out["preview"].as_str().expect("preview");
            assert!(
                preview.len() <= max_bytes,
                "{} > {max_bytes}",
                preview.len()
            );
            for bad in ["<script", "onerror", "javascript:"] {
                assert!(!preview.contains(bad), "{bad} in {preview}");
            }
            assert_eq!(out["preview_truncated"], true);
        }
    }
}
