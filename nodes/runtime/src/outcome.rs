//! The runtime's output object: `status` and the reference page's ports, plus the house failure fields.

use cheng_node::{failure, ErrorKind, NodeError, Values};
use serde_json::{json, Value};

/// The value of the `status` output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// list_tools: every entry is usable. execute: the tool ran and reported success.
    Ok,
    /// The curation is broken: list_tools found a bad entry (the others are still listed), or
    /// execute named a tool whose entry is bad. The node's author must fix `exposed_tools`.
    Error,
    /// The tool call was refused before anything ran (unknown tool, bad or forbidden arguments).
    Invalid,
    /// dry_run: the call is valid and would be dispatched; nothing ran.
    Validated,
    /// The tool ran and reported `success: false`; `result` holds its outputs.
    Failed,
    /// A person (or the absence of one) denied the approval; nothing ran.
    Denied,
    /// The run was cancelled.
    Cancelled,
}

impl Status {
    pub fn as_str(&self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Error => "error",
            Status::Invalid => "invalid",
            Status::Validated => "validated",
            Status::Failed => "failed",
            Status::Denied => "denied",
            Status::Cancelled => "cancelled",
        }
    }

    pub fn success(&self) -> bool {
        matches!(self, Status::Ok | Status::Validated)
    }
}

/// Why an unsuccessful outcome failed (`error_kind`, `terminal`, `error`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Failure {
    pub code: String,
    pub terminal: bool,
    pub message: String,
}

impl Failure {
    pub fn new(kind: ErrorKind, terminal: bool, message: impl Into<String>) -> Self {
        Failure {
            code: kind.code().to_string(),
            terminal,
            message: message.into(),
        }
    }

    pub fn from_error(error: &NodeError) -> Self {
        Failure {
            code: error.kind.code().to_string(),
            terminal: error.terminal,
            message: error.message.clone(),
        }
    }

    /// The failure as the `NodeError` the failure outputs are filled from (a tool's own
    /// `error_kind` is always a `LOCAL_EXECUTOR_*` code; anything else is reported as internal).
    fn to_error(&self) -> NodeError {
        match ErrorKind::from_code(&self.code) {
            Some(kind) => NodeError {
                kind,
                message: self.message.clone(),
                terminal: self.terminal,
            },
            None => NodeError::internal(format!(
                "{} (unknown error kind {:?})",
                self.message, self.code
            )),
        }
    }
}

/// One action's result, rendered by [`Outcome::into_outputs`].
#[derive(Debug)]
pub(crate) struct Outcome {
    pub status: Status,
    /// `None` (null) for execute.
    pub functions: Option<Vec<Value>>,
    pub result: Value,
    pub errors: Vec<String>,
    pub warnings: Vec<String>,
    /// Set exactly when `status` is not a success.
    pub failure: Option<Failure>,
}

impl Outcome {
    pub fn new(status: Status) -> Self {
        Outcome {
            status,
            functions: None,
            result: Value::Null,
            errors: Vec::new(),
            warnings: Vec::new(),
            failure: None,
        }
    }

    /// An outcome refused for `errors`, summarised by the first.
    pub fn refused(status: Status, kind: ErrorKind, terminal: bool, errors: Vec<String>) -> Self {
        let mut outcome = Outcome::new(status);
        outcome.failure = Some(Failure::new(kind, terminal, summary(&errors)));
        outcome.errors = errors;
        outcome
    }

    /// The output object, every declared port present, in spec order.
    pub fn into_outputs(self) -> Values {
        let result = match (self.status.success(), &self.failure) {
            (true, _) => Ok(()),
            (false, Some(failure)) => Err(failure.to_error()),
            (false, None) => Err(NodeError::internal(format!(
                "status {} carries no failure; this is a bug in cheng",
                self.status.as_str()
            ))),
        };
        let mut out = Values::new();
        out.insert("status".into(), json!(self.status.as_str()));
        out.insert(
            "functions".into(),
            self.functions.map_or(Value::Null, Value::Array),
        );
        out.insert("result".into(), self.result);
        out.insert("errors".into(), json!(self.errors));
        out.insert("warnings".into(), json!(self.warnings));
        failure::fill(&mut out, &result);
        out
    }
}

/// The first error, and how many more there are.
pub(crate) fn summary(errors: &[String]) -> String {
    match errors {
        [] => "the request failed".to_string(),
        [one] => one.clone(),
        [first, rest @ ..] => format!("{first} (and {} more in errors)", rest.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_follow_the_spec_and_carry_the_failure() {
        let outcome = Outcome::refused(
            Status::Invalid,
            ErrorKind::InvalidInput,
            false,
            vec!["a".into(), "b".into()],
        );
        let out = outcome.into_outputs();
        let names: Vec<&str> = crate::SPEC.outputs.iter().map(|p| p.name).collect();
        assert_eq!(out.keys().map(String::as_str).collect::<Vec<_>>(), names);
        assert_eq!(out["status"], "invalid");
        assert_eq!(out["success"], false);
        assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_INVALID_INPUT");
        assert_eq!(out["error"], "a (and 1 more in errors)");
        assert_eq!(out["functions"], Value::Null);
    }

    #[test]
    fn success_has_no_failure_fields() {
        let out = Outcome::new(Status::Validated).into_outputs();
        assert_eq!(out["success"], true);
        assert_eq!(out["error_kind"], Value::Null);
        assert_eq!(out["terminal"], false);
    }
}
