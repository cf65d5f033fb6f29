//! The rules every workspace node that runs a program applies to `command`, `args` and `cwd`
//! (tools/workspace_shell and tools/workspace_tests `run`): one program name or path (never a
//! command line), literal arguments, and a working directory that is a directory inside the
//! workspace.

use cheng_node::{input, paths, NodeError, PortSpec, PortType, Values};
use std::path::{Path, PathBuf};

/// Longest accepted `command`.
pub const MAX_COMMAND_BYTES: usize = 4096;
/// At most this many `args`.
pub const MAX_ARGS: usize = 1024;

/// Largest `timeout_ms` of a program run.
pub const MAX_TIMEOUT_MS: i64 = 600_000;

/// The `timeout_ms` port of a program run: `default` (JSON) is the one the node applies, 1 to
/// [`MAX_TIMEOUT_MS`]; `description` is the reference page's wording.
pub const fn timeout_ms(description: &'static str, default: &'static str) -> PortSpec {
    PortSpec::input("timeout_ms", PortType::Integer, description)
        .default(default)
        .min(1)
        .max(MAX_TIMEOUT_MS)
}

/// A program name or path, not a command line.
pub fn check_program(command: &str) -> Result<(), NodeError> {
    if command.contains('\0') {
        return Err(NodeError::invalid_input("command contains a NUL byte"));
    }
    if command.len() > MAX_COMMAND_BYTES {
        return Err(NodeError::invalid_input(format!(
            "command is {} bytes; a program name or path is at most {MAX_COMMAND_BYTES}",
            command.len()
        )));
    }
    if command.chars().any(char::is_whitespace) {
        let mut words = command.split_whitespace();
        let program = words.next().unwrap_or("");
        let rest: Vec<String> = words.map(|w| format!("{w:?}")).collect();
        return Err(NodeError::invalid_input(format!(
            "command {command:?} contains whitespace; command is one program, its arguments go in args (command={program:?}, args=[{}])",
            rest.join(", ")
        )));
    }
    Ok(())
}

/// Literal arguments: no NUL byte, at most [`MAX_ARGS`].
pub fn check_args(args: &[String]) -> Result<(), NodeError> {
    if args.len() > MAX_ARGS {
        return Err(NodeError::invalid_input(format!(
            "args has {} entries; at most {MAX_ARGS} are accepted",
            args.len()
        )));
    }
    if let Some(i) = args.iter().position(|a| a.contains('\0')) {
        return Err(NodeError::invalid_input(format!(
            "args[{i}] contains a NUL byte"
        )));
    }
    Ok(())
}

/// The `cwd` input resolved inside `root` (the canonical workspace): relative, no `..` above the
/// root, symlinks kept inside, and a directory.
pub fn resolve_cwd(root: &Path, input: &Values) -> Result<PathBuf, NodeError> {
    let given = input::opt_str(input, "cwd");
    let cwd = paths::resolve_existing(root, given, "cwd")?;
    if !cwd.is_dir() {
        return Err(NodeError::invalid_input(format!(
            "cwd {:?} is a file, not a directory; name a directory relative to the workspace root",
            given.unwrap_or("")
        )));
    }
    Ok(cwd)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cheng_node::ErrorKind;
    use serde_json::json;

    #[test]
    fn a_program_is_one_word_of_bounded_length() {
        assert!(check_program("cargo").is_ok());
        assert!(check_program("./gradlew").is_ok());
        let e = check_program("cargo test").unwrap_err();
        assert!(e.message.contains("args=[\"test\"]"), "{}", e.message);
        assert!(check_program("a\0b").is_err());
        assert!(check_program(&"x".repeat(MAX_COMMAND_BYTES + 1)).is_err());
    }

    #[test]
    fn args_are_literal_and_bounded() {
        assert!(check_args(&["a b".into(), "$HOME".into()]).is_ok());
        assert!(check_args(&["a\0".into()])
            .unwrap_err()
            .message
            .contains("args[0]"));
        assert!(check_args(&vec![String::new(); MAX_ARGS + 1]).is_err());
    }

    #[test]
    fn cwd_is_a_directory_inside_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("file"), "x").unwrap();
        let input = |v: serde_json::Value| v.as_object().cloned().unwrap_or_default();
        assert_eq!(resolve_cwd(&root, &input(json!({}))).unwrap(), root);
        assert_eq!(
            resolve_cwd(&root, &input(json!({"cwd": "sub"}))).unwrap(),
            root.join("sub")
        );
        assert_eq!(
            resolve_cwd(&root, &input(json!({"cwd": "file"})))
                .unwrap_err()
                .kind,
            ErrorKind::InvalidInput
        );
        assert_eq!(
            resolve_cwd(&root, &input(json!({"cwd": ".."})))
                .unwrap_err()
                .kind,
            ErrorKind::PathOutsideWorkspace
        );
    }
}
