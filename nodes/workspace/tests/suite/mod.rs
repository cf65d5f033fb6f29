mod common;
mod git;
mod git_confinement;
mod live_output;
mod shell;
mod workspace_tests;
