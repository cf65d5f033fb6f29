//! The node API's error: a failure class ([`ErrorKind`], from `cheng_io`) with a message.

use serde_json::{json, Map, Value};
use std::fmt;

pub use cheng_io::error::{ErrorKind, InvalidInput};

/// A failure a node reports. It is still rendered as a normal output object, never a panic.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeError {
    pub kind: ErrorKind,
    pub message: String,
    pub terminal: bool,
}

impl NodeError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        NodeError {
            kind,
            message: message.into(),
            terminal: kind.terminal(),
        }
    }

    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidInput, message)
    }

    pub fn policy_denied(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::PolicyDenied, message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }

    /// The failure as an output object: `success:false`, `summary`, `error_kind`, `terminal`, `error`.
    pub fn to_outputs(&self) -> Map<String, Value> {
        let mut out = Map::new();
        out.insert(
            "summary".into(),
            json!(format!("{}: {}", self.kind.code(), self.message)),
        );
        crate::failure::fill::<()>(&mut out, &Err(self.clone()));
        out
    }
}

impl fmt::Display for NodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.code(), self.message)
    }
}

impl std::error::Error for NodeError {}

impl From<InvalidInput> for NodeError {
    fn from(e: InvalidInput) -> Self {
        NodeError::invalid_input(e.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_outputs_carry_code_and_terminal_flag() {
        let out = NodeError::new(ErrorKind::ApprovalDenied, "denied").to_outputs();
        assert_eq!(out["success"], false);
        assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_APPROVAL_DENIED");
        assert_eq!(out["terminal"], true);
    }
}
