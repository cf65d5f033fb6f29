//! Document nodes: `tools/workspace_markdown` and `tools/workspace_preview` — pure Rust,
//! read-only, never approval-gated.

mod markdown;
mod preview;
