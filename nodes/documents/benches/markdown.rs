//! All four tools/workspace_markdown operations on generated documents of 1, 2, 5 and 10 MB.
//!
//! Each measurement is one warm-up run followed by N timed runs (`CHENG_BENCH_RUNS`, default 7);
//! it prints the minimum and the median in milliseconds, the median per MB relative to the first
//! size (1.00 = perfectly linear), the ratio to a baseline measured in the same run (a bare
//! pulldown-cmark pass over the same text), and the minor page faults per run (a parse of a
//! large document touches fresh memory on every run: see docs/performance.md).
//! Run with `cargo bench -p cheng-nodes-documents --bench markdown`; `CHENG_BENCH_SIZES=1,10`
//! picks the sizes in MB.
// A benchmark: `unwrap`/`expect` are allowed here (denied in library code, [workspace.lints]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

/// The `cheng` binary's allocator, so the figures are what users get.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use cheng_nodes_documents::markdown::diagnostics::check;
use cheng_nodes_documents::markdown::document::options;
use cheng_nodes_documents::markdown::{analyze, suggestions, Document, Operation};
use cheng_nodes_documents::source::TextFile;
use std::time::{Duration, Instant};

/// A realistic, messy document: headings (some repeated), prose with links to anchors and files,
/// bare URLs, trailing whitespace, extra blank lines, code blocks, lists and tables.
fn generate(bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + 4096);
    out.push_str("# Generated document\n\n");
    let mut i = 0usize;
    while out.len() < bytes {
        let section = i / 20;
        match i % 20 {
            0 => out.push_str(&format!("## Section {section}\n\n")),
            1 => out.push_str("### Details\n\n"),
            2 | 7 | 12 => out.push_str(&format!(
                "Paragraph {i} explains [the section](#section-{section}) and [a file](docs/page{}.md#intro) in prose that wraps \
                 over a line or two so the document looks like documentation rather than noise.\n\n",
                i % 7
            )),
            3 => out.push_str(&format!("A line with trailing spaces {i}   \nand a continuation.\n\n")),
            4 => out.push_str(&format!("See https://example.com/item/{i} for more.\n\n\n")),
            5 => out.push_str("```rust\nfn main() {\n    println!(\"hello\");   \n}\n```\n\n"),
            6 => out.push_str(&format!("- item {i}\n- item with `code` and **bold**\n- [missing](#nowhere-{i})\n\n")),
            8 => out.push_str(&format!("| a | b |\n|---|---|\n| {i} | ![img](img/{}.png) |\n\n", i % 3)),
            9 => out.push_str(&format!("#### Deep heading {i}\n")),
            _ => out.push_str(&format!("Plain text paragraph number {i}, with *emphasis* and a [reference][ref{}].\n\n", i % 5)),
        }
        i += 1;
    }
    for r in 0..5 {
        out.push_str(&format!("[ref{r}]: docs/page{r}.md\n"));
    }
    out
}

/// One warm-up run, then `runs` timed runs: (min, median, median minor page faults per run).
struct Timing {
    min: f64,
    median: f64,
    /// Median CPU time of the whole process per run (every thread, user + system).
    cpu: f64,
    faults: u64,
}

fn measure<T>(runs: usize, mut f: impl FnMut() -> T) -> Timing {
    std::hint::black_box(f());
    let mut times = Vec::with_capacity(runs);
    let mut faults = Vec::with_capacity(runs);
    let mut cpu = Vec::with_capacity(runs);
    for _ in 0..runs {
        let before = usage();
        let start = Instant::now();
        std::hint::black_box(f());
        times.push(ms(start.elapsed()));
        let after = usage();
        faults.push(after.0.saturating_sub(before.0));
        cpu.push(after.1 - before.1);
    }
    times.sort_by(f64::total_cmp);
    cpu.sort_by(f64::total_cmp);
    faults.sort_unstable();
    Timing {
        min: times[0],
        median: times[runs / 2],
        cpu: cpu[runs / 2],
        faults: faults[runs / 2],
    }
}

/// Minor page faults and CPU milliseconds (user + system) of the whole process so far.
fn usage() -> (u64, f64) {
    // SAFETY: getrusage only writes into the zeroed struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above: getrusage writes only into `usage`.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return (0, 0.0);
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 * 1000.0 + t.tv_usec as f64 / 1000.0;
    (
        u64::try_from(usage.ru_minflt).unwrap_or(0),
        tv(usage.ru_utime) + tv(usage.ru_stime),
    )
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    std::fs::create_dir_all(root.join("docs")).expect("docs");
    std::fs::create_dir_all(root.join("img")).expect("img");
    for p in 0..7 {
        std::fs::write(root.join(format!("docs/page{p}.md")), "# Intro\n\ntext\n").expect("page");
    }
    for p in 0..3 {
        std::fs::write(root.join(format!("img/{p}.png")), b"png").expect("img");
    }

    let sizes: Vec<usize> = std::env::var("CHENG_BENCH_SIZES")
        .ok()
        .map(|v| v.split(',').filter_map(|s| s.trim().parse().ok()).collect())
        .filter(|v: &Vec<usize>| !v.is_empty())
        .unwrap_or_else(|| vec![1, 2, 5, 10]);
    let runs: usize = std::env::var("CHENG_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(7);
    let ops = [
        ("outline", Some(Operation::Outline)),
        ("diagnostics", Some(Operation::Diagnostics)),
        ("format_suggestions", Some(Operation::FormatSuggestions)),
        ("link_check_local", Some(Operation::LinkCheckLocal)),
        ("suggestions uncapped", None),
    ];
    // CHENG_BENCH_PROFILE=<operation or "parse"> repeats one thing at the last size (for perf).
    if let Ok(what) = std::env::var("CHENG_BENCH_PROFILE") {
        let mb = *sizes.last().unwrap_or(&10);
        let text = generate(mb * 1_000_000);
        let path = root.join("big.md");
        std::fs::write(&path, &text).expect("write");
        let file = TextFile {
            path,
            display: "big.md".into(),
            text: text.clone(),
            bytes: text.len() as u64,
            invalid_utf8_at: None,
        };
        let op = ops
            .iter()
            .find(|(name, _)| *name == what)
            .and_then(|(_, op)| *op);
        for _ in 0..runs {
            match op {
                Some(op) => drop(std::hint::black_box(analyze(&root, &file, op))),
                None => drop(std::hint::black_box(Document::parse(&text))),
            }
        }
        return;
    }
    println!("warm-up + {runs} runs each; ms");
    println!(
        "{:<22} {:>4} {:>8} {:>8} {:>8} {:>11} {:>9} {:>8} {:>8}",
        "operation", "MB", "min", "median", "med/MB", "vs first/MB", "vs parse", "cpu", "faults"
    );
    let mut first_per_mb: Vec<f64> = vec![0.0; ops.len() + 1];
    for &mb in &sizes {
        let text = generate(mb * 1_000_000);
        let path = root.join("big.md");
        std::fs::write(&path, &text).expect("write");
        let file = TextFile {
            path: path.clone(),
            display: "big.md".into(),
            text: text.clone(),
            bytes: text.len() as u64,
            invalid_utf8_at: None,
        };
        let parse = measure(runs, || {
            pulldown_cmark::Parser::new_ext(&text, options())
                .into_offset_iter()
                .count()
        });
        let mut row = |index: usize, name: &str, t: &Timing| {
            let per_mb = t.median / mb as f64;
            if mb == sizes[0] {
                first_per_mb[index] = per_mb;
            }
            println!(
                "{:<22} {:>4} {:>8.1} {:>8.1} {:>8.2} {:>11.2} {:>9.2} {:>8.1} {:>8}",
                name,
                mb,
                t.min,
                t.median,
                per_mb,
                per_mb / first_per_mb[index],
                t.median / parse.median,
                t.cpu,
                t.faults
            );
        };
        row(0, "baseline: bare parse", &parse);
        for (index, (name, op)) in ops.iter().enumerate() {
            let took = match op {
                Some(op) => measure(runs, || analyze(&root, &file, *op)),
                None => measure(runs, || {
                    let doc = Document::parse(&text);
                    let (_, plan) = check(&doc, None);
                    suggestions::build(&text, "big.md", &plan, usize::MAX)
                }),
            };
            row(index + 1, name, &took);
        }
        if mb == *sizes.last().unwrap_or(&10) {
            let parse_doc = measure(runs, || Document::parse(&text).headings.len());
            let doc = Document::parse(&text);
            let check_only = measure(runs, || check(&doc, None).0.len());
            let (_, plan) = check(&doc, None);
            let sweep_capped = measure(runs, || {
                suggestions::build(&text, "big.md", &plan, 2000).0.len()
            });
            let prepare = measure(runs, || suggestions::Prepared::new(&text));
            println!(
                "{mb} MB breakdown (min/median/cpu ms): Document::parse {:.1}/{:.1}/{:.1}, rules {:.1}/{:.1}/{:.1}, suggestion sweep (first 2000 edits) {:.1}/{:.1}/{:.1} of which its text-only groundwork {:.1}/{:.1}/{:.1}",
                parse_doc.min, parse_doc.median, parse_doc.cpu, check_only.min, check_only.median, check_only.cpu, sweep_capped.min, sweep_capped.median, sweep_capped.cpu, prepare.min, prepare.median, prepare.cpu
            );
            let (found, plan) = check(&doc, None);
            let (edits, skipped, _) = suggestions::build(&text, "big.md", &plan, usize::MAX);
            println!(
                "{mb} MB document: {} lines, {} headings, {} links, {} findings, {} edits ({} left out)",
                doc.lines.count(),
                doc.headings.len(),
                doc.links.len(),
                found.len(),
                edits.len(),
                skipped
            );
        }
    }
}
