//! format_suggestions: every old_string is unique when its turn comes, and applying the edits
//! in order removes the findings they fix.

use super::support::*;
use cheng_nodes_documents::markdown::diagnostics::check;
use cheng_nodes_documents::markdown::rules;
use cheng_nodes_documents::markdown::suggestions::build;
use cheng_nodes_documents::markdown::Document;
use serde_json::Value;
use std::collections::BTreeMap;

fn fixable(rule: &str) -> bool {
    rules::rule(rule).is_some_and(|r| r.fixable == "yes")
}

/// Suggestions for `text`, applied one by one; returns (fixed text, rule counts before, after).
fn fix(
    text: &str,
) -> (
    String,
    BTreeMap<&'static str, usize>,
    BTreeMap<&'static str, usize>,
) {
    let doc = Document::parse(text);
    let (before, plan) = check(&doc, None);
    let (edits, skipped, over) = build(text, "doc.md", &plan, usize::MAX);
    assert_eq!(
        (skipped, over),
        (0, 0),
        "every fix should be expressible for {text:?}"
    );
    let edits: Vec<Value> = edits
        .iter()
        .map(|e| serde_json::to_value(e).expect("json"))
        .collect();
    for edit in &edits {
        assert_eq!(edit["path"], "doc.md");
        assert!(edit["line"].as_u64().is_some_and(|l| l >= 1));
        assert_ne!(edit["old_string"], edit["new_string"]);
    }
    let fixed = apply_edits(text, &edits);
    let after_doc = Document::parse(&fixed);
    let (after, _) = check(&after_doc, None);
    let count = |ds: &[cheng_nodes_documents::markdown::Diagnostic]| {
        let mut m = BTreeMap::new();
        for d in ds.iter().filter(|d| fixable(d.rule)) {
            *m.entry(d.rule).or_insert(0) += 1;
        }
        m
    };
    (fixed, count(&before), count(&after))
}

#[test]
fn fixtures_are_fixed_by_their_suggestions() {
    for name in [
        "headings.md",
        "whitespace.md",
        "links.md",
        "clean.md",
        "edge.md",
    ] {
        let text = std::fs::read_to_string(fixtures().join(name)).expect("fixture");
        let (_, before, after) = fix(&text);
        assert!(
            after.is_empty(),
            "{name}: fixable findings left after applying: {after:?} (before: {before:?})"
        );
        if name != "clean.md" {
            assert!(!before.is_empty(), "{name} should exercise fixable rules");
        }
    }
}

#[test]
fn each_fix_does_what_it_says() {
    let (fixed, _, after) = fix("# T\ntext  \t\n\n\n\nend https://x.example/a. ok\n## H\nmore");
    assert!(after.is_empty(), "{after:?}");
    assert_eq!(
        fixed,
        "# T\n\ntext\n\nend <https://x.example/a>. ok\n\n## H\n\nmore\n"
    );
}

#[test]
fn repeated_lines_get_wider_context() {
    // Identical lines with trailing spaces: each edit needs a neighbour that makes it unique,
    // and fixing the first must not make the second ambiguous.
    let text = "# Same\n\nalpha\nrow \nbeta\nrow \ngamma\nrow \nrow \nrow \n";
    let (fixed, _, after) = fix(text);
    assert!(after.is_empty());
    assert_eq!(
        fixed,
        "# Same\n\nalpha\nrow\nbeta\nrow\ngamma\nrow\nrow\nrow\n"
    );
}

#[test]
fn fixing_an_earlier_line_cannot_create_a_duplicate_of_a_later_old_string() {
    // After "a " becomes "a", the window "a\nb" would occur twice if the second edit had been
    // made unique against the original file only.
    let text = "x\na \nb\nc\na\nb \nd\n";
    let (fixed, _, after) = fix(text);
    assert!(after.is_empty());
    assert_eq!(fixed, "x\na\nb\nc\na\nb\nd\n");
}

#[test]
fn crlf_files_keep_their_line_endings() {
    let (fixed, _, after) = fix("# T\r\n\r\ntext   \r\n\r\n\r\nend\r\n");
    assert!(after.is_empty(), "{after:?}");
    assert_eq!(fixed, "# T\r\n\r\ntext\r\n\r\nend\r\n");
}

#[test]
fn generated_documents_round_trip() {
    // A deterministic generator of messy documents: every fixable rule, repeated content, edges.
    let pieces = [
        "# Title",
        "## Section",
        "text  ",
        "text ",
        "text\t",
        "",
        "",
        "   ",
        "see https://a.example/x",
        "```text",
        "code   ",
        "```",
        "plain",
        "> # Quoted",
        "> body",
        "Setext",
        "---",
        "- item ",
        "[l](#Section)",
        "- # Listed",
        "> - # Deep",
        "1. ## Numbered",
        "mail a@b.example.",
    ];
    let mut state: u64 = 0x2545_F491_4F6C_DD1D;
    for round in 0..300 {
        let mut lines = Vec::new();
        let len = 1 + (round % 40);
        for _ in 0..len {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            lines.push(pieces[(state % pieces.len() as u64) as usize]);
        }
        let mut text = lines.join("\n");
        if round % 3 != 0 {
            text.push('\n');
        }
        let doc = Document::parse(&text);
        let (_, plan) = check(&doc, None);
        let (edits, skipped, _) = build(&text, "doc.md", &plan, usize::MAX);
        let edits: Vec<Value> = edits
            .iter()
            .map(|e| serde_json::to_value(e).expect("json"))
            .collect();
        // Uniqueness at each step is asserted inside apply_edits.
        let fixed = apply_edits(&text, &edits);
        if skipped == 0 {
            let (after, _) = check(&Document::parse(&fixed), None);
            let left: Vec<_> = after.iter().filter(|d| fixable(d.rule)).collect();
            assert!(
                left.is_empty(),
                "round {round}: {left:?}\nbefore:\n{text:?}\nafter:\n{fixed:?}"
            );
        }
    }
}

#[test]
fn headings_in_list_items_and_blockquotes_get_blank_lines() {
    let (fixed, before, after) = fix("# T\n\nintro\n- # Listed\n- next\n> - ## Deep\n> more\n");
    assert_eq!(
        before.get(rules::BLANKS_AROUND_HEADINGS),
        Some(&4),
        "{before:?}"
    );
    assert!(after.is_empty(), "{after:?}");
    assert_eq!(
        fixed,
        "# T\n\nintro\n\n- # Listed\n\n- next\n>\n> - ## Deep\n>\n> more\n"
    );
}

#[test]
fn bare_email_addresses_are_wrapped() {
    let (fixed, before, after) =
        fix("# T\n\nWrite to someone@example.com. Not <a@b.example> or https://u@h.example/x.\n");
    assert_eq!(before.get(rules::BARE_URL), Some(&2), "{before:?}");
    assert!(after.is_empty(), "{after:?}");
    assert_eq!(
        fixed,
        "# T\n\nWrite to <someone@example.com>. Not <a@b.example> or <https://u@h.example/x>.\n"
    );
}
