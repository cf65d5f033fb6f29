//! The shell-word splitter: a *simple* shell string (words, blanks, quotes and backslashes,
//! with POSIX `sh` meaning) becomes the argv `sh` would produce; anything else is refused with
//! what made it shell syntax.

/// Why a shell string is not simple.
#[derive(Debug, PartialEq)]
pub(crate) enum Split {
    /// Shell syntax, described for the user (`` `|` at character 4 ``).
    Syntax(String),
    /// A quote that is never closed (`single` or `double`).
    Unterminated(&'static str),
}

/// Characters that mean shell syntax when unquoted.
const METACHARACTERS: &[char] = &[
    '|', '&', ';', '<', '>', '(', ')', '*', '?', '{', '}', '~', '$', '`',
];

/// Splits a simple shell string into the argv `sh` would produce, or says why it is not simple.
pub(crate) fn split_simple(text: &str) -> Result<Vec<String>, Split> {
    #[derive(PartialEq)]
    enum Quote {
        None,
        Single,
        Double,
    }
    // Positions are reported in characters, counted from 1.
    let syntax = |c: char, at: usize| {
        Split::Syntax(format!(
            "{c:?} at character {}",
            text[..at].chars().count() + 1
        ))
    };
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    // Byte offset where the current word starts, when inside a word.
    let mut word_start: Option<usize> = None;
    let mut quote = Quote::None;
    let mut chars = text.char_indices();

    while let Some((i, c)) = chars.next() {
        if c == '\n' || c == '\r' {
            return Err(Split::Syntax("a newline".into()));
        }
        match quote {
            Quote::Single => {
                if c == '\'' {
                    quote = Quote::None;
                } else {
                    word.push(c);
                }
            }
            Quote::Double => match c {
                '"' => quote = Quote::None,
                '$' | '`' => return Err(syntax(c, i)),
                '\\' => match chars.next() {
                    Some((_, next @ ('"' | '\\' | '$' | '`'))) => word.push(next),
                    Some((_, '\n' | '\r')) => return Err(Split::Syntax("a newline".into())),
                    Some((_, next)) => {
                        word.push('\\');
                        word.push(next);
                    }
                    None => return Err(Split::Unterminated("double")),
                },
                _ => word.push(c),
            },
            Quote::None => {
                if c == ' ' || c == '\t' {
                    if let Some(start) = word_start.take() {
                        end_word(&mut words, &mut word, &text[start..i])?;
                    }
                    continue;
                }
                if word_start.is_none() {
                    if c == '#' {
                        return Err(Split::Syntax(format!(
                            "'#' at character {} starts a comment",
                            text[..i].chars().count() + 1
                        )));
                    }
                    word_start = Some(i);
                }
                match c {
                    '\'' => quote = Quote::Single,
                    '"' => quote = Quote::Double,
                    '\\' => match chars.next() {
                        Some((_, '\n' | '\r')) => return Err(Split::Syntax("a newline".into())),
                        Some((_, next)) => word.push(next),
                        None => return Err(Split::Syntax("a trailing backslash".into())),
                    },
                    c if METACHARACTERS.contains(&c) => return Err(syntax(c, i)),
                    c => word.push(c),
                }
            }
        }
    }
    match quote {
        Quote::Single => Err(Split::Unterminated("single")),
        Quote::Double => Err(Split::Unterminated("double")),
        Quote::None => {
            if let Some(start) = word_start {
                end_word(&mut words, &mut word, &text[start..])?;
            }
            Ok(words)
        }
    }
}

/// Moves the finished `word` (whose source text is `raw`) into `words`.
fn end_word(words: &mut Vec<String>, word: &mut String, raw: &str) -> Result<(), Split> {
    if words.is_empty() && is_assignment(raw) {
        return Err(Split::Syntax(format!(
            "a variable assignment {raw:?}; pass variables in env"
        )));
    }
    words.push(std::mem::take(word));
    Ok(())
}

/// `NAME=...` with an unquoted valid name: an assignment in sh, not a program.
fn is_assignment(raw: &str) -> bool {
    let Some((name, _)) = raw.split_once('=') else {
        return false;
    };
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        match split_simple(text) {
            Ok(words) => words,
            Err(e) => panic!("{text:?}: {e:?}"),
        }
    }

    #[test]
    fn splitting_follows_sh_quoting() {
        assert_eq!(words("ls -la  src"), ["ls", "-la", "src"]);
        assert_eq!(
            words("\tgrep -n 'a b' \"c d\""),
            ["grep", "-n", "a b", "c d"]
        );
        assert_eq!(
            words(r#"echo a\ b 'it'\''s' "say \"hi\"" "back\\slash" "keep\n""#),
            [
                "echo",
                "a b",
                "it's",
                "say \"hi\"",
                "back\\slash",
                "keep\\n"
            ]
        );
        assert_eq!(words(r#"echo '' "" x"#), ["echo", "", "", "x"]);
        assert_eq!(
            words(r#"echo 'a|b;c$d`e*f' "g|h*i?j{k}~l""#),
            ["echo", "a|b;c$d`e*f", "g|h*i?j{k}~l"]
        );
        assert_eq!(words("echo a=b x#y [ab]"), ["echo", "a=b", "x#y", "[ab]"]);
        assert_eq!(words("'A=1' x"), ["A=1", "x"]);
        assert_eq!(words("échø 😀"), ["échø", "😀"]);
    }

    #[test]
    fn shell_syntax_is_recognised() {
        for (text, what) in [
            ("ls;id", "';' at character 3"),
            ("ls | wc", "'|' at character 4"),
            ("echo \"$HOME\"", "'$' at character 7"),
            ("é;", "';' at character 2"),
            ("ls\nid", "a newline"),
            ("echo 'a\nb'", "a newline"),
            ("echo \\", "a trailing backslash"),
            ("A=1 ls", "a variable assignment"),
            ("ls #x", "comment"),
        ] {
            match split_simple(text) {
                Err(Split::Syntax(message)) => {
                    assert!(message.contains(what), "{text:?}: {message}")
                }
                other => panic!("{text:?}: {other:?}"),
            }
        }
        assert_eq!(
            split_simple("echo \"abc"),
            Err(Split::Unterminated("double"))
        );
        assert_eq!(
            split_simple("echo \"abc\\"),
            Err(Split::Unterminated("double"))
        );
    }

    #[test]
    fn display_quoting_round_trips_through_the_splitter() {
        for argv in [
            vec!["echo", "a b", "it's", "", "x=y", "$HOME;`id`"],
            vec!["ls", "-la", "src/main.rs"],
        ] {
            let display = cheng_node::text::command_display(argv.iter().map(AsRef::<str>::as_ref));
            assert_eq!(words(&display), argv, "{display}");
        }
    }
}
