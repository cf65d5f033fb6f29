//! The check-then-use race against every writing node: the workspace holds `d/` (a large text
//! file `notes.txt` and `victim/` with many files) and `dlink -> <outside>`; outside holds the
//! same names. A watcher (inotify on `d/` and `d/victim/`) swaps `d` and `dlink` with
//! `renameat2(RENAME_EXCHANGE)` right after the node's k-th open there, k swept over the
//! iterations, so the swap lands between the policy's check and each later step in turn. After
//! every iteration the outside tree is exactly as it was, and the node either did its work inside
//! the workspace or refused cleanly.
//!
//! The positive controls run the same watcher against plain by-name file operations (what the
//! nodes did before the workspace handle) and show the swap does carry those outside.

use super::support::*;
use cheng_node::ScopeKind;
use cheng_nodes_files::{
    apply_patch::ApplyPatch, DeletePath, EditFile, Glob, Grep, ReadFile, WriteFile,
};
use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
use rustix::fs::{openat, renameat_with, Mode, OFlags, RenameFlags, CWD};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Iterations per scenario, and the time after which a scenario stops early.
const ITERATIONS: usize = 40;
const TIME_BUDGET: Duration = Duration::from_secs(20);
/// The swap comes after the 1st, 2nd, ... `SWEEP`-th open the watcher sees.
const SWEEP: usize = 4;
/// Lines of `d/notes.txt` (about 200 KiB: reading, hashing and diffing it keeps the node busy
/// for a while after its first open, as a large file would in a release build).
const NOTES_LINES: usize = 20_000;
const VICTIM_FILES: usize = 300;
/// What only the outside `notes.txt` holds: a read that shows it read through the link.
const SECRET: &str = "SECRET-OUTSIDE-THE-WORKSPACE";

struct Layout {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    outside: PathBuf,
}

fn notes() -> String {
    (0..NOTES_LINES).map(|i| format!("line {i}\n")).collect()
}

fn layout(notes: &str) -> Layout {
    let (dir, base) = temp_workspace();
    let ws = base.join("ws");
    let outside = base.join("outside");
    std::fs::create_dir_all(ws.join("d/victim")).unwrap();
    std::fs::write(ws.join("d/notes.txt"), notes).unwrap();
    for i in 0..VICTIM_FILES {
        std::fs::write(ws.join(format!("d/victim/{i}.txt")), "x").unwrap();
    }
    std::fs::create_dir_all(outside.join("victim")).unwrap();
    std::fs::write(outside.join("victim/important.txt"), "important\n").unwrap();
    std::fs::write(outside.join("notes.txt"), format!("line 0\n{SECRET}\n")).unwrap();
    symlink(&outside, ws.join("dlink")).unwrap();
    Layout {
        _dir: dir,
        ws,
        outside,
    }
}

/// Every file under `dir` with its bytes (links as their targets' text), by relative path.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let rel = path.strip_prefix(dir).unwrap().to_path_buf();
            if meta.is_dir() {
                out.insert(rel, b"/".to_vec());
                stack.push(path);
            } else if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                out.insert(rel, target.as_os_str().as_encoded_bytes().to_vec());
            } else {
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

/// When the attacker swaps.
#[derive(Debug, Clone, Copy)]
enum Attack {
    /// Once, right after the k-th open it sees in the watched directories.
    AfterOpen(usize),
    /// Over and over, for as long as the node runs (for steps that open nothing there).
    Flip,
}

/// The attacker: swaps `a` and `b` after the `after`-th open seen in the watched directories.
struct Watcher {
    thread: std::thread::JoinHandle<bool>,
    /// Told when the swap is done.
    swapped: std::sync::mpsc::Receiver<()>,
    stop: Arc<AtomicBool>,
    /// `O_PATH` descriptor of a watched directory, opened to wake the watcher for stopping.
    wake: OwnedFd,
}

impl Watcher {
    fn start(dirs: &[PathBuf], a: PathBuf, b: PathBuf, attack: Attack) -> Watcher {
        let ino = inotify::init(CreateFlags::CLOEXEC).unwrap();
        for dir in dirs {
            inotify::add_watch(&ino, dir, WatchFlags::OPEN).unwrap();
        }
        let wake = rustix::fs::open(
            &dirs[0],
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let (tell, swapped) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let after = match attack {
                Attack::AfterOpen(k) => k,
                Attack::Flip => {
                    // No waiting for an event: exchange as fast as possible until told to stop.
                    let mut flips = 0usize;
                    while !stopped.load(Ordering::SeqCst) {
                        renameat_with(CWD, &a, CWD, &b, RenameFlags::EXCHANGE).unwrap();
                        flips += 1;
                    }
                    return flips > 0;
                }
            };
            let mut buf = [MaybeUninit::<u8>::uninit(); 4096];
            let mut reader = inotify::Reader::new(&ino, &mut buf);
            let mut seen = 0;
            loop {
                let Ok(event) = reader.next() else {
                    return false;
                };
                if stopped.load(Ordering::SeqCst) {
                    return false;
                }
                if !event.events().contains(ReadFlags::OPEN) {
                    continue;
                }
                seen += 1;
                if seen == after {
                    renameat_with(CWD, &a, CWD, &b, RenameFlags::EXCHANGE).unwrap();
                    let _ = tell.send(());
                    return true;
                }
            }
        });
        Watcher {
            thread,
            swapped,
            stop,
            wake,
        }
    }

    /// Waits (bounded) until the swap is done.
    fn wait_swapped(&self) {
        self.swapped
            .recv_timeout(Duration::from_secs(10))
            .expect("the watcher swapped within 10 s");
    }

    /// Stops the watcher; whether it swapped.
    fn finish(self) -> bool {
        self.stop.store(true, Ordering::SeqCst);
        // An open of the watched directory (it never moves out of reach of its descriptor)
        // wakes a watcher still waiting.
        let _ = openat(
            &self.wake,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        );
        self.thread.join().unwrap()
    }
}

/// What one iteration did.
#[derive(Debug, Default)]
struct Tally {
    iterations: usize,
    swapped: usize,
    /// Iterations whose outside tree changed (the attack won).
    escaped: usize,
    outcomes: BTreeMap<String, usize>,
    /// The first message of each outcome.
    messages: BTreeMap<String, String>,
}

/// Runs `op` against the watcher `ITERATIONS` times (bounded by `TIME_BUDGET`): every other
/// iteration sweeps the open after which the swap comes, the others flip all along; `op`
/// returns its outcome's name and message.
fn race(notes: &str, op: impl Fn(&Layout) -> (String, String)) -> Tally {
    let mut tally = Tally::default();
    let start = Instant::now();
    for i in 0..ITERATIONS {
        if start.elapsed() > TIME_BUDGET {
            break;
        }
        let l = layout(notes);
        let before = snapshot(&l.outside);
        let d = l.ws.join("d");
        let watcher = Watcher::start(
            &[d.clone(), d.join("victim")],
            d,
            l.ws.join("dlink"),
            if i % 2 == 0 {
                Attack::AfterOpen(i / 2 % SWEEP + 1)
            } else {
                Attack::Flip
            },
        );
        let (outcome, message) = op(&l);
        let swapped = watcher.finish();
        tally.iterations += 1;
        tally.swapped += usize::from(swapped);
        *tally.outcomes.entry(outcome.clone()).or_default() += 1;
        tally.messages.entry(outcome).or_insert(message);
        if snapshot(&l.outside) != before {
            tally.escaped += 1;
        }
    }
    tally
}

/// Runs a node; its outcome is "ok" or its error kind (a clean refusal, never a panic), with
/// the summary or error message.
fn node_outcome(node: &dyn cheng_node::Node, l: &Layout, input: Value) -> (String, String) {
    let c = ctx(node, &l.ws, ScopeKind::Call);
    let out = call(node, &c, input);
    let text = |key: &str| out[key].as_str().unwrap_or_default().to_string();
    match out["success"].as_bool() {
        Some(true) => ("ok".to_string(), text("summary")),
        Some(false) => (text("error_kind"), text("error")),
        None => panic!("no success output: {out:#?}"),
    }
}

/// The node held: the outside tree never changed, the watcher did swap during the runs, and
/// every run either succeeded or refused with one of `allowed`.
fn assert_held(scenario: &str, tally: &Tally, allowed: &[&str]) {
    eprintln!("{scenario}: {tally:?}");
    assert!(tally.iterations >= 8, "{scenario}: too few iterations");
    assert_eq!(
        tally.escaped, 0,
        "{scenario}: the outside tree changed: {tally:?}"
    );
    assert!(tally.swapped > 0, "{scenario}: the watcher never swapped");
    for kind in tally.outcomes.keys() {
        assert!(
            kind == "ok" || allowed.contains(&kind.as_str()),
            "{scenario}: unexpected outcome {kind}: {tally:?}"
        );
    }
}

/// What a refused swap reports: the path changed (or, swapped before a step that looks the
/// path up again, is no longer where the node left it).
const REFUSALS: &[&str] = &[
    "LOCAL_EXECUTOR_FILE_CHANGED",
    "LOCAL_EXECUTOR_NOT_FOUND",
    "LOCAL_EXECUTOR_WRITE_FAILED",
    "LOCAL_EXECUTOR_PATH_OUTSIDE_WORKSPACE",
];

fn write_file(input: Value) -> impl Fn(&Layout) -> (String, String) {
    move |l| node_outcome(&WriteFile, l, input.clone())
}

#[test]
fn write_file_replacing_never_writes_through_a_swapped_parent() {
    let notes = notes();
    // The new content differs in one line: the diff for the card stays cheap.
    let content = notes.replacen("line 0\n", "pwned\n", 1);
    let op = write_file(json!({"file_path": "d/notes.txt", "content": content}));
    assert_held("write_file replace", &race(&notes, op), REFUSALS);
}

#[test]
fn write_file_creating_never_writes_through_a_swapped_parent() {
    let op = write_file(json!({"file_path": "d/new.txt", "content": "pwned\n"}));
    assert_held("write_file create", &race(&notes(), op), REFUSALS);
}

#[test]
fn edit_file_never_writes_through_a_swapped_parent() {
    let tally = race(&notes(), |l| {
        node_outcome(
            &EditFile,
            l,
            json!({"file_path": "d/notes.txt", "old": "line 0\n", "new": "pwned\n"}),
        )
    });
    assert_held("edit_file", &tally, REFUSALS);
}

fn apply_patch(scenario: &str, body: &str) {
    let input = json!({"input": format!("*** Begin Patch\n{body}*** End Patch\n")});
    let tally = race(&notes(), |l| node_outcome(&ApplyPatch, l, input.clone()));
    assert_held(&format!("apply_patch {scenario}"), &tally, REFUSALS);
}

#[test]
fn apply_patch_add_never_writes_through_a_swapped_parent() {
    apply_patch("add", "*** Add File: d/new.txt\n+pwned\n");
}

#[test]
fn apply_patch_update_never_writes_through_a_swapped_parent() {
    apply_patch(
        "update",
        "*** Update File: d/notes.txt\n@@\n-line 0\n+pwned\n",
    );
}

#[test]
fn apply_patch_move_never_writes_or_deletes_through_a_swapped_parent() {
    apply_patch(
        "move",
        "*** Update File: d/notes.txt\n*** Move to: d/moved.txt\n@@\n-line 0\n+pwned\n",
    );
}

#[test]
fn apply_patch_delete_never_deletes_through_a_swapped_parent() {
    apply_patch("delete", "*** Delete File: d/notes.txt\n");
}

#[test]
fn delete_path_file_never_deletes_through_a_swapped_parent() {
    let tally = race(&notes(), |l| {
        node_outcome(&DeletePath, l, json!({"path": "d/notes.txt"}))
    });
    assert_held("delete_path file", &tally, REFUSALS);
}

#[test]
fn delete_path_recursive_never_deletes_through_a_swapped_parent() {
    let tally = race(&notes(), |l| {
        node_outcome(
            &DeletePath,
            l,
            json!({"path": "d/victim", "recursive": true}),
        )
    });
    assert_held("delete_path recursive", &tally, REFUSALS);
}

/// Runs a reading node; its outcome as [`node_outcome`], and a leak when anything it returned
/// shows the outside file's content.
fn read_outcome(
    node: &dyn cheng_node::Node,
    l: &Layout,
    input: Value,
    leaks: &std::cell::Cell<usize>,
) -> (String, String) {
    read_outcome_leaking_when(node, l, input, leaks, |out, text| {
        // Only the outside notes.txt holds the secret; a listing naming notes.txt went there.
        text.contains(SECRET)
            || out
                .get("files")
                .is_some_and(|files| files.to_string().contains("notes.txt"))
    })
}

/// [`read_outcome`] with the leak told by `leaked(output, output as JSON text)`.
fn read_outcome_leaking_when(
    node: &dyn cheng_node::Node,
    l: &Layout,
    input: Value,
    leaks: &std::cell::Cell<usize>,
    leaked: impl Fn(&serde_json::Map<String, Value>, &str) -> bool,
) -> (String, String) {
    let c = ctx(node, &l.ws, ScopeKind::Call);
    let out = call(node, &c, input);
    let text = serde_json::to_string(&out).unwrap();
    if leaked(&out, &text) {
        leaks.set(leaks.get() + 1);
    }
    let field = |key: &str| out[key].as_str().unwrap_or_default().to_string();
    match out["success"].as_bool() {
        Some(true) => ("ok".to_string(), field("summary")),
        Some(false) => (field("error_kind"), field("error")),
        None => panic!("no success output: {out:#?}"),
    }
}

#[test]
fn read_file_never_reads_through_a_swapped_parent() {
    let leaks = std::cell::Cell::new(0);
    let tally = race(&notes(), |l| {
        read_outcome(
            &ReadFile,
            l,
            json!({"file_path": "d/notes.txt", "limit": 5}),
            &leaks,
        )
    });
    assert_held("read_file", &tally, REFUSALS);
    assert_eq!(
        leaks.get(),
        0,
        "read_file showed the outside file: {tally:?}"
    );
}

#[test]
fn grep_never_searches_through_a_swapped_parent() {
    // Only the outside notes.txt holds the pattern: a match means it was read.
    let leaks = std::cell::Cell::new(0);
    let tally = race(&notes(), |l| {
        read_outcome(
            &Grep,
            l,
            json!({"pattern": "SECRET-OUTSIDE", "path": "d"}),
            &leaks,
        )
    });
    assert_held("grep", &tally, REFUSALS);
    assert_eq!(leaks.get(), 0, "grep matched the outside file: {tally:?}");
}

/// The by-name write the nodes used to make: the policy's check, the read of the old file (the
/// open the watcher reacts to), then, once the swap has landed, a temporary file and a rename by
/// path.
fn write_by_name(l: &Layout, watcher: &Watcher) {
    let path = l.ws.join("d/notes.txt");
    assert!(cheng_node::paths::real_path(&path)
        .unwrap()
        .starts_with(&l.ws));
    let old = std::fs::read(&path).unwrap();
    let _tag = cheng_nodes_files::tag::tag(&old);
    watcher.wait_swapped();
    let temp = l.ws.join("d/.notes.txt.tmp");
    std::fs::write(&temp, "pwned\n").unwrap();
    std::fs::rename(&temp, &path).unwrap();
}

/// The by-name recursive delete the nodes used to make: the check, the count (the open the
/// watcher reacts to), then, once the swap has landed, the removal by path.
fn delete_by_name(l: &Layout, watcher: &Watcher) {
    let path = l.ws.join("d/victim");
    assert!(cheng_node::paths::real_path(&path)
        .unwrap()
        .starts_with(&l.ws));
    let count = std::fs::read_dir(&path).unwrap().count();
    assert_eq!(count, VICTIM_FILES);
    watcher.wait_swapped();
    std::fs::remove_dir_all(&path).unwrap();
}

/// The by-name read the nodes used to make: the check, a listing of the directory (the open the
/// watcher reacts to), then, once the swap has landed, the read by path.
fn read_by_name(l: &Layout, watcher: &Watcher) {
    let path = l.ws.join("d/notes.txt");
    assert!(cheng_node::paths::real_path(&path)
        .unwrap()
        .starts_with(&l.ws));
    assert!(std::fs::read_dir(l.ws.join("d")).unwrap().count() > 0);
    watcher.wait_swapped();
    let read = std::fs::read_to_string(&path).unwrap();
    assert!(
        read.contains(SECRET),
        "the by-name read did not follow the swap"
    );
}

#[test]
fn positive_control_the_same_swap_carries_by_name_operations_outside() {
    let notes = notes();
    for (scenario, op) in [
        ("write by name", write_by_name as fn(&Layout, &Watcher)),
        ("delete by name", delete_by_name),
        ("read by name", read_by_name),
    ] {
        for _ in 0..5 {
            let l = layout(&notes);
            let before = snapshot(&l.outside);
            let d = l.ws.join("d");
            let watcher = Watcher::start(
                &[d.clone(), d.join("victim")],
                d,
                l.ws.join("dlink"),
                Attack::AfterOpen(1),
            );
            op(&l, &watcher);
            assert!(watcher.finish());
            if scenario == "read by name" {
                // Nothing outside changes; the read itself asserted it saw the outside file.
                continue;
            }
            assert_ne!(
                snapshot(&l.outside),
                before,
                "{scenario}: the swap did not carry the operation outside, so the node tests prove nothing"
            );
        }
    }
}

#[test]
fn glob_never_lists_through_a_swapped_parent() {
    // Only the outside tree holds `important.txt`: listing it means the walk went through the
    // link.
    let leaks = std::cell::Cell::new(0);
    let tally = race(&notes(), |l| {
        read_outcome_leaking_when(
            &Glob,
            l,
            json!({"pattern": "**/*.txt", "path": "d"}),
            &leaks,
            |_, text| text.contains("important.txt"),
        )
    });
    assert_held("glob", &tally, REFUSALS);
    assert_eq!(leaks.get(), 0, "glob listed the outside tree: {tally:?}");
}
