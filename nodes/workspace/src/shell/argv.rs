//! The argv rules of `tools/workspace_shell`: exactly one of `command` or `shell_string`, the
//! program and argument rules shared with workspace_tests ([`crate::program`]), simple shell
//! strings split without a shell, and the author's `command_whitelist`.

use super::split::{split_simple, Split};
use super::ALLOW_SHELL_STRING;
use crate::program::{check_args, check_program};
use cheng_node::{input, NodeError, Values};

/// Applies the command / shell_string / whitelist rules and returns the argv to run.
pub(crate) fn argv_from_input(input: &Values) -> Result<Vec<String>, NodeError> {
    let command = input::non_empty_str(input, "command");
    let shell_string = input::opt_str(input, "shell_string").filter(|s| !s.trim().is_empty());
    let args = input::string_list(input, "args")?;
    let whitelist = parse_whitelist(input::opt_str(input, "command_whitelist").unwrap_or(""))?;
    let allow_shell = input::boolean(input, &ALLOW_SHELL_STRING)?;

    let argv = match (command, shell_string) {
        (None, None) => {
            return Err(NodeError::invalid_input(
                "set exactly one of command or shell_string; neither was given (e.g. command=\"cargo\", args=[\"test\"])",
            ))
        }
        (Some(_), Some(_)) => {
            return Err(NodeError::invalid_input(
                "set exactly one of command or shell_string, not both; prefer command with args",
            ))
        }
        (Some(command), None) => {
            check_program(command)?;
            check_args(&args)?;
            let mut argv = vec![command.to_string()];
            argv.extend(args);
            argv
        }
        (None, Some(script)) => {
            if !args.is_empty() {
                return Err(NodeError::invalid_input(
                    "args go with command; shell_string carries its own arguments (or use command with args)",
                ));
            }
            if script.contains('\0') {
                return Err(NodeError::invalid_input("shell_string contains a NUL byte"));
            }
            // The reference page: with a command whitelist, shell strings are denied (even simple ones).
            if !whitelist.is_empty() {
                return Err(NodeError::policy_denied(format!(
                    "shell_string is denied because this node has a command_whitelist ({}); pass command and args instead (e.g. command=\"{}\", args=[...])",
                    whitelist.join(", "),
                    whitelist[0]
                )));
            }
            match split_simple(script) {
                Ok(words) if !allow_shell => words,
                Ok(_) => vec!["sh".into(), "-c".into(), script.to_string()],
                Err(Split::Unterminated(quote)) => {
                    return Err(NodeError::invalid_input(format!(
                        "shell_string has an unterminated {quote} quote; close it or use command with args"
                    )))
                }
                Err(Split::Syntax(what)) if !allow_shell => {
                    return Err(NodeError::policy_denied(format!(
                        "shell_string uses shell syntax ({what}) and allow_shell_string is off; pass command and args instead (e.g. command=\"ls\", args=[\"-la\"]), or ask the node's author to enable allow_shell_string"
                    )))
                }
                Err(Split::Syntax(_)) => vec!["sh".into(), "-c".into(), script.to_string()],
            }
        }
    };
    match argv.first() {
        Some(program) if !program.is_empty() => {}
        _ => {
            return Err(NodeError::invalid_input(
                "shell_string has no program to run",
            ))
        }
    }
    if !whitelist.is_empty() {
        check_whitelisted(&argv[0], &whitelist)?;
    }
    Ok(argv)
}

/// Program names from the author's whitelist text.
fn parse_whitelist(text: &str) -> Result<Vec<String>, NodeError> {
    let mut names = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let name = line.trim();
        if name.is_empty() || name.starts_with('#') {
            continue;
        }
        if name.contains('/') || name.chars().any(char::is_whitespace) {
            return Err(NodeError::invalid_input(format!(
                "command_whitelist line {} ({name:?}) must be a single program name without '/' or arguments; fix the node's config",
                index + 1
            )));
        }
        names.push(name.to_string());
    }
    Ok(names)
}

fn check_whitelisted(program: &str, whitelist: &[String]) -> Result<(), NodeError> {
    let allowed = whitelist.join(", ");
    if program.contains('/') {
        return Err(NodeError::policy_denied(format!(
            "command {program:?} is a path; this node's command_whitelist allows only these program names, run from PATH: {allowed}"
        )));
    }
    if !whitelist.iter().any(|w| w == program) {
        return Err(NodeError::policy_denied(format!(
            "command {program:?} is not on this node's command_whitelist (allowed: {allowed}); ask the node's author to add it"
        )));
    }
    Ok(())
}
