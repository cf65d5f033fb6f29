mod common;
mod git;
mod git_confinement;
mod shell;
mod workspace_tests;
