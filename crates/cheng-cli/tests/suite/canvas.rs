//! The web canvas `cheng serve --http` bundles, in a real browser: `tests/browser/canvas.py`
//! drives headless Chromium through Selenium against a server started here on a copy of
//! fixtures/workspaces/hello. It builds the quickstart graph by dragging palette nodes and
//! connecting ports with the mouse, runs it (approving each card on the page), approves one
//! write and denies another (checking the workspace: one file written, the other not), cancels a
//! `sleep 30`, loads a graph from a file and finds the runs in the history after a reload. A
//! screenshot of each step goes to `target/test-artefacts/canvas/`.
//!
//! Needs python3 with `selenium` (pip) and Debian's `chromium` and `chromium-driver`; without
//! them the test skips, and fails under CI.

use super::served::{Served, TOKEN};
use super::support::{
    copy_dir, fixtures, on_path, python_runs, repo_root, require_or_skip_that, run_sdk_script,
    temp_workspace,
};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The whole browser session takes well under a minute; past this it is killed and the test fails.
const SCRIPT_LIMIT: Duration = Duration::from_secs(300);

fn browser_available() -> bool {
    let selenium = python_runs("import selenium");
    let chromium = ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .any(|b| on_path(b));
    require_or_skip_that(
        "a browser for the canvas test (pip install selenium; apt-get install chromium chromium-driver)",
        selenium && chromium && on_path("chromedriver"),
    )
}

/// `target/test-artefacts/canvas` (under whatever target directory cargo uses).
fn artefacts() -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent().unwrap_or(tmp).join("test-artefacts/canvas")
}

#[test]
fn the_web_canvas_builds_runs_approves_denies_and_cancels_in_a_real_browser() {
    if !browser_available() {
        return;
    }
    let (_w, ws) = temp_workspace();
    copy_dir(&fixtures().join("workspaces/hello"), &ws);
    let server = Served::start(&ws, &[]);
    // The URL the server prints, as a person would open it.
    let url = format!("http://{}/?token={TOKEN}", server.addr);
    let out = artefacts();
    std::fs::create_dir_all(&out).expect("artefact directory");
    let script = repo_root().join("crates/cheng-cli/tests/browser/canvas.py");
    let mut cmd = Command::new("python3");
    cmd.arg(&script).arg(&url).arg(&out).arg(&ws);
    let run = run_sdk_script(&mut cmd, SCRIPT_LIMIT);
    assert!(
        run.status.success(),
        "the canvas browser test failed ({}); screenshots in {}\n--- stdout\n{}\n--- stderr\n{}\n--- server stderr\n{}",
        run.status,
        out.display(),
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr),
        server.stderr()
    );
}
