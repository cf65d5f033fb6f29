//! Validation errors: what is wrong, on which node and port, and what to do about it.

use cheng_node::ErrorKind;
use std::fmt;

/// The class of a validation problem (stable for tests and clients; the message carries details).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ValidationErrorKind {
    /// The graph file is not valid JSON or not shaped like a version 1 graph.
    Malformed,
    UnsupportedVersion,
    UnknownKey,
    UnknownType,
    /// The node type exists but its gate variable is unset.
    GatedType,
    DuplicateNode,
    UnknownPort,
    WrongType,
    OutOfRange,
    MissingRequired,
    /// An author-only port set in `inputs` or through an edge.
    AuthorOnly,
    /// An engine-injected port (`sandbox_root`) set in `inputs`, `config` or through an edge.
    EngineOnly,
    /// A capped port requested above the author's ceiling.
    AboveCap,
    DanglingEdge,
    EdgeTypeMismatch,
    /// A port fed by an edge and also set literally in `inputs`, or by two edges.
    EdgeConflict,
    Cycle,
}

impl ValidationErrorKind {
    /// Every kind, in the order above (tests prove each one can be produced and is explained).
    pub const ALL: &'static [ValidationErrorKind] = &[
        ValidationErrorKind::Malformed,
        ValidationErrorKind::UnsupportedVersion,
        ValidationErrorKind::UnknownKey,
        ValidationErrorKind::UnknownType,
        ValidationErrorKind::GatedType,
        ValidationErrorKind::DuplicateNode,
        ValidationErrorKind::UnknownPort,
        ValidationErrorKind::WrongType,
        ValidationErrorKind::OutOfRange,
        ValidationErrorKind::MissingRequired,
        ValidationErrorKind::AuthorOnly,
        ValidationErrorKind::EngineOnly,
        ValidationErrorKind::AboveCap,
        ValidationErrorKind::DanglingEdge,
        ValidationErrorKind::EdgeTypeMismatch,
        ValidationErrorKind::EdgeConflict,
        ValidationErrorKind::Cycle,
    ];

    /// The `LOCAL_EXECUTOR_*` class a client sees for this problem. Asking for what only the
    /// node's author or the operator can allow (an author or engine port, more than the
    /// author's cap, a disabled node) is `PolicyDenied`; everything else is `InvalidInput`.
    pub fn error_kind(&self) -> ErrorKind {
        match self {
            ValidationErrorKind::AuthorOnly
            | ValidationErrorKind::EngineOnly
            | ValidationErrorKind::AboveCap
            | ValidationErrorKind::GatedType => ErrorKind::PolicyDenied,
            ValidationErrorKind::Malformed
            | ValidationErrorKind::UnsupportedVersion
            | ValidationErrorKind::UnknownKey
            | ValidationErrorKind::UnknownType
            | ValidationErrorKind::DuplicateNode
            | ValidationErrorKind::UnknownPort
            | ValidationErrorKind::WrongType
            | ValidationErrorKind::OutOfRange
            | ValidationErrorKind::MissingRequired
            | ValidationErrorKind::DanglingEdge
            | ValidationErrorKind::EdgeTypeMismatch
            | ValidationErrorKind::EdgeConflict
            | ValidationErrorKind::Cycle => ErrorKind::InvalidInput,
        }
    }

    pub fn as_str(&self) -> &'static str {
        match self {
            ValidationErrorKind::Malformed => "malformed",
            ValidationErrorKind::UnsupportedVersion => "unsupported_version",
            ValidationErrorKind::UnknownKey => "unknown_key",
            ValidationErrorKind::UnknownType => "unknown_type",
            ValidationErrorKind::GatedType => "gated_type",
            ValidationErrorKind::DuplicateNode => "duplicate_node",
            ValidationErrorKind::UnknownPort => "unknown_port",
            ValidationErrorKind::WrongType => "wrong_type",
            ValidationErrorKind::OutOfRange => "out_of_range",
            ValidationErrorKind::MissingRequired => "missing_required",
            ValidationErrorKind::AuthorOnly => "author_only",
            ValidationErrorKind::EngineOnly => "engine_only",
            ValidationErrorKind::AboveCap => "above_cap",
            ValidationErrorKind::DanglingEdge => "dangling_edge",
            ValidationErrorKind::EdgeTypeMismatch => "edge_type_mismatch",
            ValidationErrorKind::EdgeConflict => "edge_conflict",
            ValidationErrorKind::Cycle => "cycle",
        }
    }
}

/// One problem found before anything runs. `Display` names the node and port first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationError {
    pub kind: ValidationErrorKind,
    /// The node id (None for problems with the graph as a whole).
    pub node: Option<String>,
    pub port: Option<String>,
    pub message: String,
}

impl ValidationError {
    pub fn graph(kind: ValidationErrorKind, message: impl Into<String>) -> Self {
        ValidationError {
            kind,
            node: None,
            port: None,
            message: message.into(),
        }
    }

    pub fn node(kind: ValidationErrorKind, node: &str, message: impl Into<String>) -> Self {
        ValidationError {
            kind,
            node: Some(node.to_string()),
            port: None,
            message: message.into(),
        }
    }

    pub fn port(
        kind: ValidationErrorKind,
        node: &str,
        port: &str,
        message: impl Into<String>,
    ) -> Self {
        ValidationError {
            kind,
            node: Some(node.to_string()),
            port: Some(port.to_string()),
            message: message.into(),
        }
    }
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.node, &self.port) {
            (Some(node), Some(port)) => write!(f, "node `{node}`, port `{port}`: {}", self.message),
            (Some(node), None) => write!(f, "node `{node}`: {}", self.message),
            _ => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for ValidationError {}

/// Up to three candidates close to `wanted`, best first (for "did you mean" hints).
pub(crate) fn suggestions<'a>(
    wanted: &str,
    candidates: impl Iterator<Item = &'a str>,
) -> Vec<&'a str> {
    let limit = (wanted.chars().count() / 4).max(2);
    let mut scored: Vec<(usize, &str)> = candidates
        .filter_map(|c| {
            // `workspace_shell` for `tools/workspace_shell`: the short name alone is a common slip.
            let short = c.rsplit('/').next().unwrap_or(c);
            let d = strsim::levenshtein(wanted, c).min(strsim::levenshtein(wanted, short));
            (d <= limit).then_some((d, c))
        })
        .collect();
    scored.sort();
    // Only the closest: a near miss should not drown among merely similar names.
    let best = scored.first().map(|(d, _)| *d).unwrap_or(0);
    scored
        .into_iter()
        .take_while(|(d, _)| *d == best)
        .take(3)
        .map(|(_, c)| c)
        .collect()
}

/// ` Did you mean `a` or `b`?` (empty when there is nothing close).
pub(crate) fn did_you_mean(found: &[&str]) -> String {
    match found {
        [] => String::new(),
        [one] => format!(" Did you mean `{one}`?"),
        many => {
            let quoted: Vec<String> = many.iter().map(|c| format!("`{c}`")).collect();
            format!(" Did you mean one of {}?", quoted.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_ids_and_short_names() {
        let ids = [
            "tools/workspace_shell",
            "tools/workspace_git",
            "tools/code_js",
        ];
        assert_eq!(
            suggestions("tools/workspace_shel", ids.into_iter()),
            ["tools/workspace_shell"]
        );
        assert_eq!(
            suggestions("workspace_shell", ids.into_iter()),
            ["tools/workspace_shell"]
        );
        assert!(suggestions("completely_else", ids.into_iter()).is_empty());
    }

    #[test]
    fn all_lists_every_kind_once() {
        let mut seen = std::collections::HashSet::new();
        for kind in ValidationErrorKind::ALL {
            // An exhaustive match: a new kind fails to compile here until it is added to ALL.
            let listed = match kind {
                ValidationErrorKind::Malformed
                | ValidationErrorKind::UnsupportedVersion
                | ValidationErrorKind::UnknownKey
                | ValidationErrorKind::UnknownType
                | ValidationErrorKind::GatedType
                | ValidationErrorKind::DuplicateNode
                | ValidationErrorKind::UnknownPort
                | ValidationErrorKind::WrongType
                | ValidationErrorKind::OutOfRange
                | ValidationErrorKind::MissingRequired
                | ValidationErrorKind::AuthorOnly
                | ValidationErrorKind::EngineOnly
                | ValidationErrorKind::AboveCap
                | ValidationErrorKind::DanglingEdge
                | ValidationErrorKind::EdgeTypeMismatch
                | ValidationErrorKind::EdgeConflict
                | ValidationErrorKind::Cycle => kind.as_str(),
            };
            assert!(seen.insert(listed), "{listed} listed twice");
        }
        assert_eq!(seen.len(), 17);
    }

    #[test]
    fn policy_problems_map_to_policy_denied_and_the_rest_to_invalid_input() {
        use ValidationErrorKind as K;
        for kind in ValidationErrorKind::ALL {
            let expected = if matches!(
                kind,
                K::AuthorOnly | K::EngineOnly | K::AboveCap | K::GatedType
            ) {
                ErrorKind::PolicyDenied
            } else {
                ErrorKind::InvalidInput
            };
            assert_eq!(kind.error_kind(), expected, "{kind:?}");
        }
    }

    #[test]
    fn display_names_node_and_port() {
        let e = ValidationError::port(
            ValidationErrorKind::OutOfRange,
            "a",
            "timeout_ms",
            "too big",
        );
        assert_eq!(e.to_string(), "node `a`, port `timeout_ms`: too big");
    }
}
