mod common;
mod git;
mod git_confinement;
mod live_output;
mod one_shot_exec;
mod run_command;
mod shell;
mod workspace_tests;
