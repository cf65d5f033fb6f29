//! What a person or a model reads of a node's outputs: its main payload (a file's `L{n}: `
//! lines, grep's hits, a listing, git's status lines or patch, findings as
//! `file:line:col rule message`, a preview's text, an applied diff, a session's output, a
//! command's streams), its summary line and its warnings. One rendering per node type, used by
//! `cheng run`'s terminal view (with colour), `graph run`'s rows and the MCP server's text
//! content (without), so the three never disagree.

use crate::Values;
use serde_json::Value;
use std::fmt::Write as _;

/// ANSI colours, or none.
#[derive(Clone, Copy, Debug)]
pub struct Style {
    pub color: bool,
}

impl Style {
    /// Colour on or off.
    pub fn new(color: bool) -> Style {
        Style { color }
    }

    /// No colour: text for a model, a log, a file.
    pub fn plain() -> Style {
        Style { color: false }
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

/// A node's outputs as text: `payload` is what the node produced for its reader, `stderr` the
/// command's own error stream (shell, tests, code nodes), `warnings` the node's warnings.
#[derive(Default, Debug, PartialEq, Eq)]
pub struct View {
    pub payload: String,
    pub stderr: String,
    pub warnings: Vec<String>,
}

/// What a node's view shows, by node type and operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A patch in this output (coloured on a terminal).
    Patch(&'static str),
    GitStatus,
    GitLog,
    GitBranches,
    Outline,
    Edits,
    Findings,
    /// This output's text as it is.
    Text(&'static str),
    Projects,
    /// This output as a JSON block.
    Json(&'static str),
    Nothing,
    /// A session's `output` (stdout and stderr interleaved), which may be shown live.
    SessionOutput,
    /// run_command's shaped streams: the level's stdout (or its warning lines) and stderr.
    RunCommand,
    /// The process's own stdout and stderr (and a code node's `result`).
    Process,
}

fn kind(node_type: &str, operation: &str) -> Kind {
    match (node_type, operation) {
        ("tools/workspace_git", "diff" | "show") => Kind::Patch("stdout"),
        ("tools/workspace_git", "status") => Kind::GitStatus,
        ("tools/workspace_git", "log") => Kind::GitLog,
        ("tools/workspace_git", "branch") => Kind::GitBranches,
        ("tools/workspace_markdown", "outline") => Kind::Outline,
        ("tools/workspace_markdown", "format_suggestions") => Kind::Edits,
        ("tools/workspace_markdown", _) => Kind::Findings,
        ("tools/workspace_preview", _) => Kind::Text("preview"),
        ("tools/workspace_tests", "detect") => Kind::Projects,
        ("tools/runtime", _) => Kind::Json("result"),
        // File reads and searches: what the model sees (the `L{n}: ` lines, the paths, the tree).
        ("tools/read_file" | "tools/grep" | "tools/glob" | "tools/list_dir", _) => {
            Kind::Text("content")
        }
        // File changes: the diff that was approved and written.
        ("tools/write_file" | "tools/edit_file" | "tools/apply_patch", _) => Kind::Patch("diff"),
        ("tools/delete_path", _) => Kind::Nothing,
        // A skill's whole SKILL.md, the notes listing, a note's text: what the model asked for.
        ("tools/skill" | "tools/notes_list" | "tools/notes_read", _) => Kind::Text("content"),
        // A fetched page: its text, as the model gets it.
        ("tools/web_fetch", _) => Kind::Text("content"),
        // The summary line says what was written.
        ("tools/notes_write", _) => Kind::Nothing,
        // A session's start: what the process wrote (live on a terminal: a single run waits
        // for the command).
        ("tools/exec_command", _) => Kind::SessionOutput,
        // run_command: the level's stdout (the warning lines at `warning`, none at `error`).
        ("tools/run_command", _) => Kind::RunCommand,
        // Sessions: what the process wrote since the last call.
        ("tools/write_stdin", _) => Kind::Text("output"),
        // Shell, tests run, code nodes.
        _ => Kind::Process,
    }
}

/// Whether the view of a `node_type` run with this `operation` is the process's own stdout and
/// stderr: a terminal may show those live as they arrive, and then [`render_after_live`]
/// instead of [`render`].
pub fn is_process_output(node_type: &str, operation: &str) -> bool {
    matches!(
        kind(node_type, operation),
        Kind::Process | Kind::SessionOutput
    )
}

/// The view of `out`, the outputs of a `node_type` run.
pub fn render(node_type: &str, out: &Values, style: Style) -> View {
    view(node_type, out, style, false)
}

/// The view of `out` once its process's stdout and stderr were shown live: what remains (a code
/// node's `result`, the warnings).
pub fn render_after_live(node_type: &str, out: &Values, style: Style) -> View {
    view(node_type, out, style, true)
}

fn view(node_type: &str, out: &Values, style: Style, streams_shown: bool) -> View {
    let operation = s(out, "operation").unwrap_or("");
    let mut view = View::default();
    view.payload = match kind(node_type, operation) {
        Kind::Patch(key) => patch(s(out, key).unwrap_or(""), style),
        Kind::GitStatus => git_status(out),
        Kind::GitLog => git_log(out, style),
        Kind::GitBranches => git_branches(out, style),
        Kind::Outline => outline(out.get("outline")),
        Kind::Edits => edits(out, style),
        Kind::Findings => findings(out, style),
        Kind::Text(key) => s(out, key).unwrap_or("").to_string(),
        Kind::Projects => projects(out),
        Kind::Json(key) => json_block(out.get(key)),
        Kind::Nothing => String::new(),
        Kind::RunCommand => {
            view.stderr = s(out, "stderr").unwrap_or("").to_string();
            s(out, "stdout")
                .or_else(|| s(out, "stdout_warnings"))
                .unwrap_or("")
                .to_string()
        }
        Kind::SessionOutput if streams_shown => String::new(),
        Kind::SessionOutput => s(out, "output").unwrap_or("").to_string(),
        Kind::Process => {
            // The command's own streams, as they were, and a code node's `result` after what
            // the script printed.
            let (stdout, stderr) = if streams_shown {
                ("", "")
            } else {
                (
                    s(out, "stdout").unwrap_or(""),
                    s(out, "stderr").unwrap_or(""),
                )
            };
            view.stderr = stderr.to_string();
            let mut payload = stdout.to_string();
            if node_type.starts_with("tools/code_") {
                let result = json_block(out.get("result"));
                if !result.is_empty() {
                    let printed = !payload.is_empty()
                        || (streams_shown
                            && out
                                .get("stdout")
                                .and_then(Value::as_str)
                                .is_some_and(|t| !t.is_empty()));
                    if printed {
                        payload = line_ended(&payload);
                        payload.push_str("result: ");
                    }
                    payload.push_str(&result);
                }
            }
            payload
        }
    };
    view.payload = line_ended(&view.payload);
    view.warnings = out
        .get("warnings")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    // run_command's hint when its output was cut is for the reader, like a warning.
    if let Some(note) = s(out, "truncation_note") {
        view.warnings.push(note.to_string());
    }
    view
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
                Some(ms) => format!("ok after {}", crate::text::human_duration_ms(ms)),
                None => "ok".to_string(),
            }
        }
    }
}

/// [`summary_line`] once the output was shown live: without a session's closing `Output:`
/// section, which repeats it.
pub fn summary_line_after_live(out: &Values) -> String {
    let line = summary_line(out);
    match line.find("\nOutput:\n") {
        Some(end) => line[..end].to_string(),
        None => line,
    }
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
                        crate::text::command_display(argv)
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn values(v: Value) -> Values {
        match v {
            Value::Object(map) => map,
            _ => Values::new(),
        }
    }

    #[test]
    fn only_process_views_are_shown_live() {
        assert!(is_process_output("tools/workspace_shell", ""));
        assert!(is_process_output("tools/workspace_tests", "run"));
        assert!(is_process_output("tools/code_python", ""));
        assert!(is_process_output("tools/exec_command", ""));
        assert!(!is_process_output("tools/write_stdin", ""));
        assert!(!is_process_output("tools/workspace_tests", "detect"));
        assert!(!is_process_output("tools/workspace_git", "diff"));
        assert!(!is_process_output("tools/read_file", ""));
    }

    #[test]
    fn after_live_output_a_code_node_shows_its_result_only() {
        let out = values(json!({"stdout": "printed\n", "stderr": "warned\n", "result": 2}));
        let whole = render("tools/code_python", &out, Style::plain());
        assert_eq!(whole.payload, "printed\nresult: 2\n");
        assert_eq!(whole.stderr, "warned\n");
        let rest = render_after_live("tools/code_python", &out, Style::plain());
        assert_eq!(rest.payload, "result: 2\n");
        assert_eq!(rest.stderr, "");

        let silent = values(json!({"stdout": "", "result": 2}));
        assert_eq!(
            render_after_live("tools/code_python", &silent, Style::plain()).payload,
            "2\n"
        );
        let shell = values(json!({"stdout": "x\n", "stderr": "y\n"}));
        assert_eq!(
            render_after_live("tools/workspace_shell", &shell, Style::plain()),
            View::default()
        );
    }

    fn outputs(value: Value) -> Values {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn run_command_shows_its_levels_stdout_and_the_truncation_note() {
        let info = outputs(json!({
            "stdout": "...[omitted 3 bytes]\ntail", "stderr": "e\n",
            "truncation_note": "Output was truncated.", "stdout_warnings": null,
        }));
        let view = render("tools/run_command", &info, Style::plain());
        assert_eq!(view.payload, "...[omitted 3 bytes]\ntail\n");
        assert_eq!(view.stderr, "e\n");
        assert_eq!(view.warnings, vec!["Output was truncated.".to_string()]);

        let warning = outputs(json!({
            "stdout": null, "stdout_warnings": "warning: x", "stderr": "",
            "truncation_note": null,
        }));
        let view = render("tools/run_command", &warning, Style::plain());
        assert_eq!(view.payload, "warning: x\n");
        assert!(view.warnings.is_empty());

        let error = outputs(json!({"stdout": null, "stdout_warnings": null, "stderr": "boom"}));
        assert_eq!(
            render("tools/run_command", &error, Style::plain()).payload,
            ""
        );
    }
}
