//! Fixture files under fixtures/markdown with checked-in expected outline and diagnostics.
//! Each expected file's `$source` says where its content came from (markdownlint, github-slugger
//! or a hand check). Regenerate after an intended change with
//! `CHENG_BLESS=1 cargo test -p cheng-nodes-documents` (never under CI), then check the diff as
//! its `$source` says.

use super::support::*;
use cheng_nodes_documents::markdown::{analyze, Operation};
use cheng_nodes_documents::source::{read_text, MAX_TEXT_BYTES};
use serde_json::{json, Value};

fn check_fixture(root: &std::path::Path, rel: &str, expected_rel: &str, operations: &[Operation]) {
    let file = read_text(root, rel, "path", MAX_TEXT_BYTES).expect("fixture reads");
    let mut actual = serde_json::Map::new();
    for op in operations {
        let out = analyze(root, &file, *op);
        let key = match op {
            Operation::Outline => "outline",
            Operation::Diagnostics => "diagnostics",
            Operation::FormatSuggestions => "suggested_edits",
            Operation::LinkCheckLocal => "link_check_local",
        };
        let value = match op {
            Operation::LinkCheckLocal => {
                json!({ "summary": out["summary"], "diagnostics": out["diagnostics"] })
            }
            _ => out[key].clone(),
        };
        actual.insert(key.into(), value);
    }
    let actual = Value::Object(actual);
    let expected_path = root.join(expected_rel);
    let mut expected: Value = serde_json::from_str(
        &std::fs::read_to_string(&expected_path).unwrap_or_else(|e| {
            panic!(
                "{} is missing ({e}); write it by hand, with a `$source`",
                expected_path.display()
            )
        }),
    )
    .expect("expected file is JSON");
    // Where the expected content came from; not compared.
    let source = expected
        .as_object_mut()
        .and_then(|o| o.remove("$source"))
        .unwrap_or_default();
    assert!(
        source.as_str().is_some_and(|s| !s.is_empty()),
        "{expected_rel} has no `$source` saying where its expected content came from"
    );
    if std::env::var_os("CHENG_BLESS").is_some() {
        // Blessing copies the implementation's own output: only by hand, never in CI.
        assert!(
            std::env::var_os("CI").is_none(),
            "CHENG_BLESS is set under CI: expected files are rewritten by hand only"
        );
        let mut blessed = serde_json::Map::new();
        blessed.insert("$source".into(), source);
        blessed.extend(actual.as_object().cloned().unwrap_or_default());
        let text = serde_json::to_string_pretty(&Value::Object(blessed)).expect("json") + "\n";
        std::fs::write(&expected_path, text).expect("write expected");
        return;
    }
    assert_eq!(
        actual,
        expected,
        "{rel} differs from {expected_rel}; actual:\n{}",
        serde_json::to_string_pretty(&actual).unwrap_or_default()
    );
}

const ALL: &[Operation] = &[
    Operation::Outline,
    Operation::Diagnostics,
    Operation::FormatSuggestions,
];

#[test]
fn headings_fixture() {
    check_fixture(&fixtures(), "headings.md", "headings.expected.json", ALL);
}

#[test]
fn whitespace_fixture() {
    check_fixture(
        &fixtures(),
        "whitespace.md",
        "whitespace.expected.json",
        ALL,
    );
}

#[test]
fn links_fixture() {
    check_fixture(&fixtures(), "links.md", "links.expected.json", ALL);
}

#[test]
fn clean_fixture_has_no_findings() {
    check_fixture(&fixtures(), "clean.md", "clean.expected.json", ALL);
    let file = read_text(&fixtures(), "clean.md", "path", MAX_TEXT_BYTES).expect("reads");
    assert_eq!(
        analyze(&fixtures(), &file, Operation::Diagnostics)["diagnostics"],
        json!([])
    );
}

#[test]
fn site_fixture_link_check() {
    let root = fixtures().join("site");
    check_fixture(
        &root,
        "index.md",
        "index.expected.json",
        &[Operation::LinkCheckLocal],
    );
    check_fixture(
        &root,
        "docs/guide.md",
        "docs/guide.expected.json",
        &[Operation::LinkCheckLocal],
    );
}

#[test]
fn edge_fixture() {
    // Bare e-mail addresses, headings in list items and blockquotes, fence lines with trailing
    // spaces, whitespace-only alt text: the cases compared with markdownlint in markdownlint.rs.
    check_fixture(&fixtures(), "edge.md", "edge.expected.json", ALL);
}
