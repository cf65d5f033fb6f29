//! File nodes (seed 002): `tools/read_file`, `tools/list_dir`, `tools/glob`, `tools/grep`
//! (read-only) and `tools/write_file`, `tools/edit_file`, `tools/apply_patch`,
//! `tools/delete_path` (approval-gated).

#![forbid(unsafe_code)]
mod apply_patch;
