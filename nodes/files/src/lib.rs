//! File nodes (ChengOS's agent-tools reference): `tools/read_file`, `tools/list_dir`, `tools/glob`, `tools/grep`
//! (read-only) and `tools/write_file`, `tools/edit_file`, `tools/apply_patch`,
//! `tools/delete_path` (approval-gated, run one at a time per workspace).
//!
//! Shared machinery every file node uses (path resolution itself stays in
//! `cheng_node::paths`):
//!
//! - [`policy`]: the path policy asked before every touch (workspace, read-only roots,
//!   protected names, symlinks checked lexically and on the real path).
//! - every file access (read, list, write, rename, delete) goes through the workspace handle,
//!   [`cheng_fs::WorkspaceFs`]: beneath the root's directory descriptor, no symlink followed, so
//!   a path changed between the policy's check and the access is refused, not followed;
//!   all-or-nothing writes (temp file in the parent's descriptor, fsync, rename) are its too.
//! - [`text`]: editable text (encodings, BOM, line endings written back as read).
//! - [`tag`]: content tags (FNV-1a 32-bit, 8 upper-case hex digits).
//! - [`freshness`]: the gate that refuses changes to files the model has not seen as they are.
//! - [`syntax`]: the "not worse" gate for JSON, TOML, YAML and XML.
//! - [`card`]: approval cards with a bounded unified diff (within a time budget).
//! - [`basis`]: what a card was computed from, checked again by `run` under the workspace lock.
//! - [`walk`]: the directory walk and symlink reporting `list_dir`, `glob` and `grep` share.
//! - [`files`]: reading a workspace file for editing, and the write step every writer shares.
//!
//! ```
//! use cheng_nodes_files::{tag, text::Editable};
//!
//! let file = Editable::decode(b"a\r\nb\r\n").unwrap();
//! assert_eq!(file.text, "a\nb\n");
//! assert_eq!(tag::tag(b"hello"), "4F9F2CAB");
//! ```

#![forbid(unsafe_code)]

pub mod apply_patch;
pub mod basis;
pub mod card;
pub mod delete_path;
pub mod edit_file;
pub mod files;
pub mod freshness;
#[doc(hidden)]
pub mod fuzzing;
pub mod glob;
pub mod grep;
pub mod grep_view;
pub mod list_dir;
pub mod policy;
pub mod read_file;
pub mod syntax;
pub mod tag;
pub mod text;
pub mod walk;
pub mod write_file;
pub mod writer;

pub use delete_path::DeletePath;
pub use edit_file::EditFile;
pub use glob::Glob;
pub use grep::Grep;
pub use list_dir::ListDir;
pub use read_file::ReadFile;
pub use write_file::WriteFile;
