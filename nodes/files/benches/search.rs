//! tools/grep against ripgrep and tools/glob against a bare `ignore` walk, on a generated tree of
//! 10 000 files and 100 MB (100 directories of 100 files of about 10 KiB each, a quarter of
//! them `.rs`).
//!
//! grep: the node's search (limit 2000) against `rg --files-with-matches --no-require-git
//! --no-messages --regexp PATTERN -- DIR` (ripgrep's parallel search on as many threads as the
//! node's), both run as a child process (this benchmark starts itself again to run the node's
//! search once), so both pay a process start; for reference Codex's own command, which adds
//! `--sortr=modified` (sorting makes ripgrep search on one thread). glob: the node's `**/*.rs`
//! (default limit 100, and limit 2000) against `ignore::WalkBuilder::new(DIR).build()` keeping
//! the `.rs` files, both in this process. The sets found are checked equal before timing.
//! grep's `content` mode (matched lines with line numbers) is timed against `rg --line-number
//! --no-heading --with-filename` in the same way, after checking both report the same lines.
//!
//! One warm-up run each (the tree then sits in the page cache), then `CHENG_BENCH_RUNS` (default
//! 15) interleaved timed rounds. Wall-clock medians and minimums in milliseconds, and CPU time:
//! for the child processes from `/proc/self/stat` (children's user + system time, in clock
//! ticks, summed over all rounds), for the in-process glob from `/proc/thread-self/schedstat`
//! (nanoseconds on the CPU). On a machine shared with other work the wall-clock median moves with
//! the load; the CPU time is the work itself. Targets: node / baseline ≤ 1.5. Run with `cargo
//! bench -p cheng-nodes-files --bench search`; needs `rg` on PATH.
// A benchmark: `unwrap`/`expect` are allowed here (denied in library code, [workspace.lints]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use cheng_node::CancellationToken;
use cheng_nodes_files::walk::{Budget, ReadScope};
use cheng_nodes_files::{glob, grep};
use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const DIRS: usize = 100;
const FILES_PER_DIR: usize = 100;
const FILE_BYTES: usize = 10 * 1024;
/// Every this many files, one line carries the needle (near the end, so most of the file is read).
const NEEDLE_EVERY: usize = 97;
const PATTERN: &str = r"needle_[0-9]+_marker";

/// Deterministic words (a small LCG), so every run searches the same bytes.
struct Words(u64);

impl Words {
    fn next(&mut self) -> &'static str {
        const WORDS: &[&str] = &[
            "fn", "let", "mut", "self", "impl", "struct", "value", "result", "error", "match",
            "return", "config", "path", "buffer", "index", "count", "iter", "map", "into", "from",
            "string", "vec", "option", "some", "none", "ok",
        ];
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        WORDS[(self.0 >> 33) as usize % WORDS.len()]
    }
}

fn generate(root: &Path) -> usize {
    let mut words = Words(42);
    let mut needles = 0;
    for d in 0..DIRS {
        let dir = root.join(format!("dir{d:03}"));
        fs::create_dir_all(&dir).unwrap();
        for f in 0..FILES_PER_DIR {
            let n = d * FILES_PER_DIR + f;
            let mut text = String::with_capacity(FILE_BYTES + 128);
            while text.len() < FILE_BYTES - 100 {
                for _ in 0..10 {
                    text.push_str(words.next());
                    text.push(' ');
                }
                text.push('\n');
            }
            if n.is_multiple_of(NEEDLE_EVERY) {
                text.push_str(&format!("    // needle_{n}_marker\n"));
                needles += 1;
            }
            let ext = if f % 4 == 0 { "rs" } else { "txt" };
            fs::write(dir.join(format!("file{f:03}.{ext}")), text).unwrap();
        }
    }
    needles
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// User + system time of this process's waited-for children, in clock ticks (`/proc/self/stat`
/// fields 16 and 17).
fn children_ticks() -> u64 {
    let stat = fs::read_to_string("/proc/self/stat").unwrap();
    // The command name (field 2) may hold spaces; the fields after it start past the last ')'.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3.
    fields[16 - 3].parse::<u64>().unwrap() + fields[17 - 3].parse::<u64>().unwrap()
}

/// Nanoseconds this thread has spent on a CPU.
fn thread_cpu_ns() -> u64 {
    let stat = fs::read_to_string("/proc/thread-self/schedstat").unwrap();
    stat.split_whitespace().next().unwrap().parse().unwrap()
}

fn clock_ticks_per_second() -> f64 {
    let out = Command::new("getconf").arg("CLK_TCK").output().ok();
    out.and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(100.0)
}

fn threads() -> usize {
    std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(12)
}

fn parse_list(root: &Path, stdout: &[u8]) -> BTreeSet<String> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| {
            Path::new(l)
                .strip_prefix(root)
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| l.to_string())
        })
        .collect()
}

fn rg(root: &Path, sort: bool) -> BTreeSet<String> {
    parse_list(root, &rg_output(root, sort, &["--files-with-matches"]))
}

/// ripgrep's matched lines (`path:line:text`), as a set of `path:line` with `path` relative.
fn rg_lines(root: &Path) -> BTreeSet<String> {
    let out = rg_output(
        root,
        false,
        &["--line-number", "--no-heading", "--with-filename"],
    );
    String::from_utf8_lossy(&out)
        .lines()
        .map(|l| {
            let l = l.strip_prefix(&format!("{}/", root.display())).unwrap_or(l);
            let mut parts = l.splitn(3, ':');
            format!("{}:{}", parts.next().unwrap(), parts.next().unwrap())
        })
        .collect()
}

fn rg_output(root: &Path, sort: bool, mode: &[&str]) -> Vec<u8> {
    let mut cmd = Command::new("rg");
    cmd.args(mode).args([
        "--no-require-git",
        "--no-messages",
        "--threads",
        &threads().to_string(),
    ]);
    if sort {
        cmd.arg("--sortr=modified");
    }
    cmd.args(["--regexp", PATTERN, "--"])
        .arg(root)
        .stdin(Stdio::null())
        .stderr(Stdio::null());
    cmd.output().expect("rg runs (install ripgrep)").stdout
}

/// The node's search, once, in a child process (this benchmark started again).
fn node_grep_child(root: &Path) -> BTreeSet<String> {
    parse_list(root, &node_child_output(root, "files"))
}

/// The node's content-mode search, once, in a child process: `path:line` of each matched line.
fn node_grep_lines_child(root: &Path) -> BTreeSet<String> {
    String::from_utf8_lossy(&node_child_output(root, "content"))
        .lines()
        .map(|l| {
            let mut parts = l.splitn(3, ':');
            format!("{}:{}", parts.next().unwrap(), parts.next().unwrap())
        })
        .collect()
}

fn node_child_output(root: &Path, mode: &str) -> Vec<u8> {
    let out = Command::new(std::env::current_exe().unwrap())
        .env(CHILD, root)
        .env(CHILD_MODE, mode)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert!(out.status.success(), "the child search failed");
    out.stdout
}

/// Set in the child: the tree to search, and `files` or `content`.
const CHILD: &str = "CHENG_SEARCH_BENCH_CHILD";
const CHILD_MODE: &str = "CHENG_SEARCH_BENCH_MODE";

fn node_grep(scope: &ReadScope) -> Vec<String> {
    grep_with(scope, grep::View::default())["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

/// Content mode: the node's result lines (`path:line:text`).
fn node_grep_content(scope: &ReadScope) -> String {
    let view = grep::View {
        mode: grep::Mode::Content,
        ..grep::View::default()
    };
    grep_with(scope, view)["content"]
        .as_str()
        .unwrap()
        .to_string()
}

fn grep_with(scope: &ReadScope, view: grep::View) -> cheng_node::Values {
    let request = grep::Request {
        pattern: PATTERN.to_string(),
        include: None,
        path: None,
        limit: 2000,
        view,
    };
    let budget = Budget::new(
        CancellationToken::new(),
        Duration::from_secs(600),
        "grep search",
    );
    grep::grep(scope, &request, &budget).unwrap()
}

fn node_glob(scope: &ReadScope, limit: usize) -> usize {
    let request = glob::Request {
        pattern: "**/*.rs".to_string(),
        path: None,
        limit,
        include_hidden: false,
    };
    let budget = Budget::new(
        CancellationToken::new(),
        Duration::from_secs(600),
        "glob walk",
    );
    let out = glob::glob(scope, &request, &budget).unwrap();
    out["total"].as_u64().unwrap() as usize
}

fn bare_walk(root: &Path) -> usize {
    ignore::WalkBuilder::new(root)
        .build()
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_type().is_some_and(|t| t.is_file())
                && e.path().extension().is_some_and(|x| x == "rs")
        })
        .count()
}

/// Wall-clock samples (ms) and CPU (ms in all) of one measurement.
#[derive(Default)]
struct Samples {
    wall: Vec<f64>,
    cpu_ms: f64,
}

impl Samples {
    /// Times `f` once: wall clock, and CPU by `cpu` (a counter read before and after, in ms).
    fn time(&mut self, cpu: impl Fn() -> f64, f: impl FnOnce()) {
        let (c, t) = (cpu(), Instant::now());
        f();
        self.wall.push(ms(t.elapsed()));
        self.cpu_ms += cpu() - c;
    }

    fn cpu_per_run(&self) -> f64 {
        self.cpu_ms / self.wall.len() as f64
    }
}

fn main() {
    if let Some(root) = std::env::var_os(CHILD) {
        let scope = ReadScope::workspace(Path::new(&root));
        let root = Path::new(&root);
        if std::env::var(CHILD_MODE).as_deref() == Ok("content") {
            println!("{}", node_grep_content(&scope));
        } else {
            for file in node_grep(&scope) {
                println!("{}", root.join(file).display());
            }
        }
        return;
    }
    if Command::new("rg")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .map(|s| !s.success())
        .unwrap_or(true)
    {
        eprintln!(
            "search bench: ripgrep (rg) is not installed; install it (apt-get install ripgrep)"
        );
        std::process::exit(2);
    }
    let runs: usize = std::env::var("CHENG_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(15)
        .max(1);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let start = Instant::now();
    let needles = generate(&root);
    let bytes: u64 = ignore::WalkBuilder::new(&root)
        .build()
        .filter_map(Result::ok)
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum();
    let tick_ms = 1000.0 / clock_ticks_per_second();
    println!(
        "tree: {} files, {:.1} MB, {needles} containing the pattern, generated in {:.1} s; {runs} timed rounds, {} search threads",
        DIRS * FILES_PER_DIR,
        bytes as f64 / 1e6,
        start.elapsed().as_secs_f64(),
        threads()
    );
    let scope = ReadScope::workspace(&root);

    // Warm-up and agreement.
    let expected = rg(&root, false);
    assert_eq!(expected.len(), needles);
    assert_eq!(
        node_grep_child(&root),
        expected,
        "the node and ripgrep find the same files"
    );
    assert_eq!(rg(&root, true), expected);
    let lines = rg_lines(&root);
    assert_eq!(lines.len(), needles);
    assert_eq!(
        node_grep_lines_child(&root),
        lines,
        "the node and ripgrep report the same lines"
    );
    let rs = bare_walk(&root);
    assert_eq!(
        node_glob(&scope, 100),
        rs,
        "the node and the bare walk find the same .rs files"
    );

    let child_cpu = || children_ticks() as f64 * tick_ms;
    let thread_cpu = || thread_cpu_ns() as f64 / 1e6;
    let (mut content, mut rg_content) = (Samples::default(), Samples::default());
    let (mut node, mut rg_par, mut rg_sorted, mut glob100, mut glob2000, mut walk) = (
        Samples::default(),
        Samples::default(),
        Samples::default(),
        Samples::default(),
        Samples::default(),
        Samples::default(),
    );
    for _ in 0..runs {
        node.time(child_cpu, || {
            node_grep_child(&root);
        });
        rg_par.time(child_cpu, || {
            rg(&root, false);
        });
        rg_sorted.time(child_cpu, || {
            rg(&root, true);
        });
        content.time(child_cpu, || {
            node_grep_lines_child(&root);
        });
        rg_content.time(child_cpu, || {
            rg_lines(&root);
        });
        glob100.time(thread_cpu, || {
            node_glob(&scope, 100);
        });
        walk.time(thread_cpu, || {
            bare_walk(&root);
        });
        glob2000.time(thread_cpu, || {
            node_glob(&scope, 2000);
        });
    }
    println!();
    println!("| measurement | wall median ms | wall min ms | CPU ms per run | wall ratio (median) | wall ratio (min) | CPU ratio |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let row = |name: &str, s: &Samples, base: Option<&Samples>| {
        let (wm, wn, c) = (median(s.wall.clone()), min(&s.wall), s.cpu_per_run());
        match base {
            None => println!("| {name} | {wm:.1} | {wn:.1} | {c:.1} | | | |"),
            Some(b) => println!(
                "| {name} | {wm:.1} | {wn:.1} | {c:.1} | {:.2}x | {:.2}x | {:.2}x |",
                wm / median(b.wall.clone()),
                wn / min(&b.wall),
                c / b.cpu_per_run()
            ),
        }
    };
    row("rg -l (baseline)", &rg_par, None);
    row(&format!("tools/grep `{PATTERN}`"), &node, Some(&rg_par));
    row(
        "rg -l --sortr=modified (Codex's command)",
        &rg_sorted,
        Some(&rg_par),
    );
    row("rg --line-number (baseline)", &rg_content, None);
    row(
        &format!("tools/grep `{PATTERN}` output_mode content"),
        &content,
        Some(&rg_content),
    );
    row("bare ignore walk (baseline)", &walk, None);
    row("tools/glob `**/*.rs` (limit 100)", &glob100, Some(&walk));
    row("tools/glob `**/*.rs` (limit 2000)", &glob2000, Some(&walk));
    println!();
    let verdict = |ratio: f64| if ratio <= 1.5 { "met" } else { "NOT met" };
    let grep_wall = median(node.wall.clone()) / median(rg_par.wall.clone());
    let grep_cpu = node.cpu_per_run() / rg_par.cpu_per_run();
    let glob_wall = median(glob100.wall.clone()) / median(walk.wall.clone());
    let glob_cpu = glob100.cpu_per_run() / walk.cpu_per_run();
    println!(
        "grep within 1.5x rg: wall {} ({grep_wall:.2}x), CPU {} ({grep_cpu:.2}x)",
        verdict(grep_wall),
        verdict(grep_cpu)
    );
    let content_wall = median(content.wall.clone()) / median(rg_content.wall.clone());
    let content_cpu = content.cpu_per_run() / rg_content.cpu_per_run();
    println!(
        "grep content mode within 1.5x rg: wall {} ({content_wall:.2}x), CPU {} ({content_cpu:.2}x)",
        verdict(content_wall),
        verdict(content_cpu)
    );
    println!(
        "glob within 1.5x the bare walk: wall {} ({glob_wall:.2}x), CPU {} ({glob_cpu:.2}x)",
        verdict(glob_wall),
        verdict(glob_cpu)
    );
}
