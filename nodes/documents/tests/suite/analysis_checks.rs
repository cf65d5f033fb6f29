//! workspace_markdown checks cancellation and its time limit while it works, not only before
//! reading the file: a check that fails part-way through the parse stops every operation.

use super::support::*;
use cheng_nodes_documents::markdown::{analyze_checked, Operation};
use cheng_nodes_documents::source::{read_text, MAX_TEXT_BYTES};

#[test]
fn a_failing_check_stops_every_operation_part_way() {
    let (_d, root) = temp_workspace();
    // Enough events for several checkpoints (one every 64 Ki events).
    std::fs::write(root.join("big.md"), "*a ".repeat(400_000)).expect("write");
    let file = read_text(&root, "big.md", "path", MAX_TEXT_BYTES).expect("reads");
    for op in [
        Operation::Outline,
        Operation::Diagnostics,
        Operation::FormatSuggestions,
        Operation::LinkCheckLocal,
    ] {
        let mut calls = 0usize;
        let result = analyze_checked(&root, &file, op, || {
            calls += 1;
            if calls == 2 {
                Err("stopped")
            } else {
                Ok(())
            }
        });
        assert_eq!(result.err(), Some("stopped"), "{op:?}");
        assert_eq!(
            calls, 2,
            "{op:?}: the second checkpoint, inside the parse, stops it"
        );
    }
}

#[test]
fn markers_stacked_past_the_bound_are_text_and_positions_stay() {
    use cheng_nodes_documents::markdown::Document;
    use cheng_nodes_documents::preview::prefix::LINE_DEPTH;
    let deep = ">".repeat(LINE_DEPTH + 1000);
    let text = format!("# T\n\n{deep} [a](x.md)\n\n[b](y.md)\n");
    let doc = Document::parse(&text);
    let dests: Vec<&str> = doc.links.iter().map(|l| l.dest.as_ref()).collect();
    assert_eq!(dests, ["x.md", "y.md"]);
    // Offsets are the original text's.
    assert_eq!(&text[doc.links[0].range.clone()], "[a](x.md)");
    assert_eq!(&text[doc.links[1].range.clone()], "[b](y.md)");
}
