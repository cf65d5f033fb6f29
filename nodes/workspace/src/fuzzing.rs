//! Properties the fuzzer checks (fuzz/fuzz_targets/): each function takes the fuzzer's bytes
//! and panics when a property does not hold. The ordinary tests run the checked-in seeds of
//! every target through the same functions.

use crate::git::{log, status};
use crate::shell::argv::argv_from_input;
use crate::shell::split::split_simple;
use crate::workspace_tests::parsers;
use cheng_node::Values;
use serde_json::{json, Value};

/// The shell-word splitter and the whitelist check. Input: a flags byte (bit 0
/// `allow_shell_string`), then `SHELL_STRING\0WHITELIST`. Words never hold a line break and
/// survive being quoted and split again; without `allow_shell_string` the argv is exactly the
/// split; with a whitelist a shell string is always refused.
pub fn shell_words(data: &[u8]) {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let rest = String::from_utf8_lossy(rest);
    let (script, whitelist) = rest.split_once('\0').unwrap_or((&rest, ""));
    let split = split_simple(script);
    if let Ok(words) = &split {
        for word in words {
            assert!(
                !word.contains(['\n', '\r']),
                "a word with a line break: {word:?}"
            );
        }
        let quoted: Vec<String> = words
            .iter()
            .map(|w| format!("'{}'", w.replace('\'', r"'\''")))
            .collect();
        match split_simple(&quoted.join(" ")) {
            Ok(again) => assert_eq!(&again, words, "quoted words split differently"),
            Err(e) => panic!("quoted words are not simple: {e:?}"),
        }
    }
    let allow = flags & 1 == 1;
    let mut input = Values::new();
    input.insert("shell_string".into(), json!(script));
    input.insert("command_whitelist".into(), json!(whitelist));
    input.insert("allow_shell_string".into(), json!(allow));
    let Ok(argv) = argv_from_input(&input) else {
        return;
    };
    let listed = whitelist
        .lines()
        .any(|l| !l.trim().is_empty() && !l.trim().starts_with('#'));
    assert!(!listed, "a shell string ran under a whitelist: {argv:?}");
    assert!(
        !argv.is_empty() && !argv[0].is_empty(),
        "no program: {argv:?}"
    );
    match (&split, allow) {
        (Ok(words), _) if !allow => assert_eq!(&argv, words),
        (_, true) => assert!(
            split.as_ref().is_ok_and(|w| w == &argv)
                || argv == ["sh".to_string(), "-c".to_string(), script.to_string()],
            "argv is neither the split nor sh -c: {argv:?}"
        ),
        _ => panic!("a shell string that is not simple ran without allow_shell_string: {argv:?}"),
    }
}

/// `git status --porcelain=v2` in both framings. Input: a framing byte (bit 0: `-z`), then the
/// output. At most one entry per record, each with a path no longer than the output; a path
/// that is not UTF-8 comes with its bytes, which decode.
pub fn git_status(data: &[u8]) {
    let Some((&flags, output)) = data.split_first() else {
        return;
    };
    let z = flags & 1 == 1;
    let parsed = status::parse(output, z);
    let records = output
        .split(|b| *b == if z { 0 } else { b'\n' })
        .filter(|r| !r.is_empty())
        .count();
    assert!(
        parsed.files.len() + parsed.unparsed <= records,
        "{} entries from {records} records",
        parsed.files.len() + parsed.unparsed
    );
    for file in &parsed.files {
        let Some(Value::String(path)) = file.get("path") else {
            panic!("an entry without a path: {file}");
        };
        assert!(
            path.len() <= 3 * output.len(),
            "a path longer than the output"
        );
        if let Some(Value::String(b64)) = file.get("path_bytes_base64") {
            use base64::Engine;
            assert!(
                base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .is_ok(),
                "bad base64 {b64}"
            );
        }
    }
}

/// `git log -z`: one commit per whole group of fields, none made up; a partial read gives no
/// more commits than the whole one.
pub fn git_log(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let all = log::parse(&text, true);
    let partial = log::parse(&text, false);
    let fields = text.strip_suffix('\0').unwrap_or(&text).split('\0').count();
    assert!(
        all.len() <= fields / log::FIELDS,
        "{} commits from {fields} fields",
        all.len()
    );
    assert!(partial.len() <= all.len());
    for commit in &all {
        for key in ["hash", "short_hash", "author", "email", "date", "subject"] {
            assert!(
                commit.get(key).is_some_and(Value::is_string),
                "commit without {key}: {commit}"
            );
        }
    }
}

/// The test-output parsers (cargo, nextest, pytest, jest, vitest, go, node --test, TAP,
/// mocha). Input: `STDOUT\0STDERR`. Never a panic (counts saturate rather than overflow),
/// colour codes only ever shrink the text, a recognised run names its runner.
pub fn test_output(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (stdout, stderr) = text.split_once('\0').unwrap_or((&text, ""));
    assert!(parsers::strip_ansi(stdout).len() <= stdout.len());
    if let Some(counts) = parsers::parse(stdout, stderr) {
        assert!(!counts.runner.is_empty());
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_fuzz_seeds_hold_the_properties() {
        cheng_test_support::check_fuzz_seeds(&[
            ("shell_words", super::shell_words),
            ("git_status", super::git_status),
            ("git_log", super::git_log),
            ("test_output", super::test_output),
        ]);
    }
}
