//! tools/grep against ripgrep and tools/glob against a bare `ignore` walk, on a generated tree of
//! 10 000 files and 100 MB (100 directories of 100 files of about 10 KiB each, a quarter of
//! them `.rs`).
//!
//! grep: the node's search (in process, limit 2000) against `rg --files-with-matches
//! --no-require-git --no-messages --regexp PATTERN -- DIR` (ripgrep's parallel search; the node
//! searches in parallel too), and for reference Codex's own command, which adds
//! `--sortr=modified` (sorting makes ripgrep search on one thread). glob: the node's `**/*.rs`
//! against `ignore::WalkBuilder::new(DIR).build()` counting entries. Both files sets are checked
//! equal to the baseline's before timing.
//!
//! One warm-up run each (the tree then sits in the page cache), then `CHENG_BENCH_RUNS` (default
//! 7) interleaved timed rounds; medians in milliseconds and the ratio node / baseline (target
//! ≤ 1.5). Run with `cargo bench -p cheng-nodes-files --bench search`; needs `rg` on PATH.
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
            "fn", "let", "mut", "self", "impl", "struct", "value", "result", "error", "match", "return", "config", "path",
            "buffer", "index", "count", "iter", "map", "into", "from", "string", "vec", "option", "some", "none", "ok",
        ];
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
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
            if n % NEEDLE_EVERY == 0 {
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

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn rg(root: &Path, sort: bool) -> BTreeSet<String> {
    let mut cmd = Command::new("rg");
    cmd.args(["--files-with-matches", "--no-require-git", "--no-messages"]);
    if sort {
        cmd.arg("--sortr=modified");
    }
    cmd.args(["--regexp", PATTERN, "--"]).arg(root).stdin(Stdio::null()).stderr(Stdio::null());
    let out = cmd.output().expect("rg runs (install ripgrep)");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| Path::new(l).strip_prefix(root).map(|p| p.display().to_string()).unwrap_or_else(|_| l.to_string()))
        .collect()
}

fn node_grep(scope: &ReadScope) -> BTreeSet<String> {
    let request = grep::Request { pattern: PATTERN.to_string(), include: None, path: None, limit: 2000 };
    let budget = Budget::new(CancellationToken::new(), Duration::from_secs(600), "grep search");
    let out = grep::grep(scope, &request, &budget).unwrap();
    out["files"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect()
}

fn node_glob(scope: &ReadScope) -> usize {
    let request = glob::Request { pattern: "**/*.rs".to_string(), path: None, limit: 2000, include_hidden: false };
    let budget = Budget::new(CancellationToken::new(), Duration::from_secs(600), "glob walk");
    let out = glob::glob(scope, &request, &budget).unwrap();
    out["total"].as_u64().unwrap() as usize
}

fn bare_walk(root: &Path) -> usize {
    ignore::WalkBuilder::new(root)
        .build()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()) && e.path().extension().is_some_and(|x| x == "rs"))
        .count()
}

fn main() {
    if Command::new("rg").arg("--version").stdout(Stdio::null()).status().map(|s| !s.success()).unwrap_or(true) {
        eprintln!("search bench: ripgrep (rg) is not installed; install it (apt-get install ripgrep)");
        std::process::exit(2);
    }
    let runs: usize = std::env::var("CHENG_BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(7).max(1);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let start = Instant::now();
    let needles = generate(&root);
    let bytes: u64 = ignore::WalkBuilder::new(&root).build().filter_map(Result::ok).filter_map(|e| e.metadata().ok()).filter(|m| m.is_file()).map(|m| m.len()).sum();
    println!(
        "tree: {} files, {:.1} MB, {needles} containing the pattern, generated in {:.1} s; {runs} timed rounds",
        DIRS * FILES_PER_DIR,
        bytes as f64 / 1e6,
        start.elapsed().as_secs_f64()
    );
    let scope = ReadScope::workspace(&root);

    // Warm-up and agreement.
    let expected = rg(&root, false);
    assert_eq!(expected.len(), needles);
    assert_eq!(node_grep(&scope), expected, "the node and ripgrep find the same files");
    assert_eq!(rg(&root, true), expected);
    let rs = bare_walk(&root);
    assert_eq!(node_glob(&scope), rs, "the node and the bare walk find the same .rs files");

    let (mut t_node, mut t_rg, mut t_rg_sorted, mut t_glob, mut t_walk) = (vec![], vec![], vec![], vec![], vec![]);
    for _ in 0..runs {
        let t = Instant::now();
        node_grep(&scope);
        t_node.push(ms(t.elapsed()));
        let t = Instant::now();
        rg(&root, false);
        t_rg.push(ms(t.elapsed()));
        let t = Instant::now();
        rg(&root, true);
        t_rg_sorted.push(ms(t.elapsed()));
        let t = Instant::now();
        node_glob(&scope);
        t_glob.push(ms(t.elapsed()));
        let t = Instant::now();
        bare_walk(&root);
        t_walk.push(ms(t.elapsed()));
    }
    let (node, rg_ms, rg_sorted, glob_ms, walk) = (median(t_node), median(t_rg), median(t_rg_sorted), median(t_glob), median(t_walk));
    let grep_ratio = node / rg_ms;
    let glob_ratio = glob_ms / walk;
    println!();
    println!("| measurement | median ms | baseline | baseline median ms | ratio |");
    println!("|---|---:|---|---:|---:|");
    println!("| tools/grep `{PATTERN}` | {node:.1} | rg -l (parallel) | {rg_ms:.1} | {grep_ratio:.2}x |");
    println!("| tools/grep `{PATTERN}` | {node:.1} | rg -l --sortr=modified (Codex's command) | {rg_sorted:.1} | {:.2}x |", node / rg_sorted);
    println!("| tools/glob `**/*.rs` | {glob_ms:.1} | bare ignore walk | {walk:.1} | {glob_ratio:.2}x |");
    println!();
    let verdict = |ratio: f64| if ratio <= 1.5 { "met" } else { "NOT met" };
    println!("grep within 1.5x rg: {} ({grep_ratio:.2}x)", verdict(grep_ratio));
    println!("glob within 1.5x the bare walk: {} ({glob_ratio:.2}x)", verdict(glob_ratio));
}
