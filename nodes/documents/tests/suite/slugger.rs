//! GitHub anchor conformance: github-slugger's own cases on raw strings, and tricky Markdown
//! headings whose rendered text and anchor GitHub produces.

use cheng_nodes_documents::markdown::slug::Slugger;
use cheng_nodes_documents::markdown::Document;

/// (input, expected) in order through one slugger — duplicates depend on what came before.
const SLUGGER_CASES: &[(&str, &str)] = &[
    ("alpha", "alpha"),
    ("alpha", "alpha-1"),
    ("bravoCharlieDelta", "bravocharliedelta"),
    ("__proto__", "__proto__"),
    ("__proto__", "__proto__-1"),
    ("hasOwnProperty", "hasownproperty"),
    ("echo", "echo"),
    ("echo", "echo-1"),
    ("echo 1", "echo-1-1"),
    ("echo-1", "echo-1-2"),
    ("echo", "echo-2"),
    ("foxtrot-1", "foxtrot-1"),
    ("foxtrot", "foxtrot"),
    ("foxtrot", "foxtrot-2"),
    ("heading with a - dash", "heading-with-a---dash"),
    (
        "heading with an _ underscore",
        "heading-with-an-_-underscore",
    ),
    ("heading with a period.txt", "heading-with-a-periodtxt"),
    (
        "exchange.bind_headers(exchange, routing [, bindCallback])",
        "exchangebind_headersexchange-routing--bindcallback",
    ),
    (" ", "-"),
    (" a", "-a"),
    ("a ", "a-"),
    (" a ", "-a-"),
    ("-a-", "-a--1"),
    (
        "apostrophe’s should be trimmed",
        "apostrophes-should-be-trimmed",
    ),
    ("I ♥ unicode", "i--unicode"),
    ("dash-dash", "dash-dash"),
    ("en–dash", "endash"),
    ("em–dash", "emdash"),
    ("😄 unicode emoji", "-unicode-emoji"),
    ("😄-😄 unicode emoji", "--unicode-emoji"),
    ("😄_😄 unicode emoji", "_-unicode-emoji"),
    ("😄 - an emoji", "---an-emoji"),
    (":smile: - a gemoji", "smile---a-gemoji"),
    ("Привет", "привет"),
    ("Профили пользователей", "профили-пользователей"),
    ("Привет non-latin 你好", "привет-non-latin-你好"),
    (":ok: No underscore", "ok-no-underscore"),
    (":ok_hand: Single", "ok_hand-single"),
    (
        ":ok_hand::hatched_chick: Two in a row with no spaces",
        "ok_handhatched_chick-two-in-a-row-with-no-spaces",
    ),
    (
        ":ok_hand: :hatched_chick: Two in a row",
        "ok_hand-hatched_chick-two-in-a-row",
    ),
    // Category spot checks: Letter_Number kept, Other_Number and symbols dropped, marks kept.
    ("Ⅻ roman", "ⅻ-roman"),
    ("x² squared", "x-squared"),
    ("a‿b connector", "a‿b-connector"),
    ("e\u{301} combining", "e\u{301}-combining"),
    ("price $5 €6", "price-5-6"),
    ("non\u{a0}breaking", "nonbreaking"),
    ("Σίσυφος", "σίσυφος"),
    ("Emoji 👍🏽 skin", "emoji--skin"),
];

#[test]
fn github_slugger_cases() {
    let mut slugger = Slugger::new();
    for (input, expected) in SLUGGER_CASES {
        assert_eq!(slugger.slug(input), *expected, "input {input:?}");
    }
}

/// (Markdown heading line, anchor GitHub gives it) — each in its own document.
const HEADING_CASES: &[(&str, &str)] = &[
    ("# Hello World", "hello-world"),
    ("## `code` and **bold** _em_", "code-and-bold-em"),
    (
        "## [A link](https://example.com) in a heading",
        "a-link-in-a-heading",
    ),
    (
        "## ![logo](x.png) Title after an image",
        "-title-after-an-image",
    ),
    ("## &amp; entities &lt;tag&gt;", "-entities-tag"),
    ("## <span>html</span> inline", "html-inline"),
    ("## C++ & Rust", "c--rust"),
    ("## 1.2.3 Release", "123-release"),
    ("## Über-Cool_Thing!", "über-cool_thing"),
    ("##    Leading spaces   ", "leading-spaces"),
    ("## Closing hashes ##", "closing-hashes"),
    ("## Custom id {#my-anchor}", "my-anchor"),
    ("## What's new? (v2.0)", "whats-new-v20"),
    ("## Ünïcödé Çhäräctérs", "ünïcödé-çhäräctérs"),
    ("## 日本語の見出し", "日本語の見出し"),
    ("## Tabs\tinside", "tabsinside"),
    ("## ~~struck~~ text", "struck-text"),
    ("Setext *heading*\n===", "setext-heading"),
    ("Two line\nsetext\n---", "two-linesetext"),
];

#[test]
fn markdown_headings_get_github_anchors() {
    for (source, expected) in HEADING_CASES {
        let text = format!("{source}\n");
        let doc = Document::parse(&text);
        assert_eq!(doc.headings.len(), 1, "{source:?} should be one heading");
        assert_eq!(doc.headings[0].anchor, *expected, "{source:?}");
    }
}

#[test]
fn duplicates_explicit_ids_and_code_blocks() {
    let text = "# Intro\n\n## Intro\n\n```\n# Intro\n```\n\n### Intro\n\n## Other {#intro-2}\n\n## Intro\n\n# B {#b}\n\n# B\n";
    let doc = Document::parse(text);
    let anchors: Vec<&str> = doc.headings.iter().map(|h| h.anchor.as_str()).collect();
    // The fenced "# Intro" is not a heading. Explicit ids are reserved before any slug is
    // generated, so no generated anchor can ever equal one: the third "Intro" skips intro-2.
    assert_eq!(
        anchors,
        ["intro", "intro-1", "intro-3", "intro-2", "intro-4", "b", "b-1"]
    );
}

/// fixtures/markdown/github-slugger.oracle.json, written by the github-slugger package itself
/// (nodes/documents/scripts/github-slugger-oracle.mjs): generated tricky headings (punctuation,
/// emoji, CJK, accents, invisible characters, duplicates) through one slugger, and one string per
/// edge of every range of kept code points.
fn slugger_oracle() -> serde_json::Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/markdown/github-slugger.oracle.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("oracle file"))
        .expect("oracle is JSON")
}

#[test]
fn generated_headings_match_github_slugger() {
    let oracle = slugger_oracle();
    let cases = oracle["sequence"].as_array().expect("sequence");
    assert!(cases.len() >= 300, "a few hundred generated headings");
    let mut slugger = Slugger::new();
    let mut wrong = Vec::new();
    for case in cases {
        let (input, expected) = (
            case[0].as_str().expect("input"),
            case[1].as_str().expect("slug"),
        );
        let got = slugger.slug(input);
        if got != expected {
            wrong.push(format!("{input:?}: expected {expected:?}, got {got:?}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} differ:\n{}",
        wrong.len(),
        cases.len(),
        wrong.join("\n")
    );
}

#[test]
fn every_range_edge_matches_github_slugger() {
    let oracle = slugger_oracle();
    let points = oracle["single_code_points"]
        .as_array()
        .expect("code points");
    assert!(points.len() > 2000);
    let mut wrong = Vec::new();
    for point in points {
        let cp = point[0].as_u64().expect("code point") as u32;
        let expected = point[1].as_str().expect("slug");
        let Some(c) = char::from_u32(cp) else {
            continue;
        };
        let got = cheng_nodes_documents::markdown::slug::slug(&c.to_string());
        if got != expected {
            wrong.push(format!("U+{cp:04X}: expected {expected:?}, got {got:?}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} differ:\n{}",
        wrong.len(),
        points.len(),
        wrong
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
