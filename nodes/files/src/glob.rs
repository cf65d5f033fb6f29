//! `tools/glob`: workspace files whose path matches a glob. Read-only.
//!
//! The pattern is matched (with `globset`) against each file's path relative to `path` (the
//! workspace root by default): `*` and `?` stay within one path segment, `**` crosses any number
//! of directories and `**/` also matches none (`**/*.rs` matches `main.rs` at the top), `[...]`
//! is a character class and `{a,b}` an alternative; `\` escapes. An absolute pattern is matched
//! against absolute paths. The walk is [`crate::walk::walker`]'s: `.gitignore` and `.ignore`
//! respected, `.git` always skipped, hidden entries only with `include_hidden`, symlinks never
//! followed (a matching symlink is listed as one, with where it leads).
//!
//! Matches are sorted by path; `limit` (default 100, at most 2000) caps how many are returned and
//! the total is counted.

use crate::walk::{
    fit_lines, walker, Budget, LinkTarget, ReadScope, TopK, MAX_CONTENT_BYTES, WALK_TIME_LIMIT,
};
use cheng_node::input::{self, non_empty_str};
use cheng_node::{
    failure, Effects, Node, NodeError, NodeSpec, PortSpec, PortType, RunContext, Values,
};
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde_json::{json, Value};
use std::ffi::OsStr;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;

/// Largest `limit`.
pub const MAX_LIMIT: i64 = 2000;

const LIMIT: PortSpec =
    PortSpec::input("limit", PortType::Integer, "Most matching paths to return")
        .default("100")
        .min(1)
        .max(MAX_LIMIT);
const INCLUDE_HIDDEN: PortSpec = PortSpec::input(
    "include_hidden",
    PortType::Boolean,
    "Also match hidden files and look inside hidden directories (names starting with .); .git is always skipped",
)
.default("false");

pub static SPEC: NodeSpec = NodeSpec {
    id: "tools/glob",
    title: "Glob",
    description: "Find workspace files whose path matches a glob: * within one path segment, ** across any depth (**/ also matches none), ?, [...], {a,b}. .gitignore and .ignore are respected, .git is always skipped, hidden entries only on request; symlinks are listed, never followed. Results sorted by path, limit default 100 (at most 2000). Read-only.",
    category: "files",
    inputs: &[
        PortSpec::input(
            "pattern",
            PortType::String,
            "Glob matched against paths relative to `path`, e.g. **/*.rs, src/*.{ts,tsx}, docs/?/index.md",
        )
        .required(),
        PortSpec::input(
            "path",
            PortType::String,
            "Directory to search, relative to the workspace root or absolute inside it (default: the root)",
        )
        .default("\".\""),
        LIMIT,
        INCLUDE_HIDDEN,
        crate::policy::READ_ROOTS,
        PortSpec::sandbox_root(),
    ],
    outputs: &[
        PortSpec::output("path", PortType::String, "The directory searched, relative to the workspace root"),
        failure::success("Whether the search ran (no match is still a success)"),
        PortSpec::output("summary", PortType::String, "Human-readable summary: how many paths matched and how many are shown"),
        PortSpec::output(
            "content",
            PortType::String,
            "Matching paths relative to the workspace root, one per line (symlinks marked @ with where they lead), or `No matches found.`",
        ),
        PortSpec::output("files", PortType::Array(&PortType::String), "Matching regular files, relative to the workspace root, sorted"),
        PortSpec::output(
            "links",
            PortType::Any,
            "Matching symlinks (never followed): path and link (inside, outside or dangling)",
        ),
        PortSpec::output("total", PortType::Integer, "How many paths matched in all"),
        PortSpec::output("truncated", PortType::Boolean, "True when fewer paths are returned than matched (limit or output size)"),
        failure::ERROR_KIND,
        failure::TERMINAL,
        failure::ERROR,
    ],
    gate: None,
    effects: Effects::ReadOnly,
};

pub struct Glob;

cheng_node::inventory::submit! { cheng_node::NodeRegistration::new(&Glob) }

/// One glob request, defaults applied.
#[derive(Debug, Clone)]
pub struct Request {
    pub pattern: String,
    pub path: Option<String>,
    pub limit: usize,
    pub include_hidden: bool,
}

#[cheng_node::async_trait]
impl Node for Glob {
    fn spec(&self) -> &'static NodeSpec {
        &SPEC
    }

    async fn run(&self, ctx: &RunContext, input: Values) -> Result<Values, NodeError> {
        let request = Request {
            pattern: non_empty_str(&input, "pattern")
                .unwrap_or_default()
                .to_string(),
            path: non_empty_str(&input, "path").map(str::to_string),
            limit: usize::try_from(input::int(&input, &LIMIT)?).map_err(|_| {
                NodeError::internal("limit passed its range check but is not a count")
            })?,
            include_hidden: input::boolean(&input, &INCLUDE_HIDDEN)?,
        };
        let scope = ReadScope::from_input(&ctx.workspace, &input)?;
        let budget = Budget::new(ctx.cancel.clone(), WALK_TIME_LIMIT, "glob walk");
        tokio::task::spawn_blocking(move || glob(&scope, &request, &budget))
            .await
            .map_err(|e| NodeError::internal(format!("the glob walk stopped unexpectedly: {e}")))?
    }
}

/// Compiles `pattern` the way `tools/glob` matches it (`field` names the port in errors).
pub fn compile(pattern: &str, field: &str) -> Result<GlobSet, NodeError> {
    let invalid = |e: &dyn std::fmt::Display| {
        NodeError::invalid_input(format!(
            "{field} {pattern:?} is not a valid glob: {e}; use * within a segment, ** across directories, ?, [abc], {{a,b}}, and \\ to escape"
        ))
    };
    let glob = GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .empty_alternates(true)
        .build()
        .map_err(|e| invalid(&e))?;
    GlobSetBuilder::new()
        .add(glob)
        .build()
        .map_err(|e| invalid(&e))
}

/// The path a glob sees: relative to the searched directory (a file searched directly is seen
/// by its name).
pub fn candidate<'a>(path: &'a Path, base: &Path) -> &'a Path {
    match path.strip_prefix(base) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel,
        _ => path.file_name().map(Path::new).unwrap_or(path),
    }
}

/// Runs one glob under `scope`, producing the node's output object.
pub fn glob(scope: &ReadScope, request: &Request, budget: &Budget) -> Result<Values, NodeError> {
    let pattern = request.pattern.trim();
    if pattern.is_empty() {
        return Err(NodeError::invalid_input(
            "pattern is required: a glob such as **/*.rs",
        ));
    }
    let absolute = Path::new(pattern).is_absolute();
    let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
    let set = compile(pattern, "pattern")?;
    let base = scope.resolve(request.path.as_deref(), "path")?;
    let shown_base = scope.display(&base);

    // (path bytes, is a symlink): sorted by path bytes (a memcmp, unlike `Path`'s component-wise
    // order, which costs more than the match itself), the smallest kept.
    let mut top: TopK<(Vec<u8>, bool)> = TopK::new(request.limit);
    let mut unreadable = 0usize;
    for (n, entry) in walker(scope, &base, request.include_hidden)
        .build()
        .enumerate()
    {
        if n % 1024 == 0 {
            budget.check()?;
        }
        let entry = match entry {
            Ok(entry) => entry,
            Err(_) => {
                unreadable += 1;
                continue;
            }
        };
        let Some(kind) = entry.file_type() else {
            continue;
        };
        if !(kind.is_file() || kind.is_symlink()) {
            continue;
        }
        let path = entry.path();
        let seen = if absolute {
            path
        } else {
            candidate(path, &base)
        };
        if set.is_match(seen) {
            top.push((
                entry.into_path().into_os_string().into_vec(),
                kind.is_symlink(),
            ));
        }
    }
    let total = top.total();
    // The walk goes by path: a directory swapped for a symlink while it ran can make it name
    // entries of the swapped-in directory. A match is listed only if the workspace handle still
    // finds it beneath the root with no link on the way (the entry itself may be a link).
    let fs = scope.fs_for(&base)?;
    let matches: Vec<_> = top
        .into_sorted()
        .into_iter()
        .filter(|(bytes, _)| {
            fs.symlink_metadata(Path::new(OsStr::from_bytes(bytes)))
                .is_ok()
        })
        .collect();

    let mut lines = Vec::with_capacity(matches.len());
    let mut kinds = Vec::with_capacity(matches.len());
    for (bytes, is_link) in &matches {
        let path = Path::new(OsStr::from_bytes(bytes));
        let shown = scope.display(path);
        if *is_link {
            let target = scope.link(path);
            lines.push(match &target {
                LinkTarget::Readable(real) => {
                    format!("{shown}@ ({} to {})", target.note(), scope.display(real))
                }
                _ => format!("{shown}@ ({})", target.note()),
            });
            kinds.push(Some(json!({"path": shown, "link": target.kind()})));
        } else {
            lines.push(shown);
            kinds.push(None);
        }
    }
    let (mut content, kept) = fit_lines(&lines, MAX_CONTENT_BYTES);
    let mut files = Vec::new();
    let mut links = Vec::new();
    for (line, link) in lines.into_iter().zip(kinds).take(kept) {
        match link {
            Some(link) => links.push(link),
            None => files.push(Value::String(line)),
        }
    }
    let truncated = kept < total;
    if total == 0 {
        content = "No matches found.".to_string();
    } else if kept < matches.len() {
        content.push_str(&format!(
            "\n[{} more matching paths not shown: the output is limited to {} KiB; narrow the pattern or path]",
            total - kept,
            MAX_CONTENT_BYTES / 1024
        ));
    } else if truncated {
        content.push_str(&format!("\nMore than {kept} matches found"));
    }
    let mut summary = match (total, truncated) {
        (0, _) => format!("no path under {shown_base} matches {pattern}"),
        (_, false) => format!(
            "{total} path{} under {shown_base} match{} {pattern}",
            plural(total),
            if total == 1 { "es" } else { "" }
        ),
        (_, true) => format!(
            "{total} paths under {shown_base} match {pattern}; the first {kept} by path are shown"
        ),
    };
    if unreadable > 0 {
        summary.push_str(&format!(
            " ({unreadable} entr{} could not be read)",
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

pub(crate) fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, path: &str) -> bool {
        compile(pattern, "pattern")
            .unwrap()
            .is_match(Path::new(path))
    }

    #[test]
    fn glob_semantics() {
        assert!(matches("*.rs", "main.rs"));
        assert!(!matches("*.rs", "src/main.rs"), "* stays within a segment");
        assert!(
            matches("**/*.rs", "main.rs"),
            "**/ matches zero directories"
        );
        assert!(matches("**/*.rs", "a/b/c.rs"));
        assert!(matches("src/**/x.rs", "src/x.rs"));
        assert!(matches("src/**/x.rs", "src/a/b/x.rs"));
        assert!(matches("?.md", "a.md"));
        assert!(!matches("?.md", "ab.md"));
        assert!(!matches("?", "/"));
        assert!(matches("[ab].txt", "b.txt"));
        assert!(!matches("[ab].txt", "c.txt"));
        assert!(matches("[!ab].txt", "c.txt"));
        assert!(matches("*.{rs,toml}", "Cargo.toml"));
        assert!(matches("*.{rs,toml}", "lib.rs"));
        assert!(!matches("*.{rs,toml}", "lib.md"));
        assert!(matches("\\*.txt", "*.txt"));
        assert!(!matches("\\*.txt", "a.txt"));
    }

    #[test]
    fn invalid_globs_name_the_port() {
        for bad in ["[abc", "{a,b", "a\\"] {
            let err = compile(bad, "pattern").unwrap_err();
            assert!(err.message.starts_with("pattern "), "{}", err.message);
            assert!(
                err.message.contains("is not a valid glob"),
                "{}",
                err.message
            );
        }
    }
}
