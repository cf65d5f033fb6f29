//! A directory swapped for a symlink while the document nodes read: `d/` (holding `doc.md`) and
//! `dlink -> <outside>` (whose `doc.md` holds a secret) are exchanged with
//! `renameat2(RENAME_EXCHANGE)` over and over while `workspace_preview` and `workspace_markdown`
//! read `d/doc.md`. Whatever the timing, nothing they return holds the outside file's text: the
//! path is checked, then read through the workspace handle, never by name. The positive control
//! does the same check and a by-name read under the same swapping and does see the secret.

use super::support::*;
use cheng_nodes_documents::{WorkspaceMarkdown, WorkspacePreview};
use rustix::fs::{renameat_with, RenameFlags, CWD};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const SECRET: &str = "SECRET-OUTSIDE-THE-WORKSPACE";
const ITERATIONS: usize = 150;
const TIME_BUDGET: Duration = Duration::from_secs(20);

struct Layout {
    _dir: tempfile::TempDir,
    ws: PathBuf,
}

fn layout() -> Layout {
    let (dir, base) = temp_workspace();
    let ws = base.join("ws");
    let outside = base.join("outside");
    std::fs::create_dir_all(ws.join("d")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    let filler: String = (0..2000).map(|i| format!("line {i}\n\n")).collect();
    std::fs::write(ws.join("d/doc.md"), format!("# Inside\n\n{filler}")).unwrap();
    std::fs::write(outside.join("doc.md"), format!("# {SECRET}\n\n{filler}")).unwrap();
    std::os::unix::fs::symlink(&outside, ws.join("dlink")).unwrap();
    Layout { _dir: dir, ws }
}

/// Exchanges `d` and `dlink` as fast as it can until dropped.
struct Flipper {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<usize>>,
}

impl Flipper {
    fn start(ws: &Path) -> Flipper {
        let (a, b) = (ws.join("d"), ws.join("dlink"));
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut flips = 0;
            while !stopped.load(Ordering::SeqCst) {
                renameat_with(CWD, &a, CWD, &b, RenameFlags::EXCHANGE).unwrap();
                flips += 1;
            }
            flips
        });
        Flipper {
            stop,
            thread: Some(thread),
        }
    }

    fn finish(mut self) -> usize {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.take().map_or(0, |t| t.join().unwrap())
    }
}

impl Drop for Flipper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[test]
fn preview_and_markdown_never_read_through_a_swapped_directory() {
    let l = layout();
    let flipper = Flipper::start(&l.ws);
    let start = Instant::now();
    let (mut read, mut refused) = (0, 0);
    for i in 0..ITERATIONS {
        if start.elapsed() > TIME_BUDGET {
            break;
        }
        let result = match i % 3 {
            0 => run(
                &WorkspacePreview,
                &l.ws,
                json!({"operation": "markdown", "path": "d/doc.md"}),
            ),
            1 => run(
                &WorkspaceMarkdown,
                &l.ws,
                json!({"operation": "outline", "path": "d/doc.md"}),
            ),
            _ => run(
                &WorkspaceMarkdown,
                &l.ws,
                json!({"operation": "diagnostics", "path": "d/doc.md"}),
            ),
        };
        let text = match &result {
            Ok(out) => serde_json::to_string(out).unwrap(),
            Err(e) => e.message.clone(),
        };
        assert!(
            !text.contains(SECRET),
            "iteration {i} read the outside file: {text:.300}"
        );
        match result {
            Ok(out) if out["success"] == true => read += 1,
            _ => refused += 1,
        }
    }
    let flips = flipper.finish();
    eprintln!("read {read}, refused {refused}, {flips} swaps");
    assert!(flips > 0, "the directory was never swapped");
    assert!(read > 0, "no read got through: the test shows nothing");
    assert!(
        refused > 0,
        "the swap never met a read: the test shows nothing"
    );
}

#[test]
fn positive_control_a_checked_by_name_read_follows_the_swap() {
    let l = layout();
    let flipper = Flipper::start(&l.ws);
    let path = l.ws.join("d/doc.md");
    let start = Instant::now();
    let mut leaked = 0;
    while leaked == 0 && start.elapsed() < TIME_BUDGET {
        let checked = cheng_node::paths::real_path(&path).is_ok_and(|real| real.starts_with(&l.ws));
        if checked && std::fs::read_to_string(&path).is_ok_and(|text| text.contains(SECRET)) {
            leaked += 1;
        }
    }
    flipper.finish();
    assert!(leaked > 0, "a checked by-name read never followed the swap");
}
