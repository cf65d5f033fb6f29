//! Command-line conventions: completions, examples in --help, maintainer commands out of the
//! way, refusals that show the exact flag to add.
use super::support::*;

#[test]
fn completions_for_bash_zsh_and_fish() {
    for shell in ["bash", "zsh", "fish"] {
        let out = run_cheng(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}: {}", text(&out.stderr));
        // The script asks `cheng` itself for candidates (terminal.rs completes through bash).
        let script = text(&out.stdout);
        assert!(
            script.contains("CHENG_COMPLETE") && script.contains("cheng"),
            "{shell}: {script}"
        );
    }
    let out = run_cheng(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn help_shows_examples_and_hides_maintainer_commands() {
    for args in [
        &["run", "--help"][..],
        &["graph", "run", "--help"][..],
        &["describe", "--help"][..],
    ] {
        let out = run_cheng(args);
        assert!(
            text(&out.stdout).contains("Examples:"),
            "{args:?}: {}",
            text(&out.stdout)
        );
    }
    let help = text(&run_cheng(&["--help"]).stdout);
    assert!(help.contains("completions"), "{help}");
    assert!(
        !help.contains("schemas") && !help.contains("  docs"),
        "{help}"
    );
}

#[test]
fn maintainer_commands_outside_the_repository_say_so() {
    let (_d, elsewhere) = temp_workspace();
    for what in ["schemas", "docs"] {
        let out = cheng()
            .args([what, "--check"])
            .current_dir(&elsewhere)
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains("not its root") && !stderr.contains("missing:"),
            "{stderr}"
        );
        assert!(!elsewhere.join(what).exists());
    }
}

#[test]
fn an_author_only_or_capped_refusal_shows_the_config_to_add() {
    let (_d, ws) = temp_workspace();
    let ws_arg = ws.to_str().unwrap();
    let cases = [
        (
            "tools/workspace_shell",
            "{}",
            "command=true",
            "allow_shell_string:=true",
            r#"--config '{"allow_shell_string":true}'"#,
        ),
        // A capped number is refused only above the author's ceiling (below the node's maximum
        // the built-in policy lets an agent ask), so the author lowers it first.
        (
            "tools/code_shell",
            r#"{"timeout_ms":1000}"#,
            "script=true",
            "timeout_ms:=60000",
            r#"--config '{"timeout_ms":60000}'"#,
        ),
    ];
    for (node, author, base, set, hint) in cases {
        let out = cheng()
            .args([
                "run", node, "-w", ws_arg, "--deny", "--config", author, "--set", set, "--set",
                base,
            ])
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(hint), "{node}: expected {hint} in {stderr}");
        // The hint works: with that config the refusal is gone (no validation error, exit 2).
        // An author-only port moves from the inputs to the config; a capped one stays requested.
        let config = hint.trim_start_matches("--config '").trim_end_matches('\'');
        let request: &[&str] = if node == "tools/workspace_shell" {
            &[]
        } else {
            &["--set", set]
        };
        // Raw shell syntax needs the operator too (the built-in policy says no).
        let policy = ws.join("policy.toml");
        std::fs::write(
            &policy,
            "[nodes.\"tools/workspace_shell\"]\nshell_syntax = true\n",
        )
        .unwrap();
        let out = cheng()
            .env("CHENG_POLICY", &policy)
            .args([
                "run", node, "-w", ws_arg, "--deny", "-q", "--set", base, "--config", config,
            ])
            .args(request)
            .output()
            .unwrap();
        assert!(
            !text(&out.stderr).contains("hint:"),
            "{}",
            text(&out.stderr)
        );
        assert_ne!(out.status.code(), Some(2), "{}", text(&out.stderr));
    }
}

#[test]
fn graph_new_writes_a_starter_that_checks_and_runs() {
    let (_d, ws) = temp_workspace();
    let file = ws.join("pipeline.json");
    let file_arg = file.to_str().unwrap();
    let out = run_cheng(&["graph", "new", file_arg]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("cheng graph check"),
        "{}",
        text(&out.stderr)
    );
    let out = run_cheng(&["graph", "check", file_arg]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = run_cheng(&[
        "graph",
        "run",
        file_arg,
        "-w",
        ws.to_str().unwrap(),
        "--approve",
        "-q",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // Never over an existing file.
    std::fs::write(&file, "mine").unwrap();
    let out = run_cheng(&["graph", "new", file_arg]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
}

#[test]
fn graph_check_warns_when_an_any_output_feeds_a_typed_input() {
    let (_d, ws) = temp_workspace();
    let file = ws.join("g.json");
    let graph = serde_json::json!({
        "version": 1,
        "nodes": [
            {"id": "toc", "type": "tools/workspace_markdown", "inputs": {"operation": "outline", "path": "README.md"}},
            {"id": "show", "type": "tools/workspace_shell", "inputs": {"command": "echo"}},
            {"id": "git", "type": "tools/workspace_git", "inputs": {"operation": "status"}}
        ],
        "edges": [
            {"from": "toc.outline", "to": "show.args"},
            {"from": "git.summary", "to": "show.purpose"}
        ]
    });
    std::fs::write(&file, graph.to_string()).unwrap();
    let out = cheng()
        .args(["graph", "check", file.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "a warning does not fail the check: {stderr}"
    );
    assert!(
        stderr.contains("warning: edge toc.outline → show.args")
            && stderr.contains("array<string>"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("git.summary"),
        "a string feeding a string is fine: {stderr}"
    );
}
