mod support;

mod cli;
mod code_js;
mod code_python;
mod code_shell;
mod git;
mod markdown;
mod preview;
mod runtime;
mod setuid_audit;
mod shell;
mod tests_node;
