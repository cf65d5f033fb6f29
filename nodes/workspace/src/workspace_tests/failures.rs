//! Failure hints `{name, file, line, message}` from test output, best effort.
//!
//! Recognised shapes: Rust panics (`thread 'name' panicked at file:line:col:` — cargo test and
//! nextest name the thread after the test), pytest `FAILED path::test - message` with the
//! `path:line:` traceback line, jest/vitest `●` / `FAIL file > test` blocks with their location,
//! go `--- FAIL: TestX` with the following `file_test.go:line: message`, and node --test TAP
//! `not ok N - name` with its YAML `location` and `error`. Anything a shape lacks stays null.

use regex::Regex;
use serde_json::{json, Value};
use std::sync::LazyLock;

/// At most this many failures are reported.
pub const MAX_FAILURES: usize = 50;
/// A message is cut to this many characters.
pub const MAX_MESSAGE_CHARS: usize = 500;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Failure {
    pub name: String,
    pub file: Option<String>,
    pub line: Option<u64>,
    pub message: Option<String>,
}

impl Failure {
    pub fn to_json(&self) -> Value {
        json!({"name": self.name, "file": self.file, "line": self.line, "message": self.message})
    }
}

/// All failures found in `text` (ANSI codes already stripped), deduplicated by name.
pub fn extract(text: &str) -> Vec<Failure> {
    let mut out: Vec<Failure> = Vec::new();
    for extractor in [rust_panics, pytest, jest, vitest, go, node_tap] {
        for failure in extractor(text) {
            if out.len() >= MAX_FAILURES {
                return out;
            }
            if !out.iter().any(|f| f.name == failure.name) {
                out.push(failure);
            }
        }
    }
    out
}

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).unwrap_or_else(|e| panic!("invalid built-in pattern {pattern}: {e}"))
}

fn message(lines: &[&str]) -> Option<String> {
    let text = lines
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    if text.is_empty() {
        return None;
    }
    Some(text.chars().take(MAX_MESSAGE_CHARS).collect())
}

/// `thread 'name' (123) panicked at src/lib.rs:9:5:` then the message lines (current format),
/// or `thread 'name' panicked at 'msg', src/lib.rs:9:5` (before Rust 1.73).
fn rust_panics(text: &str) -> Vec<Failure> {
    static NEW: LazyLock<Regex> =
        LazyLock::new(|| re(r"^\s*thread '([^']+)'(?: \(\d+\))? panicked at (.+?):(\d+):\d+:\s*$"));
    static OLD: LazyLock<Regex> =
        LazyLock::new(|| re(r"^\s*thread '([^']+)' panicked at '(.*)', (.+?):(\d+):\d+\s*$"));
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if let Some(c) = NEW.captures(line) {
            let body: Vec<&str> = lines[i + 1..]
                .iter()
                .take_while(|l| {
                    let t = l.trim();
                    !t.is_empty() && !t.starts_with("note: ") && !t.starts_with("stack backtrace:")
                })
                .copied()
                .collect();
            out.push(Failure {
                name: c[1].to_string(),
                file: Some(c[2].to_string()),
                line: c[3].parse().ok(),
                message: message(&body),
            });
        } else if let Some(c) = OLD.captures(line) {
            out.push(Failure {
                name: c[1].to_string(),
                file: Some(c[3].to_string()),
                line: c[4].parse().ok(),
                message: message(&[&c[2]]),
            });
        }
    }
    out
}

/// `FAILED tests/test_x.py::test_y - assert 4 == 5`; the line comes from `tests/test_x.py:9: Error`.
fn pytest(text: &str) -> Vec<Failure> {
    static FAILED: LazyLock<Regex> =
        LazyLock::new(|| re(r"(?m)^(?:FAILED|ERROR) ([^\s:]+)(?:::(\S+))?(?: - (.*))?$"));
    let mut out = Vec::new();
    for c in FAILED.captures_iter(text) {
        let file = c[1].to_string();
        let test = c.get(2).map(|m| m.as_str().to_string());
        let name = match &test {
            Some(t) => format!("{file}::{t}"),
            None => file.clone(),
        };
        // The traceback line for this file inside the test's section, else anywhere.
        let short = test
            .as_deref()
            .and_then(|t| t.rsplit("::").next())
            .unwrap_or("");
        let line = pytest_line(text, &file, short);
        out.push(Failure {
            name,
            file: Some(file),
            line,
            message: c.get(3).and_then(|m| message(&[m.as_str()])),
        });
    }
    out
}

fn pytest_line(text: &str, file: &str, test: &str) -> Option<u64> {
    let prefix = format!("{file}:");
    let section = if test.is_empty() {
        text
    } else {
        let header = format!(" {test} _");
        text.find(&header).map_or(text, |i| &text[i..])
    };
    section.lines().find_map(|l| {
        let rest = l.strip_prefix(&prefix)?;
        let (num, tail) = rest.split_once(':')?;
        tail.starts_with(' ').then(|| num.parse().ok()).flatten()
    })
}

/// jest: `  ● suite › test` then the message, then `at … (file:line:col)`.
fn jest(text: &str) -> Vec<Failure> {
    static HEADER: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*● (.+)$"));
    static AT: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*at .*?\(?([^\s()]+):(\d+):\d+\)?\s*$"));
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(c) = HEADER.captures(line) else {
            continue;
        };
        let block: Vec<&str> = lines[i + 1..]
            .iter()
            .take_while(|l| !HEADER.is_match(l))
            .copied()
            .collect();
        let first = block.iter().find(|l| !l.trim().is_empty()).copied();
        let location = block.iter().find_map(|l| AT.captures(l));
        out.push(Failure {
            name: c[1].trim().to_string(),
            file: location.as_ref().map(|m| m[1].to_string()),
            line: location.as_ref().and_then(|m| m[2].parse().ok()),
            message: first.and_then(|m| message(&[m])),
        });
    }
    out
}

/// vitest: ` FAIL  file > suite > test`, the message on the next line, ` ❯ file:line:col`.
fn vitest(text: &str) -> Vec<Failure> {
    static HEADER: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*FAIL\s+(\S+) > (.+)$"));
    static AT: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*❯ (\S+):(\d+):\d+\s*$"));
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(c) = HEADER.captures(line) else {
            continue;
        };
        let block: Vec<&str> = lines[i + 1..]
            .iter()
            .take_while(|l| !HEADER.is_match(l))
            .take(40)
            .copied()
            .collect();
        let first = block.iter().find(|l| !l.trim().is_empty()).copied();
        let location = block.iter().find_map(|l| AT.captures(l));
        out.push(Failure {
            name: format!("{} > {}", &c[1], c[2].trim()),
            file: Some(
                location
                    .as_ref()
                    .map_or(c[1].to_string(), |m| m[1].to_string()),
            ),
            line: location.as_ref().and_then(|m| m[2].parse().ok()),
            message: first.and_then(|m| message(&[m])),
        });
    }
    out
}

/// go: `--- FAIL: TestX (0.00s)` with `    x_test.go:12: message` just before or after it.
fn go(text: &str) -> Vec<Failure> {
    static HEADER: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*--- FAIL: (\S+)"));
    static LOC: LazyLock<Regex> = LazyLock::new(|| re(r"^\s+([\w./-]+_test\.go):(\d+): (.*)$"));
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(c) = HEADER.captures(line) else {
            continue;
        };
        // Verbose output logs before the FAIL line, plain output after it.
        let after = lines[i + 1..]
            .iter()
            .take_while(|l| l.starts_with(' '))
            .copied();
        let before = lines[..i]
            .iter()
            .rev()
            .take_while(|l| l.starts_with(' '))
            .copied();
        let location = after.chain(before).find_map(|l| LOC.captures(l));
        out.push(Failure {
            name: c[1].to_string(),
            file: location.as_ref().map(|m| m[1].to_string()),
            line: location.as_ref().and_then(|m| m[2].parse().ok()),
            message: location.as_ref().and_then(|m| message(&[&m[3]])),
        });
    }
    out
}

/// node --test TAP: `not ok 2 - name` then a YAML block with `location:` and `error:`.
fn node_tap(text: &str) -> Vec<Failure> {
    static HEADER: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*not ok \d+ - (.+?)(?: # .*)?$"));
    static LOCATION: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*location: '(.+):(\d+):\d+'\s*$"));
    static ERROR: LazyLock<Regex> = LazyLock::new(|| re(r"^(\s*)error: (.*)$"));
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(c) = HEADER.captures(line) else {
            continue;
        };
        // The YAML diagnostic block runs from `---` to `...`.
        let block: Vec<&str> = lines[i + 1..]
            .iter()
            .take_while(|l| l.trim() != "...")
            .take(200)
            .copied()
            .collect();
        let location = block.iter().find_map(|l| LOCATION.captures(l));
        let mut error_text = Vec::new();
        if let Some((j, e)) = block
            .iter()
            .enumerate()
            .find_map(|(j, l)| ERROR.captures(l).map(|e| (j, e)))
        {
            let value = e.get(2).map_or("", |m| m.as_str()).trim();
            if value == "|-" || value == "|" || value == ">-" {
                let base = e.get(1).map_or(0, |m| m.as_str().len());
                error_text.extend(
                    block[j + 1..].iter().take_while(|l| {
                        l.trim().is_empty() || l.len() - l.trim_start().len() > base
                    }),
                );
            } else {
                error_text.push(value.trim_matches('\''));
            }
        }
        out.push(Failure {
            name: c[1].to_string(),
            file: location.as_ref().map(|m| m[1].to_string()),
            line: location.as_ref().and_then(|m| m[2].parse().ok()),
            message: message(&error_text),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::parsers::{samples, strip_ansi};
    use super::*;

    fn one(text: &str) -> Failure {
        let found = extract(text);
        assert_eq!(found.len(), 1, "{found:?}");
        found.into_iter().next().unwrap_or_default()
    }

    #[test]
    fn cargo_and_nextest_panics() {
        for text in [samples::CARGO_STDOUT, samples::NEXTEST_STDERR] {
            let f = one(text);
            assert_eq!(f.name, "fails_on_purpose");
            assert_eq!(f.file.as_deref(), Some("tests/check.rs"));
            assert_eq!(f.line, Some(4));
            assert!(f
                .message
                .unwrap_or_default()
                .contains("two and two make four"));
        }
        let old = one("thread 'tests::x' panicked at 'boom', src/lib.rs:7:9\n");
        assert_eq!((old.name.as_str(), old.line), ("tests::x", Some(7)));
    }

    #[test]
    fn pytest_failed_lines_with_traceback_line() {
        let f = one(samples::PYTEST);
        assert_eq!(f.name, "tests/test_calc.py::test_fails_on_purpose");
        assert_eq!(f.file.as_deref(), Some("tests/test_calc.py"));
        assert_eq!(f.line, Some(9));
        assert_eq!(f.message.as_deref(), Some("assert 4 == 5"));
    }

    #[test]
    fn jest_and_vitest_blocks() {
        let f = one(samples::JEST_STDERR);
        assert_eq!(f.name, "calc › fails on purpose");
        assert_eq!((f.file.as_deref(), f.line), (Some("calc.test.js"), Some(9)));
        assert!(f.message.unwrap_or_default().contains("toBe"));
        let f = one(samples::VITEST);
        assert_eq!(f.name, "src/calc.test.ts > calc > fails on purpose");
        assert_eq!(
            (f.file.as_deref(), f.line),
            (Some("src/calc.test.ts"), Some(9))
        );
        assert!(f.message.unwrap_or_default().contains("expected 4 to be 5"));
    }

    #[test]
    fn real_jest_30_and_vitest_4_blocks() {
        let f = one(&strip_ansi(samples::JEST30_STDERR));
        assert_eq!(f.name, "calc › fails on purpose");
        assert_eq!(
            (f.file.as_deref(), f.line),
            (Some("src/calc.test.js"), Some(9))
        );
        assert!(f.message.unwrap_or_default().contains("toBe"));
        let f = one(&strip_ansi(&format!(
            "{}\n{}",
            samples::VITEST4_STDOUT,
            samples::VITEST4_STDERR
        )));
        assert_eq!(f.name, "src/calc.test.js > calc > fails on purpose");
        assert_eq!(
            (f.file.as_deref(), f.line),
            (Some("src/calc.test.js"), Some(10))
        );
        assert!(f.message.unwrap_or_default().contains("expected 4 to be 5"));
    }

    #[test]
    fn go_fail_lines_in_plain_and_verbose_output() {
        for text in [samples::GO_PLAIN, samples::GO_VERBOSE] {
            let f = one(text);
            assert_eq!(f.name, "TestFailsOnPurpose");
            assert_eq!(
                (f.file.as_deref(), f.line),
                (Some("calc_test.go"), Some(12))
            );
            assert_eq!(f.message.as_deref(), Some("add(2, 2) = 4, want 5"));
        }
    }

    #[test]
    fn go_fail_lines_in_real_go_1_19_output() {
        for text in [samples::GO119_PLAIN, samples::GO119_VERBOSE] {
            let f = one(text);
            assert_eq!(f.name, "TestFailsOnPurpose");
            assert_eq!(
                (f.file.as_deref(), f.line),
                (Some("calc_test.go"), Some(13))
            );
            assert_eq!(f.message.as_deref(), Some("Add(2, 2) = 4, want 5"));
        }
    }

    #[test]
    fn node_tap_not_ok_with_location_and_error() {
        let f = one(samples::NODE_TAP);
        assert_eq!(f.name, "fails on purpose");
        assert!(f.file.unwrap_or_default().ends_with("test/calc.test.js"));
        assert_eq!(f.line, Some(9));
        assert!(f.message.unwrap_or_default().contains("4 !== 5"));
    }

    #[test]
    fn nothing_recognisable_yields_nothing() {
        assert!(extract("all fine\nok\n").is_empty());
    }
}
