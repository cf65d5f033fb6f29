//! `tools/list_dir`: a directory's entries as an indented tree, a page at a time. Read-only.
//!
//! The contract is Codex CLI's `list_dir` handler (ChengOS's agent-tools reference): `offset` (1-indexed entry number,
//! default 1), `limit` (default 25), `depth` (default 2: the directory and one level below),
//! names over 500 bytes cut at a character boundary, two spaces of indentation per level,
//! directories marked `/`, symlinks `@`, other special files `?`, a first line `Absolute path:
//! …` and a last line `More than N entries found` when the page does not reach the end.
//!
//! Entries are in tree order (each directory's entries sorted by name, a directory's contents
//! right below it). Symlinks are listed, never followed; a link whose target leaves the workspace
//! or does not exist says so. The walk stops as soon as the page is full, so a large tree costs
//! only the directories read up to the page's end.

use crate::walk::{Budget, LinkTarget, ReadScope};
use cheng_fs::WorkspaceFs;
use cheng_node::input::{self, non_empty_str};
use cheng_node::{
    failure, Effects, ErrorKind, Node, NodeError, NodeSpec, PortSpec, PortType, RunContext, Values,
};
use serde_json::{json, Value};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Longest entry name shown, in bytes (cut at a character boundary).
pub const MAX_ENTRY_LENGTH: usize = 500;
/// Spaces of indentation per level.
pub const INDENTATION_SPACES: usize = 2;
/// Largest page.
pub const MAX_LIMIT: i64 = 2000;
/// Longest one listing may take.
pub const TIME_LIMIT: Duration = Duration::from_secs(30);

const OFFSET: PortSpec = PortSpec::input(
    "offset",
    PortType::Integer,
    "1-indexed number of the first entry to return",
)
.default("1")
.min(1);
const LIMIT: PortSpec = PortSpec::input("limit", PortType::Integer, "Most entries to return")
    .default("25")
    .min(1)
    .max(MAX_LIMIT);
const DEPTH: PortSpec = PortSpec::input(
    "depth",
    PortType::Integer,
    "Levels to descend: 1 lists the directory's own entries, 2 (default) also those of its subdirectories",
)
.default("2")
.min(1);

pub static SPEC: NodeSpec = NodeSpec {
    id: "tools/list_dir",
    title: "List Directory",
    description: "List a workspace directory as an indented tree, a page at a time: offset (1-indexed, default 1), limit (default 25), depth (default 2). Names over 500 bytes are cut; two spaces of indentation per level; directories end in /, symlinks in @ (never followed; links leaving the workspace or dangling say so). Read-only.",
    category: "files",
    inputs: &[
        PortSpec::input(
            "dir_path",
            PortType::String,
            "Directory to list, relative to the workspace root or absolute inside it (default: the root)",
        )
        .default("\".\""),
        OFFSET,
        LIMIT,
        DEPTH,
        crate::policy::READ_ROOTS,
        PortSpec::sandbox_root(),
    ],
    outputs: &[
        PortSpec::output("dir_path", PortType::String, "The directory listed, relative to the workspace root"),
        failure::success("Whether the directory was listed"),
        PortSpec::output("summary", PortType::String, "Human-readable summary of the listing"),
        PortSpec::output(
            "content",
            PortType::String,
            "The listing: `Absolute path: …`, one indented entry per line, and `More than N entries found` when more follow",
        ),
        PortSpec::output(
            "entries",
            PortType::Any,
            "The page's entries: path (relative to the workspace), name (as shown), depth, kind (file, directory, symlink, other) and for symlinks link (inside, outside, dangling)",
        ),
        PortSpec::output("truncated", PortType::Boolean, "True when more entries follow the page (raise offset to see them)"),
        failure::ERROR_KIND,
        failure::TERMINAL,
        failure::ERROR,
    ],
    gate: None,
    effects: Effects::ReadOnly,
};

pub struct ListDir;

cheng_node::inventory::submit! { cheng_node::NodeRegistration::new(&ListDir) }

#[cheng_node::async_trait]
impl Node for ListDir {
    fn spec(&self) -> &'static NodeSpec {
        &SPEC
    }

    async fn run(&self, ctx: &RunContext, input: Values) -> Result<Values, NodeError> {
        let request = Request {
            dir_path: non_empty_str(&input, "dir_path").map(str::to_string),
            offset: size(input::int(&input, &OFFSET)?, "offset")?,
            limit: size(input::int(&input, &LIMIT)?, "limit")?,
            depth: size(input::int(&input, &DEPTH)?, "depth")?,
        };
        let scope = ReadScope::from_input(&ctx.workspace, &input)?;
        let budget = Budget::new(ctx.cancel.clone(), TIME_LIMIT, "directory listing");
        tokio::task::spawn_blocking(move || list(&scope, &request, &budget))
            .await
            .map_err(|e| {
                NodeError::internal(format!("the directory listing stopped unexpectedly: {e}"))
            })?
    }
}

fn size(value: i64, field: &str) -> Result<usize, NodeError> {
    usize::try_from(value).map_err(|_| {
        NodeError::internal(format!("{field} passed its range check but is not a count"))
    })
}

/// One listing request, defaults applied.
#[derive(Debug, Clone)]
pub struct Request {
    pub dir_path: Option<String>,
    pub offset: usize,
    pub limit: usize,
    pub depth: usize,
}

/// What an entry is, from `lstat` (a symlink is a symlink whatever it points at).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Directory,
    File,
    Symlink,
    Other,
}

impl Kind {
    fn of(kind: cheng_fs::Kind) -> Kind {
        match kind {
            cheng_fs::Kind::Symlink => Kind::Symlink,
            cheng_fs::Kind::Dir => Kind::Directory,
            cheng_fs::Kind::File => Kind::File,
            cheng_fs::Kind::Other => Kind::Other,
        }
    }

    pub fn word(self) -> &'static str {
        match self {
            Kind::Directory => "directory",
            Kind::File => "file",
            Kind::Symlink => "symlink",
            Kind::Other => "other",
        }
    }

    pub fn marker(self) -> &'static str {
        match self {
            Kind::Directory => "/",
            Kind::Symlink => "@",
            Kind::Other => "?",
            Kind::File => "",
        }
    }
}

struct Child {
    name: OsString,
    path: PathBuf,
    kind: Kind,
}

/// A directory's entries sorted by name, read through the workspace handle (links are never
/// followed, on the way to `dir` nor among its entries).
fn children(fs: &WorkspaceFs, dir: &Path) -> std::io::Result<Vec<Child>> {
    Ok(fs
        .read_dir(dir)?
        .into_iter()
        .map(|entry| Child {
            path: dir.join(&entry.name),
            name: entry.name,
            kind: Kind::of(entry.kind),
        })
        .collect())
}

/// `text` cut to at most `max` bytes at a character boundary.
pub fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// One listing line: two spaces per level, the name cut to [`MAX_ENTRY_LENGTH`] bytes, the
/// kind's marker (`/` directory, `@` symlink, `?` other, nothing for a file).
pub fn entry_line(name: &str, level: usize, kind: Kind) -> String {
    format!(
        "{}{}{}",
        " ".repeat(level * INDENTATION_SPACES),
        cut(name, MAX_ENTRY_LENGTH),
        kind.marker()
    )
}

/// Lists `request.dir_path` under `scope`, producing the node's output object.
pub fn list(scope: &ReadScope, request: &Request, budget: &Budget) -> Result<Values, NodeError> {
    let dir = scope.resolve(request.dir_path.as_deref(), "dir_path")?;
    let shown_dir = scope.display(&dir);
    let fs = scope.fs_for(&dir)?;
    if !fs.symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
        return Err(NodeError::invalid_input(format!(
            "dir_path {shown_dir:?} is a file, not a directory; read it with tools/read_file or list its parent"
        )));
    }
    let top = children(&fs, &dir).map_err(|e| {
        NodeError::new(
            ErrorKind::InvalidInput,
            format!("dir_path {shown_dir:?} cannot be read: {e}"),
        )
    })?;

    let skip = request.offset - 1;
    let mut seen = 0usize;
    let mut lines = Vec::new();
    let mut entries = Vec::new();
    let mut more = false;
    // Depth-first in name order is the tree order; each level keeps the rest of its directory.
    let mut stack: Vec<(std::vec::IntoIter<Child>, usize)> = vec![(top.into_iter(), 0)];
    while let Some((iter, level)) = stack.last_mut() {
        let level = *level;
        let Some(child) = iter.next() else {
            stack.pop();
            continue;
        };
        if seen.is_multiple_of(256) {
            budget.check()?;
        }
        seen += 1;
        if seen > skip + request.limit {
            more = true;
            break;
        }
        let mut descend = None;
        let mut unreadable = None;
        if child.kind == Kind::Directory && level + 1 < request.depth {
            match children(&fs, &child.path) {
                Ok(list) => descend = Some(list),
                Err(e) => unreadable = Some(e.to_string()),
            }
        }
        if seen > skip {
            let name = child.name.to_string_lossy();
            let shown = cut(&name, MAX_ENTRY_LENGTH);
            let mut line = entry_line(&name, level, child.kind);
            let mut entry = json!({
                "path": scope.display(&child.path),
                "name": shown,
                "depth": level,
                "kind": child.kind.word(),
            });
            if child.kind == Kind::Symlink {
                let target = scope.link(&child.path);
                if !matches!(target, LinkTarget::Readable(_)) {
                    line.push_str(&format!(" ({})", target.note()));
                }
                entry["link"] = json!(target.kind());
            }
            if let Some(why) = &unreadable {
                line.push_str(&format!(" (cannot be read: {why})"));
                entry["error"] = json!(why);
            }
            lines.push(line);
            entries.push(entry);
        }
        if let Some(list) = descend {
            stack.push((list.into_iter(), level + 1));
        }
    }
    if seen == 0 {
        // An empty directory lists nothing at any offset.
    } else if seen <= skip {
        return Err(NodeError::invalid_input(format!(
            "offset {} exceeds the directory's entry count ({seen} entr{} at depth {}); use an offset from 1 to {seen}",
            request.offset,
            if seen == 1 { "y" } else { "ies" },
            request.depth
        )));
    }
    let shown = lines.len();
    let mut content = Vec::with_capacity(shown + 2);
    content.push(format!("Absolute path: {}", dir.display()));
    content.extend(lines);
    if more {
        content.push(format!("More than {shown} entries found"));
    }
    let summary = if shown == 0 {
        format!("{shown_dir}: empty directory")
    } else if more {
        format!(
            "{shown_dir}: entries {} to {} (more follow; next page: offset {})",
            request.offset,
            skip + shown,
            skip + shown + 1
        )
    } else {
        format!(
            "{shown_dir}: entries {} to {} of {}",
            request.offset,
            skip + shown,
            skip + shown
        )
    };
    let mut out = Values::new();
    out.insert("dir_path".into(), json!(shown_dir));
    out.insert("summary".into(), json!(summary));
    out.insert("content".into(), json!(content.join("\n")));
    out.insert("entries".into(), Value::Array(entries));
    out.insert("truncated".into(), json!(more));
    failure::fill::<()>(&mut out, &Ok(()));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_keeps_whole_characters() {
        assert_eq!(cut("abc", 500), "abc");
        assert_eq!(cut("aé", 2), "a");
        assert_eq!(cut(&"é".repeat(300), 500).len(), 500);
        assert_eq!(cut(&format!("a{}", "é".repeat(300)), 500).len(), 499);
    }
}
