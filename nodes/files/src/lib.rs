//! File nodes (seed 002): `tools/read_file`, `tools/list_dir`, `tools/glob`, `tools/grep`
//! (read-only) and `tools/write_file`, `tools/edit_file`, `tools/apply_patch`,
//! `tools/delete_path` (approval-gated).

#![forbid(unsafe_code)]

pub mod glob;
pub mod grep;
pub mod list_dir;
pub mod walk;

pub use glob::Glob;
pub use grep::Grep;
pub use list_dir::ListDir;
