//! `tools/grep`: workspace files containing a regular expression, newest-modified first.
//! Read-only.
//!
//! The contract is Codex CLI's `grep_files` handler (ChengOS's agent-tools reference), which runs `rg
//! --files-with-matches --sortr=modified --regexp PATTERN [--glob INCLUDE] -- PATH`: `pattern` is
//! a regular expression (Rust regex syntax, as ripgrep's), `include` an optional glob limiting
//! the files searched, `path` the directory (or file) to search, `limit` how many files to
//! return (default 100, at most 2000). The search uses ripgrep's own crates (`grep-regex`,
//! `grep-searcher`) over [`crate::walk::walker`]'s walk (one thread walks, one searcher per CPU
//! searches): `.gitignore` and `.ignore`
//! respected, `.git` and hidden entries skipped, binary files (a NUL byte) skipped as ripgrep
//! skips them, symlinks never followed (links leaving the workspace or dangling are reported,
//! never read).
//!
//! Unlike `rg --glob`, `include` never overrides the ignore rules: an ignored file stays unsearched.
//!
//! Beyond Codex's contract (Claude Code's Grep tool is the model): `output_mode` `content` shows
//! the matched lines of the files found (`rg -n`, with `-B`/`-A`/`-C` context), `count` the
//! matching lines per file (`rg --count`); `case_insensitive` (`rg -i`), `multiline` (`rg -U
//! --multiline-dotall`), and `offset`/`head_limit` over the result lines. `limit` still caps the
//! files (the newest-modified), so every mode reads at most `limit` files a second time
//! ([`crate::grep_view`] renders them).

use crate::glob::{candidate, compile, plural};
use crate::grep_view::{search_lines, Window, MAX_CONTEXT};
pub use crate::grep_view::{Mode, View};
use crate::walk::{
    fit_lines, walker, Budget, LinkTarget, ReadScope, TopK, MAX_CONTENT_BYTES, WALK_TIME_LIMIT,
};
use cheng_fs::WorkspaceFs;
use cheng_node::input::{self, non_empty_str};
use cheng_node::{
    failure, Effects, Node, NodeError, NodeSpec, PortSpec, PortType, RunContext, Values,
};
use globset::GlobSet;
use grep_matcher::Matcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use serde_json::{json, Value};
use std::cmp::Reverse;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::SystemTime;

/// Default and largest `limit` (Codex's DEFAULT_LIMIT and MAX_LIMIT).
pub const DEFAULT_LIMIT: i64 = 100;
pub const MAX_LIMIT: i64 = 2000;
/// Files handed to a searcher thread at a time (a hand-over costs a lock and maybe a wake-up).
const BATCH: usize = 16;
/// Most symlinks leaving the workspace (or dangling) listed in `links`; the rest are counted.
pub const MAX_REPORTED_LINKS: usize = 100;

const LIMIT: PortSpec =
    PortSpec::input("limit", PortType::Integer, "Most matching files to return")
        .default("100")
        .min(1)
        .max(MAX_LIMIT);

const OUTPUT_MODE: PortSpec = PortSpec::input(
    "output_mode",
    PortType::String,
    "What to return: files_with_matches: matching files, newest-modified first; content: matched lines as path:line:text (rg -n); count: path:N, the matching lines per file (rg --count)",
)
.default("\"files_with_matches\"")
.choices(Mode::NAMES);
const CONTEXT: PortSpec = PortSpec::input(
    "context",
    PortType::Integer,
    "Lines shown before and after each match (grep -C); content mode only",
)
.default("null")
.min(0)
.max(MAX_CONTEXT);
const CONTEXT_BEFORE: PortSpec = PortSpec::input(
    "context_before",
    PortType::Integer,
    "Lines shown before each match (grep -B; overrides context); content mode only",
)
.default("null")
.min(0)
.max(MAX_CONTEXT);
const CONTEXT_AFTER: PortSpec = PortSpec::input(
    "context_after",
    PortType::Integer,
    "Lines shown after each match (grep -A; overrides context); content mode only",
)
.default("null")
.min(0)
.max(MAX_CONTEXT);
const CASE_INSENSITIVE: PortSpec = PortSpec::input(
    "case_insensitive",
    PortType::Boolean,
    "Match letters regardless of case (grep -i)",
)
.default("false");
const MULTILINE: PortSpec = PortSpec::input(
    "multiline",
    PortType::Boolean,
    "Let the pattern span lines: \\n matches a line end and . matches it too (rg -U --multiline-dotall)",
)
.default("false");
const HEAD_LIMIT: PortSpec = PortSpec::input(
    "head_limit",
    PortType::Integer,
    "Most result lines shown after offset (files in files_with_matches and count mode, lines in content mode; | head -n)",
)
.default("null")
.min(1)
.max(1_000_000);
const OFFSET: PortSpec = PortSpec::input(
    "offset",
    PortType::Integer,
    "Result lines skipped before the first shown (files, or lines in content mode; | tail -n +offset+1)",
)
.default("0")
.min(0)
.max(1_000_000);

pub static SPEC: NodeSpec = NodeSpec {
    id: "tools/grep",
    title: "Grep",
    description: "Find workspace files whose content matches a regular expression, newest-modified first (ripgrep's engine): optional include glob, limit default 100 (at most 2000). .gitignore and .ignore are respected; .git, hidden entries and binary files are skipped; symlinks are never followed (links leaving the workspace are reported, not read). output_mode content shows the matched lines (path:line:text, optional context as grep -A/-B/-C, lines cut at 500 bytes), count the matching lines per file; case_insensitive, multiline, and head_limit/offset over the result lines. Read-only.",
    category: "files",
    inputs: &[
        PortSpec::input("pattern", PortType::String, "Regular expression to search for (Rust regex syntax, as ripgrep's), e.g. fn\\s+main")
            .required(),
        PortSpec::input(
            "include",
            PortType::String,
            "Glob limiting the files searched, e.g. *.rs or src/**/*.{ts,tsx}; without / it matches file names at any depth",
        )
        .default("null"),
        PortSpec::input(
            "path",
            PortType::String,
            "Directory or file to search, relative to the workspace root or absolute inside it (default: the root)",
        )
        .default("\".\""),
        LIMIT,
        OUTPUT_MODE,
        CONTEXT,
        CONTEXT_BEFORE,
        CONTEXT_AFTER,
        CASE_INSENSITIVE,
        MULTILINE,
        HEAD_LIMIT,
        OFFSET,
        crate::policy::READ_ROOTS,
        PortSpec::sandbox_root(),
    ],
    outputs: &[
        PortSpec::output("path", PortType::String, "The directory or file searched, relative to the workspace root"),
        failure::success("Whether the search ran (no match is still a success)"),
        PortSpec::output("summary", PortType::String, "Human-readable summary: how many files matched and how many are shown"),
        PortSpec::output(
            "content",
            PortType::String,
            "Matching files relative to the workspace root, newest-modified first, one per line (content mode: path:line:text lines, path-line-text for context, -- between groups, each line cut at 500 bytes with …[cut]; count mode: path:count lines), or `No matches found.`",
        ),
        PortSpec::output("files", PortType::Array(&PortType::String), "Matching files, relative to the workspace root, newest-modified first"),
        PortSpec::output(
            "links",
            PortType::Any,
            "Symlinks met that were not searched because they leave the workspace or dangle: path and link (outside, dangling)",
        ),
        PortSpec::output("total", PortType::Integer, "How many results there are before offset and head_limit: matching files in all (files_with_matches), or of the limit newest-modified files the ones with a count (count) or the lines (content)"),
        PortSpec::output("truncated", PortType::Boolean, "True when fewer results are returned than there are (limit, offset, head_limit or output size)"),
        failure::ERROR_KIND,
        failure::TERMINAL,
        failure::ERROR,
    ],
    gate: None,
    effects: Effects::ReadOnly,
};

pub struct Grep;

cheng_node::inventory::submit! { cheng_node::NodeRegistration::new(&Grep) }

/// One grep request, defaults applied.
#[derive(Debug, Clone)]
pub struct Request {
    pub pattern: String,
    pub include: Option<String>,
    pub path: Option<String>,
    pub limit: usize,
    /// What is shown of the matches (default: the file list alone).
    pub view: View,
}

/// A count port (`null` when unset).
fn opt_count(input: &Values, port: &PortSpec) -> Result<Option<usize>, NodeError> {
    input::opt_int(input, port)?
        .map(|n| {
            usize::try_from(n).map_err(|_| {
                NodeError::internal(format!(
                    "{} passed its range check but is not a count",
                    port.name
                ))
            })
        })
        .transpose()
}

/// The output options in `input`; context outside content mode is refused, not ignored.
pub fn view(input: &Values) -> Result<View, NodeError> {
    let mode = match input::value(input, &OUTPUT_MODE)? {
        Some(Value::String(name)) => Mode::parse(&name).ok_or_else(|| {
            NodeError::invalid_input(format!(
                "output_mode: {name:?} is not one of {}",
                Mode::NAMES.join(", ")
            ))
        })?,
        _ => Mode::FilesWithMatches,
    };
    let context = opt_count(input, &CONTEXT)?;
    let before = opt_count(input, &CONTEXT_BEFORE)?;
    let after = opt_count(input, &CONTEXT_AFTER)?;
    if mode != Mode::Content {
        for (port, value) in [
            (&CONTEXT, context),
            (&CONTEXT_BEFORE, before),
            (&CONTEXT_AFTER, after),
        ] {
            if value.is_some() {
                return Err(NodeError::invalid_input(format!(
                    "{}: context lines are shown only with output_mode content; set output_mode to content or leave {} unset",
                    port.name, port.name
                )));
            }
        }
    }
    Ok(View {
        mode,
        before: before.or(context).unwrap_or(0),
        after: after.or(context).unwrap_or(0),
        case_insensitive: input::boolean(input, &CASE_INSENSITIVE)?,
        multiline: input::boolean(input, &MULTILINE)?,
        offset: opt_count(input, &OFFSET)?.unwrap_or(0),
        head_limit: opt_count(input, &HEAD_LIMIT)?,
    })
}

#[cheng_node::async_trait]
impl Node for Grep {
    fn spec(&self) -> &'static NodeSpec {
        &SPEC
    }

    async fn run(&self, ctx: &RunContext, input: Values) -> Result<Values, NodeError> {
        let request = Request {
            pattern: non_empty_str(&input, "pattern")
                .unwrap_or_default()
                .to_string(),
            include: non_empty_str(&input, "include").map(str::to_string),
            path: non_empty_str(&input, "path").map(str::to_string),
            limit: usize::try_from(input::int(&input, &LIMIT)?).map_err(|_| {
                NodeError::internal("limit passed its range check but is not a count")
            })?,
            view: view(&input)?,
        };
        let scope = ReadScope::from_input(&ctx.workspace, &input)?;
        let budget = Budget::new(ctx.cancel.clone(), WALK_TIME_LIMIT, "grep search");
        tokio::task::spawn_blocking(move || grep(&scope, &request, &budget))
            .await
            .map_err(|e| {
                NodeError::internal(format!("the grep search stopped unexpectedly: {e}"))
            })?
    }
}

/// Compiles `pattern` as ripgrep does by default (line-oriented, case-sensitive).
pub fn matcher(pattern: &str) -> Result<RegexMatcher, NodeError> {
    matcher_for(pattern, &View::default())
}

/// Compiles `pattern` for `view`: case-insensitive as `rg -i`, spanning lines as `rg -U
/// --multiline-dotall` (no line terminator then, so `\n` may match).
pub fn matcher_for(pattern: &str, view: &View) -> Result<RegexMatcher, NodeError> {
    let mut builder = RegexMatcherBuilder::new();
    builder.case_insensitive(view.case_insensitive);
    if view.multiline {
        builder.multi_line(true).dot_matches_new_line(true);
    } else {
        builder.line_terminator(Some(b'\n'));
    }
    builder.build(pattern).map_err(|e| {
        let e = e.to_string();
        // A line-oriented search never sees a line end: say which port lets a pattern span lines.
        let hint = if e.contains(r#""\n""#) {
            "set multiline to true to match across lines"
        } else {
            "escape regex characters such as ( [ { . * + ? with \\ to match them literally"
        };
        NodeError::invalid_input(format!(
            "pattern {pattern:?} is not a valid regular expression: {e}; {hint}"
        ))
    })
}

/// Stops a search at its first match and remembers there was one.
struct FirstMatch(bool);

impl Sink for FirstMatch {
    type Error = std::io::Error;

    fn matched(
        &mut self,
        _searcher: &Searcher,
        _mat: &SinkMatch<'_>,
    ) -> Result<bool, std::io::Error> {
        self.0 = true;
        Ok(false)
    }
}

/// Most bytes of one file a multiline search holds (it needs the whole file in memory); a larger
/// file counts as unreadable.
const MULTILINE_HEAP: usize = 64 * 1024 * 1024;

fn searcher(view: &View) -> Searcher {
    let mut builder = SearcherBuilder::new();
    builder
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .line_number(view.mode == Mode::Content)
        .before_context(view.before)
        .after_context(view.after);
    if view.multiline {
        builder.multi_line(true).heap_limit(Some(MULTILINE_HEAP));
    }
    builder.build()
}

/// Whether the file at `path` (opened through the workspace handle `fs`) contains a match
/// (binary files never do).
pub fn file_matches(
    fs: &WorkspaceFs,
    searcher: &mut Searcher,
    matcher: &impl Matcher,
    path: &Path,
) -> std::io::Result<bool> {
    let file = fs.open_read(path)?;
    let mut sink = FirstMatch(false);
    searcher.search_file(matcher, &file, &mut sink)?;
    Ok(sink.0)
}

/// The include glob and what it is matched against.
#[derive(Clone)]
struct Include {
    set: GlobSet,
    /// A glob without `/` matches file names; one with `/` the path relative to the search.
    by_name: bool,
}

impl Include {
    fn matches(&self, path: &Path, base: &Path) -> bool {
        if self.by_name {
            path.file_name()
                .is_some_and(|name| self.set.is_match(Path::new(name)))
        } else {
            self.set.is_match(candidate(path, base))
        }
    }
}

#[derive(Default)]
struct Found {
    /// (newest first, then path bytes): the `limit` smallest are kept.
    files: Option<TopK<(Reverse<SystemTime>, Vec<u8>)>>,
    links: Vec<(PathBuf, LinkTarget)>,
    links_total: usize,
}

/// Runs one search under `scope`, producing the node's output object.
pub fn grep(scope: &ReadScope, request: &Request, budget: &Budget) -> Result<Values, NodeError> {
    let pattern = request.pattern.trim();
    if pattern.is_empty() {
        return Err(NodeError::invalid_input(
            "pattern is required: a regular expression such as fn\\s+main",
        ));
    }
    let view = &request.view;
    let matcher = matcher_for(pattern, view)?;
    let include = match request
        .include
        .as_deref()
        .map(str::trim)
        .filter(|g| !g.is_empty())
    {
        None => None,
        Some(glob) => {
            let glob = glob.strip_prefix("./").unwrap_or(glob);
            Some(Include {
                set: compile(glob, "include")?,
                by_name: !glob.contains('/'),
            })
        }
    };
    let base = scope.resolve(request.path.as_deref(), "path")?;
    let shown_base = scope.display(&base);
    // The walk stays under `base`, so under its root: one handle serves every file.
    let fs = scope.fs_for(&base)?;

    let found = Mutex::new(Found {
        files: Some(TopK::new(request.limit)),
        ..Found::default()
    });
    let stopped = AtomicBool::new(false);
    let unreadable = AtomicUsize::new(0);
    // One thread walks (the walk costs a few percent of the search) and hands regular files, in
    // batches, to `threads` searchers over a bounded channel; a blocked searcher wakes as soon
    // as a batch arrives.
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(12);
    let (sender, receiver) = std::sync::mpsc::sync_channel::<Vec<PathBuf>>(64);
    let receiver = Mutex::new(receiver);
    let search_one =
        |searcher: &mut Searcher, matcher: &RegexMatcher, path: &Path| match file_matches(
            &fs, searcher, matcher, path,
        ) {
            Ok(true) => {
                // A regular file (the walk never follows links): its own modification time.
                let modified = fs
                    .symlink_metadata(path)
                    .and_then(|m| m.modified())
                    .unwrap_or(SystemTime::UNIX_EPOCH);
                let mut found = found.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(files) = found.files.as_mut() {
                    files.push((Reverse(modified), path.as_os_str().as_bytes().to_vec()));
                }
            }
            Ok(false) => {}
            Err(_) => {
                unreadable.fetch_add(1, Ordering::Relaxed);
            }
        };
    std::thread::scope(|s| {
        let mut searchers = 0;
        for _ in 0..threads {
            let (receiver, stopped, matcher, search_one, view) =
                (&receiver, &stopped, &matcher, &search_one, view);
            let spawned = std::thread::Builder::new()
                .name("grep-search".into())
                .spawn_scoped(s, move || {
                    let mut searcher = searcher(view);
                    let matcher = matcher.clone();
                    loop {
                        let next = receiver.lock().unwrap_or_else(|p| p.into_inner()).recv();
                        let Ok(batch) = next else { break };
                        for path in batch {
                            if stopped.load(Ordering::Relaxed) {
                                break;
                            }
                            search_one(&mut searcher, &matcher, &path);
                        }
                    }
                });
            searchers += usize::from(spawned.is_ok());
        }
        // Without a searcher thread (none could be started) this thread searches itself.
        let mut inline = (searchers == 0).then(|| (searcher(view), matcher.clone()));
        let mut batch = Vec::with_capacity(BATCH);
        for (n, entry) in walker(scope, &base, false).build().enumerate() {
            if n % 64 == 0 && budget.exhausted() {
                stopped.store(true, Ordering::Relaxed);
                break;
            }
            let entry = match entry {
                Ok(entry) => entry,
                Err(_) => {
                    unreadable.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
            };
            let Some(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if include
                .as_ref()
                .is_some_and(|inc| !kind.is_dir() && !inc.matches(path, &base))
            {
                continue;
            }
            if kind.is_symlink() {
                let target = scope.link(path);
                if !matches!(target, LinkTarget::Readable(_)) {
                    let mut found = found.lock().unwrap_or_else(|p| p.into_inner());
                    found.links_total += 1;
                    if found.links.len() < MAX_REPORTED_LINKS {
                        found.links.push((path.to_path_buf(), target));
                    }
                }
                continue;
            }
            if !kind.is_file() {
                continue;
            }
            match inline.as_mut() {
                Some((searcher, matcher)) => search_one(searcher, matcher, path),
                None => {
                    batch.push(entry.into_path());
                    if batch.len() == BATCH
                        && sender
                            .send(std::mem::replace(&mut batch, Vec::with_capacity(BATCH)))
                            .is_err()
                    {
                        break;
                    }
                }
            }
        }
        if !batch.is_empty() {
            // The searchers only stop once the sender is gone, so this cannot fail.
            let _ = sender.send(batch);
        }
        drop(sender);
    });
    if stopped.load(Ordering::Relaxed) {
        budget.check()?;
    }
    let mut found = found.into_inner().unwrap_or_else(|p| p.into_inner());
    let top = found.files.take().unwrap_or_else(|| TopK::new(0));
    let files_total = top.total();
    let matches = top.into_sorted();
    let lines: Vec<String> = matches
        .iter()
        .map(|(_, bytes)| scope.display(Path::new(OsStr::from_bytes(bytes))))
        .collect();
    let windowed = view.offset > 0 || view.head_limit.is_some();
    let (mut content, total, kept, truncated, files);
    if view.mode == Mode::FilesWithMatches {
        // The window over the files found; without offset and head_limit, Codex's list as is.
        let shown: Vec<String> = lines
            .iter()
            .skip(view.offset)
            .take(view.head_limit.unwrap_or(usize::MAX))
            .cloned()
            .collect();
        let fitted = fit_lines(&shown, MAX_CONTENT_BYTES);
        (content, kept, total) = (fitted.0, fitted.1, files_total);
        truncated = view.offset + kept < total;
        if total == 0 {
            content = "No matches found.".to_string();
        } else if kept < shown.len() {
            content.push_str(&format!(
                "\n[{} more matching files not shown: the output is limited to {} KiB; narrow the pattern, include or path]",
                total - view.offset - kept,
                MAX_CONTENT_BYTES / 1024
            ));
        }
        files = shown
            .into_iter()
            .take(kept)
            .map(Value::String)
            .collect::<Vec<_>>();
    } else {
        // Content and count: the files found, newest first, searched again for their lines.
        let mut window = Window::new(view, MAX_CONTENT_BYTES);
        let mut searcher = searcher(view);
        let mut grouped = false;
        for ((_, bytes), shown) in matches.iter().zip(&lines) {
            budget.check()?;
            let path = Path::new(OsStr::from_bytes(bytes));
            let read = fs.open_read(path).and_then(|file| {
                search_lines(
                    &mut searcher,
                    &matcher,
                    &file,
                    shown,
                    view,
                    &mut grouped,
                    &mut window,
                )
            });
            if read.is_err() {
                unreadable.fetch_add(1, Ordering::Relaxed);
            }
        }
        total = window.total;
        kept = window.lines.len();
        truncated = !window.complete() || files_total > lines.len();
        content = window.lines.join("\n");
        if window.dropped > 0 {
            content.push_str(&format!(
                "\n[{} more lines not shown: the output is limited to {} KiB; page with offset, or narrow the pattern, include or path]",
                window.dropped,
                MAX_CONTENT_BYTES / 1024
            ));
        }
        if total == 0 {
            content = "No matches found.".to_string();
        }
        files = lines.iter().cloned().map(Value::String).collect();
    }
    if total > 0 && kept == 0 && windowed {
        content = format!("No results at offset {}: there are {total}.", view.offset);
    }
    found.links.sort_by(|a, b| a.0.cmp(&b.0));
    let links: Vec<Value> = found
        .links
        .iter()
        .map(|(path, target)| json!({"path": scope.display(path), "link": target.kind()}))
        .collect();
    let mut summary = match (files_total, truncated) {
        (0, _) => format!("no file under {shown_base} matches {pattern}"),
        (_, false) => format!("{files_total} file{} under {shown_base} match{} {pattern}", plural(files_total), if files_total == 1 { "es" } else { "" }),
        (_, true) if view.mode == Mode::FilesWithMatches && !windowed => format!("{files_total} files under {shown_base} match {pattern}; the {kept} newest-modified are shown"),
        (_, true) => format!("{files_total} file{} under {shown_base} match{} {pattern}", plural(files_total), if files_total == 1 { "es" } else { "" }),
    };
    match view.mode {
        Mode::FilesWithMatches if windowed => {
            summary.push_str(&format!("; {kept} shown from offset {}", view.offset))
        }
        Mode::FilesWithMatches => {}
        Mode::Content => summary.push_str(&format!(
            "; {total} result line{} from the {} newest-modified, {kept} shown from offset {}",
            plural(total),
            lines.len(),
            view.offset
        )),
        Mode::Count => summary.push_str(&format!(
            "; counts for the {} newest-modified, {kept} shown from offset {}",
            lines.len(),
            view.offset
        )),
    }
    if found.links_total > 0 {
        summary.push_str(&format!(
            "; {} symlink{} leaving the workspace or dangling not searched",
            found.links_total,
            plural(found.links_total)
        ));
    }
    let unreadable = unreadable.load(Ordering::Relaxed);
    if unreadable > 0 {
        summary.push_str(&format!(
            "; {unreadable} entr{} could not be read",
            if unreadable == 1 { "y" } else { "ies" }
        ));
    }
    let mut out = Values::new();
    out.insert("path".into(), json!(shown_base));
    out.insert("summary".into(), json!(summary));
    out.insert("content".into(), json!(content));
    out.insert("files".into(), Value::Array(files));
    out.insert("links".into(), Value::Array(links));
    out.insert("total".into(), json!(total));
    out.insert("truncated".into(), json!(truncated));
    failure::fill::<()>(&mut out, &Ok(()));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_regex_names_the_port() {
        for bad in ["(unclosed", "[z-a]", "a{2,1}", "*"] {
            let err = matcher(bad).unwrap_err();
            assert!(err.message.starts_with("pattern "), "{}", err.message);
            assert!(
                err.message.contains("is not a valid regular expression"),
                "{}",
                err.message
            );
        }
    }
}
