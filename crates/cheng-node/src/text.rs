//! Text for people: the bounded head+tail capture and human-readable sizes (from `cheng_io`,
//! shared with the process layer), and command lines quoted for display.

pub use cheng_io::text::*;

/// Quotes `word` for display so that pasting the display into a shell gives the same argument.
///
/// A word with a character that a terminal would act on or not draw
/// ([`crate::display::is_hidden`]) is ANSI-C quoted (`$'a\e[2Kb'`, as bash, zsh and ksh read
/// it): the line shows exactly what runs and holds nothing for the display escaper to change.
pub fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "@%+=:,./-_".contains(c));
    if plain {
        word.to_string()
    } else if word.chars().any(crate::display::is_hidden) {
        ansi_c_quote(word)
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// `$'...'` with every hidden character, quote and backslash written as an escape.
fn ansi_c_quote(word: &str) -> String {
    let mut out = String::from("$'");
    for (at, c) in word.char_indices() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\'' => out.push_str("\\'"),
            // `\x5c` where `\\` would be followed by `u{`, the display escaper's own form.
            '\\' if word[at + 1..].starts_with("u{") => out.push_str("\\x5c"),
            '\\' => out.push_str("\\\\"),
            c if crate::display::is_hidden(c) => {
                let code = u32::from(c);
                // Fixed widths: the shell reads at most 2, 4 or 8 hex digits after \x, \u, \U.
                if code < 0x80 {
                    out.push_str(&format!("\\x{code:02x}"));
                } else if code <= 0xffff {
                    out.push_str(&format!("\\u{code:04x}"));
                } else {
                    out.push_str(&format!("\\U{code:08x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// `cargo test --no-fail-fast 'a b'`: an argv for display, quoted only where a shell would need it.
pub fn command_display<'a>(argv: impl IntoIterator<Item = &'a str>) -> String {
    argv.into_iter()
        .map(shell_quote)
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_quotes_only_what_a_shell_needs() {
        assert_eq!(
            command_display(["cargo", "test", "--no-fail-fast"]),
            "cargo test --no-fail-fast"
        );
        assert_eq!(
            command_display(["echo", "a b", "it's", ""]),
            "echo 'a b' 'it'\\''s' ''"
        );
        assert_eq!(json_kind(&serde_json::json!(5)), "an integer");
        assert_eq!(json_kind(&serde_json::json!(5.5)), "a number");
    }

    #[test]
    fn words_with_hidden_characters_are_ansi_c_quoted() {
        assert_eq!(
            command_display(["sh", "-c", "touch PWNED", "a\rb.txt"]),
            "sh -c 'touch PWNED' $'a\\rb.txt'"
        );
        assert_eq!(
            shell_quote("x\u{1b}[3A\n'\\e\u{7f}\u{85}\u{202e}\u{200b}\u{e0041}é"),
            "$'x\\x1b[3A\\n\\'\\\\e\\x7f\\u0085\\u202e\\u200b\\U000e0041é'"
        );
        // The display escaper's own form is written so that the escaper leaves it alone.
        let quoted = shell_quote("\\u{1b}\n");
        assert_eq!(quoted, "$'\\x5cu{1b}\\n'");
        assert_eq!(crate::display::line(&quoted).as_str(), quoted);
        // What is quoted contains nothing for the display to escape.
        for word in ["\u{1b}]0;title\u{7}", "\u{9b}31m", "tab\there", "a\u{feff}"] {
            let quoted = shell_quote(word);
            assert_eq!(crate::display::line(&quoted).as_str(), quoted);
        }
    }
}
