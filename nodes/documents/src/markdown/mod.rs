//! `tools/workspace_markdown`: read-only Markdown analysis — heading outline, markdownlint-style
//! diagnostics, mechanical fixes as edit_file-ready replacements, and local link checks.
//!
//! The node never writes. Files over [`MAX_TEXT_BYTES`] (16 MiB) are refused before being read;
//! invalid UTF-8 is decoded lossily and reported as an `invalid-utf8` diagnostic.

pub mod diagnostics;
pub mod document;
pub mod links;
pub mod many;
pub mod outline;
pub mod rules;
pub mod slug;
mod slug_table;
pub mod suggestions;

pub use diagnostics::Diagnostic;
pub use document::Document;
pub use outline::OutlineEntry;
pub use suggestions::Suggestion;

use crate::source::{read_text, TextFile, MAX_TEXT_BYTES};
use cheng_node::input::non_empty_str;
use cheng_node::{
    failure, Effects, Node, NodeError, NodeSpec, PortSpec, PortType, RunContext, Values,
};
use serde_json::{json, Value};
use std::path::Path;

/// Operations, in the order the reference page lists them.
pub const OPERATIONS: &[&str] = &[
    "outline",
    "diagnostics",
    "format_suggestions",
    "link_check_local",
];

/// Most outline entries returned (the rest are counted in the summary).
pub const MAX_OUTLINE_ENTRIES: usize = 10_000;
/// Most diagnostics returned.
pub const MAX_DIAGNOSTICS: usize = 5_000;
/// Most suggested edits returned.
pub const MAX_SUGGESTIONS: usize = 2_000;

pub static SPEC: NodeSpec = NodeSpec {
    id: "tools/workspace_markdown",
    title: "Workspace Markdown",
    description: "Read-only Markdown analysis: heading outlines, structured diagnostics, format suggestions (as edit_file-ready replacements), and local link checks. diagnostics and link_check_local also take a folder or a glob as path (every Markdown file in it, .gitignore respected; findings name their file).",
    category: "workspace",
    inputs: &[
        PortSpec::input(
            "operation",
            PortType::String,
            "Read-only markdown analysis: outline, diagnostics, format_suggestions, or link_check_local",
        )
        .required()
        .choices(OPERATIONS),
        PortSpec::input("path", PortType::String, "Markdown file path relative to the workspace root").default("\"\""),
        PortSpec::sandbox_root(),
    ],
    outputs: &[
        PortSpec::output("operation", PortType::String, "Markdown analysis operation that was executed"),
        PortSpec::output("path", PortType::String, "Markdown file path that was analyzed"),
        failure::success("Whether the analysis succeeded"),
        PortSpec::output("summary", PortType::String, "Human-readable summary of the analysis result"),
        PortSpec::output("outline", PortType::Any, "Heading tree entries with levels, 1-indexed lines, and GitHub-style anchors"),
        PortSpec::output(
            "diagnostics",
            PortType::Any,
            "Structured diagnostics: duplicate-heading, heading-hierarchy-jump, empty-link-target, etc.",
        ),
        PortSpec::output(
            "suggested_edits",
            PortType::Any,
            "Mechanical fixes as edit_file-ready replacements; this tool never writes files itself",
        ),
        failure::ERROR_KIND,
        failure::TERMINAL,
        failure::ERROR,
    ],
    gate: None,
    effects: Effects::ReadOnly,
};

pub struct WorkspaceMarkdown;

cheng_node::inventory::submit! { cheng_node::NodeRegistration::new(&WorkspaceMarkdown) }

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Outline,
    Diagnostics,
    FormatSuggestions,
    LinkCheckLocal,
}

impl Operation {
    pub fn parse(input: &Values) -> Result<Self, NodeError> {
        let choices = OPERATIONS.join(", ");
        match non_empty_str(input, "operation") {
            None => Err(NodeError::invalid_input(format!(
                "operation is required: one of {choices}"
            ))),
            Some("outline") => Ok(Operation::Outline),
            Some("diagnostics") => Ok(Operation::Diagnostics),
            Some("format_suggestions") => Ok(Operation::FormatSuggestions),
            Some("link_check_local") => Ok(Operation::LinkCheckLocal),
            Some(other) => Err(NodeError::invalid_input(format!(
                "operation {other:?} is not one of {choices}"
            ))),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Operation::Outline => "outline",
            Operation::Diagnostics => "diagnostics",
            Operation::FormatSuggestions => "format_suggestions",
            Operation::LinkCheckLocal => "link_check_local",
        }
    }
}

#[cheng_node::async_trait]
impl Node for WorkspaceMarkdown {
    fn spec(&self) -> &'static NodeSpec {
        &SPEC
    }

    async fn run(&self, ctx: &RunContext, input: Values) -> Result<Values, NodeError> {
        let operation = Operation::parse(&input)?;
        let Some(path) = non_empty_str(&input, "path") else {
            return Err(NodeError::invalid_input(
                "path is required: a Markdown file relative to the workspace root, e.g. \"README.md\"",
            ));
        };
        if ctx.cancel.is_cancelled() {
            return Err(NodeError::new(
                cheng_node::ErrorKind::Cancelled,
                "cancelled before the file was read",
            ));
        }
        let root = ctx.workspace.clone();
        let path = path.to_string();
        let cancel = ctx.cancel.clone();
        tokio::task::spawn_blocking(move || {
            let deadline = std::time::Instant::now() + TIME_LIMIT;
            let check = || {
                if cancel.is_cancelled() {
                    return Err(NodeError::new(cheng_node::ErrorKind::Cancelled, "cancelled while analysing the Markdown file"));
                }
                if std::time::Instant::now() >= deadline {
                    return Err(NodeError::new(
                        cheng_node::ErrorKind::TimedOut,
                        format!("the analysis took longer than its {} s limit and was stopped; analyse a smaller file", TIME_LIMIT.as_secs()),
                    ));
                }
                Ok(())
            };
            if many::names_many(&root, &path) {
                if matches!(operation, Operation::Diagnostics | Operation::LinkCheckLocal) {
                    return many::analyze(&root, &path, operation, check);
                }
                let what = if path.contains(['*', '?', '[', '{']) { "is a glob" } else { "is a directory" };
                return Err(NodeError::invalid_input(format!(
                    "path {path:?} {what}, and {} takes one file; diagnostics and link_check_local take a folder or a glob",
                    operation.name()
                )));
            }
            let file = read_text(&root, &path, "path", MAX_TEXT_BYTES)?;
            check()?;
            analyze_checked(&root, &file, operation, check)
        })
        .await
        .map_err(|e| NodeError::internal(format!("markdown analysis stopped unexpectedly: {e}")))?
    }
}

/// Longest one analysis may run; the parse checks this (and cancellation) every
/// [`document::CHECK_EVERY_EVENTS`] events, and again before the operation's own work. Every
/// input up to the size cap takes far less (docs/performance.md).
pub const TIME_LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Runs one operation on a file already read, producing the node's full output object.
pub fn analyze(root: &Path, file: &TextFile, operation: Operation) -> Values {
    match analyze_checked(root, file, operation, || {
        Ok::<(), std::convert::Infallible>(())
    }) {
        Ok(out) => out,
        Err(never) => match never {},
    }
}

/// [`analyze`], calling `check` while parsing and between steps; its error stops the analysis.
pub fn analyze_checked<E>(
    root: &Path,
    file: &TextFile,
    operation: Operation,
    check: impl FnMut() -> Result<(), E>,
) -> Result<Values, E> {
    std::thread::scope(|scope| {
        // format_suggestions on a large file: the sweep's text-only groundwork runs on a second
        // thread while this one parses.
        let prepared = (operation == Operation::FormatSuggestions
            && file.invalid_utf8_at.is_none()
            && file.text.len() >= PARALLEL_MIN_BYTES)
            .then(|| {
                std::thread::Builder::new()
                    .name("markdown-sweep".into())
                    .spawn_scoped(scope, || suggestions::Prepared::new(&file.text))
                    .ok()
            })
            .flatten();
        let prepared = move || match prepared.map(|handle| handle.join()) {
            Some(Ok(prepared)) => prepared,
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            None => suggestions::Prepared::new(&file.text),
        };
        analyze_with(root, file, operation, prepared, check)
    })
}

/// Texts at least this long get a second thread where work can overlap.
const PARALLEL_MIN_BYTES: usize = 256 * 1024;

fn analyze_with<'t, E>(
    root: &Path,
    file: &'t TextFile,
    operation: Operation,
    prepared: impl FnOnce() -> suggestions::Prepared<'t>,
    mut check: impl FnMut() -> Result<(), E>,
) -> Result<Values, E> {
    let doc = Document::parse_checked(&file.text, &mut check)?;
    check()?;
    let mut out = Values::new();
    out.insert("operation".into(), json!(operation.name()));
    out.insert("path".into(), json!(file.display));
    out.insert("success".into(), json!(true));
    for port in [
        "summary",
        "outline",
        "diagnostics",
        "suggested_edits",
        "error_kind",
        "terminal",
        "error",
    ] {
        out.insert(port.into(), Value::Null);
    }
    failure::fill::<()>(&mut out, &Ok(()));
    let summary = match operation {
        Operation::Outline => {
            let total = doc.headings.len();
            let shown = &doc.headings[..total.min(MAX_OUTLINE_ENTRIES)];
            out.insert("outline".into(), json!(outline::build(shown)));
            let depth = doc.headings.iter().map(|h| h.level).max().unwrap_or(0);
            let mut s = format!(
                "{}: {total} heading{} (deepest h{depth})",
                file.display,
                plural(total)
            );
            if total > MAX_OUTLINE_ENTRIES {
                s.push_str(&format!("; showing the first {MAX_OUTLINE_ENTRIES}"));
            }
            if total == 0 {
                s = format!("{}: no headings", file.display);
            }
            s
        }
        Operation::Diagnostics => {
            let (found, _) = diagnostics::check(&doc, file.invalid_utf8_at);
            let summary = diagnostics_summary(&file.display, &found, doc.broken_refs_omitted);
            out.insert(
                "diagnostics".into(),
                json!(&found[..found.len().min(MAX_DIAGNOSTICS)]),
            );
            summary
        }
        Operation::FormatSuggestions => {
            let (found, plan) = diagnostics::check(&doc, file.invalid_utf8_at);
            if file.invalid_utf8_at.is_some() {
                out.insert("suggested_edits".into(), json!([]));
                out.insert(
                    "diagnostics".into(),
                    json!(&found[..found.len().min(MAX_DIAGNOSTICS)]),
                );
                format!(
                    "{}: not valid UTF-8, so no edits are suggested (an exact-match edit could not round-trip); re-save the file as UTF-8 first",
                    file.display
                )
            } else {
                let (edits, skipped, over) =
                    suggestions::build_prepared(prepared(), &file.display, &plan, MAX_SUGGESTIONS);
                let fixable = found.iter().filter(|d| plan.covers(d)).count();
                // Undefined references past the kept ones are findings too (never fixable).
                let total = found.len() + doc.broken_refs_omitted;
                let mut s = format!(
                    "{}: {} suggested edit{} fixing {fixable} of {} finding{}",
                    file.display,
                    edits.len(),
                    plural(edits.len()),
                    total,
                    plural(total)
                );
                if skipped > 0 {
                    s.push_str(&format!(
                        "; {skipped} fix{} left out (no unique context within {} lines)",
                        if skipped == 1 { "" } else { "es" },
                        suggestions::MAX_WINDOW
                    ));
                }
                if over > 0 {
                    s.push_str(&format!("; {over} more after the first {MAX_SUGGESTIONS} (apply these and run again)"));
                }
                s.push_str(
                    "; apply them in order, each old_string occurs exactly once at that point",
                );
                out.insert("suggested_edits".into(), json!(edits));
                s
            }
        }
        Operation::LinkCheckLocal => {
            let report = links::check(root, &file.path, &doc);
            let s = format!(
                "{}: {} local link{} checked: {} ok, {} broken, {} outside the workspace, {} bad fragment{}; {} external skipped{}",
                file.display,
                report.checked,
                plural(report.checked),
                report.ok,
                report.broken,
                report.outside,
                report.bad_fragments,
                plural(report.bad_fragments),
                report.external,
                if report.undefined_references > 0 {
                    format!("; {} undefined reference{}", report.undefined_references, plural(report.undefined_references))
                } else {
                    String::new()
                }
            );
            let s = if report.unchecked_fragments > 0 {
                format!(
                    "{s}; {} fragment{} in other files not checked (over the limit of {} linked Markdown files or {} read per run)",
                    report.unchecked_fragments,
                    plural(report.unchecked_fragments),
                    links::LIMITS.files,
                    cheng_node::text::human_bytes(links::LIMITS.bytes)
                )
            } else {
                s
            };
            out.insert(
                "diagnostics".into(),
                json!(&report.diagnostics[..report.diagnostics.len().min(MAX_DIAGNOSTICS)]),
            );
            s
        }
    };
    let summary = if doc.plain_marks > 0 {
        summary + &crate::preview::marks::warning(doc.plain_marks)
    } else {
        summary
    };
    out.insert("summary".into(), json!(summary));
    check()?;
    Ok(out)
}

/// `omitted_refs`: undefined references counted but not kept ([`Document::broken_refs_omitted`];
/// never among the shown, since the kept ones all come first).
fn diagnostics_summary(display: &str, found: &[Diagnostic], omitted_refs: usize) -> String {
    if found.is_empty() {
        return format!("{display}: no findings");
    }
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for d in found {
        match counts.iter_mut().find(|(r, _)| *r == d.rule) {
            Some((_, n)) => *n += 1,
            None => counts.push((d.rule, 1)),
        }
    }
    if let Some((_, n)) = counts
        .iter_mut()
        .find(|(r, _)| *r == rules::UNDEFINED_REFERENCE)
    {
        *n += omitted_refs;
    }
    let total = found.len() + omitted_refs;
    let list: Vec<String> = counts.iter().map(|(r, n)| format!("{r} ×{n}")).collect();
    let mut s = format!(
        "{display}: {} finding{} ({})",
        total,
        plural(total),
        list.join(", ")
    );
    if total > MAX_DIAGNOSTICS {
        s.push_str(&format!("; showing the first {MAX_DIAGNOSTICS}"));
    }
    s
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
