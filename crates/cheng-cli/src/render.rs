//! Output for people: on a terminal (or with `--format text`) `cheng run` shows the summary line
//! on stderr and the node's main payload raw on stdout (the patch of a git diff, a command's
//! output, findings as `file:line:col rule message`, a preview's HTML or text), so that
//! `cheng run … --format text > x.patch` keeps only the payload. Programs get the JSON object
//! (`--json`, or any stdout that is not a terminal).

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

/// ANSI colours, or none.
#[derive(Clone, Copy, Debug)]
pub struct Style {
    pub color: bool,
}

impl Style {
    pub fn new(choice: ColorChoice) -> Style {
        use std::io::IsTerminal;
        let color = match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                    && std::io::stdout().is_terminal()
            }
        };
        Style { color }
    }

    fn paint(self, code: &str, text: &str) -> String {
        if self.color && !text.is_empty() {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
    pub fn green(self, text: &str) -> String {
        self.paint("32", text)
    }
    pub fn red(self, text: &str) -> String {
        self.paint("31", text)
    }
    pub fn yellow(self, text: &str) -> String {
        self.paint("33", text)
    }
    pub fn cyan(self, text: &str) -> String {
        self.paint("36", text)
    }
    pub fn dim(self, text: &str) -> String {
        self.paint("2", text)
    }
    pub fn bold(self, text: &str) -> String {
        self.paint("1", text)
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
        wants_text(self.format, self.json).then(|| Style::new(self.color))
    }
}

fn s<'a>(out: &'a Values, key: &str) -> Option<&'a str> {
    out.get(key).and_then(Value::as_str)
}

/// The summary line: the node's `summary`, or (for nodes without one) `ok` / `CODE: error`.
pub fn summary_line(out: &Values) -> String {
    if let Some(summary) = s(out, "summary") {
        return summary.to_string();
    }
    let success = out.get("success").and_then(Value::as_bool).unwrap_or(false);
    match (success, s(out, "error_kind"), s(out, "error")) {
        (false, Some(kind), Some(error)) => format!("{kind}: {error}"),
        (false, _, Some(error)) => error.to_string(),
        (false, _, None) => "failed".to_string(),
        (true, _, _) => {
            let metrics = out.get("metrics");
            match metrics.and_then(|m| m["duration_ms"].as_u64()) {
                Some(ms) => format!("ok after {}", cheng_node::text::human_duration_ms(ms)),
                None => "ok".to_string(),
            }
        }
    }
}

/// `cheng run`'s text: the summary line (green or red) on stderr, the payload on stdout.
pub fn node(node_type: &str, out: &Values, style: Style) -> Text {
    let success = out.get("success").and_then(Value::as_bool).unwrap_or(false);
    let line = summary_line(out);
    let mut text = Text {
        head: format!(
            "{}\n",
            if success {
                style.green(&line)
            } else {
                style.red(&line)
            }
        ),
        ..Text::default()
    };
    let operation = s(out, "operation").unwrap_or("");
    match (node_type, operation) {
        ("tools/workspace_git", "diff" | "show") => {
            text.stdout = patch(s(out, "stdout").unwrap_or(""), style)
        }
        ("tools/workspace_git", "status") => text.stdout = git_status(out),
        ("tools/workspace_git", "log") => text.stdout = git_log(out, style),
        ("tools/workspace_git", "branch") => text.stdout = git_branches(out, style),
        ("tools/workspace_markdown", "outline") => text.stdout = outline(out.get("outline")),
        ("tools/workspace_markdown", "format_suggestions") => text.stdout = edits(out, style),
        ("tools/workspace_markdown", _) => text.stdout = findings(out, style),
        ("tools/workspace_preview", _) => text.stdout = s(out, "preview").unwrap_or("").to_string(),
        ("tools/workspace_tests", "detect") => text.stdout = projects(out),
        ("tools/runtime", _) => text.stdout = json_block(out.get("result")),
        // File reads and searches: what the model sees (the `L{n}: ` lines, the paths, the tree).
        ("tools/read_file" | "tools/grep" | "tools/glob" | "tools/list_dir", _) => {
            text.stdout = line_ended(s(out, "content").unwrap_or(""))
        }
        // File changes: the diff that was approved and written.
        ("tools/write_file" | "tools/edit_file" | "tools/apply_patch", _) => {
            text.stdout = patch(s(out, "diff").unwrap_or(""), style)
        }
        ("tools/delete_path", _) => {}
        // Sessions: what the process wrote since the last call.
        ("tools/exec_command" | "tools/write_stdin", _) => {
            text.stdout = s(out, "output").unwrap_or("").to_string()
        }
        _ => {
            // Shell, tests run, code nodes: the command's own streams, as they were.
            text.stdout = s(out, "stdout").unwrap_or("").to_string();
            text.tail.push_str(s(out, "stderr").unwrap_or(""));
            if text.stdout.is_empty() && node_type.starts_with("tools/code_") {
                if let Some(result) = out.get("result").filter(|r| !r.is_null()) {
                    text.stdout = json_block(Some(result));
                }
            }
        }
    }
    for warning in out
        .get("warnings")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        let _ = writeln!(
            text.tail,
            "{}",
            style.yellow(&format!("warning: {warning}"))
        );
    }
    for (flag, what) in [
        ("stdout_truncated", "stdout"),
        ("stderr_truncated", "stderr"),
        ("preview_truncated", "preview"),
    ] {
        if out.get(flag).and_then(Value::as_bool) == Some(true) {
            let _ = writeln!(
                text.tail,
                "{}",
                style.dim(&format!(
                    "({what} was truncated: head and tail kept; --json shows the markers)"
                ))
            );
        }
    }
    if !text.stdout.is_empty() && !text.stdout.ends_with('\n') {
        text.stdout.push('\n');
    }
    text
}

/// `text` with a final newline, so the shell prompt starts on a line of its own.
fn line_ended(text: &str) -> String {
    if text.is_empty() || text.ends_with('\n') {
        text.to_string()
    } else {
        format!("{text}\n")
    }
}

fn patch(patch: &str, style: Style) -> String {
    if !style.color {
        return patch.to_string();
    }
    let mut text = String::with_capacity(patch.len() + patch.len() / 8);
    for line in patch.split_inclusive('\n') {
        let (body, end) = line.strip_suffix('\n').map_or((line, ""), |b| (b, "\n"));
        let painted =
            if body.starts_with("+++") || body.starts_with("---") || body.starts_with("diff ") {
                style.bold(body)
            } else if body.starts_with('+') {
                style.green(body)
            } else if body.starts_with('-') {
                style.red(body)
            } else if body.starts_with("@@") {
                style.cyan(body)
            } else {
                body.to_string()
            };
        text.push_str(&painted);
        text.push_str(end);
    }
    text
}

fn items(out: &Values, key: &str) -> Vec<Value> {
    out.get(key)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// `git status --short`-like lines: index and work-tree letters, then the path.
fn git_status(out: &Values) -> String {
    let mut text = String::new();
    for file in items(out, "files") {
        let letter = |key: &str| match file[key].as_str() {
            Some(".") | None => " ".to_string(),
            Some(other) => other.to_string(),
        };
        let (index, tree) = if file["untracked"] == true {
            ("?".into(), "?".into())
        } else {
            (letter("index_status"), letter("worktree_status"))
        };
        let path = file["path"].as_str().unwrap_or("");
        match file["orig_path"].as_str() {
            Some(orig) => {
                let _ = writeln!(text, "{index}{tree} {orig} -> {path}");
            }
            None => {
                let _ = writeln!(text, "{index}{tree} {path}");
            }
        }
    }
    text
}

fn git_log(out: &Values, style: Style) -> String {
    let mut text = String::new();
    for commit in items(out, "commits") {
        let field = |k: &str| commit[k].as_str().unwrap_or("").to_string();
        let _ = writeln!(
            text,
            "{} {} {} {}",
            style.yellow(&field("short_hash")),
            field("date"),
            style.dim(&field("author")),
            field("subject")
        );
    }
    text
}

fn git_branches(out: &Values, style: Style) -> String {
    let mut text = String::new();
    for branch in items(out, "branches") {
        let name = branch["name"].as_str().unwrap_or("");
        let subject = branch["subject"].as_str().unwrap_or("");
        if branch["current"] == true {
            let _ = writeln!(text, "* {} {subject}", style.green(name));
        } else {
            let _ = writeln!(text, "  {name} {subject}");
        }
    }
    text
}

fn outline(value: Option<&Value>) -> String {
    fn walk(nodes: &[Value], text: &mut String) {
        for node in nodes {
            let level = node["level"].as_u64().unwrap_or(1);
            let indent = "  ".repeat(usize::try_from(level.saturating_sub(1)).unwrap_or(0));
            let _ = writeln!(
                text,
                "{indent}{} {} (line {})",
                "#".repeat(usize::try_from(level).unwrap_or(1)),
                node["text"].as_str().unwrap_or(""),
                node["line"]
            );
            walk(
                node["children"]
                    .as_array()
                    .map(Vec::as_slice)
                    .unwrap_or(&[]),
                text,
            );
        }
    }
    let mut text = String::new();
    walk(
        value
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]),
        &mut text,
    );
    text
}

/// `file:line:col rule message`, as linters print them.
fn findings(out: &Values, style: Style) -> String {
    let path = s(out, "path").unwrap_or("");
    let mut text = String::new();
    for d in items(out, "diagnostics") {
        let file = d["path"].as_str().unwrap_or(path);
        let rule = d["rule"].as_str().unwrap_or("");
        let rule = if d["severity"] == "error" {
            style.red(rule)
        } else {
            style.yellow(rule)
        };
        let _ = writeln!(
            text,
            "{file}:{}:{} {rule} {}",
            d["line"],
            d["column"],
            d["message"].as_str().unwrap_or("")
        );
    }
    text
}

fn edits(out: &Values, style: Style) -> String {
    let mut text = String::new();
    for e in items(out, "suggested_edits") {
        let _ = writeln!(
            text,
            "{}:{} {} {}",
            e["path"].as_str().unwrap_or(""),
            e["line"],
            style.yellow(e["rule"].as_str().unwrap_or("")),
            e["reason"].as_str().unwrap_or("")
        );
    }
    text
}

fn projects(out: &Values) -> String {
    let mut text = String::new();
    let projects = out
        .get("detected_project")
        .and_then(|d| d["projects"].as_array())
        .cloned()
        .unwrap_or_default();
    for p in projects {
        let commands: Vec<String> = p["commands"]
            .as_array()
            .map(|cs| {
                cs.iter()
                    .map(|c| {
                        let argv = std::iter::once(c["command"].as_str().unwrap_or("")).chain(
                            c["args"]
                                .as_array()
                                .into_iter()
                                .flatten()
                                .filter_map(Value::as_str),
                        );
                        cheng_node::text::command_display(argv)
                    })
                    .collect()
            })
            .unwrap_or_default();
        let _ = writeln!(
            text,
            "{}  {}  {}",
            p["cwd"].as_str().unwrap_or("."),
            p["type"].as_str().unwrap_or(""),
            commands.join("; ")
        );
    }
    text
}

fn json_block(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
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

/// The first line of `text`, at most 100 characters.
fn one_line(text: &str) -> String {
    let first = text.lines().next().unwrap_or("");
    if first.chars().count() > 100 {
        format!("{}…", first.chars().take(99).collect::<String>())
    } else {
        first.to_string()
    }
}
