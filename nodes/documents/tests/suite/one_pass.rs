//! The Markdown preview renders in one pulldown-cmark pass (heading anchors filled in as each
//! heading ends) and skips the flattening pass when the rendering has no raw HTML. Both must
//! give what the outline and the full pipeline give.

use super::support::*;
use cheng_nodes_documents::markdown::Document;
use cheng_nodes_documents::preview::flatten::{flatten, MAX_DEPTH};
use cheng_nodes_documents::preview::sanitize::{
    flatten_rendered, render_markdown, render_markdown_bounded, sanitize,
};

/// The ids of the rendered headings, in order (`""` for a heading without one).
fn heading_ids(html: &str) -> Vec<String> {
    let re = regex::Regex::new(r#"<h[1-6](?: id="([^"]*)")?[ >]"#).expect("regex");
    re.captures_iter(html)
        .map(|c| c.get(1).map(|m| m.as_str().to_string()).unwrap_or_default())
        .collect()
}

fn outline_ids(markdown: &str) -> Vec<String> {
    Document::parse(markdown)
        .headings
        .into_iter()
        .map(|h| h.anchor)
        .collect()
}

#[test]
fn one_pass_anchors_match_the_outline() {
    // A list nested by indentation, one level per line, deeper than the bound: the heading
    // after it sits past MAX_DEPTH containers (a list level counts two: list and item).
    let levels = MAX_DEPTH / 2 + 10;
    let nest: String = (0..levels)
        .map(|i| format!("{}- x\n", "  ".repeat(i)))
        .collect();
    let deep = format!("{nest}{}- ", "  ".repeat(levels));
    let cases = [
        "# A\n\n## A\n\n### A 1\n\n# A\n".to_string(),
        // An explicit id reserves its slug for earlier headings too.
        "# a\n\n# b {#a}\n\n# a\n".to_string(),
        "# x {.c #a-1}\n\n# a\n\n# a\n\n# a\n".to_string(),
        "# ![logo](l.png) Title `code` *em*\n\nSetext\nover two lines\n===\n\n# Title code em\n"
            .to_string(),
        // A heading flattened past the depth bound still takes its anchor, as in the outline.
        format!("# h\n\n{deep}# h\n\n# h\n\n{deep}# i {{#h-3}}\n\n# h\n"),
    ];
    for markdown in &cases {
        let ids = heading_ids(&render_markdown(markdown));
        let doc = Document::parse(markdown);
        let expected: Vec<String> = doc
            .headings
            .iter()
            .filter(|h| {
                !markdown[..h.range.start]
                    .rsplit('\n')
                    .next()
                    .is_some_and(|l| l.starts_with(&"  ".repeat(levels)))
            })
            .map(|h| h.anchor.clone())
            .collect();
        assert_eq!(
            ids,
            expected,
            "{markdown:?} (outline: {:?})",
            outline_ids(markdown)
        );
    }
}

#[test]
fn without_raw_html_the_flattening_pass_changes_nothing() {
    let mut documents: Vec<String> = [
        "headings.md",
        "whitespace.md",
        "links.md",
        "clean.md",
        "edge.md",
    ]
    .iter()
    .filter_map(|name| std::fs::read_to_string(fixtures().join(name)).ok())
    .collect();
    assert_eq!(documents.len(), 5, "fixtures/markdown");
    documents.push(format!("{}x\n", "> ".repeat(MAX_DEPTH - 2)));
    documents.push(format!("{}\n\n    code\n", "- ".repeat(MAX_DEPTH - 1)));
    documents.push("| a | b |\n|---|---|\n| *1* | [2](u) |\n\n```rust\nfn x() {}\n```\n\n[^1]: note\n\nx[^1] & < > \" ' \u{0}\n".to_string());
    for markdown in &documents {
        let rendered = render_markdown_bounded(markdown, || Ok::<(), ()>(())).unwrap_or_default();
        if rendered.raw_html {
            continue;
        }
        let flat = flatten(&rendered.html, || Ok::<(), ()>(())).unwrap_or_default();
        let shortcut = flatten_rendered(rendered, || Ok::<(), ()>(())).unwrap_or_default();
        assert_eq!(
            sanitize(&flat.html),
            sanitize(&shortcut.html),
            "{}",
            &markdown[..markdown.len().min(200)]
        );
    }
}
