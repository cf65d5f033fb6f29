//! Output for people: on a terminal (or with `--format text`) `cheng run` shows the summary line
//! on stderr and the node's main payload raw on stdout (the patch of a git diff, a command's
//! output, findings as `file:line:col rule message`, a preview's HTML or text), so that
//! `cheng run … --format text > x.patch` keeps only the payload. Programs get the JSON object
//! (`--json`, or any stdout that is not a terminal).

use cheng_node::view::{self, summary_line, Style};
use cheng_node::Values;
use serde_json::Value;
use std::fmt::Write as _;

/// When to colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum ColorChoice {
    /// On a terminal, unless NO_COLOR is set.
    #[default]
    Auto,
    Always,
    Never,
}

/// A diagnostic severity threshold (`--fail-on`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Severity {
    Warning,
    Error,
}

/// How many of `out`'s diagnostics are at `threshold` or worse; `None` when the node reports
/// no diagnostics at all.
pub fn failing_diagnostics(out: &Values, threshold: Severity) -> Option<usize> {
    let diagnostics = out.get("diagnostics")?.as_array()?;
    Some(
        diagnostics
            .iter()
            .filter(|d| match threshold {
                Severity::Warning => true,
                Severity::Error => d["severity"] == "error",
            })
            .count(),
    )
}

/// What `run` and `graph run` print.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum Format {
    /// Text on a terminal, JSON otherwise.
    #[default]
    Auto,
    /// Summary and payload for people.
    Text,
    /// The output object, as JSON (what scripts read).
    Json,
    /// `cheng run` of workspace_markdown format_suggestions: the suggested edits as a unified
    /// diff (for `git apply`); the summary on stderr.
    Diff,
}

/// Whether text (not JSON) is printed: `--json` wins, then `--format`, then whether stdout is
/// a terminal.
pub fn wants_text(format: Format, json: bool) -> bool {
    use std::io::IsTerminal;
    if json {
        return false;
    }
    match format {
        Format::Text | Format::Diff => true,
        Format::Json => false,
        Format::Auto => std::io::stdout().is_terminal(),
    }
}

/// A rendering, printed in this order: `head` on stderr (the summary line), `stdout` (the
/// payload), `tail` on stderr (the node's own stderr, notes).
#[derive(Default, Debug, PartialEq, Eq)]
pub struct Text {
    pub head: String,
    pub stdout: String,
    pub tail: String,
}

impl Text {
    /// Prints the three parts; the exit of the stdout write (a closed pipe is quiet).
    pub fn print(&self) -> crate::Exit {
        crate::out::eprint(&self.head);
        let exit = crate::out::print(&self.stdout);
        crate::out::eprint(&self.tail);
        exit
    }
}

/// `--format`, `--json` and `--color` of `run` and `graph run`.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct OutputArgs {
    /// `text`: the summary line on stderr and the node's main payload raw on stdout (the patch,
    /// the command's output, findings as file:line:col rule message); `json`: the output object;
    /// `auto`: text when stdout is a terminal, JSON otherwise; `diff` (`cheng run` of
    /// workspace_markdown format_suggestions): the suggested edits as a unified diff for `git apply`.
    #[arg(long, value_enum, value_name = "auto|text|json|diff", default_value_t = Format::Auto)]
    pub format: Format,
    /// Print the JSON output object (same as --format json).
    #[arg(long)]
    pub json: bool,
    /// Colour the text output: `auto` on a terminal unless NO_COLOR is set.
    #[arg(long, value_enum, value_name = "auto|always|never", default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}

impl OutputArgs {
    /// The style for text output, or `None` for JSON.
    pub fn text_style(&self) -> Option<Style> {
        wants_text(self.format, self.json).then(|| style(self.color))
    }
}

/// The colours for `choice`: `auto` colours a terminal unless NO_COLOR is set.
pub fn style(choice: ColorChoice) -> Style {
    use std::io::IsTerminal;
    Style::new(match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::io::stdout().is_terminal()
        }
    })
}

/// `cheng run`'s text: the summary line (green or red) on stderr, the payload on stdout, then
/// the command's stderr, warnings and truncation notes on stderr. With `shown.output` the
/// process's streams were shown live as they arrived: the rest follows them, the summary last.
pub fn node(node_type: &str, out: &Values, style: Style, shown: crate::live::Shown) -> Text {
    let success = out.get("success").and_then(Value::as_bool).unwrap_or(false);
    let line = if shown.output {
        view::summary_line_after_live(out)
    } else {
        summary_line(out)
    };
    let view = if shown.output {
        view::render_after_live(node_type, out, style)
    } else {
        view::render(node_type, out, style)
    };
    let mut text = Text {
        head: format!(
            "{}\n",
            if success {
                style.green(&line)
            } else {
                style.red(&line)
            }
        ),
        stdout: view.payload,
        tail: view.stderr,
    };
    for warning in &view.warnings {
        let _ = writeln!(
            text.tail,
            "{}",
            style.yellow(&format!("warning: {warning}"))
        );
    }
    if shown.dropped {
        let _ = writeln!(
            text.tail,
            "{}",
            style.dim(
                "(live output stopped at the run's bound; --json shows the captured head and tail)"
            )
        );
    }
    // run_command's cuts are tail or head cuts whose markers are in the text itself.
    let markers_shown = node_type == "tools/run_command";
    for (flag, what) in [
        ("stdout_truncated", "stdout"),
        ("stderr_truncated", "stderr"),
        ("preview_truncated", "preview"),
    ] {
        // Shown live in full, the streams were not truncated for the person watching.
        let seen_whole = shown.output && !shown.dropped && what != "preview";
        if !seen_whole && !markers_shown && out.get(flag).and_then(Value::as_bool) == Some(true) {
            let _ = writeln!(
                text.tail,
                "{}",
                style.dim(&format!(
                    "({what} was truncated: head and tail kept; --json shows the markers)"
                ))
            );
        }
    }
    if shown.output {
        // After the output it sums up, as a command run by hand ends with its own last words.
        text.tail.push_str(&std::mem::take(&mut text.head));
    }
    text
}

/// `graph run`'s text: one row per node (id, type, status, time, summary) and a closing line.
pub fn graph(result: &Value, style: Style) -> Text {
    let nodes = result["nodes"].as_object().cloned().unwrap_or_default();
    let id_width = nodes
        .keys()
        .map(|k| k.chars().count())
        .max()
        .unwrap_or(0)
        .max(4);
    let type_width = nodes
        .values()
        .map(|n| n["type"].as_str().unwrap_or("").len())
        .max()
        .unwrap_or(0)
        .max(4);
    let mut text = String::new();
    let _ = writeln!(
        text,
        "{}",
        style.bold(&format!(
            "{:<id_width$}  {:<type_width$}  {:<9}  {:>8}  SUMMARY",
            "NODE", "TYPE", "STATUS", "TIME"
        ))
    );
    for (id, node) in &nodes {
        let status = node["status"].as_str().unwrap_or("");
        let padded = format!("{status:<9}");
        let painted = match status {
            "succeeded" => style.green(&padded),
            "failed" => style.red(&padded),
            _ => style.yellow(&padded),
        };
        let outputs = node["outputs"].as_object().cloned().unwrap_or_default();
        let summary = match node["reason"].as_str() {
            Some(reason) if outputs.is_empty() || status == "skipped" => reason.to_string(),
            _ => summary_line(&outputs),
        };
        let time = cheng_node::text::human_duration_ms(node["duration_ms"].as_u64().unwrap_or(0));
        let _ = writeln!(
            text,
            "{:<id_width$}  {:<type_width$}  {painted}  {time:>8}  {}",
            id,
            node["type"].as_str().unwrap_or(""),
            one_line(&summary)
        );
        let payload = view::render(node["type"].as_str().unwrap_or(""), &outputs, style).payload;
        text.push_str(&under_the_row(&payload));
    }
    let status = result["status"].as_str().unwrap_or("");
    let time = cheng_node::text::human_duration_ms(result["duration_ms"].as_u64().unwrap_or(0));
    let n = nodes.len();
    let closing = format!(
        "graph {status}: {n} {} in {time}",
        crate::plural(n, "node", "nodes")
    );
    let closing = if status == "succeeded" {
        style.green(&closing)
    } else {
        style.red(&closing)
    };
    Text {
        head: String::new(),
        stdout: text,
        tail: format!("{closing}\n"),
    }
}

/// Most lines of a node's payload shown under its row in `graph run`'s table.
const PAYLOAD_LINES: usize = 40;

/// `payload` indented under its node's row, at most [`PAYLOAD_LINES`] lines.
fn under_the_row(payload: &str) -> String {
    let mut text = String::new();
    let lines: Vec<&str> = payload.lines().collect();
    for line in lines.iter().take(PAYLOAD_LINES) {
        if line.is_empty() {
            text.push('\n');
        } else {
            let _ = writeln!(text, "    {line}");
        }
    }
    if lines.len() > PAYLOAD_LINES {
        let _ = writeln!(
            text,
            "    … {} more lines (--json shows every output)",
            lines.len() - PAYLOAD_LINES
        );
    }
    text
}

/// The first line of `text`, at most 100 characters.
fn one_line(text: &str) -> String {
    let first = text.lines().next().unwrap_or("");
    if first.chars().count() > 100 {
        format!("{}…", first.chars().take(99).collect::<String>())
    } else {
        first.to_string()
    }
}
