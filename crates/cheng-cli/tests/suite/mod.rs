mod support;

mod cli;
mod code_js;
mod code_python;
mod code_shell;
mod escapes;
mod fd_hygiene;
mod git;
mod git_confinement;
mod markdown;
mod preview;
mod runtime;
mod seccomp;
mod setuid_audit;
mod shell;
mod tests_node;
mod truncation;
