mod support;

mod cli;
mod code_js;
mod code_python;
mod code_shell;
mod git;
mod markdown;
mod preview;
mod runtime;
mod shell;
mod tests_node;
mod truncation;
