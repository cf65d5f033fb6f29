//! Workspace nodes: `tools/workspace_shell`, `tools/workspace_git`, `tools/workspace_tests`.
//!
//! Each module declares its node's spec (port tables verbatim from the seed reference page) and
//! registers it with `inventory::submit!`.

mod git;
mod shell;
mod testing;

pub use git::WorkspaceGit;
pub use shell::WorkspaceShell;
pub use testing::WorkspaceTests;
