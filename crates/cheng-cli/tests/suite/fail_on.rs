//! `--fail-on warning|error`: Markdown findings fail the command with exit 1, as linters do.
use super::support::*;

fn lint(ws: &std::path::Path, operation: &str, path: &str, extra: &[&str]) -> (i32, String) {
    let out = cheng()
        .args([
            "run",
            "tools/workspace_markdown",
            "--json",
            "--set",
            &format!("operation={operation}"),
            "--set",
            &format!("path={path}"),
        ])
        .args(extra)
        .current_dir(ws)
        .output()
        .unwrap();
    (out.status.code().unwrap_or(-1), text(&out.stderr))
}

#[test]
fn fail_on_turns_findings_into_exit_1() {
    let (_d, ws) = temp_workspace();
    // Warnings only (a duplicate heading); an error (a broken local link); a clean file.
    std::fs::write(ws.join("warn.md"), "# A\n\n## B\n\n## B\n").unwrap();
    std::fs::write(ws.join("broken.md"), "# A\n\n[x](missing.md)\n").unwrap();
    std::fs::write(ws.join("clean.md"), "# A\n\nText.\n").unwrap();
    // Without the flag findings are a successful report: exit 0, which is why CI could not fail.
    assert_eq!(lint(&ws, "diagnostics", "warn.md", &[]).0, 0);
    let (code, stderr) = lint(&ws, "diagnostics", "warn.md", &["--fail-on", "warning"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("--fail-on warning: 1 finding"), "{stderr}");
    assert_eq!(
        lint(&ws, "diagnostics", "warn.md", &["--fail-on", "error"]).0,
        0,
        "warnings do not fail --fail-on error"
    );
    let (code, stderr) = lint(
        &ws,
        "link_check_local",
        "broken.md",
        &["--fail-on", "error"],
    );
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("--fail-on error: 1 error"), "{stderr}");
    assert_eq!(
        lint(&ws, "diagnostics", "clean.md", &["--fail-on", "warning"]).0,
        0
    );
    assert_eq!(
        lint(
            &ws,
            "link_check_local",
            "clean.md",
            &["--fail-on", "warning"]
        )
        .0,
        0
    );
    // A node without diagnostics: a usage error before anything runs.
    let out = cheng()
        .args([
            "run",
            "tools/workspace_shell",
            "--fail-on",
            "error",
            "--set",
            "command=true",
        ])
        .current_dir(&ws)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("reports no diagnostics"),
        "{}",
        text(&out.stderr)
    );
}

/// A folder or a glob lints every Markdown file in it, as markdownlint does in CI: findings
/// name their file, and `--fail-on` counts them all.
#[test]
fn a_folder_or_glob_is_linted_file_by_file() {
    let (_d, ws) = temp_workspace();
    std::fs::create_dir_all(ws.join("docs/sub")).unwrap();
    std::fs::write(ws.join("docs/warn.md"), "# A\n\n## B\n\n## B\n").unwrap();
    std::fs::write(ws.join("docs/sub/broken.md"), "# A\n\n[x](missing.md)\n").unwrap();
    std::fs::write(ws.join("clean.md"), "# A\n\nText.\n").unwrap();
    let (code, stderr) = lint(&ws, "diagnostics", "docs", &["--fail-on", "warning"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("--fail-on warning: 1 finding"), "{stderr}");
    let (code, stderr) = lint(&ws, "link_check_local", "**/*.md", &["--fail-on", "error"]);
    assert_eq!(code, 1, "{stderr}");
    let out = cheng()
        .args([
            "run",
            "tools/workspace_markdown",
            "--format",
            "text",
            "--set",
            "operation=link_check_local",
            "--set",
            "path=**/*.md",
        ])
        .current_dir(&ws)
        .output()
        .unwrap();
    assert!(
        text(&out.stdout).starts_with("docs/sub/broken.md:3:"),
        "findings name their file: {}",
        text(&out.stdout)
    );
    assert_eq!(
        lint(&ws, "diagnostics", "*.md", &["--fail-on", "warning"]).0,
        0,
        "`*` stays in the root: only clean.md"
    );
}
