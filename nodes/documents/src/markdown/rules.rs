//! The rule table: stable rule ids, their markdownlint aliases, severities and whether
//! `format_suggestions` can fix them. docs/guides/markdown_rules.md renders the same table
//! (a test keeps the two in step).

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Info,
}

#[derive(Debug, Clone, Copy)]
pub struct Rule {
    /// Stable id used in output (`rule`).
    pub id: &'static str,
    /// markdownlint rule number (`alias`), when there is one.
    pub alias: Option<&'static str>,
    /// markdownlint's rule name.
    pub markdownlint_name: Option<&'static str>,
    pub severity: Severity,
    /// Which operation reports it.
    pub operation: &'static str,
    /// Whether `format_suggestions` offers a mechanical fix.
    pub fixable: &'static str,
    pub description: &'static str,
}

macro_rules! rule {
    ($id:literal, $alias:expr, $name:expr, $sev:ident, $op:literal, $fix:literal, $desc:literal) => {
        Rule {
            id: $id,
            alias: $alias,
            markdownlint_name: $name,
            severity: Severity::$sev,
            operation: $op,
            fixable: $fix,
            description: $desc,
        }
    };
}

pub const HEADING_JUMP: &str = "heading-hierarchy-jump";
pub const TRAILING_WHITESPACE: &str = "trailing-whitespace";
pub const MULTIPLE_BLANKS: &str = "multiple-blank-lines";
pub const BLANKS_AROUND_HEADINGS: &str = "blanks-around-headings";
pub const DUPLICATE_HEADING: &str = "duplicate-heading";
pub const MULTIPLE_H1: &str = "multiple-top-level-headings";
pub const BARE_URL: &str = "bare-url";
pub const FENCE_LANGUAGE: &str = "fenced-code-language";
pub const EMPTY_LINK: &str = "empty-link-target";
pub const MISSING_ALT: &str = "missing-alt-text";
pub const TRAILING_NEWLINE: &str = "missing-trailing-newline";
pub const BROKEN_FRAGMENT: &str = "broken-link-fragment";
pub const UNDEFINED_REFERENCE: &str = "undefined-reference";
pub const INVALID_UTF8: &str = "invalid-utf8";
pub const BROKEN_LOCAL_LINK: &str = "broken-local-link";
pub const OUTSIDE_WORKSPACE: &str = "outside-workspace";
pub const SKIPPED_EXTERNAL: &str = "skipped-external";

pub const RULES: &[Rule] = &[
    rule!("heading-hierarchy-jump", Some("MD001"), Some("heading-increment"), Warning, "diagnostics", "no",
        "A heading is more than one level deeper than the heading before it (h2 then h4)."),
    rule!("trailing-whitespace", Some("MD009"), Some("no-trailing-spaces"), Warning, "diagnostics", "yes",
        "Whitespace at the end of a line outside code blocks; exactly two trailing spaces (a hard line break) are allowed."),
    rule!("multiple-blank-lines", Some("MD012"), Some("no-multiple-blanks"), Warning, "diagnostics", "yes",
        "More than one consecutive blank line outside code blocks (reported on each extra line)."),
    rule!("blanks-around-headings", Some("MD022"), Some("blanks-around-headings"), Warning, "diagnostics", "yes",
        "A heading without a blank line above (unless it starts the document) or below (unless it ends it)."),
    rule!("duplicate-heading", Some("MD024"), Some("no-duplicate-heading"), Warning, "diagnostics", "no",
        "A heading whose text repeats an earlier heading anywhere in the document."),
    rule!("multiple-top-level-headings", Some("MD025"), Some("single-title/single-h1"), Warning, "diagnostics", "no",
        "A second h1 when the document's first heading is an h1 (or the front matter has a title)."),
    rule!("bare-url", Some("MD034"), Some("no-bare-urls"), Warning, "diagnostics", "yes",
        "An http(s) or ftp URL, or an e-mail address, in ordinary text that is not a link; the fix wraps it in `<...>`."),
    rule!("fenced-code-language", Some("MD040"), Some("fenced-code-language"), Warning, "diagnostics", "no",
        "A fenced code block without a language after the opening fence."),
    rule!("empty-link-target", Some("MD042"), Some("no-empty-links"), Warning, "diagnostics", "no",
        "A link whose destination is empty or only `#`."),
    rule!("missing-alt-text", Some("MD045"), Some("no-alt-text"), Warning, "diagnostics", "no",
        "An image (Markdown or raw `<img>`) without alternative text."),
    rule!("missing-trailing-newline", Some("MD047"), Some("single-trailing-newline"), Warning, "diagnostics", "yes",
        "The file does not end with a newline."),
    rule!("broken-link-fragment", Some("MD051"), Some("link-fragments"), Warning, "diagnostics, link_check_local", "when only the case differs",
        "A `#fragment` that matches no heading anchor, `{#id}` or HTML id/name (in this file, or in the linked Markdown file for link_check_local)."),
    rule!("undefined-reference", Some("MD052"), Some("reference-links-images"), Warning, "diagnostics, link_check_local", "no",
        "A full or collapsed reference link (`[text][label]`, `[label][]`) whose label has no definition."),
    rule!("invalid-utf8", None, None, Warning, "all", "no",
        "The file is not valid UTF-8; it was decoded lossily (U+FFFD) and format_suggestions offers no edits."),
    rule!("broken-local-link", None, None, Error, "link_check_local", "no",
        "A relative link or image whose target does not exist in the workspace."),
    rule!("outside-workspace", None, None, Error, "link_check_local", "no",
        "A relative link or image that climbs out of the workspace (through `..` or a symlink); it is not followed."),
    rule!("skipped-external", None, None, Info, "link_check_local", "no",
        "A link with a scheme (https:, mailto:, …) or `//host`; listed, never fetched."),
];

pub fn rule(id: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.id == id)
}
