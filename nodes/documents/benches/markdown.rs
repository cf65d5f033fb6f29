//! All four tools/workspace_markdown operations on generated documents of 1, 2, 5 and 10 MB.
//!
//! Prints milliseconds per operation (best of 3), the per-MB cost relative to the 1 MB run
//! (1.00 = perfectly linear), and the ratio to a baseline measured in the same run: a bare
//! pulldown-cmark pass over the same text. Run with `cargo bench -p cheng-nodes-documents`.

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

fn best_of<T>(runs: usize, mut f: impl FnMut() -> T) -> Duration {
    let mut best = Duration::MAX;
    for _ in 0..runs {
        let start = Instant::now();
        std::hint::black_box(f());
        best = best.min(start.elapsed());
    }
    best
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

    // CHENG_BENCH_SIZES=10 runs one size only (for profiling).
    let sizes: Vec<usize> = std::env::var("CHENG_BENCH_SIZES")
        .ok()
        .map(|v| v.split(',').filter_map(|s| s.trim().parse().ok()).collect())
        .filter(|v: &Vec<usize>| !v.is_empty())
        .unwrap_or_else(|| vec![1, 2, 5, 10]);
    let ops = [
        ("outline", Some(Operation::Outline)),
        ("diagnostics", Some(Operation::Diagnostics)),
        ("format_suggestions", Some(Operation::FormatSuggestions)),
        ("link_check_local", Some(Operation::LinkCheckLocal)),
        ("suggestions uncapped", None),
    ];
    println!("{:<22} {:>6} {:>10} {:>10} {:>12} {:>12}", "operation", "MB", "ms", "ms/MB", "vs 1 MB/MB", "vs parse");
    let mut per_mb_1: Vec<f64> = vec![0.0; ops.len()];
    for &mb in &sizes {
        let text = generate(mb * 1_000_000);
        let path = root.join("big.md");
        std::fs::write(&path, &text).expect("write");
        let file = TextFile { path: path.clone(), display: "big.md".into(), text: text.clone(), bytes: text.len() as u64, invalid_utf8_at: None };
        let parse = best_of(3, || pulldown_cmark::Parser::new_ext(&text, options()).into_offset_iter().count());
        println!("{:<22} {:>6} {:>10.1} {:>10.1} {:>12} {:>12}", "baseline: bare parse", mb, ms(parse), ms(parse) / mb as f64, "", "1.00");
        for (index, (name, op)) in ops.iter().enumerate() {
            let took = match op {
                Some(op) => best_of(3, || analyze(&root, &file, *op)),
                None => best_of(3, || {
                    let doc = Document::parse(&text);
                    let (_, plan) = check(&doc, None);
                    suggestions::build(&text, "big.md", &plan, usize::MAX)
                }),
            };
            let per_mb = ms(took) / mb as f64;
            if mb == sizes[0] {
                per_mb_1[index] = per_mb;
            }
            println!(
                "{:<22} {:>6} {:>10.1} {:>10.1} {:>12.2} {:>12.2}",
                name,
                mb,
                ms(took),
                per_mb,
                per_mb / per_mb_1[index],
                ms(took) / ms(parse)
            );
        }
        if mb == 10 {
            let parse_doc = best_of(3, || Document::parse(&text).headings.len());
            let doc = Document::parse(&text);
            let check_only = best_of(3, || check(&doc, None).0.len());
            let (_, plan) = check(&doc, None);
            let sweep_capped = best_of(3, || suggestions::build(&text, "big.md", &plan, 2000).0.len());
            println!(
                "10 MB breakdown: Document::parse {:.1} ms, rules {:.1} ms, suggestion sweep (first 2000) {:.1} ms",
                ms(parse_doc),
                ms(check_only),
                ms(sweep_capped)
            );
            let (found, plan) = check(&doc, None);
            let (edits, skipped, _) = suggestions::build(&text, "big.md", &plan, usize::MAX);
            println!(
                "10 MB document: {} lines, {} headings, {} links, {} findings, {} edits ({} left out)",
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
