//! The `cheng` binary itself: exit codes, validation messages, listings, approval flags, gates,
//! generated files and cancellation.
use super::support::*;

use serde_json::{json, Value};
use std::process::{Command, Stdio};

const SHELL: &str = "tools/workspace_shell";

/// Node ids `cheng nodes --json` reports with `vars` set.
fn node_ids(vars: &[(&str, &str)]) -> Vec<String> {
    let mut cmd = cheng();
    cmd.args(["nodes", "--json"]);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("cheng runs");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let nodes: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    nodes
        .as_array()
        .expect("array")
        .iter()
        .map(|n| n["id"].as_str().expect("id").to_string())
        .collect()
}

#[test]
fn nodes_lists_every_registered_node_sorted() {
    let expected = [
        "tools/apply_patch",
        "tools/code_shell",
        "tools/delete_path",
        "tools/edit_file",
        "tools/exec_command",
        "tools/glob",
        "tools/grep",
        "tools/list_dir",
        "tools/notes_list",
        "tools/notes_read",
        "tools/notes_write",
        "tools/read_file",
        "tools/run_command",
        "tools/runtime",
        "tools/skill",
        "tools/web_fetch",
        "tools/workspace_git",
        "tools/workspace_markdown",
        "tools/workspace_preview",
        "tools/workspace_shell",
        "tools/workspace_tests",
        "tools/write_file",
        "tools/write_stdin",
    ];
    assert_eq!(node_ids(&[]), expected);
    let mut with_gates: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
    with_gates.extend(["tools/code_js".to_string(), "tools/code_python".to_string()]);
    with_gates.sort();
    assert_eq!(
        node_ids(&[
            ("CHENG_ENABLE_CODE_PYTHON", "1"),
            ("CHENG_ENABLE_CODE_JS", "1")
        ]),
        with_gates
    );
    // The text listing shows the same ids.
    let out = run_cheng(&["nodes"]);
    let listed: Vec<String> = text(&out.stdout)
        .lines()
        .map(|l| l.split_whitespace().next().unwrap_or("").to_string())
        .collect();
    assert_eq!(listed, expected);
}

#[test]
fn gated_nodes_are_absent_until_their_variable_is_set() {
    // Listing with and without the variables: nodes_lists_every_registered_node_sorted. Validation
    // of a gated type: cheng-engine's validation suite. Here: run exits 2 naming it; describe
    // prints the page, which names the variable.
    let (_d, ws) = temp_workspace();
    let (code, _, stderr) = run_node("tools/code_js", &ws, &json!({"script": "1"}), &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("tools/code_js is disabled; set CHENG_ENABLE_CODE_JS=1 to enable it"),
        "{stderr}"
    );
    let out = cheng()
        .env_remove("CHENG_ENABLE_CODE_PYTHON")
        .args(["describe", "tools/code_python"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("registered only when `CHENG_ENABLE_CODE_PYTHON` is set"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn nodes_json_carries_what_a_canvas_draws() {
    let out = run_cheng(&["nodes", "--json"]);
    let nodes: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let shell = nodes
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == SHELL)
        .expect("workspace_shell listed");
    for key in [
        "title",
        "category",
        "description",
        "inputs",
        "outputs",
        "gate",
        "effects",
    ] {
        assert!(shell.get(key).is_some(), "{key} missing");
    }
    assert_eq!(shell["effects"]["kind"], "approval");
    let port = |name: &str| {
        shell["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .cloned()
            .expect(name)
    };
    let timeout = port("timeout_ms");
    assert_eq!(timeout["type"], "integer");
    assert_eq!(timeout["max"], 600000);
    assert_eq!(timeout["audience"], "llm");
    let switch = port("allow_shell_string");
    assert_eq!(switch["control"], "switch");
    assert_eq!(switch["audience"], "author");
    assert_eq!(switch["default"], false);
    assert_eq!(port("command_whitelist")["control"], "textarea");
    assert_eq!(port("sandbox_root")["audience"], "engine");
    assert_eq!(port("args")["type"], "array<string>");
    assert!(shell["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["name"] == "termination"));
    assert_eq!(timeout["min"], 1);
    assert_eq!(
        timeout["default"], 60000,
        "the default the node applies is the spec's"
    );
    assert_eq!(timeout["required"], false);
    assert_eq!(timeout["control"], Value::Null);
    assert_eq!(port("args")["default"], json!([]));
    assert_eq!(port("command")["default"], "");
    assert!(port("purpose")["description"]
        .as_str()
        .unwrap()
        .contains("approval card"));
    assert_eq!(shell["gate"], Value::Null);
    assert_eq!(shell["category"], "workspace");
    // Every node, every port: the keys a canvas reads are always there (null when unset).
    for node in nodes.as_array().unwrap() {
        for key in [
            "id",
            "title",
            "category",
            "description",
            "inputs",
            "outputs",
            "gate",
            "effects",
        ] {
            assert!(node.get(key).is_some(), "{}: {key} missing", node["id"]);
        }
        assert!(node["effects"]["kind"].is_string() && node["effects"]["description"].is_string());
        for port in node["inputs"].as_array().unwrap() {
            for key in [
                "name",
                "type",
                "required",
                "default",
                "min",
                "max",
                "choices",
                "control",
                "audience",
                "description",
            ] {
                assert!(
                    port.get(key).is_some(),
                    "{}.{}: {key} missing",
                    node["id"],
                    port["name"]
                );
            }
        }
        for port in node["outputs"].as_array().unwrap() {
            for key in ["name", "type", "description"] {
                assert!(
                    port.get(key).is_some(),
                    "{}.{}: {key} missing",
                    node["id"],
                    port["name"]
                );
            }
        }
    }
}

#[test]
fn describe_prints_reference_tables_with_audience_and_control() {
    let out = run_cheng(&["describe", SHELL]);
    assert_eq!(out.status.code(), Some(0));
    let page = text(&out.stdout);
    assert!(
        page.contains("| Field | Type | Required | Default | Audience | Control | Description |"),
        "{page}"
    );
    assert!(
        page.contains("| `allow_shell_string` | boolean | — | `false` | author | `switch` |"),
        "{page}"
    );
    assert!(page.contains("| Field | Type | Description |"));
    assert!(page.contains("approval-gated"));
    let out = run_cheng(&["describe", SHELL, "--json"]);
    let value: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(value["id"], SHELL);
    // The agent-facing schema never shows author or engine ports.
    let input = value["schemas"]["input"]["properties"].as_object().unwrap();
    assert!(
        input.contains_key("command")
            && !input.contains_key("allow_shell_string")
            && !input.contains_key("sandbox_root")
    );
    let out = run_cheng(&["describe", "tools/workspace_shel"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("Did you mean `tools/workspace_shell`?"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn run_exit_codes_are_0_1_2() {
    let (_d, ws) = temp_workspace();
    let (code, out, stderr) = run_node(SHELL, &ws, &json!({"command": "true"}), &["--approve"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out["success"], true);
    let (code, out, _) = run_node(SHELL, &ws, &json!({"command": "false"}), &["--approve"]);
    assert_eq!(code, 1);
    assert_eq!(out["success"], false);
    let (code, out, stderr) = run_node(
        SHELL,
        &ws,
        &json!({"command": "true", "timeout_ms": 700000}),
        &["--approve"],
    );
    assert_eq!(code, 2);
    assert_eq!(
        out,
        Value::Null,
        "nothing is printed on stdout for a validation error"
    );
    assert!(
        stderr.contains("timeout_ms") && stderr.contains("600000"),
        "{stderr}"
    );
}

#[test]
fn usage_errors_exit_2_naming_the_problem() {
    let (_d, ws) = temp_workspace();
    let ws_arg = ws.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["run", SHELL, "--workspace", "/no/such/dir", "--input", "{}"],
            "--workspace /no/such/dir",
        ),
        (
            vec!["run", SHELL, "--workspace", ws_arg, "--input", "{nope"],
            "--input: not valid JSON",
        ),
        (
            vec!["run", SHELL, "--workspace", ws_arg, "--input", "[1]"],
            "expected a JSON object",
        ),
        (
            vec![
                "run",
                SHELL,
                "--workspace",
                ws_arg,
                "--config",
                "@/no/such/file",
            ],
            "--config @/no/such/file",
        ),
        (
            vec!["run", "tools/nope", "--workspace", ws_arg],
            "unknown node type `tools/nope`",
        ),
        (
            vec!["run", SHELL, "--workspace", ws_arg, "--approve", "--deny"],
            "cannot be used with",
        ),
    ];
    for (args, needle) in cases {
        let out = run_cheng(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(needle),
            "{args:?}: expected {needle:?} in {stderr}"
        );
    }
}

#[test]
fn input_and_config_can_come_from_files() {
    let (_d, ws) = temp_workspace();
    let input = ws.join("input.json");
    let config = ws.join("config.json");
    std::fs::write(
        &input,
        r#"{"shell_string": "echo from a file | tr a-z A-Z"}"#,
    )
    .unwrap();
    std::fs::write(&config, r#"{"allow_shell_string": true}"#).unwrap();
    let out = run_cheng(&[
        "run",
        SHELL,
        "--workspace",
        ws.to_str().unwrap(),
        "--input",
        &format!("@{}", input.display()),
        "--config",
        &format!("@{}", config.display()),
        "--approve",
        "--policy",
        fixtures()
            .join("policy/shell-syntax.toml")
            .to_str()
            .unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let value: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(value["stdout"], "FROM A FILE\n");
    // A file holding something other than an object names the flag and the file.
    std::fs::write(&input, "[1, 2]").unwrap();
    let out = run_cheng(&[
        "run",
        SHELL,
        "--workspace",
        ws.to_str().unwrap(),
        "--input",
        &format!("@{}", input.display()),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!("--input @{}", input.display()))
            && stderr.contains("expected a JSON object"),
        "{stderr}"
    );
}

#[test]
fn author_and_engine_ports_from_input_are_rejected() {
    let (_d, ws) = temp_workspace();
    let (code, _, stderr) = run_node(
        SHELL,
        &ws,
        &json!({"shell_string": "ls | wc", "allow_shell_string": true}),
        &["--approve"],
    );
    assert_eq!(code, 2);
    assert!(
        stderr.contains("allow_shell_string is author-only; set it in the node's config"),
        "{stderr}"
    );
    let (code, _, stderr) = run_node(
        SHELL,
        &ws,
        &json!({"command": "ls", "sandbox_root": "/"}),
        &["--approve"],
    );
    assert_eq!(code, 2);
    assert!(
        stderr.contains("port `sandbox_root`") && stderr.contains("engine-injected"),
        "{stderr}"
    );
    let (code, _, stderr) = run_node(
        SHELL,
        &ws,
        &json!({"command": "ls"}),
        &["--approve", "--config", r#"{"sandbox_root": "/"}"#],
    );
    assert_eq!(code, 2);
    assert!(stderr.contains("sandbox_root"), "{stderr}");
}

#[test]
fn every_validation_error_is_reported_at_once() {
    let (_d, ws) = temp_workspace();
    let (code, _, stderr) = run_node(
        SHELL,
        &ws,
        &json!({"command": 5, "timeout_ms": 700000, "sandbox_root": "/", "bogus": 1}),
        &["--approve"],
    );
    assert_eq!(code, 2);
    for port in ["`command`", "`timeout_ms`", "`sandbox_root`", "`bogus`"] {
        assert!(stderr.contains(port), "{port} missing from {stderr}");
    }
    assert!(stderr.contains("(4 errors)"), "{stderr}");
    // Every line carries its stable code: a wrong value is invalid input, an engine port is policy.
    assert!(
        stderr.contains(
            "- LOCAL_EXECUTOR_INVALID_INPUT: node `tools/workspace_shell`, port `timeout_ms`"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "- LOCAL_EXECUTOR_POLICY_DENIED: node `tools/workspace_shell`, port `sandbox_root`"
        ),
        "{stderr}"
    );
}

#[test]
fn deny_runs_nothing_and_no_tty_denies_with_a_hint() {
    let (_d, ws) = temp_workspace();
    let input = json!({"command": "touch", "args": ["made"]});
    let (code, out, _) = run_node(SHELL, &ws, &input, &["--deny"]);
    assert_eq!(code, 1);
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_APPROVAL_DENIED");
    assert_eq!(out["terminal"], true);
    assert!(!ws.join("made").exists());
    // stdin is /dev/null in tests: no TTY, no flag → denied, with the way out on stderr.
    let (code, out, stderr) = run_node(SHELL, &ws, &input, &[]);
    assert_eq!(code, 1);
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_APPROVAL_DENIED");
    assert!(
        stderr.contains("--approve") && stderr.contains("no terminal"),
        "{stderr}"
    );
    assert!(!ws.join("made").exists());
    let (code, out, _) = run_node(SHELL, &ws, &input, &["--approve"]);
    assert_eq!(code, 0, "{out}");
    assert!(ws.join("made").exists());
}

#[test]
fn committed_schemas_and_docs_are_fresh() {
    let root = repo_root();
    for (what, dir) in [
        ("schemas", root.join("schemas")),
        ("docs", root.join("docs")),
    ] {
        let out = run_cheng(&[what, "--check", "--dir", dir.to_str().unwrap()]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{what} are stale:\n{}",
            text(&out.stderr)
        );
    }
}

#[test]
fn generation_writes_checks_and_removes_stale_files() {
    let (_d, tmp) = temp_workspace();
    for (what, file) in [
        ("schemas", "workspace_shell.json"),
        ("docs", "nodes/workspace_shell.md"),
    ] {
        let dir = tmp.join(what);
        let dir_arg = dir.to_str().unwrap();
        let out = run_cheng(&[what, "--check", "--dir", dir_arg]);
        assert_eq!(out.status.code(), Some(1));
        assert!(
            text(&out.stderr).contains(&format!("missing: {file}")),
            "{}",
            text(&out.stderr)
        );
        assert_eq!(
            run_cheng(&[what, "--write", "--dir", dir_arg])
                .status
                .code(),
            Some(0)
        );
        let first = std::fs::read_to_string(dir.join(file)).unwrap();
        assert!(first.ends_with('\n'));
        assert_eq!(
            run_cheng(&[what, "--check", "--dir", dir_arg])
                .status
                .code(),
            Some(0)
        );
        // Deterministic: writing again changes nothing.
        assert_eq!(
            run_cheng(&[what, "--write", "--dir", dir_arg])
                .status
                .code(),
            Some(0)
        );
        assert_eq!(std::fs::read_to_string(dir.join(file)).unwrap(), first);
        // Stale and extra files are reported, and --write fixes both.
        std::fs::write(dir.join(file), "old").unwrap();
        let extra = if what == "schemas" {
            "gone.json"
        } else {
            "nodes/gone.md"
        };
        std::fs::write(dir.join(extra), "{}").unwrap();
        let out = run_cheng(&[what, "--check", "--dir", dir_arg]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1));
        assert!(
            stderr.contains(&format!("stale:   {file}"))
                && stderr.contains(&format!("extra:   {extra}")),
            "{stderr}"
        );
        assert!(
            stderr.contains(&format!("cheng {what} --write")),
            "{stderr}"
        );
        assert_eq!(
            run_cheng(&[what, "--write", "--dir", dir_arg])
                .status
                .code(),
            Some(0)
        );
        assert!(!dir.join(extra).exists());
        assert_eq!(
            run_cheng(&[what, "--check", "--dir", dir_arg])
                .status
                .code(),
            Some(0)
        );
    }
    // Hand-written guides next to the generated docs are left alone.
    let guide = tmp.join("docs/guide.md");
    std::fs::write(&guide, "# guide").unwrap();
    assert_eq!(
        run_cheng(&[
            "docs",
            "--write",
            "--dir",
            tmp.join("docs").to_str().unwrap()
        ])
        .status
        .code(),
        Some(0)
    );
    assert!(guide.exists());
    let errors = std::fs::read_to_string(tmp.join("docs/errors.md")).unwrap();
    assert!(
        errors.contains("| `LOCAL_EXECUTOR_APPROVAL_DENIED` | yes |"),
        "{errors}"
    );
}

#[test]
fn help_documents_exit_statuses() {
    let out = Command::new(env!("CARGO_BIN_EXE_cheng"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(text(&out.stdout).contains("130"));
}

/// Runs `cheng args...` under a pseudo-terminal (util-linux `script`), typing `answer`.
fn under_tty(args: &[&str], answer: &str) -> Option<String> {
    // util-linux `script` provides the pseudo-terminal.
    if !require_or_skip("script") {
        return None;
    }
    let quoted: Vec<String> = std::iter::once(env!("CARGO_BIN_EXE_cheng"))
        .chain(args.iter().copied())
        .map(|a| format!("'{}'", a.replace('\'', r"'\''")))
        .collect();
    let mut child = Command::new("script")
        .args(["-qec", &quoted.join(" "), "/dev/null"])
        .env_remove("CHENG_ENABLE_CODE_PYTHON")
        .env_remove("CHENG_ENABLE_CODE_JS")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("script runs");
    use std::io::Write;
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(answer.as_bytes())
        .expect("type the answer");
    let out = child.wait_with_output().expect("script exits");
    Some(text(&out.stdout))
}

#[test]
fn on_a_tty_approval_is_an_interactive_prompt() {
    let (_d, ws) = temp_workspace();
    let input = json!({"command": "touch", "args": ["typed"], "purpose": "prove the prompt works"})
        .to_string();
    let args = [
        "run",
        SHELL,
        "--workspace",
        ws.to_str().unwrap(),
        "--input",
        &input,
    ];
    let Some(screen) = under_tty(&args, "n\n") else {
        return;
    };
    assert!(screen.contains("Approve? [y]es / [n]o / [a]ll"), "{screen}");
    assert!(
        screen.contains("touch typed") && screen.contains("prove the prompt works"),
        "{screen}"
    );
    assert!(
        screen.contains("LOCAL_EXECUTOR_APPROVAL_DENIED"),
        "{screen}"
    );
    assert!(!ws.join("typed").exists());
    let Some(screen) = under_tty(&args, "y\n") else {
        return;
    };
    assert!(screen.contains("touch typed exited 0"), "{screen}");
    assert!(ws.join("typed").exists());
}

/// `operation` is required on every node that has one: leaving it out is a validation error
/// (exit 2, nothing runs) naming the choices, like any other missing input.
#[test]
fn a_missing_operation_is_a_validation_error() {
    let (_d, ws) = temp_workspace();
    for (node, choice) in [
        ("tools/workspace_git", "status, diff, log, show, branch"),
        ("tools/workspace_tests", "detect, run"),
        ("tools/workspace_markdown", "outline, diagnostics"),
        (
            "tools/workspace_preview",
            "markdown, html, artifact_summary",
        ),
    ] {
        let (code, out, stderr) = run_node(node, &ws, &json!({}), &[]);
        assert_eq!(code, 2, "{node}: {out} {stderr}");
        assert!(
            stderr.contains("port `operation`") && stderr.contains(choice),
            "{node}: {stderr}"
        );
    }
}

/// A wrong value of a required choice is one error (not also "missing"), with the closest choice.
#[test]
fn a_misspelt_operation_is_one_error_with_a_suggestion() {
    let (_d, ws) = temp_workspace();
    let (code, _, stderr) = run_node("tools/workspace_git", &ws, &json!({"operation": "lg"}), &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("(1 error)") && stderr.contains("did you mean \"log\"?"),
        "{stderr}"
    );
    assert!(!stderr.contains("missing"), "{stderr}");
}
