//! cheng's diagnostics against markdownlint's on the fixtures. The oracle,
//! fixtures/markdown/markdownlint.oracle.json, is markdownlint's own output (regenerate with
//! nodes/documents/scripts/markdownlint-oracle.mjs). Every difference must be one of
//! [`DELIBERATE`], each explained in docs/guides/markdown_rules.md.

use super::support::*;
use cheng_nodes_documents::markdown::{analyze, Operation};
use cheng_nodes_documents::source::{read_text, MAX_TEXT_BYTES};
use serde_json::Value;

/// (file, alias, line, present in cheng but not markdownlint?) — documented differences.
const DELIBERATE: &[(&str, &str, usize, bool)] = &[
    // `![   ](x.png)`: alt text of only spaces tells a screen reader nothing; cheng reports it.
    ("edge.md", "MD045", 23, true),
];

/// (alias, line, column) — column only where markdownlint reports one.
type Finding = (String, usize, Option<usize>);

fn oracle() -> Value {
    let text =
        std::fs::read_to_string(fixtures().join("markdownlint.oracle.json")).expect("oracle file");
    serde_json::from_str(&text).expect("oracle is JSON")
}

#[test]
fn diagnostics_agree_with_markdownlint_on_the_fixtures() {
    let oracle = oracle();
    let rules: Vec<&str> = oracle["rules"]
        .as_array()
        .expect("rules")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        rules.len() >= 12,
        "the oracle covers every implemented markdownlint rule"
    );
    let files = oracle["files"].as_object().expect("files");
    assert!(files.len() >= 7, "every fixture is in the oracle");
    let mut problems = Vec::new();
    for (name, expected) in files {
        let file = read_text(&fixtures(), name, "path", MAX_TEXT_BYTES).expect("fixture reads");
        let out = analyze(&fixtures(), &file, Operation::Diagnostics);
        let mut ours: Vec<(String, usize, usize)> = out["diagnostics"]
            .as_array()
            .expect("diagnostics")
            .iter()
            .filter_map(|d| {
                let alias = d["alias"].as_str()?;
                let found = (
                    alias.to_string(),
                    d["line"].as_u64()? as usize,
                    d["column"].as_u64()? as usize,
                );
                rules.contains(&alias).then_some(found)
            })
            .collect();
        let theirs: Vec<Finding> = expected
            .as_array()
            .expect("findings")
            .iter()
            .map(|e| {
                (
                    e["alias"].as_str().unwrap_or_default().to_string(),
                    e["line"].as_u64().unwrap_or(0) as usize,
                    e["column"].as_u64().map(|c| c as usize),
                )
            })
            .collect();
        for (alias, line, column) in &theirs {
            let hit = ours.iter().position(|(a, l, c)| {
                a == alias && l == line && column.is_none_or(|col| col == *c)
            });
            match hit {
                Some(i) => {
                    ours.remove(i);
                }
                None if DELIBERATE.contains(&(name.as_str(), alias.as_str(), *line, false)) => {}
                None => problems.push(format!(
                    "{name}: markdownlint reports {alias} at {line}:{column:?}, cheng does not"
                )),
            }
        }
        for (alias, line, column) in ours {
            if !DELIBERATE.contains(&(name.as_str(), alias.as_str(), line, true)) {
                problems.push(format!(
                    "{name}: cheng reports {alias} at {line}:{column}, markdownlint does not"
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "differences from markdownlint:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_deliberate_difference_is_still_a_difference() {
    // A stale entry would hide a regression: each one must still be needed.
    let oracle = oracle();
    for (name, alias, line, extra) in DELIBERATE {
        let in_oracle = oracle["files"][name].as_array().is_some_and(|es| {
            es.iter()
                .any(|e| e["alias"] == *alias && e["line"].as_u64() == Some(*line as u64))
        });
        assert_eq!(in_oracle, !extra, "{name} {alias} line {line}");
    }
}
