//! Note names: checked here, once, before any store sees one (a name becomes a file name, so a
//! name that could leave the notes directory or hide in it never gets that far).

use std::fmt;

/// Longest note name, in characters.
pub const MAX_NOTE_NAME: usize = 100;

/// A note's name: non-empty, at most [`MAX_NOTE_NAME`] characters, no path separator (`/`, `\`),
/// no `..`, no leading dot, no leading or trailing space and no control character. The only way
/// to make one is [`NoteName::parse`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NoteName(String);

impl NoteName {
    /// Checks `name`; the error says what is wrong and what is allowed.
    pub fn parse(name: &str) -> Result<NoteName, String> {
        const RULE: &str = "a note name is one plain word or phrase such as `build-setup` (no `/`, `\\`, `..` or leading dot)";
        // Shown escaped: the message reaches a person's terminal too.
        let shown = format!("`{}`", cheng_node::display::line(name).as_str());
        if name.trim().is_empty() {
            return Err(format!("name is empty; {RULE}"));
        }
        let chars = name.chars().count();
        if chars > MAX_NOTE_NAME {
            return Err(format!(
                "name is {chars} characters long; a note name has at most {MAX_NOTE_NAME}"
            ));
        }
        if name.contains(['/', '\\']) {
            return Err(format!("name {shown} contains a path separator; {RULE}"));
        }
        if name.contains("..") {
            return Err(format!("name {shown} contains `..`; {RULE}"));
        }
        if name.starts_with('.') {
            return Err(format!("name {shown} starts with a dot; {RULE}"));
        }
        if name.trim() != name {
            return Err(format!(
                "name {shown} starts or ends with a space; remove it"
            ));
        }
        if let Some(c) = name.chars().find(|c| c.is_control()) {
            return Err(format!(
                "name {shown} contains the control character U+{:04X}; {RULE}",
                u32::from(c)
            ));
        }
        Ok(NoteName(name.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for NoteName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_pass() {
        for name in [
            "build-setup",
            "a",
            "Release notes 2.1",
            "ünïcode",
            &"x".repeat(100),
        ] {
            assert_eq!(NoteName::parse(name).unwrap().as_str(), name);
        }
    }

    #[test]
    fn names_that_could_leave_or_hide_are_refused_with_the_reason() {
        for (name, says) in [
            ("", "empty"),
            ("   ", "empty"),
            ("../x", "separator"),
            ("a/b", "separator"),
            ("a\\b", "separator"),
            ("..", "`..`"),
            ("a..b", "`..`"),
            (".hidden", "dot"),
            (" a", "space"),
            ("a\u{1b}[2J", "control"),
            ("a\nb", "control"),
            ("nul\0", "control"),
        ] {
            let err = NoteName::parse(name).unwrap_err();
            assert!(err.contains(says), "{name:?}: {err}");
        }
        let err = NoteName::parse(&"x".repeat(101)).unwrap_err();
        assert!(
            err.contains("101 characters") && err.contains("at most 100"),
            "{err}"
        );
    }

    #[test]
    fn an_escape_in_a_refused_name_is_shown_escaped() {
        let err = NoteName::parse("a\u{1b}[2J/b").unwrap_err();
        assert!(!err.contains('\u{1b}'), "{err:?}");
    }
}
