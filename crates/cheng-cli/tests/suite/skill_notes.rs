//! tools/skill and the notes tools through the real binary: the guide's examples as written, the
//! official MCP Python SDK against `cheng serve --tools` with the guide's toolkit (both protocol
//! generations), a skill directory holding symlinks to the host's files, and a notes_write card
//! whose name and text carry escape sequences, read by a terminal emulator.

use super::support::*;
use super::tty::{cheng_line, Session};
use cheng_node::display;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const GUIDE: &str = "docs/guides/memory.md";

/// The guide's fenced blocks of `lang`, in order.
fn guide_blocks(lang: &str) -> Vec<String> {
    let text = std::fs::read_to_string(repo_root().join(GUIDE)).expect("the guide");
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        match &mut current {
            None if line == format!("```{lang}") => current = Some(String::new()),
            Some(_) if line == "```" => blocks.extend(current.take()),
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
            None => {}
        }
    }
    blocks
}

/// Guards of the temporary directories a test uses (removed when dropped).
type Dirs = (tempfile::TempDir, tempfile::TempDir);

/// A temporary `$HOME` and, apart from it, a workspace.
fn home() -> (Dirs, PathBuf, PathBuf) {
    let (home_dir, home) = temp_workspace();
    let (ws_dir, ws) = temp_workspace();
    ((home_dir, ws_dir), home, ws)
}

fn path_with_cheng() -> String {
    let bin = Path::new(env!("CARGO_BIN_EXE_cheng"))
        .parent()
        .expect("the binary's directory")
        .display()
        .to_string();
    format!("{bin}:{}", std::env::var("PATH").unwrap_or_default())
}

/// Runs the guide's shell examples as written: the skill loaded, the note written, listed, read.
fn run_guide_examples(home: &Path, ws: &Path) -> String {
    let script = guide_blocks("sh").join("\n");
    assert!(script.contains("cheng run tools/skill"), "{script}");
    let out = Command::new("sh")
        .args(["-ec", &script])
        .current_dir(ws)
        .env("HOME", home)
        .env("PATH", path_with_cheng())
        .env_remove("CHENG_ENABLE_CODE_PYTHON")
        .env_remove("CHENG_ENABLE_CODE_JS")
        .output()
        .expect("sh runs");
    // Payloads on stdout, summary lines on stderr: both, as a person sees them.
    let seen = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{seen}");
    seen
}

#[test]
fn the_guides_examples_run_as_written() {
    let (_d, home, ws) = home();
    let stdout = run_guide_examples(&home, &ws);
    assert!(
        stdout.contains("# Deploy\n1. Tag the release.\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("created note build-setup (35 bytes)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("build-setup (")
            && stdout.contains("): Build with cargo build -p cheng-cli"),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(home.join("notes/build-setup.md")).expect("the note"),
        "Build with cargo build -p cheng-cli"
    );
    // The guide's toolkit parses, and the skill's description is the one the guide shows.
    let tools = guide_blocks("json");
    assert_eq!(tools.len(), 1, "one toolkit in the guide");
    let out = cheng()
        .current_dir(&ws)
        .env("HOME", &home)
        .args(["run", "tools/runtime", "--config"])
        .arg(
            json!({"exposed_tools": serde_json::from_str::<Value>(&tools[0]).expect("JSON")})
                .to_string(),
        )
        .args(["--input", r#"{"action": "list_tools"}"#])
        .output()
        .expect("cheng runs");
    let listed: Value = serde_json::from_slice(&out.stdout).expect("JSON output");
    assert_eq!(listed["status"], "ok", "{listed}");
    let described = listed["functions"][0]["function"]["description"]
        .as_str()
        .unwrap_or("");
    assert!(
        described.ends_with("\n\nSkills:\n- deploy: Ship a release (tag, build, upload)"),
        "{described}"
    );
    let words = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(words(described), words(&guide_blocks("text").concat()));
}

#[test]
fn the_python_sdk_lists_the_catalogue_loads_a_skill_and_keeps_notes() {
    if !mcp_sdk_available() {
        return;
    }
    let script = repo_root().join("crates/cheng-cli/tests/mcp/notes.py");
    for mode in ["legacy", "2026-07-28"] {
        let (_dirs, home, ws) = home();
        run_guide_examples(&home, &ws);
        // The guide's examples wrote a note; this connection starts from an empty store.
        std::fs::remove_dir_all(home.join("notes")).expect("rm notes");
        let (_t, elsewhere) = temp_workspace();
        let tools = elsewhere.join("tools.json");
        std::fs::write(&tools, guide_blocks("json").concat()).expect("write tools");
        let out = run_sdk_script(
            Command::new("python3")
                .arg(&script)
                .arg(env!("CARGO_BIN_EXE_cheng"))
                .arg(&ws)
                .arg(mode)
                .arg(&tools)
                .env("HOME", &home),
            Duration::from_secs(120),
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains(&format!("ok notes ({mode})")),
            "mode {mode}:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // Nothing was written beside the notes directory (the refused names included).
        let mut made: Vec<String> = std::fs::read_dir(&home)
            .expect("home")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        made.sort();
        assert_eq!(made, ["notes", "skills"], "mode {mode}");
        assert_eq!(
            std::fs::read_dir(&ws).expect("ws").count(),
            0,
            "mode {mode}"
        );
    }
}

fn run_skill(home: &Path, dirs: &[&Path], name: &str) -> Value {
    let out = cheng()
        .env("HOME", home)
        .args(["run", "tools/skill", "--config"])
        .arg(json!({ "skill_dirs": dirs }).to_string())
        .args(["--set", &format!("name={name}")])
        .output()
        .expect("cheng runs");
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn a_skill_directory_with_symlinks_to_host_files_is_refused() {
    let (_d, home, _ws) = home();
    let skills = home.join("skills");
    std::fs::create_dir_all(skills.join("evil")).expect("mkdir");
    std::fs::create_dir_all(skills.join("good")).expect("mkdir");
    std::os::unix::fs::symlink("/etc/passwd", skills.join("evil/SKILL.md")).expect("symlink");
    std::os::unix::fs::symlink("/etc", skills.join("etc")).expect("symlink");
    std::fs::write(skills.join("good/SKILL.md"), "# Good\n").expect("write");
    let passwd = std::fs::read_to_string("/etc/passwd").expect("the host's passwd");
    let first_line = passwd.lines().next().unwrap_or("root:");

    for name in ["evil", "etc"] {
        let out = run_skill(&home, &[&skills], name);
        assert_eq!(
            out["error_kind"], "LOCAL_EXECUTOR_NOT_FOUND",
            "{name}: {out}"
        );
        assert_eq!(
            out["error"],
            "no skill named `".to_string() + name + "`; the skills are: good"
        );
        assert!(!out.to_string().contains(first_line), "{name}: {out}");
    }
    // The catalogue a model reads names neither link.
    let out = cheng()
        .args(["run", "tools/runtime", "--config"])
        .arg(
            json!({"exposed_tools": [{"type": "tools/skill", "config": {"skill_dirs": [skills]}}]})
                .to_string(),
        )
        .args(["--input", r#"{"action": "list_tools"}"#])
        .output()
        .expect("cheng runs");
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(listed.contains("Skills:\\n- good\""), "{listed}");
    assert!(
        !listed.contains("evil") && !listed.contains(first_line),
        "{listed}"
    );
    // A good skill still loads, and the warnings say what was refused.
    let out = run_skill(&home, &[&skills], "good");
    assert_eq!(out["content"], "# Good\n", "{out}");
    let warnings = out["warnings"].to_string();
    assert!(
        warnings.contains("evil/SKILL.md: is a symlink"),
        "{warnings}"
    );
    assert!(warnings.contains("etc is a symlink"), "{warnings}");
    // Positive control: through the planted links, by name, the host's files are right there.
    assert_eq!(
        std::fs::read_to_string(skills.join("evil/SKILL.md")).expect("read by name"),
        passwd
    );
    assert!(skills.join("etc/passwd").exists());
}

#[test]
fn a_note_that_is_a_symlink_is_neither_read_nor_written_through() {
    let (_d, home, _ws) = home();
    let notes = home.join("notes");
    let target = home.join("outside.txt");
    std::fs::create_dir(&notes).expect("mkdir");
    std::fs::write(&target, "secret\n").expect("write");
    std::os::unix::fs::symlink(&target, notes.join("linked.md")).expect("symlink");
    let run = |node: &str, input: Value| -> Value {
        let out = cheng()
            .args(["run", node, "--approve", "--config"])
            .arg(json!({ "notes_dir": notes }).to_string())
            .args(["--input", &input.to_string()])
            .output()
            .expect("cheng runs");
        serde_json::from_slice(&out.stdout).expect("JSON output")
    };
    let out = run("tools/notes_read", json!({"name": "linked"}));
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_FILE_CHANGED", "{out}");
    assert!(!out.to_string().contains("secret"), "{out}");
    assert_eq!(run("tools/notes_list", json!({}))["count"], 0);
    let out = run(
        "tools/notes_write",
        json!({"name": "linked", "content": "mine"}),
    );
    assert_eq!(out["success"], true, "{out}");
    // The link itself was replaced; the file it pointed at is untouched.
    assert_eq!(
        std::fs::read_to_string(&target).expect("target"),
        "secret\n"
    );
    assert!(!std::fs::symlink_metadata(notes.join("linked.md"))
        .expect("note")
        .file_type()
        .is_symlink());
}

/// The rows of a terminal 250 columns wide after `output`.
fn screen(output: &str) -> String {
    let size = |n| std::num::NonZeroU16::new(n).expect("non-zero");
    let mut parser = vt100::Parser::new(size(200), size(250), 0);
    parser.process(output.as_bytes());
    let rows: Vec<String> = parser.screen().rows(0, 250).collect();
    rows.join("\n")
}

fn command_fields(screen: &str) -> Vec<&str> {
    screen
        .lines()
        .filter(|l| l.starts_with("  command:"))
        .collect()
}

#[test]
fn a_note_cannot_forge_its_approval_card() {
    let (_d, home, ws) = home();
    let notes = home.join("notes");
    let name = "report\u{202e}hs.txt";
    let forged_line = "\r\u{1b}[2K  command:  notes_write harmless";
    let content = format!("rm -rf ~\n{forged_line}\n");
    let input = json!({"name": name, "content": content}).to_string();
    let config = json!({"notes_dir": notes, "notes_write_sensitive": true}).to_string();
    let line = cheng_line(&[
        "run",
        "tools/notes_write",
        "--workspace",
        ws.to_str().expect("utf-8"),
        "--config",
        &config,
        "--input",
        &input,
    ]);
    let Some(mut tty) = Session::start(&format!("stty cols 250 rows 100 && {line}")) else {
        return;
    };
    tty.wait_for("Approve?", 1);
    tty.type_keys("n\n");
    let (_, output) = tty.finish();
    let shown = screen(&output);
    let escaped_name = display::line(name);
    assert_eq!(
        command_fields(&shown),
        [format!("  command:  notes_write {escaped_name}")],
        "{shown}"
    );
    let escaped_line = display::line(forged_line);
    assert!(shown.contains(escaped_line.as_str()), "{shown}");
    assert!(shown.contains("rm -rf ~"), "{shown}");
    assert!(!notes.exists() || std::fs::read_dir(&notes).expect("notes").count() == 0);
    // Positive control: the raw text where the card showed it escaped forges a second command.
    assert!(output.contains(escaped_line.as_str()));
    let forged = screen(&output.replace(escaped_line.as_str(), forged_line));
    assert_eq!(
        command_fields(&forged).last().copied(),
        Some("  command:  notes_write harmless"),
        "{forged}"
    );
}

/// Without `--tools` the server has no directories to give these tools: it does not offer them,
/// says so on stderr, and offers them once a tools file configures them.
#[test]
fn the_default_server_offers_them_only_when_configured() {
    use super::mcp_pipe::McpPipe;
    let (_dirs, home, ws) = home();
    let names = |args: &[&str]| -> Vec<String> {
        let home = home.to_str().expect("utf-8");
        let mut server = McpPipe::start_with_env(&ws, args, &[("HOME", home)]);
        server.initialize();
        server.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
        let tools = server.answer(1)["result"]["tools"].clone();
        tools
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["name"].as_str().map(str::to_string))
            .collect()
    };
    let default = names(&[]);
    assert!(default.iter().any(|n| n == "read_file"), "{default:?}");
    for tool in ["skill", "notes_list", "notes_read", "notes_write"] {
        assert!(
            !default.iter().any(|n| n == tool),
            "{tool} offered unconfigured: {default:?}"
        );
    }
    let out = cheng()
        .args(["serve", "--stdio", "--workspace"])
        .arg(&ws)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("cheng serve runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "tools/notes_write needs its author's config (notes_dir); not offered as an MCP tool without --tools (a graph sets it in the node's config)"
        ),
        "{stderr}"
    );
    let tools = home.join("tools.json");
    std::fs::write(&tools, guide_blocks("json").concat()).expect("write tools");
    let configured = names(&["--tools", tools.to_str().expect("utf-8")]);
    assert_eq!(
        configured,
        ["skill", "notes_list", "notes_read", "notes_write"]
    );
}
