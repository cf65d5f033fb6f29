//! The apply_patch format (`*** Begin Patch` … `*** End Patch`): parse a patch and compute each
//! file's new content in memory, so a caller can check every path and write all or nothing.
//!
//! ```
//! let patch = cheng_patch::parse("*** Begin Patch\n*** Update File: a.txt\n@@\n-old\n+new\n*** End Patch\n")?;
//! let changes = cheng_patch::apply(&patch, |_path| Ok("keep\nold\n".to_string()))?;
//! assert!(matches!(&changes[0], cheng_patch::Change::Update { new_content, .. } if new_content == "keep\nnew\n"));
//! # Ok::<(), cheng_patch::PatchError>(())
//! ```
//!
//! The format and its matching rules follow Codex CLI's apply-patch (Apache-2.0, Copyright 2025
//! OpenAI); the end-to-end scenarios in `fixtures/codex-apply-patch/` are its own. Differences:
//! nothing is written here (the caller writes every change or none); several `@@ anchor` lines in
//! a row narrow the position in turn; a hunk with only added lines goes right after its anchor
//! when it has one (at the end of the file otherwise); an `*** End of File` hunk that does not
//! match at the end is looked for in the rest of the file; each line keeps its own line ending.

mod apply;
#[doc(hidden)]
pub mod fuzzing;
mod parse;
mod seek;

use std::fmt;
use std::path::PathBuf;

pub use apply::{apply, Change};
pub use parse::{parse, parse_with, Hunk, Operation, ParseMode, Patch};
pub use seek::{fold, seek, Level};

/// Why a patch cannot be applied. Every message says where (patch line, file, hunk) and what was
/// expected or what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchError {
    /// The text is not a well-formed patch; `line` is 1-based in the text given.
    Parse { line: usize, message: String },
    /// The patch is well formed but names no file operation.
    NoOperations,
    /// An operation cannot be applied to its file. `line` is the operation's header line;
    /// `hunk` is the failing hunk's 1-based number and patch line, when a hunk failed.
    File {
        path: PathBuf,
        line: usize,
        hunk: Option<(usize, usize)>,
        message: String,
    },
}

impl PatchError {
    pub(crate) fn parse(line: usize, message: impl Into<String>) -> Self {
        PatchError::Parse {
            line,
            message: message.into(),
        }
    }
}

impl fmt::Display for PatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PatchError::Parse { line, message } => write!(f, "patch line {line}: {message}"),
            PatchError::NoOperations => write!(
                f,
                "the patch changes nothing: it has no '*** Add File:', '*** Update File:' or '*** Delete File:' section"
            ),
            PatchError::File { path, line, hunk, message } => {
                write!(f, "'{}' (patch line {line})", path.display())?;
                if let Some((n, at)) = hunk {
                    write!(f, ", hunk {n} at patch line {at}")?;
                }
                write!(f, ": {message}")
            }
        }
    }
}

impl std::error::Error for PatchError {}
