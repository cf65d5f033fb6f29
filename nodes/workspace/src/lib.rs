//! Workspace nodes: `tools/workspace_shell`, `tools/run_command`, `tools/workspace_git`,
//! `tools/workspace_tests`, and the process sessions `tools/exec_command` and `tools/write_stdin`.
//!
//! Each module declares its node's spec (port tables verbatim from ChengOS's reference page) and
//! registers it with `inventory::submit!`.

#[doc(hidden)]
pub mod fuzzing;
mod git;
mod program;
pub mod run_command;
pub mod session;
mod shell;
mod workspace_tests;

pub use git::WorkspaceGit;
pub use run_command::RunCommand;
pub use session::exec_command::ExecCommand;
pub use session::write_stdin::WriteStdin;
pub use shell::{WorkspaceShell, STDERR_CAP, STDOUT_CAP};
pub use workspace_tests::WorkspaceTests;
