//! Output for people: `--format text` renderings compared with golden files in tests/golden/
//! (regenerate with CHENG_UPDATE_GOLDEN=1 after an intended change, then check the new content
//! as the file's header says; never under CI), JSON for programs.
use super::support::*;
use super::tty::{cheng_line, Session};

use serde_json::Value;
use std::path::Path;
use std::process::Output;

/// The prefix of a golden file's header lines: where the expected content came from (which
/// independent tool gave or confirmed it, or what was checked by hand). The header is not compared.
const HEADER: &str = "#| ";

/// Compares `actual` with tests/golden/`name` (after its header).
fn golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    let file = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let body_at = file
        .lines()
        .take_while(|l| l.starts_with(HEADER))
        .map(|l| l.len() + 1)
        .sum::<usize>();
    let (header, expected) = file.split_at(body_at.min(file.len()));
    assert!(
        !header.is_empty(),
        "{name}: no `{HEADER}` header saying where its expected content came from"
    );
    if std::env::var_os("CHENG_UPDATE_GOLDEN").is_some() {
        // Rewriting from the implementation's own output would make the comparison circular
        // wherever nobody then checks the result: only by hand, never in CI.
        assert!(
            std::env::var_os("CI").is_none(),
            "CHENG_UPDATE_GOLDEN is set under CI: golden files are rewritten by hand only"
        );
        std::fs::write(&path, format!("{header}{actual}")).expect("write golden file");
        return;
    }
    assert_eq!(
        actual, expected,
        "{name} differs from its golden file (CHENG_UPDATE_GOLDEN=1 rewrites it; then check it as \
         its header says)"
    );
}

/// `cheng run TYPE --format text --color never --set …` in `ws`; stdout, then `--- stderr`, then stderr.
fn run_text(ws: &Path, node: &str, sets: &[&str], extra: &[&str]) -> (Output, String) {
    let mut cmd = cheng();
    cmd.args(["run", node, "--format", "text", "--color", "never", "-q"])
        .current_dir(ws);
    for set in sets {
        cmd.args(["--set", set]);
    }
    let out = cmd.args(extra).output().expect("cheng runs");
    let both = format!("{}--- stderr\n{}", text(&out.stdout), text(&out.stderr));
    (out, both)
}

fn markdown_workspace() -> (tempfile::TempDir, std::path::PathBuf) {
    let (d, ws) = temp_workspace();
    std::fs::write(
        ws.join("doc.md"),
        "# A\n\n# A\n\n### jump   \n\n[x](missing.md)\n",
    )
    .unwrap();
    std::fs::write(ws.join("page.html"), "<html><head><title>T</title></head><body><h1>Hi</h1><p>para <a href=\"x.html\">x</a></p></body></html>\n").unwrap();
    (d, ws)
}

#[test]
fn markdown_findings_read_like_a_linter() {
    let (_d, ws) = markdown_workspace();
    let md = "tools/workspace_markdown";
    let (_, shown) = run_text(&ws, md, &["operation=diagnostics", "path=doc.md"], &[]);
    golden("markdown_diagnostics.txt", &shown);
    let (_, shown) = run_text(&ws, md, &["operation=link_check_local", "path=doc.md"], &[]);
    golden("markdown_links.txt", &shown);
    let (_, shown) = run_text(&ws, md, &["operation=outline", "path=doc.md"], &[]);
    golden("markdown_outline.txt", &shown);
    let (_, shown) = run_text(
        &ws,
        md,
        &["operation=format_suggestions", "path=doc.md"],
        &[],
    );
    golden("markdown_suggestions.txt", &shown);
}

#[test]
fn previews_print_their_html_text_or_table() {
    let (_d, ws) = markdown_workspace();
    let pv = "tools/workspace_preview";
    let (_, shown) = run_text(&ws, pv, &["operation=markdown", "path=doc.md"], &[]);
    golden("preview_markdown.txt", &shown);
    let (_, shown) = run_text(&ws, pv, &["operation=html", "path=page.html"], &[]);
    golden("preview_html.txt", &shown);
    let (_, shown) = run_text(
        &ws,
        pv,
        &["operation=artifact_summary", "path=page.html"],
        &[],
    );
    golden("preview_artifact.txt", &shown);
}

#[test]
fn git_diff_prints_the_patch_alone_on_stdout() {
    if !require_or_skip("git") {
        return;
    }
    let (_d, ws) = temp_workspace();
    git(&ws, &["init", "-q", "-b", "main"]);
    std::fs::write(ws.join("a.txt"), "one\n").unwrap();
    git(&ws, &["add", "a.txt"]);
    git(&ws, &["commit", "-qm", "first"]);
    std::fs::write(ws.join("a.txt"), "one\ntwo\n").unwrap();
    std::fs::write(ws.join("new.txt"), "n\n").unwrap();
    let (out, shown) = run_text(&ws, "tools/workspace_git", &["operation=diff"], &[]);
    golden("git_diff.txt", &shown);
    // git itself gives the same patch, status and branch lines.
    assert_eq!(
        text(&out.stdout),
        git(&ws, &["-c", "color.ui=never", "diff", "HEAD"])
    );
    // stdout is the patch itself: `git apply --check` takes it.
    let patch = ws.join("x.patch");
    std::fs::write(&patch, &out.stdout).unwrap();
    git(&ws, &["stash", "-q"]);
    git(&ws, &["apply", "--check", patch.to_str().unwrap()]);
    git(&ws, &["stash", "pop", "-q"]);
    let (out, shown) = run_text(&ws, "tools/workspace_git", &["operation=status"], &[]);
    golden("git_status.txt", &shown);
    assert_eq!(text(&out.stdout), git(&ws, &["status", "--short"]));
    let (out, shown) = run_text(&ws, "tools/workspace_git", &["operation=branch"], &[]);
    golden("git_branch.txt", &shown);
    let branches = [
        "for-each-ref",
        "--format=%(HEAD) %(refname:short) %(contents:subject)",
        "refs/heads",
    ];
    assert_eq!(text(&out.stdout), git(&ws, &branches));
}

#[test]
fn shell_prints_the_commands_streams_and_colours_on_request() {
    let (_d, ws) = temp_workspace();
    let sets = [
        "command=sh",
        r#"args:=["-c","echo out; echo err >&2; exit 3"]"#,
    ];
    let (out, _) = run_text(&ws, "tools/workspace_shell", &sets, &["--approve"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "out\n");
    assert_eq!(
        text(&out.stderr),
        "sh -c 'echo out; echo err >&2; exit 3' exited 3 after 0 ms\nerr\n"
            .replace("0 ms", &duration_of(&out.stderr))
    );
    // --color always paints the summary red; NO_COLOR does not override an explicit always.
    let out = cheng()
        .args([
            "run",
            "tools/workspace_shell",
            "--format",
            "text",
            "--color",
            "always",
            "-q",
            "--approve",
            "--set",
            "command=false",
        ])
        .current_dir(&ws)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(
        text(&out.stderr).starts_with("\u{1b}[31m"),
        "{:?}",
        text(&out.stderr)
    );
    let out = cheng()
        .args([
            "run",
            "tools/workspace_shell",
            "--format",
            "text",
            "-q",
            "--approve",
            "--set",
            "command=false",
        ])
        .current_dir(&ws)
        .output()
        .unwrap();
    assert!(
        !text(&out.stderr).contains('\u{1b}'),
        "no colour when stdout is not a terminal"
    );
}

/// The `N ms` of a summary line (durations vary from run to run).
fn duration_of(stderr: &[u8]) -> String {
    let line = text(stderr);
    let after = line.split(" after ").nth(1).unwrap_or("");
    after.split('\n').next().unwrap_or("").to_string()
}

#[test]
fn json_is_printed_when_asked_or_when_stdout_is_not_a_terminal() {
    let (_d, ws) = temp_workspace();
    for extra in [
        &[][..],
        &["--json"][..],
        &["--format", "json"][..],
        &["--format", "text", "--json"][..],
    ] {
        let out = cheng()
            .args([
                "run",
                "tools/workspace_shell",
                "-q",
                "--approve",
                "--set",
                "command=true",
            ])
            .args(extra)
            .current_dir(&ws)
            .output()
            .unwrap();
        let value: Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{extra:?}: {e}"));
        assert_eq!(value["success"], true);
    }
}

#[test]
fn on_a_terminal_run_prints_text_and_graph_run_a_table() {
    let (_d, ws) = temp_workspace();
    let ws_arg = ws.to_str().unwrap();
    let line = cheng_line(&[
        "run",
        "tools/workspace_shell",
        "-w",
        ws_arg,
        "--approve",
        "--set",
        "command=echo",
        "--set",
        "args:=[\"hello there\"]",
    ]);
    let Some(tty) = Session::start(&line) else {
        return;
    };
    let (code, screen) = tty.finish();
    assert_eq!(code, 0, "{screen}");
    assert!(
        screen.contains("hello there") && screen.contains("echo 'hello there' exited 0"),
        "{screen}"
    );
    assert!(!screen.contains("\"success\""), "{screen}");
    assert!(
        !screen.contains('\u{1b}'),
        "NO_COLOR is set in the session: {screen:?}"
    );
    let graph = ws.join("g.json");
    std::fs::write(
        &graph,
        serde_json::json!({"version": 1, "nodes": [
            {"id": "first", "type": "tools/workspace_shell", "inputs": {"command": "true"}},
            {"id": "second", "type": "tools/workspace_shell", "inputs": {"command": "false"}},
            {"id": "third", "type": "tools/workspace_shell", "inputs": {"command": "true"}}],
            "edges": [{"from": "second.summary", "to": "third.purpose"}]})
        .to_string(),
    )
    .unwrap();
    let line = cheng_line(&[
        "graph",
        "run",
        graph.to_str().unwrap(),
        "-w",
        ws_arg,
        "--approve",
        "-q",
    ]);
    let Some(tty) = Session::start(&line) else {
        return;
    };
    let (code, screen) = tty.finish();
    assert_eq!(code, 1, "{screen}");
    let row = |id: &str| {
        screen
            .lines()
            .find(|l| l.starts_with(id))
            .unwrap_or_else(|| panic!("no row for {id}: {screen}"))
            .to_string()
    };
    assert!(
        screen.contains("NODE") && screen.contains("STATUS") && screen.contains("SUMMARY"),
        "{screen}"
    );
    assert!(row("first ").contains("succeeded"), "{screen}");
    assert!(
        row("second ").contains("failed") && row("second ").contains("false exited 1"),
        "{screen}"
    );
    assert!(row("third ").contains("skipped"), "{screen}");
    assert!(screen.contains("graph failed: 3 nodes in"), "{screen}");
}

/// The file nodes print what the model sees (read_file's numbered lines, a search's paths) and
/// what a change wrote (its diff), with the gate's warning on stderr.
#[test]
fn file_nodes_print_their_content_or_their_diff() {
    let (_d, ws) = temp_workspace();
    std::fs::write(ws.join("notes.txt"), "alpha\nbeta\n").unwrap();
    let (out, read) = run_text(&ws, "tools/read_file", &["file_path=notes.txt"], &[]);
    assert_eq!(out.status.code(), Some(0), "{read}");
    let (out, grep) = run_text(&ws, "tools/grep", &["pattern=beta"], &[]);
    assert_eq!(out.status.code(), Some(0), "{grep}");
    let (out, edit) = run_text(
        &ws,
        "tools/edit_file",
        &["file_path=notes.txt", "old=beta", "new=gamma"],
        &["--approve"],
    );
    assert_eq!(out.status.code(), Some(0), "{edit}");
    golden(
        "file_nodes.txt",
        &format!("{read}=== grep\n{grep}=== edit\n{edit}"),
    );
}
