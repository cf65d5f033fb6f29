//! Test-runner output into pass/fail counts.
//!
//! One parser per runner, tried in a fixed order on stdout and stderr together (jest and nextest
//! report on stderr); the first that recognises its summary wins. Nothing is guessed: output no
//! parser recognises yields no counts, and a runner whose output does not carry a count (go test
//! without `-v`/`-json` prints no per-test passes) leaves that count unset.

use regex::Regex;
use std::sync::LazyLock;

/// What a parser found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counts {
    /// Which format was recognised: `cargo test`, `pytest`, `node --test`, …
    pub runner: &'static str,
    pub passed: Option<u64>,
    pub failed: Option<u64>,
    pub skipped: u64,
    /// True when the counts are summed over many lines (cargo, go, TAP), so a truncated middle
    /// of the output would make them wrong.
    pub summed: bool,
}

type Parser = fn(&str) -> Option<Counts>;

/// In order: specific formats before generic ones.
const PARSERS: &[Parser] = &[
    nextest,
    cargo,
    pytest,
    jest,
    vitest,
    go,
    node_tap,
    mocha,
    generic_tap,
    plain,
];

/// Recognises the output of a test run; `None` when no parser matches.
pub fn parse(stdout: &str, stderr: &str) -> Option<Counts> {
    let text = strip_ansi(&format!("{stdout}\n{stderr}"));
    PARSERS.iter().find_map(|parser| parser(&text))
}

/// Removes colour and cursor escape sequences.
pub fn strip_ansi(text: &str) -> String {
    static ANSI: LazyLock<Regex> = LazyLock::new(|| re(r"\x1b\[[0-9;?]*[A-Za-z]"));
    ANSI.replace_all(text, "").into_owned()
}

fn re(pattern: &str) -> Regex {
    // The patterns are constants checked by the unit tests; an invalid one is a bug here.
    Regex::new(pattern).unwrap_or_else(|e| panic!("invalid built-in pattern {pattern}: {e}"))
}

/// Sums `N word` items (e.g. `3 passed, 1 failed`) by word.
fn items(text: &str, item: &Regex) -> Vec<(u64, String)> {
    item.captures_iter(text)
        .filter_map(|c| {
            Some((
                c.get(1)?.as_str().parse().ok()?,
                c.get(2)?.as_str().to_string(),
            ))
        })
        .collect()
}

fn sum(items: &[(u64, String)], words: &[&str]) -> u64 {
    items
        .iter()
        .filter(|(_, w)| words.contains(&w.as_str()))
        .map(|(n, _)| n)
        .fold(0u64, |total, n| total.saturating_add(*n))
}

/// `cargo test`: every `test result:` line, one per test binary and doc-test run, summed.
fn cargo(text: &str) -> Option<Counts> {
    static LINE: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"(?m)^test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored; (\d+) measured; (\d+) filtered out",
        )
    });
    let mut found = false;
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    for c in LINE.captures_iter(text) {
        found = true;
        let n = |i: usize| {
            c.get(i)
                .and_then(|m| m.as_str().parse::<u64>().ok())
                .unwrap_or(0)
        };
        // Counts are whatever the output says: saturate rather than overflow.
        passed = u64::saturating_add(passed, n(1));
        failed = u64::saturating_add(failed, n(2));
        skipped = u64::saturating_add(skipped, n(3));
    }
    found.then_some(Counts {
        runner: "cargo test",
        passed: Some(passed),
        failed: Some(failed),
        skipped,
        summed: true,
    })
}

/// `cargo nextest run`: `Summary [ 0.012s] 5 tests run: 4 passed, 1 failed, 0 skipped`.
fn nextest(text: &str) -> Option<Counts> {
    static LINE: LazyLock<Regex> =
        LazyLock::new(|| re(r"(?m)^\s*Summary \[[^\]]*\]\s+\d+ tests? run: (.*)$"));
    static ITEM: LazyLock<Regex> =
        LazyLock::new(|| re(r"(\d+) (passed|failed|timed out|skipped|exec failed)"));
    let line = LINE.captures_iter(text).last()?.get(1)?.as_str();
    let found = items(line, &ITEM);
    Some(Counts {
        runner: "cargo nextest",
        passed: Some(sum(&found, &["passed"])),
        failed: Some(sum(&found, &["failed", "timed out", "exec failed"])),
        skipped: sum(&found, &["skipped"]),
        summed: false,
    })
}

/// pytest: the final `==== 1 failed, 2 passed in 0.12s ====` (or the bare `-q` form).
fn pytest(text: &str) -> Option<Counts> {
    static LINE: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"(?m)^(?:=+ )?((?:\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?|rerun)(?:, )?)+|no tests ran) in [\d.]+s(?: \([^)]*\))?(?: =+)?\s*$",
        )
    });
    static ITEM: LazyLock<Regex> = LazyLock::new(|| {
        re(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?|rerun)")
    });
    let line = LINE.captures_iter(text).last()?.get(1)?.as_str();
    let found = items(line, &ITEM);
    Some(Counts {
        runner: "pytest",
        passed: Some(sum(&found, &["passed", "xpassed"])),
        failed: Some(sum(&found, &["failed", "error", "errors"])),
        skipped: sum(&found, &["skipped", "xfailed"]),
        summed: false,
    })
}

/// jest: `Tests:       1 failed, 2 passed, 3 total`.
fn jest(text: &str) -> Option<Counts> {
    static LINE: LazyLock<Regex> = LazyLock::new(|| re(r"(?m)^Tests:\s+(.*\d+ total.*)$"));
    static ITEM: LazyLock<Regex> =
        LazyLock::new(|| re(r"(\d+) (passed|failed|skipped|todo|total)"));
    let line = LINE.captures_iter(text).last()?.get(1)?.as_str();
    let found = items(line, &ITEM);
    Some(Counts {
        runner: "jest",
        passed: Some(sum(&found, &["passed"])),
        failed: Some(sum(&found, &["failed"])),
        skipped: sum(&found, &["skipped", "todo"]),
        summed: false,
    })
}

/// vitest: `      Tests  1 failed | 2 passed (3)`.
fn vitest(text: &str) -> Option<Counts> {
    static LINE: LazyLock<Regex> =
        LazyLock::new(|| re(r"(?m)^\s*Tests\s+(\d+ (?:passed|failed|skipped|todo).*)\(\d+\)\s*$"));
    static ITEM: LazyLock<Regex> = LazyLock::new(|| re(r"(\d+) (passed|failed|skipped|todo)"));
    let line = LINE.captures_iter(text).last()?.get(1)?.as_str();
    let found = items(line, &ITEM);
    Some(Counts {
        runner: "vitest",
        passed: Some(sum(&found, &["passed"])),
        failed: Some(sum(&found, &["failed"])),
        skipped: sum(&found, &["skipped", "todo"]),
        summed: false,
    })
}

/// go test: `-json` events, or `--- PASS/FAIL/SKIP:` lines of top-level tests; package lines
/// (`ok  pkg 0.01s`, `FAIL pkg`) alone say nothing about passes, so `passed` stays unset.
fn go(text: &str) -> Option<Counts> {
    static JSON: LazyLock<Regex> =
        LazyLock::new(|| re(r#"(?m)^\{.*"Action":"(pass|fail|skip)".*"Test":"([^"/]+)""#));
    static RESULT: LazyLock<Regex> = LazyLock::new(|| re(r"(?m)^--- (PASS|FAIL|SKIP): \S+"));
    static PACKAGE: LazyLock<Regex> =
        LazyLock::new(|| re(r"(?m)^(?:ok|FAIL)\s+\S+\s+(?:[\d.]+s|\(cached\))"));
    let json: Vec<String> = JSON
        .captures_iter(text)
        .filter_map(|c| Some(c.get(1)?.as_str().to_string()))
        .collect();
    let results: Vec<String> = if json.is_empty() {
        RESULT
            .captures_iter(text)
            .filter_map(|c| Some(c.get(1)?.as_str().to_lowercase()))
            .collect()
    } else {
        json
    };
    let has_packages = PACKAGE.is_match(text);
    if results.is_empty() && !has_packages {
        return None;
    }
    let count = |word: &str| results.iter().filter(|r| *r == word).count() as u64;
    let verbose = count("pass") > 0 || count("skip") > 0;
    Some(Counts {
        runner: "go test",
        passed: verbose.then(|| count("pass")),
        failed: Some(count("fail")),
        skipped: count("skip"),
        summed: true,
    })
}

/// node --test: the `# tests/# pass/# fail` trailer (TAP reporter) or `ℹ pass` (spec reporter).
fn node_tap(text: &str) -> Option<Counts> {
    static LINE: LazyLock<Regex> =
        LazyLock::new(|| re(r"(?m)^(?:#|ℹ) (tests|pass|fail|cancelled|skipped|todo) (\d+)\s*$"));
    let mut values = std::collections::HashMap::new();
    for c in LINE.captures_iter(text) {
        if let (Some(k), Some(v)) = (
            c.get(1),
            c.get(2).and_then(|m| m.as_str().parse::<u64>().ok()),
        ) {
            values.insert(k.as_str(), v);
        }
    }
    let pass = *values.get("pass")?;
    let fail = *values.get("fail")?;
    Some(Counts {
        runner: "node --test",
        passed: Some(pass),
        failed: Some(fail.saturating_add(values.get("cancelled").copied().unwrap_or(0))),
        skipped: (values.get("skipped").copied().unwrap_or(0))
            .saturating_add(values.get("todo").copied().unwrap_or(0)),
        summed: false,
    })
}

/// mocha: `  2 passing (5ms)` / `  1 failing`.
fn mocha(text: &str) -> Option<Counts> {
    static PASSING: LazyLock<Regex> = LazyLock::new(|| re(r"(?m)^\s+(\d+) passing \("));
    static FAILING: LazyLock<Regex> = LazyLock::new(|| re(r"(?m)^\s+(\d+) failing\s*$"));
    static PENDING: LazyLock<Regex> = LazyLock::new(|| re(r"(?m)^\s+(\d+) pending\s*$"));
    let num = |r: &Regex| {
        r.captures_iter(text)
            .last()
            .and_then(|c| c.get(1)?.as_str().parse::<u64>().ok())
    };
    let passed = num(&PASSING)?;
    Some(Counts {
        runner: "mocha",
        passed: Some(passed),
        failed: Some(num(&FAILING).unwrap_or(0)),
        skipped: num(&PENDING).unwrap_or(0),
        summed: false,
    })
}

/// Any TAP producer: a `1..N` plan plus top-level `ok` / `not ok` lines.
fn generic_tap(text: &str) -> Option<Counts> {
    static PLAN: LazyLock<Regex> = LazyLock::new(|| re(r"(?m)^1\.\.\d+"));
    static POINT: LazyLock<Regex> = LazyLock::new(|| re(r"(?m)^(ok|not ok)\b(.*)$"));
    if !PLAN.is_match(text) {
        return None;
    }
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    for c in POINT.captures_iter(text) {
        let rest = c.get(2).map_or("", |m| m.as_str()).to_ascii_uppercase();
        let ok = c.get(1).map_or("", |m| m.as_str()) == "ok";
        if rest.contains("# SKIP") || rest.contains("# TODO") {
            skipped += 1;
        } else if ok {
            passed += 1;
        } else {
            failed += 1;
        }
    }
    (passed + failed + skipped > 0).then_some(Counts {
        runner: "TAP",
        passed: Some(passed),
        failed: Some(failed),
        skipped,
        summed: true,
    })
}

/// The plain `N passed, N failed` line many custom runners print.
fn plain(text: &str) -> Option<Counts> {
    static LINE: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)\b(\d+) passed,\s*(\d+) failed\b"));
    let c = LINE.captures_iter(text).last()?;
    let n = |i: usize| c.get(i).and_then(|m| m.as_str().parse::<u64>().ok());
    Some(Counts {
        runner: "summary line",
        passed: n(1),
        failed: n(2),
        skipped: 0,
        summed: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(stdout: &str, stderr: &str) -> (&'static str, Option<u64>, Option<u64>) {
        let c = parse(stdout, stderr).expect("recognised");
        (c.runner, c.passed, c.failed)
    }

    #[test]
    fn counts_past_the_largest_number_saturate_instead_of_overflowing() {
        let max = u64::MAX;
        let cargo = format!("test result: ok. {max} passed; {max} failed; {max} ignored; 0 measured; 0 filtered out\n");
        assert_eq!(
            counts(&cargo.repeat(2), ""),
            ("cargo test", Some(max), Some(max))
        );
        let nextest = format!("     Summary [   0.1s] 2 tests run: {max} passed, {max} passed, {max} failed, {max} timed out\n");
        assert_eq!(
            counts("", &nextest),
            ("cargo nextest", Some(max), Some(max))
        );
        let tap = format!("# pass 1\n# fail {max}\n# cancelled 1\n# skipped {max}\n# todo 1\n");
        let c = parse(&tap, "").expect("recognised");
        assert_eq!((c.failed, c.skipped), (Some(max), max));
    }

    #[test]
    fn cargo_sums_every_test_binary() {
        assert_eq!(
            counts(samples::CARGO_STDOUT, samples::CARGO_STDERR),
            ("cargo test", Some(1), Some(1))
        );
    }

    #[test]
    fn nextest_reads_its_summary_from_stderr() {
        assert_eq!(
            counts("", samples::NEXTEST_STDERR),
            ("cargo nextest", Some(1), Some(1))
        );
        let timed = "     Summary [  60.0s] 3 tests run: 1 passed (1 slow), 1 failed, 1 timed out, 2 skipped";
        let c = parse("", timed).expect("nextest");
        assert_eq!((c.passed, c.failed, c.skipped), (Some(1), Some(2), 2));
    }

    #[test]
    fn pytest_verbose_and_quiet() {
        assert_eq!(counts(samples::PYTEST, ""), ("pytest", Some(1), Some(1)));
        assert_eq!(
            counts("..F\n2 passed, 1 failed, 1 error in 0.03s\n", ""),
            ("pytest", Some(2), Some(2))
        );
        assert_eq!(
            counts("\n============ no tests ran in 0.01s ============\n", ""),
            ("pytest", Some(0), Some(0))
        );
    }

    #[test]
    fn jest_and_vitest() {
        assert_eq!(counts("", samples::JEST_STDERR), ("jest", Some(1), Some(1)));
        assert_eq!(counts(samples::VITEST, ""), ("vitest", Some(1), Some(1)));
    }

    #[test]
    fn real_jest_30_and_vitest_4_output() {
        assert_eq!(
            counts("", samples::JEST30_STDERR),
            ("jest", Some(1), Some(1))
        );
        assert_eq!(
            counts(samples::VITEST4_STDOUT, samples::VITEST4_STDERR),
            ("vitest", Some(1), Some(1))
        );
        assert_eq!(
            counts(samples::VITEST4_STDOUT, ""),
            ("vitest", Some(1), Some(1)),
            "the summary is on stdout"
        );
    }

    #[test]
    fn go_plain_verbose_and_json() {
        let c = parse(samples::GO_PLAIN, "").expect("go");
        assert_eq!(
            (c.runner, c.passed, c.failed),
            ("go test", None, Some(1)),
            "no per-test passes without -v"
        );
        assert_eq!(
            counts(samples::GO_VERBOSE, ""),
            ("go test", Some(1), Some(1))
        );
        assert_eq!(counts(samples::GO_JSON, ""), ("go test", Some(1), Some(1)));
    }

    #[test]
    fn real_go_1_19_output() {
        let c = parse(samples::GO119_PLAIN, "").expect("go");
        assert_eq!((c.runner, c.passed, c.failed), ("go test", None, Some(1)));
        assert_eq!(
            counts(samples::GO119_VERBOSE, ""),
            ("go test", Some(1), Some(1))
        );
        assert_eq!(
            counts(samples::GO119_JSON, ""),
            ("go test", Some(1), Some(1))
        );
    }

    #[test]
    fn node_test_tap_and_spec_reporters() {
        assert_eq!(
            counts(samples::NODE_TAP, ""),
            ("node --test", Some(1), Some(1))
        );
        let spec = "✔ adds (0.5ms)\n✖ fails (1.1ms)\nℹ tests 2\nℹ suites 0\nℹ pass 1\nℹ fail 1\nℹ cancelled 0\n";
        assert_eq!(counts(spec, ""), ("node --test", Some(1), Some(1)));
    }

    #[test]
    fn mocha_generic_tap_and_plain_lines() {
        assert_eq!(
            counts("\n  3 passing (12ms)\n  2 failing\n", ""),
            ("mocha", Some(3), Some(2))
        );
        assert_eq!(
            counts("1..3\nok 1 a\nnot ok 2 b\nok 3 c # SKIP\n", ""),
            ("TAP", Some(1), Some(1))
        );
        assert_eq!(
            counts("Results: 7 passed, 2 failed\n", ""),
            ("summary line", Some(7), Some(2))
        );
    }

    #[test]
    fn colour_codes_do_not_hide_summaries() {
        let coloured = "\x1b[1mTests:\x1b[22m       \x1b[31m1 failed\x1b[39m, \x1b[32m2 passed\x1b[39m, 3 total\n";
        assert_eq!(counts("", coloured), ("jest", Some(2), Some(1)));
    }

    #[test]
    fn unrecognised_output_is_not_guessed() {
        assert!(parse(
            "error[E0425]: cannot find value `x`\nerror: could not compile `demo`\n",
            ""
        )
        .is_none());
        assert!(parse("all good, 5 tests\n", "").is_none());
        assert!(parse("", "").is_none());
    }
}

/// Outputs captured from real runs (cargo 1.95, pytest 9, node 20, jest 30.5, vitest 4.1, the
/// latter two with their colour codes as emitted) and from the runners' documented formats (the
/// older jest/vitest layouts, go, nextest).
#[cfg(test)]
pub(crate) mod samples {
    pub const JEST30_STDERR: &str = include_str!("samples/jest30.stderr");
    pub const VITEST4_STDOUT: &str = include_str!("samples/vitest4.stdout");
    pub const VITEST4_STDERR: &str = include_str!("samples/vitest4.stderr");
    pub const CARGO_STDOUT: &str = include_str!("samples/cargo.stdout");
    pub const CARGO_STDERR: &str = include_str!("samples/cargo.stderr");
    pub const NEXTEST_STDERR: &str = include_str!("samples/nextest.stderr");
    pub const PYTEST: &str = include_str!("samples/pytest.stdout");
    pub const NODE_TAP: &str = include_str!("samples/node_tap.stdout");
    pub const JEST_STDERR: &str = include_str!("samples/jest.stderr");
    pub const VITEST: &str = include_str!("samples/vitest.stdout");
    pub const GO_PLAIN: &str = include_str!("samples/go.stdout");
    pub const GO_VERBOSE: &str = include_str!("samples/go_verbose.stdout");
    pub const GO_JSON: &str = include_str!("samples/go_json.stdout");
    /// Captured from `go test ./...` (go 1.19) on fixtures/workspaces/monorepo/go.
    pub const GO119_PLAIN: &str = include_str!("samples/go119.stdout");
    pub const GO119_VERBOSE: &str = include_str!("samples/go119_verbose.stdout");
    pub const GO119_JSON: &str = include_str!("samples/go119_json.stdout");
}
