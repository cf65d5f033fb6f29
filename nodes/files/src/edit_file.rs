//! `tools/edit_file`: replace one exact, unique occurrence of `old` with `new` (every occurrence
//! only with `all`). Never a fuzzy apply: when `old` does not match, three diagnostics in order
//! say why (it carries read_file's `L{n}: ` prefixes; it matches only after normalising
//! whitespace, at these lines; otherwise read the file first), and nothing is written. The
//! freshness gate runs before any matching: an edit built on stale content may still match.

use crate::files::{self, MAX_EDIT_BYTES};
use crate::freshness::{Ledger, READ_TRACKING};
use crate::policy::{Access, PathPolicy};
use crate::writer::{self, Plan};
use cheng_node::input::{non_empty_str, opt_str, port};
use cheng_node::{
    failure, ApprovalRequest, ApprovalRule, Control, Effects, ErrorKind, Node, NodeError, NodeSpec,
    PortSpec, PortType, RunContext, Values,
};
use serde_json::json;

pub static SPEC: NodeSpec = NodeSpec {
    id: "tools/edit_file",
    title: "Edit File",
    description: "Replace an exact, unique piece of a file's text with new text (every occurrence only with all). The file must have been read (tools/read_file) as it is now; a person approves the diff first. No fuzzy matching: a mismatch is explained and nothing changes.",
    category: "files",
    inputs: &[
        PortSpec::input("file_path", PortType::String, "Path of the file to edit, relative to the workspace root").required(),
        PortSpec::input("old", PortType::String, "The exact text to replace, as the file holds it (without read_file's L{n}: prefixes)").required().control(Control::Textarea),
        PortSpec::input("new", PortType::String, "The text to put in its place").required().control(Control::Textarea),
        PortSpec::input("all", PortType::Boolean, "Replace every occurrence instead of requiring exactly one").default("false"),
        READ_TRACKING,
        PortSpec::sandbox_root(),
    ],
    outputs: &[
        PortSpec::output("path", PortType::String, "The file edited, relative to the workspace root"),
        writer::TAG_OUTPUT,
        PortSpec::output("bytes", PortType::Integer, "Size of the file as written"),
        PortSpec::output("replacements", PortType::Integer, "How many occurrences were replaced"),
        writer::DIFF_OUTPUT,
        writer::WARNINGS_OUTPUT,
        failure::success("Whether the file was edited"),
        writer::SUMMARY_OUTPUT,
        failure::ERROR_KIND,
        failure::TERMINAL,
        failure::ERROR,
    ],
    gate: None,
    effects: Effects::Serial(ApprovalRule::Always),
};

pub struct EditFile;

cheng_node::inventory::submit! { cheng_node::NodeRegistration::new(&EditFile) }

#[cheng_node::async_trait]
impl Node for EditFile {
    fn spec(&self) -> &'static NodeSpec {
        &SPEC
    }

    fn approval_request(
        &self,
        ctx: &RunContext,
        input: &Values,
    ) -> Result<ApprovalRequest, NodeError> {
        let (planned, _) = plan_card(ctx, input)?;
        Ok(planned.card(ctx, "edit_file"))
    }

    async fn run(&self, ctx: &RunContext, input: Values) -> Result<Values, NodeError> {
        writer::blocking(ctx, input, |ctx, input| {
            let mut count = 0;
            let (planned, tag) = writer::plan_and_write(ctx, input, |ledger| {
                let (planned, n) = plan(ctx, input, ledger)?;
                count = n;
                Ok(planned)
            })?;
            let summary = format!(
                "edited {}: {count} replacement(s), tag {tag}",
                planned.target.display
            );
            let extra = Values::from_iter([("replacements".to_string(), json!(count))]);
            Ok(planned.outputs(&tag, summary, extra))
        })
        .await
    }
}

fn plan_card(ctx: &RunContext, input: &Values) -> Result<(Plan, usize), NodeError> {
    let mut count = 0;
    let planned = writer::plan_for_card(ctx, input, |ledger| {
        let (planned, n) = plan(ctx, input, ledger)?;
        count = n;
        Ok(planned)
    })?;
    Ok((planned, count))
}

/// The edit, computed in memory, and the number of replacements.
pub fn plan(ctx: &RunContext, input: &Values, ledger: &Ledger) -> Result<(Plan, usize), NodeError> {
    let Some(rel) = non_empty_str(input, "file_path") else {
        return Err(NodeError::invalid_input(
            "file_path is required: the file to edit, relative to the workspace root",
        ));
    };
    let old = opt_str(input, "old").unwrap_or("");
    let Some(new) = opt_str(input, "new") else {
        return Err(NodeError::invalid_input(
            "new is required: the replacement text (\"\" deletes the old text)",
        ));
    };
    let all = cheng_node::input::boolean(input, port(&SPEC, "all")?)?;
    if old.is_empty() {
        return Err(NodeError::invalid_input(
            "old is empty: give the exact text to replace (to create a file or replace all of it, use tools/write_file)",
        ));
    }
    let policy = PathPolicy::new(ctx.workspace.clone(), Vec::new());
    let target = policy.resolve(rel, "file_path", Access::Write)?;
    let display = target.display.clone();
    // The edit is computed while the file is hashed; the freshness verdict still comes first.
    let fs = files::workspace_fs(&ctx.workspace)?;
    let loaded = files::load_with(
        &fs,
        &target.real,
        &display,
        "file_path",
        MAX_EDIT_BYTES,
        |bytes| apply(bytes, &display, old, new, all),
    )?;
    let Some((loaded, edited)) = loaded else {
        return Err(NodeError::new(
            ErrorKind::NotFound,
            format!("file_path {rel:?} does not exist; create it with tools/write_file"),
        ));
    };
    // Before the match's verdict: an edit made on stale content may still match.
    ledger.check(&target.real, &display, &loaded.tag)?;
    let Edited {
        old_text,
        new_text,
        new_bytes,
        count,
    } = edited?;
    let verdict = crate::syntax::gate(&target.real, &display, Some(&old_text), &new_text)?;
    Ok((
        Plan {
            target,
            old: Some((loaded, old_text)),
            new_text,
            new_bytes,
            verdict,
            warnings: Vec::new(),
            create_parents: false,
        },
        count,
    ))
}

/// The file's text, the edited text and bytes, and the number of replacements.
struct Edited {
    old_text: String,
    new_text: String,
    new_bytes: Vec<u8>,
    count: usize,
}

fn apply(
    bytes: &[u8],
    display: &str,
    old: &str,
    new: &str,
    all: bool,
) -> Result<Edited, NodeError> {
    let editable = crate::text::Editable::decode(bytes)
        .map_err(|e| NodeError::invalid_input(format!("{display} {e}")))?;
    let old = editable.normalise_input(old);
    let new = editable.normalise_input(new);
    if old == new {
        return Err(NodeError::invalid_input(
            "old and new are the same text; there is nothing to change",
        ));
    }
    let text = &editable.text;
    let starts: Vec<usize> = text.match_indices(old.as_ref()).map(|(i, _)| i).collect();
    let count = match (starts.len(), all) {
        (0, _) => return Err(no_match(display, text, &old)),
        (1, _) | (_, true) => starts.len(),
        (n, false) => {
            let lines: Vec<String> = starts
                .iter()
                .take(20)
                .map(|&s| files::line_of(text, s).to_string())
                .collect();
            let more = if n > 20 {
                format!(" and {} more", n - 20)
            } else {
                String::new()
            };
            return Err(NodeError::invalid_input(format!(
                "old matches {n} places in {display} (lines {}{more}); include more of the surrounding lines so that it matches exactly one, or set all to true to replace every one",
                lines.join(", ")
            )));
        }
    };
    let new_text = if all {
        text.replace(old.as_ref(), &new)
    } else {
        text.replacen(old.as_ref(), &new, 1)
    };
    let new_bytes = editable
        .encode(&new_text)
        .map_err(|e| files::encode_error(display, e))?;
    Ok(Edited {
        old_text: editable.text,
        new_text,
        new_bytes,
        count,
    })
}

/// The three diagnostics, in order, for an `old` that matches nothing.
pub fn no_match(display: &str, text: &str, old: &str) -> NodeError {
    let old_lines: Vec<&str> = old.lines().filter(|l| !l.trim().is_empty()).collect();
    let prefixed = !old_lines.is_empty() && old_lines.iter().all(|l| has_line_prefix(l));
    if prefixed {
        return NodeError::invalid_input(format!(
            "old was not found in {display}: every line of it starts with read_file's `L{{n}}: ` prefix, which is not part of the file; \
             remove the prefixes (keep the text after `L12: `) and try again"
        ));
    }
    let found = normalised_matches(text, old);
    if !found.is_empty() {
        let lines: Vec<String> = found.iter().take(20).map(usize::to_string).collect();
        return NodeError::invalid_input(format!(
            "old was not found in {display} exactly, but it matches when whitespace is ignored, at line(s) {}: \
             the indentation or spacing differs; copy the text exactly as read_file shows it (after the `L{{n}}: ` prefix) and try again",
            lines.join(", ")
        ));
    }
    NodeError::invalid_input(format!(
        "old was not found in {display}: read the file first (tools/read_file) and copy the text to replace exactly as it is now"
    ))
}

fn has_line_prefix(line: &str) -> bool {
    let Some(rest) = line.strip_prefix('L') else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && rest[digits..].starts_with(": ")
}

fn normalise(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// 1-based lines where `old`'s lines match the file's lines with whitespace normalised.
fn normalised_matches(text: &str, old: &str) -> Vec<usize> {
    let want: Vec<String> = old.lines().map(normalise).collect();
    let first = want.iter().position(|l| !l.is_empty());
    let last = want.iter().rposition(|l| !l.is_empty());
    let (Some(first), Some(last)) = (first, last) else {
        return Vec::new();
    };
    let want = &want[first..=last];
    let have: Vec<String> = text.lines().map(normalise).collect();
    if want.len() == 1 {
        // One line: it may be a piece of a line.
        return have
            .iter()
            .enumerate()
            .filter(|(_, l)| l.contains(want[0].as_str()))
            .map(|(i, _)| i + 1)
            .collect();
    }
    (0..have.len().saturating_sub(want.len() - 1))
        .filter(|&i| {
            have[i..i + want.len()]
                .iter()
                .zip(want)
                .all(|(h, w)| h == w)
        })
        .map(|i| i + 1)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diagnostics_come_in_the_reference_order() {
        let text = "fn main() {\n    let x = 1;\n}\n";
        let err = no_match("a.rs", text, "L2:     let x = 1;\nL3: }");
        assert!(err.message.contains("`L{n}: ` prefix"), "{}", err.message);
        let err = no_match("a.rs", text, "let   x = 1;\n}");
        assert!(
            err.message.contains("whitespace is ignored, at line(s) 2"),
            "{}",
            err.message
        );
        let err = no_match("a.rs", text, "let y = 2;");
        assert!(
            err.message.contains("read the file first"),
            "{}",
            err.message
        );
    }
}
