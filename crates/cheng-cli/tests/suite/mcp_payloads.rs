//! What a model reads over MCP: every tool's text content carries its payload (a file's lines,
//! the hits, the listing, git's status lines and patch, findings, the preview, the applied
//! diff, the command's or session's output), then its summary. Checked for every tool the
//! server offers through two clients written elsewhere, the official MCP Python SDK
//! (`tests/mcp/payloads.py`, both protocol generations) and the official TypeScript SDK
//! (`tests/mcp/ts/payloads.mjs`), against what `cheng run --format text` prints for the same
//! call on a twin workspace, so the server and the terminal cannot disagree.

use super::support::{
    bwrap_works, cheng, git, mcp_sdk_available, repo_root, require_or_skip_that, run_sdk_script,
    temp_workspace,
};
use super::web_fetch::{Server, NAMES};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// The workspace every client works on (copied, so each starts from the same state).
fn fixture(ws: &Path) {
    let write = |name: &str, text: &str| std::fs::write(ws.join(name), text).expect("write");
    write("README.md", "# Fixture\n\nHello from the payload test.\n");
    write(
        "notes.md",
        "# Notes\n\n## First\n\nSome text.\n\n#### Skipped a level\n\nMore text.   \n",
    );
    write(
        "page.html",
        "<html><body><h1>Page title</h1><p>Paragraph of the page.</p></body></html>\n",
    );
    write("edit.txt", "one\ntwo\n");
    write("scratch.txt", "to be deleted\n");
    write(
        "package.json",
        "{\"name\": \"fixture\", \"scripts\": {\"test\": \"echo ok\"}}\n",
    );
    // tools/skill's and the notes tools' directories (their config names them: author_config).
    std::fs::create_dir_all(ws.join("skills/deploy")).expect("mkdir");
    std::fs::create_dir_all(ws.join("notes")).expect("mkdir");
    write(
        "skills/deploy/SKILL.md",
        "---\nname: deploy\ndescription: Ship a release\n---\n# Deploy\n\nTag, build, upload.\n",
    );
    write(
        "notes/setup.md",
        "Build with cargo build -p x\nthen test.\n",
    );
    git(ws, &["init", "-q", "-b", "main", "."]);
    git(ws, &["add", "-A"]);
    git(ws, &["commit", "-q", "-m", "The fixture's first commit"]);
    write(
        "README.md",
        "# Fixture\n\nHello from the payload test, changed.\n",
    );
}

/// A copy of `from` (the files, the repository and their times).
fn twin(from: &Path) -> (tempfile::TempDir, std::path::PathBuf) {
    let (dir, ws) = temp_workspace();
    let status = Command::new("cp")
        .arg("-a")
        .arg(format!("{}/.", from.display()))
        .arg(&ws)
        .status()
        .expect("cp runs");
    assert!(status.success());
    (dir, ws)
}

/// Every tool's call, in the order they run (reads before the writes that would change them).
/// `page` is a page web_fetch fetches from a loopback server.
fn calls(page: &str) -> Vec<(&'static str, Value)> {
    vec![
        ("web_fetch", json!({"url": page})),
        ("read_file", json!({"file_path": "README.md"})),
        ("grep", json!({"pattern": "Hello"})),
        ("glob", json!({"pattern": "*.md"})),
        ("list_dir", json!({})),
        ("workspace_git", json!({"operation": "status"})),
        ("workspace_git", json!({"operation": "log"})),
        ("workspace_git", json!({"operation": "diff"})),
        ("workspace_git", json!({"operation": "branch"})),
        (
            "workspace_markdown",
            json!({"operation": "outline", "path": "notes.md"}),
        ),
        (
            "workspace_markdown",
            json!({"operation": "diagnostics", "path": "notes.md"}),
        ),
        (
            "workspace_preview",
            json!({"operation": "html", "path": "page.html"}),
        ),
        ("workspace_tests", json!({"operation": "detect"})),
        (
            "workspace_shell",
            json!({"command": "echo", "args": ["the shell says hi"]}),
        ),
        (
            "exec_command",
            json!({"command": "echo", "args": ["the session says hi"]}),
        ),
        // Raw shell: the operator's policy for these runs allows it (policy()).
        (
            "run_command",
            json!({"command": "echo noise; echo 'warning: the shell line says hi' | tr a-z A-Z", "output_level": "warning"}),
        ),
        ("code_shell", json!({"script": "echo the sandbox says hi"})),
        (
            "code_python",
            json!({"script": "print('python says hi')\nresult = 6 * 7"}),
        ),
        (
            "code_js",
            json!({"script": "console.log('js says hi'); 6 * 7"}),
        ),
        (
            "write_file",
            json!({"file_path": "new.txt", "content": "fresh\n"}),
        ),
        // The freshness gate: a file is edited only after it was read in the connection.
        ("read_file", json!({"file_path": "edit.txt"})),
        (
            "edit_file",
            json!({"file_path": "edit.txt", "old": "two", "new": "three"}),
        ),
        (
            "apply_patch",
            json!({"input": "*** Begin Patch\n*** Add File: patched.txt\n+added by a patch\n*** End Patch\n"}),
        ),
        ("delete_path", json!({"path": "scratch.txt"})),
        // tools/skill and the notes tools (configured by author_config).
        ("skill", json!({"name": "deploy"})),
        ("notes_list", json!({})),
        ("notes_read", json!({"name": "setup"})),
        (
            "notes_write",
            json!({"name": "learned", "content": "a fact worth keeping\n"}),
        ),
    ]
}

/// The author's config for the tools that need one: the skill and notes directories in `ws`.
fn author_config(ws: &Path, tool: &str) -> Option<Value> {
    match tool {
        "skill" => Some(json!({"skill_dirs": [ws.join("skills")]})),
        "notes_list" | "notes_read" | "notes_write" => Some(json!({"notes_dir": ws.join("notes")})),
        _ => None,
    }
}

/// The server's `--tools` file for `ws`: every node the server would offer by default, with
/// [`author_config`] where a tool needs one.
pub(super) fn tools_file(dir: &Path, ws: &Path) -> std::path::PathBuf {
    let out = cheng()
        .env("CHENG_ENABLE_CODE_PYTHON", "1")
        .env("CHENG_ENABLE_CODE_JS", "1")
        .args(["nodes", "--json"])
        .output()
        .expect("cheng runs");
    let nodes: Value = serde_json::from_slice(&out.stdout).expect("nodes --json is JSON");
    let entries: Vec<Value> = nodes
        .as_array()
        .expect("an array")
        .iter()
        .filter_map(|n| n["id"].as_str())
        .filter(|id| *id != "tools/runtime")
        .map(|id| {
            let short = id.rsplit('/').next().unwrap_or(id);
            match author_config(ws, short) {
                Some(config) => json!({"type": id, "config": config}),
                None => json!({"type": id}),
            }
        })
        .collect();
    let path = dir.join(format!(
        "tools-{}.json",
        ws.file_name().unwrap_or_default().to_string_lossy()
    ));
    std::fs::write(&path, Value::Array(entries).to_string()).expect("write tools");
    path
}

/// The operator's policy for every run here: raw shell allowed for run_command (it is off by
/// default), and web_fetch may reach the loopback test host `docs.test`. Written into `dir`, named by `$CHENG_POLICY`.
fn policy(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("policy.toml");
    std::fs::write(
        &path,
        "[nodes.\"tools/run_command\"]\nshell_syntax = true\n[nodes.\"tools/web_fetch\"]\nnetwork_allow = [\"docs.test\"]\n",
    )
    .expect("write policy");
    path
}

/// The payload `cheng run --format text` prints for `tool` with `arguments` in `ws`.
fn cli_payload(ws: &Path, tool: &str, arguments: &Value, policy: &Path) -> String {
    let out = cheng()
        .env("CHENG_POLICY", policy)
        .env("CHENG_TEST_RESOLVE", NAMES)
        .env("CHENG_ENABLE_CODE_PYTHON", "1")
        .env("CHENG_ENABLE_CODE_JS", "1")
        .args(["run", &format!("tools/{tool}"), "--workspace"])
        .arg(ws)
        .args(["--input", &arguments.to_string(), "--approve", "--quiet"])
        .args(
            author_config(ws, tool)
                .map(|config| vec!["--config".to_string(), config.to_string()])
                .unwrap_or_default(),
        )
        .args(["--format", "text", "--color", "never"])
        .output()
        .expect("cheng runs");
    assert!(
        out.status.success(),
        "{tool} {arguments}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The cases file both clients read: each call with the CLI's payload (`{WORKSPACE}` where it
/// named its workspace), and write_stdin to a
/// session started by the client (a single `cheng run` keeps no sessions, so its payload is
/// what `cat` echoes).
fn cases(dir: &Path, fixture_ws: &Path, page: &str) -> std::path::PathBuf {
    let (_keep, cli_ws) = twin(fixture_ws);
    let policy = policy(dir);
    let mut cases: Vec<Value> = calls(page)
        .into_iter()
        .map(|(tool, arguments)| {
            // The workspace's own path differs between twins: the clients put theirs back.
            let expect = cli_payload(&cli_ws, tool, &arguments, &policy)
                .replace(&cli_ws.display().to_string(), "{WORKSPACE}");
            json!({"tool": tool, "arguments": arguments, "expect": expect})
        })
        .collect();
    for case in &cases {
        let expect = case["expect"].as_str().unwrap_or("");
        let tool = case["tool"].as_str().unwrap_or("");
        assert!(
            !expect.is_empty() || tool == "delete_path" || tool == "notes_write",
            "{tool} printed no payload at the terminal: {case}"
        );
    }
    cases.push(json!({
        "tool": "write_stdin",
        "start": {"tool": "exec_command", "arguments": {"command": "cat", "yield_time_ms": 250}},
        "arguments": {"chars": "ping\n", "yield_time_ms": 1000},
        "expect": "ping\n"
    }));
    let path = dir.join("cases.json");
    std::fs::write(&path, Value::Array(cases).to_string()).expect("write cases");
    path
}

/// Whether everything every case needs is here (the sandboxed executors need bubblewrap).
fn runnable() -> bool {
    bwrap_works() && require_or_skip_that("python3", super::support::on_path("python3"))
}

#[test]
fn the_python_sdk_reads_every_payload_in_the_text_content() {
    if !runnable() || !mcp_sdk_available() {
        return;
    }
    let (_f, fixture_ws) = temp_workspace();
    fixture(&fixture_ws);
    let (_c, dir) = temp_workspace();
    let server = Server::start();
    let cases = cases(&dir, &fixture_ws, &server.url("docs.test", "/page.html"));
    let script = repo_root().join("crates/cheng-cli/tests/mcp/payloads.py");
    for mode in ["legacy", "2026-07-28"] {
        let (_t, ws) = twin(&fixture_ws);
        let out = run_sdk_script(
            Command::new("python3")
                .arg(&script)
                .arg(env!("CARGO_BIN_EXE_cheng"))
                .arg(&ws)
                .arg(mode)
                .arg(&cases)
                .arg(tools_file(&dir, &ws))
                .env("CHENG_POLICY", dir.join("policy.toml"))
                .env("CHENG_TEST_RESOLVE", NAMES)
                .env("CHENG_ENABLE_CODE_PYTHON", "1")
                .env("CHENG_ENABLE_CODE_JS", "1"),
            Duration::from_secs(300),
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains(&format!("ok {mode}")),
            "mode {mode}:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The TypeScript SDK, installed by scripts/test (`npm ci` in tests/mcp/ts).
fn typescript_sdk() -> Option<std::path::PathBuf> {
    let dir = repo_root().join("crates/cheng-cli/tests/mcp/ts");
    let installed = dir.join("node_modules/@modelcontextprotocol/sdk/package.json");
    require_or_skip_that(
        "the MCP TypeScript SDK (npm ci --prefix crates/cheng-cli/tests/mcp/ts)",
        installed.exists() && super::support::on_path("node"),
    )
    .then_some(dir)
}

#[test]
fn the_typescript_sdk_reads_every_payload_in_the_text_content() {
    if !runnable() {
        return;
    }
    let Some(sdk) = typescript_sdk() else {
        return;
    };
    let (_f, fixture_ws) = temp_workspace();
    fixture(&fixture_ws);
    let (_c, dir) = temp_workspace();
    let server = Server::start();
    let cases = cases(&dir, &fixture_ws, &server.url("docs.test", "/page.html"));
    let (_t, ws) = twin(&fixture_ws);
    let out = run_sdk_script(
        Command::new("node")
            .arg(sdk.join("payloads.mjs"))
            .arg(env!("CARGO_BIN_EXE_cheng"))
            .arg(&ws)
            .arg(&cases)
            .arg(tools_file(&dir, &ws))
            .env("CHENG_POLICY", dir.join("policy.toml"))
            .env("CHENG_TEST_RESOLVE", NAMES)
            .env("CHENG_ENABLE_CODE_PYTHON", "1")
            .env("CHENG_ENABLE_CODE_JS", "1"),
        Duration::from_secs(300),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("ok: "),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
