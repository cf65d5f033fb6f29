//! Document nodes: `tools/workspace_markdown` and `tools/workspace_preview` — pure Rust,
//! read-only, never approval-gated.
//!
//! - [`markdown`]: outline (GitHub anchors), markdownlint-style diagnostics, edit-ready fixes and
//!   local link checks, all from one pulldown-cmark pass with exact 1-indexed positions.
//! - [`preview`]: Markdown to sanitised HTML (ammonia), HTML to a text summary, and file metadata.
//! - [`source`]: reading workspace files, every open through the workspace handle
//!   ([`cheng_fs::WorkspaceFs`]: beneath the root's descriptor, no symlink followed).
//!
//! ```
//! use cheng_nodes_documents::markdown::{Document, outline};
//!
//! let doc = Document::parse("# Intro\n\n## Set up\n\n## Set up\n");
//! let tree = outline::build(&doc.headings);
//! assert_eq!(tree[0].children[1].anchor, "set-up-1");
//! ```

#![forbid(unsafe_code)]

pub mod bounded;
#[doc(hidden)]
pub mod fuzzing;
pub mod markdown;
pub mod preview;
pub mod source;

pub use markdown::WorkspaceMarkdown;
pub use preview::WorkspacePreview;
