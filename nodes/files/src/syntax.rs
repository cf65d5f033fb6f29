//! The "not worse" syntax gate for JSON, TOML, YAML and XML.
//!
//! The rule is *worse*, not *invalid*: a write is refused only when the old content could be
//! checked and the new content has more parse problems than the old (0→1 and 3→5 refused; 3→1
//! and 3→3 allowed). Refusing every invalid result would also refuse the edit that fixes half of
//! a broken file, and the model would be stuck. "Could not check" ([`Check::Unchecked`]) is
//! distinct from "checked, no problems" (`Check::Problems` with an empty list) and never blocks.
//!
//! The checkers are the parsers cheng already links: serde_json, toml, yaml-rust2 and quick-xml
//! (which never processes a DTD: no entity expansion, no external fetch). Each stops at its first
//! error, so a checked file counts 0 or 1 problem.
//!
//! ```
//! use cheng_nodes_files::syntax::{check, Check, gate};
//! use std::path::Path;
//!
//! assert_eq!(check(Path::new("a.json"), "{\"a\": 1}"), Check::Problems(vec![]));
//! assert!(matches!(check(Path::new("a.rs"), "fn"), Check::Unchecked));
//! assert!(gate(Path::new("a.json"), "a.json", Some("{}"), "{").is_err());
//! assert!(gate(Path::new("a.json"), "a.json", Some("{"), "[").is_ok());
//! ```

use cheng_node::{ErrorKind, NodeError};
use std::path::Path;

/// What a checker found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// The file's kind has no checker (or the checker could not run): says nothing either way.
    Unchecked,
    /// Checked: these problems (empty: none).
    Problems(Vec<String>),
}

impl Check {
    pub fn count(&self) -> Option<usize> {
        match self {
            Check::Unchecked => None,
            Check::Problems(p) => Some(p.len()),
        }
    }
}

/// The outcome of the gate for one write, for the approval card and the output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// `json`, `toml`, `yaml` or `xml`; `None` when the file has no checker.
    pub language: Option<&'static str>,
    pub before: Check,
    pub after: Check,
}

impl Verdict {
    /// One line for a card or a summary; `None` when nothing was checked.
    pub fn line(&self) -> Option<String> {
        let language = self.language?.to_uppercase();
        match (&self.before, &self.after) {
            (_, Check::Problems(p)) if p.is_empty() => {
                Some(format!("{language} syntax after the change: no problems"))
            }
            (Check::Problems(b), Check::Problems(a)) => Some(format!(
                "{language} syntax: {} problem(s) before, {} after (not worse): {}",
                b.len(),
                a.len(),
                a.first().map_or("", String::as_str)
            )),
            (Check::Unchecked, Check::Problems(a)) => Some(format!(
                "{language} syntax after the change: {} problem(s)",
                a.len()
            )),
            (_, Check::Unchecked) => None,
        }
    }
}

/// The checker language of `path`, by extension.
pub fn language(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    match ext.as_str() {
        "json" => Some("json"),
        "toml" => Some("toml"),
        "yaml" | "yml" => Some("yaml"),
        "xml" | "svg" | "xsd" | "xsl" | "xslt" => Some("xml"),
        _ => None,
    }
}

/// Checks `text` as the language of `path`.
pub fn check(path: &Path, text: &str) -> Check {
    match language(path) {
        Some(lang) => check_language(lang, text),
        None => Check::Unchecked,
    }
}

/// Checks `text` as `language` (`json`, `toml`, `yaml`, `xml`).
pub fn check_language(language: &str, text: &str) -> Check {
    let problem = match language {
        "json" => serde_json::from_str::<serde::de::IgnoredAny>(text)
            .err()
            .map(|e| e.to_string()),
        "toml" => text
            .parse::<toml::Table>()
            .err()
            .map(|e| e.to_string().trim().replace('\n', " ")),
        "yaml" => yaml_rust2::YamlLoader::load_from_str(text)
            .err()
            .map(|e| e.to_string()),
        "xml" => xml_problem(text),
        _ => return Check::Unchecked,
    };
    Check::Problems(problem.into_iter().collect())
}

fn xml_problem(text: &str) -> Option<String> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(text);
    reader.config_mut().check_end_names = true;
    let mut depth = 0usize;
    let mut roots = 0usize;
    loop {
        match reader.read_event() {
            Err(e) => return Some(format!("at byte {}: {e}", reader.error_position())),
            Ok(Event::Eof) => {
                return if depth > 0 {
                    Some("unexpected end of document: an element is not closed".into())
                } else if roots == 0 {
                    Some("the document has no root element".into())
                } else {
                    None
                };
            }
            Ok(Event::Start(_)) => {
                if depth == 0 {
                    roots += 1;
                }
                depth += 1;
            }
            Ok(Event::End(_)) => depth = depth.saturating_sub(1),
            Ok(Event::Empty(_)) if depth == 0 => roots += 1,
            Ok(Event::Text(t)) if depth == 0 && !t.iter().all(u8::is_ascii_whitespace) => {
                return Some(format!(
                    "at byte {}: text outside the root element",
                    reader.buffer_position()
                ));
            }
            Ok(_) => {}
        }
        if roots > 1 {
            return Some("the document has more than one root element".into());
        }
    }
}

/// The gate: `Err(SYNTAX_WORSE)` (naming `display`) when `new` has more problems than `old`
/// (both checked); `old` is `None` for a new file (compared with zero problems).
pub fn gate(
    path: &Path,
    display: &str,
    old: Option<&str>,
    new: &str,
) -> Result<Verdict, NodeError> {
    let Some(lang) = language(path) else {
        return Ok(Verdict {
            language: None,
            before: Check::Unchecked,
            after: Check::Unchecked,
        });
    };
    let before = match old {
        Some(old) => check_language(lang, old),
        None => Check::Problems(Vec::new()),
    };
    let after = check_language(lang, new);
    let verdict = Verdict {
        language: Some(lang),
        before,
        after,
    };
    worse(&verdict, display)?;
    Ok(verdict)
}

/// `Err(SYNTAX_WORSE)` when both sides were checked and the after side has more problems.
pub fn worse(verdict: &Verdict, display: &str) -> Result<(), NodeError> {
    if let (Some(before), Some(after)) = (verdict.before.count(), verdict.after.count()) {
        if after > before {
            let lang = verdict.language.unwrap_or("the file's").to_uppercase();
            let first = match &verdict.after {
                Check::Problems(p) => p.first().cloned().unwrap_or_default(),
                Check::Unchecked => String::new(),
            };
            return Err(NodeError::new(
                ErrorKind::SyntaxWorse,
                format!(
                    "{display}: the change would make the {lang} worse ({before} parse problem(s) before, {after} after: {first}); \
                     nothing was written. Fix the new content so that it parses at least as well as the file does now"
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(before: usize, after: usize) -> Verdict {
        let p = |n: usize| Check::Problems((0..n).map(|i| format!("problem {i}")).collect());
        Verdict {
            language: Some("json"),
            before: p(before),
            after: p(after),
        }
    }

    #[test]
    fn worse_is_refused_better_or_equal_allowed() {
        assert!(worse(&verdict(0, 1), "a").is_err());
        assert!(worse(&verdict(3, 5), "a").is_err());
        assert!(worse(&verdict(3, 1), "a").is_ok());
        assert!(worse(&verdict(3, 3), "a").is_ok());
        let unchecked = Verdict {
            language: Some("json"),
            before: Check::Unchecked,
            after: Check::Problems(vec!["x".into()]),
        };
        assert!(
            worse(&unchecked, "a").is_ok(),
            "could not check the old side: never blocks"
        );
        assert_eq!(
            worse(&verdict(0, 1), "a").unwrap_err().kind,
            ErrorKind::SyntaxWorse
        );
    }

    #[test]
    fn each_language_finds_a_problem_and_accepts_valid_text() {
        for (name, good, bad) in [
            ("a.json", "{\"a\": [1, 2]}", "{\"a\": [1, 2}"),
            ("a.toml", "a = 1\n[b]\nc = \"x\"\n", "a = \n"),
            ("a.yaml", "a:\n  - 1\n  - 2\n", "a: [1, 2\n"),
            ("a.xml", "<?xml version=\"1.0\"?><a><b/></a>", "<a><b></a>"),
        ] {
            assert_eq!(
                check(Path::new(name), good),
                Check::Problems(vec![]),
                "{name}"
            );
            assert_eq!(check(Path::new(name), bad).count(), Some(1), "{name}");
        }
        assert_eq!(check(Path::new("a.md"), "#"), Check::Unchecked);
    }

    #[test]
    fn xml_doctype_entities_are_not_expanded() {
        let bomb = "<?xml version=\"1.0\"?><!DOCTYPE a [<!ENTITY x \"xxxxxxxx\"><!ENTITY y \"&x;&x;&x;&x;\">]><a>&y;</a>";
        assert_eq!(check(Path::new("a.xml"), bomb), Check::Problems(vec![]));
    }
}
