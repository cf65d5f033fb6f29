//! The stable `LOCAL_EXECUTOR_*` failure classes, and the one error the process layer returns
//! (input that breaks a rule), which the node API turns into its own error.

use std::fmt;

/// Machine-readable failure class. Rendered as a stable `LOCAL_EXECUTOR_*` code; never renamed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    InvalidInput,
    PolicyDenied,
    ApprovalDenied,
    PathOutsideWorkspace,
    NotFound,
    NotARepository,
    SpawnFailed,
    NonZeroExit,
    TimedOut,
    Cancelled,
    Signalled,
    MemoryLimit,
    OutputLimit,
    ScriptError,
    SandboxUnavailable,
    FileChanged,
    SyntaxWorse,
    WriteFailed,
    NetworkFailed,
    Internal,
}

impl ErrorKind {
    /// Every kind, in documentation order.
    pub const ALL: &'static [ErrorKind] = &[
        ErrorKind::InvalidInput,
        ErrorKind::PolicyDenied,
        ErrorKind::ApprovalDenied,
        ErrorKind::PathOutsideWorkspace,
        ErrorKind::NotFound,
        ErrorKind::NotARepository,
        ErrorKind::SpawnFailed,
        ErrorKind::NonZeroExit,
        ErrorKind::TimedOut,
        ErrorKind::Cancelled,
        ErrorKind::Signalled,
        ErrorKind::MemoryLimit,
        ErrorKind::OutputLimit,
        ErrorKind::ScriptError,
        ErrorKind::SandboxUnavailable,
        ErrorKind::FileChanged,
        ErrorKind::SyntaxWorse,
        ErrorKind::WriteFailed,
        ErrorKind::NetworkFailed,
        ErrorKind::Internal,
    ];

    /// The kind whose [`code`](Self::code) is `code`.
    pub fn from_code(code: &str) -> Option<ErrorKind> {
        Self::ALL.iter().copied().find(|k| k.code() == code)
    }

    pub fn code(&self) -> &'static str {
        match self {
            ErrorKind::InvalidInput => "LOCAL_EXECUTOR_INVALID_INPUT",
            ErrorKind::PolicyDenied => "LOCAL_EXECUTOR_POLICY_DENIED",
            ErrorKind::ApprovalDenied => "LOCAL_EXECUTOR_APPROVAL_DENIED",
            ErrorKind::PathOutsideWorkspace => "LOCAL_EXECUTOR_PATH_OUTSIDE_WORKSPACE",
            ErrorKind::NotFound => "LOCAL_EXECUTOR_NOT_FOUND",
            ErrorKind::NotARepository => "LOCAL_EXECUTOR_NOT_A_REPOSITORY",
            ErrorKind::SpawnFailed => "LOCAL_EXECUTOR_SPAWN_FAILED",
            ErrorKind::NonZeroExit => "LOCAL_EXECUTOR_NON_ZERO_EXIT",
            ErrorKind::TimedOut => "LOCAL_EXECUTOR_TIMED_OUT",
            ErrorKind::Cancelled => "LOCAL_EXECUTOR_CANCELLED",
            ErrorKind::Signalled => "LOCAL_EXECUTOR_SIGNALLED",
            ErrorKind::MemoryLimit => "LOCAL_EXECUTOR_MEMORY_LIMIT",
            ErrorKind::OutputLimit => "LOCAL_EXECUTOR_OUTPUT_LIMIT",
            ErrorKind::ScriptError => "LOCAL_EXECUTOR_SCRIPT_ERROR",
            ErrorKind::SandboxUnavailable => "LOCAL_EXECUTOR_SANDBOX_UNAVAILABLE",
            ErrorKind::FileChanged => "LOCAL_EXECUTOR_FILE_CHANGED",
            ErrorKind::SyntaxWorse => "LOCAL_EXECUTOR_SYNTAX_WORSE",
            ErrorKind::WriteFailed => "LOCAL_EXECUTOR_WRITE_FAILED",
            ErrorKind::NetworkFailed => "LOCAL_EXECUTOR_NETWORK_FAILED",
            ErrorKind::Internal => "LOCAL_EXECUTOR_INTERNAL",
        }
    }

    /// Whether retrying the same request can never help (a person or the author must act first).
    pub fn terminal(&self) -> bool {
        matches!(
            self,
            ErrorKind::PolicyDenied
                | ErrorKind::ApprovalDenied
                | ErrorKind::PathOutsideWorkspace
                | ErrorKind::Cancelled
                | ErrorKind::SandboxUnavailable
                | ErrorKind::Internal
        )
    }

    /// One sentence for the error table in docs/.
    pub fn meaning(&self) -> &'static str {
        match self {
            ErrorKind::InvalidInput => "An input is missing, of the wrong type, out of range or contradicts another input; the message names the field and the limit.",
            ErrorKind::PolicyDenied => "The node's policy (shell strings off, command whitelist, author ceiling) forbids the request; only the node's author can change that.",
            ErrorKind::ApprovalDenied => "A person (or the absence of one, without a TTY) denied the run or a requested path.",
            ErrorKind::PathOutsideWorkspace => "A path resolves outside the workspace root, through `..`, an absolute path or a symlink; or a repository in the workspace points git outside it (a `.git` file or symlink, `commondir`, `core.worktree`, alternates, a symlink in the git directory).",
            ErrorKind::NotFound => "A file, directory or revision that the input names does not exist.",
            ErrorKind::NotARepository => "The directory is not inside a git repository.",
            ErrorKind::SpawnFailed => "The program could not be started (not installed, not executable, bad working directory).",
            ErrorKind::NonZeroExit => "The program ran and exited with a non-zero status; its output is returned intact.",
            ErrorKind::TimedOut => "The wall-clock budget ran out; the whole process group was killed.",
            ErrorKind::Cancelled => "The run was cancelled (Ctrl-C or a client cancel); child processes were killed.",
            ErrorKind::Signalled => "The program was killed by a signal it did not ask for.",
            ErrorKind::MemoryLimit => "The program or script exceeded its memory limit.",
            ErrorKind::OutputLimit => "The output exceeded a hard limit that truncation cannot satisfy.",
            ErrorKind::ScriptError => "The script raised an error or its result could not be converted to JSON; or a test run reported failed tests although it exited 0.",
            ErrorKind::SandboxUnavailable => "The sandbox (bubblewrap, namespaces, the interpreter inside it) cannot be set up; nothing ran on the host instead.",
            ErrorKind::FileChanged => "A file node refused to change a file that changed since the model last read it, or that it never read in this scope (the freshness gate); or a directory on the path was replaced by a symlink while the node worked, and nothing was read or written through it; read it again and redo the change.",
            ErrorKind::SyntaxWorse => "A file node refused a write that would leave a JSON, TOML, YAML or XML file with more parse problems than it has now.",
            ErrorKind::WriteFailed => "The file system refused a write or delete (permissions, a full disk, a read-only mount); a file that was being replaced is left as it was.",
            ErrorKind::NetworkFailed => "A host could not be looked up or reached, or the connection broke off (DNS, refused, TLS, reset); nothing was fetched.",
            ErrorKind::Internal => "A bug in cheng; please report it with the message.",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// Input that breaks a rule: the message names the field and the limit. What the process layer
/// returns where a node would return an invalid-input error; the node API converts it
/// (`From<InvalidInput> for NodeError`), so `?` in a node carries it unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidInput {
    pub message: String,
}

impl InvalidInput {
    pub fn new(message: impl Into<String>) -> Self {
        InvalidInput {
            message: message.into(),
        }
    }

    /// The failure class it stands for.
    pub fn kind(&self) -> ErrorKind {
        ErrorKind::InvalidInput
    }
}

impl fmt::Display for InvalidInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", ErrorKind::InvalidInput.code(), self.message)
    }
}

impl std::error::Error for InvalidInput {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_prefixed() {
        let mut seen = std::collections::HashSet::new();
        for kind in ErrorKind::ALL {
            assert!(kind.code().starts_with("LOCAL_EXECUTOR_"));
            assert!(seen.insert(kind.code()), "duplicate {}", kind.code());
        }
    }
}
