//! `html` previews of large pages (past `STREAM_ABOVE_BYTES`) are summarised from the token
//! stream, without building a tree (a tree for 16 MiB of sibling elements took 4 s): an ordinary
//! page gives the preview the tree walk gives, and nesting past the bound is still flattened
//! and named.

use super::support::*;
use cheng_nodes_documents::preview::flatten::{flatten, MAX_DEPTH};
use cheng_nodes_documents::preview::html_text::{render, summarize, STREAM_ABOVE_BYTES};
use cheng_nodes_documents::preview::{bound, Operation};
use cheng_nodes_documents::WorkspacePreview;
use serde_json::json;

#[test]
fn a_large_ordinary_page_previews_as_the_tree_walk_does() {
    let (_d, root) = temp_workspace();
    let mut page = String::from(
        "<!doctype html><html><head><title>Big &amp; long</title><style>p{}</style></head><body>\n",
    );
    let mut i = 0;
    while page.len() <= STREAM_ABOVE_BYTES + 4096 {
        page.push_str(&format!(
            "<section><h2>Part {i}</h2><p>Text of part {i}, with <a href=\"/p/{i}\">a link</a> and <b>bold</b>.</p>\
             <ul><li>one<li>two</ul><pre>\ncode {i}\n  indented</pre><table><tr><td>{i}</td></tr></table></section>\n"
        ));
        i += 1;
    }
    page.push_str("</body></html>");
    std::fs::write(root.join("big.html"), &page).expect("write");
    let out = run(
        &WorkspacePreview,
        &root,
        json!({"operation": "html", "path": "big.html", "max_bytes": 65536}),
    )
    .expect("preview");
    let tree = render(&summarize(
        &flatten(&page, || Ok::<(), ()>(())).unwrap_or_default().html,
    ));
    let (expected, truncated) = bound(Operation::Html, &tree, 65536);
    assert!(truncated, "the page is larger than a preview");
    assert!(
        out["preview"].as_str() == Some(expected.as_str()),
        "the streamed preview differs from the tree walk's"
    );
    assert_eq!(out["preview_truncated"], true);
}

#[test]
fn a_large_deep_page_is_flattened_and_says_so() {
    let (_d, root) = temp_workspace();
    let levels = STREAM_ABOVE_BYTES / 5 + 1000;
    let page = format!("<title>T</title>{}<h1>deep</h1>x", "<div>".repeat(levels));
    std::fs::write(root.join("deep.html"), &page).expect("write");
    let out = run(
        &WorkspacePreview,
        &root,
        json!({"operation": "html", "path": "deep.html"}),
    )
    .expect("preview");
    let summary = out["summary"].as_str().unwrap_or("");
    let dropped = levels + 1 - MAX_DEPTH;
    assert!(
        summary.contains(&format!("({dropped} elements kept as plain content")),
        "{summary}"
    );
    let preview = out["preview"].as_str().unwrap_or("");
    assert!(
        preview.starts_with("Title: T\n") && preview.contains("deepx"),
        "{preview}"
    );
}
