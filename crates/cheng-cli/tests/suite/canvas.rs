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

use super::support::{
    cheng, copy_dir, fixtures, on_path, repo_root, require_or_skip_that, run_sdk_script,
    temp_workspace,
};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::channel;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long the server may take to print its URL.
const START_LIMIT: Duration = Duration::from_secs(30);

/// The whole browser session takes well under a minute; past this it is killed and the test fails.
const SCRIPT_LIMIT: Duration = Duration::from_secs(300);

fn browser_available() -> bool {
    let selenium = Command::new("python3")
        .args(["-c", "import selenium"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let chromium = ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .any(|b| on_path(b));
    require_or_skip_that(
        "a browser for the canvas test (pip install selenium; apt-get install chromium chromium-driver)",
        selenium && chromium && on_path("chromedriver"),
    )
}

/// `cheng serve --http` on a free loopback port; killed when dropped.
struct Server {
    child: Child,
    /// The URL it printed: `http://127.0.0.1:PORT/?token=T`.
    url: String,
    log: Arc<Mutex<String>>,
}

impl Server {
    fn start(workspace: &Path) -> Server {
        let mut child = cheng()
            .args(["serve", "--http", "127.0.0.1:0", "--workspace"])
            .arg(workspace)
            .env_remove("CHENG_TOKEN")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("cheng serve --http starts");
        let stderr = BufReader::new(child.stderr.take().expect("stderr"));
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = channel();
        let kept = Arc::clone(&log);
        // Reads stderr to its end (a full pipe would stall the server), handing on the URL from
        // `cheng serve: http://127.0.0.1:PORT/?token=T  (workspace …)`.
        std::thread::spawn(move || {
            for line in stderr.lines() {
                let Ok(line) = line else { break };
                if let Some(url) = line
                    .strip_prefix("cheng serve: http")
                    .and_then(|rest| rest.split_whitespace().next())
                {
                    let _ = tx.send(format!("http{url}"));
                }
                if let Ok(mut log) = kept.lock() {
                    log.push_str(&line);
                    log.push('\n');
                }
            }
        });
        let mut server = Server {
            child,
            url: String::new(),
            log,
        };
        server.url = rx.recv_timeout(START_LIMIT).unwrap_or_else(|_| {
            panic!(
                "cheng serve --http printed no URL within {START_LIMIT:?}; stderr:\n{}",
                server.stderr()
            )
        });
        assert!(
            server.url.starts_with("http://127.0.0.1:") && server.url.contains("/?token="),
            "not a loopback URL with a token: {}",
            server.url
        );
        server
    }

    fn stderr(&self) -> String {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
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
    let server = Server::start(&ws);
    let out = artefacts();
    std::fs::create_dir_all(&out).expect("artefact directory");
    let script = repo_root().join("crates/cheng-cli/tests/browser/canvas.py");
    let mut cmd = Command::new("python3");
    cmd.arg(&script).arg(&server.url).arg(&out).arg(&ws);
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
