//! edit_file: exactly one match (or all with `all`), refusals with line numbers, the reference page's three
//! diagnostics in order, never a fuzzy apply; the approval card shows the diff.

use super::support::*;
use cheng_node::ScopeKind;
use cheng_nodes_files::{EditFile, ReadFile};
use serde_json::json;

const TEXT: &str = "fn a() {\n    call(1);\n}\nfn b() {\n    call(1);\n}\n";

fn setup() -> (
    tempfile::TempDir,
    std::path::PathBuf,
    cheng_node::RunContext,
) {
    let (d, ws) = temp_workspace();
    std::fs::write(ws.join("a.rs"), TEXT).unwrap();
    let c = ctx(&ReadFile, &ws, ScopeKind::Graph);
    ok(&ReadFile, &c, json!({"file_path": "a.rs"}));
    (d, ws, c)
}

#[test]
fn one_unique_match_is_replaced_and_the_new_tag_registered() {
    let (_d, ws, c) = setup();
    let out = ok(
        &EditFile,
        &c,
        json!({"file_path": "a.rs", "old": "fn b() {\n    call(1);", "new": "fn b() {\n    call(2);"}),
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("a.rs")).unwrap(),
        TEXT.replace("fn b() {\n    call(1);", "fn b() {\n    call(2);")
    );
    assert_eq!(out["replacements"], 1);
    assert!(
        out["diff"]
            .as_str()
            .unwrap()
            .contains("-    call(1);\n+    call(2);\n"),
        "{out:#?}"
    );
    // The write registered its tag: a second edit needs no new read.
    ok(
        &EditFile,
        &c,
        json!({"file_path": "a.rs", "old": "fn a()", "new": "fn first()"}),
    );
}

#[test]
fn several_matches_are_refused_with_their_lines_unless_all() {
    let (_d, ws, c) = setup();
    let err = fails(
        &EditFile,
        &c,
        json!({"file_path": "a.rs", "old": "call(1);", "new": "call(9);"}),
        "LOCAL_EXECUTOR_INVALID_INPUT",
    );
    assert!(
        err.contains("matches 2 places") && err.contains("lines 2, 5"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("a.rs")).unwrap(),
        TEXT,
        "nothing written"
    );
    let out = ok(
        &EditFile,
        &c,
        json!({"file_path": "a.rs", "old": "call(1);", "new": "call(9);", "all": true}),
    );
    assert_eq!(out["replacements"], 2);
    assert_eq!(
        std::fs::read_to_string(ws.join("a.rs")).unwrap(),
        TEXT.replace("call(1);", "call(9);")
    );
}

#[test]
fn no_match_gives_the_three_diagnostics_in_order_and_never_applies() {
    let (_d, ws, c) = setup();
    let err = fails(
        &EditFile,
        &c,
        json!({"file_path": "a.rs", "old": "L1: fn a() {\nL2:     call(1);", "new": "x"}),
        "LOCAL_EXECUTOR_INVALID_INPUT",
    );
    assert!(err.contains("`L{n}: ` prefix"), "{err}");
    let err = fails(
        &EditFile,
        &c,
        json!({"file_path": "a.rs", "old": "fn b() {\ncall(1);", "new": "x"}),
        "LOCAL_EXECUTOR_INVALID_INPUT",
    );
    assert!(err.contains("whitespace is ignored, at line(s) 4"), "{err}");
    let err = fails(
        &EditFile,
        &c,
        json!({"file_path": "a.rs", "old": "fn c()", "new": "x"}),
        "LOCAL_EXECUTOR_INVALID_INPUT",
    );
    assert!(err.contains("read the file first"), "{err}");
    assert_eq!(
        std::fs::read_to_string(ws.join("a.rs")).unwrap(),
        TEXT,
        "a near match is never applied"
    );
    fails(
        &EditFile,
        &c,
        json!({"file_path": "a.rs", "old": "", "new": "x"}),
        "LOCAL_EXECUTOR_INVALID_INPUT",
    );
    fails(
        &EditFile,
        &c,
        json!({"file_path": "a.rs", "old": "fn a", "new": "fn a"}),
        "LOCAL_EXECUTOR_INVALID_INPUT",
    );
    fails(
        &EditFile,
        &c,
        json!({"file_path": "missing.rs", "old": "a", "new": "b"}),
        "LOCAL_EXECUTOR_NOT_FOUND",
    );
}

#[test]
fn the_card_shows_the_diff_paths_and_sizes_before_anything_is_written() {
    let (_d, ws, c) = setup();
    let card = card(
        &EditFile,
        &c,
        json!({"file_path": "a.rs", "old": "fn a()", "new": "fn alpha()"}),
    )
    .unwrap();
    assert!(
        card.command_display.contains("write a.rs (48 B -> 52 B)"),
        "{}",
        card.command_display
    );
    let details = card.details.unwrap();
    assert!(
        details.contains("--- a/a.rs\n+++ b/a.rs\n")
            && details.contains("-fn a() {\n+fn alpha() {\n"),
        "{details}"
    );
    assert_eq!(std::fs::read_to_string(ws.join("a.rs")).unwrap(), TEXT);
    // A refused edit is refused at the card: nobody is asked.
    assert!(
        card_err(&c, json!({"file_path": "a.rs", "old": "nope", "new": "x"})).contains("not found")
    );
}

fn card_err(c: &cheng_node::RunContext, input: serde_json::Value) -> String {
    card(&EditFile, c, input).unwrap_err().message
}

#[test]
fn the_syntax_gate_refuses_worse_json_and_allows_partial_fixes() {
    let (_d, ws) = temp_workspace();
    std::fs::write(ws.join("c.json"), "{\"a\": 1, \"b\": 2}\n").unwrap();
    let c = ctx(&ReadFile, &ws, ScopeKind::Graph);
    ok(&ReadFile, &c, json!({"file_path": "c.json"}));
    // 0 -> 1 problems: refused.
    let err = fails(
        &EditFile,
        &c,
        json!({"file_path": "c.json", "old": "\"b\": 2", "new": "\"b\": "}),
        "LOCAL_EXECUTOR_SYNTAX_WORSE",
    );
    assert!(err.contains("c.json") && err.contains("JSON"), "{err}");
    // An already broken file may be edited as long as it gets no worse.
    std::fs::write(ws.join("d.json"), "{\"a\": 1,, \"b\": 2}\n").unwrap();
    ok(&ReadFile, &c, json!({"file_path": "d.json"}));
    ok(
        &EditFile,
        &c,
        json!({"file_path": "d.json", "old": "\"b\": 2", "new": "\"b\": 3"}),
    );
    ok(
        &EditFile,
        &c,
        json!({"file_path": "d.json", "old": ",,", "new": ","}),
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("d.json")).unwrap(),
        "{\"a\": 1, \"b\": 3}\n"
    );
}
