//! read_file of a 2000-line window from a 100 MB file (target < 10 ms) and edit_file on a 10 MB
//! file (target < 50 ms), each through the node's public face, with a baseline measured in the
//! same run: the same window read with a bare `BufReader::lines`, and the same file read with
//! `std::fs::read` and written back with `std::fs::write` (no fsync, no tag, no diff).
//!
//! Run with `cargo bench -p cheng-nodes-files --bench files`; `CHENG_BENCH_RUNS` (default 20)
//! sets how many runs each median is taken over, `CHENG_BENCH_ONLY=read|edit` runs one part,
//! `CHENG_BENCH_BREAKDOWN=1` prints what each step of an edit costs on its own. The files are
//! made under `$TMPDIR` (a tmpfs there leaves out the disk's fsync).
// A benchmark: `unwrap`/`expect` are allowed here (denied in library code, [workspace.lints]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use cheng_node::{Decision, Node, RunContext, Scope, ScopeKind, Values};
use cheng_nodes_files::{EditFile, ReadFile};
use serde_json::{json, Value};
use std::io::{BufRead, Write};
use std::time::Instant;

fn median(mut ms: Vec<f64>) -> f64 {
    ms.sort_by(f64::total_cmp);
    ms[ms.len() / 2]
}

fn call(rt: &tokio::runtime::Runtime, node: &dyn Node, ctx: &RunContext, input: Value) -> Values {
    let mut ctx = ctx.clone();
    ctx.node_type = node.spec().id;
    let out = rt
        .block_on(node.run(&ctx, input.as_object().cloned().unwrap()))
        .unwrap();
    assert_eq!(out["success"], true, "{out:#?}");
    out
}

fn main() {
    let runs: usize = std::env::var("CHENG_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(20);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut ctx = RunContext::for_workspace("tools/read_file", root.clone(), Decision::Approved);
    ctx.scope = Scope::new(ScopeKind::Graph);

    // 100 MB of 100-byte lines.
    let line = |i: usize| format!("{i:>10} {}\n", "x".repeat(88));
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(root.join("big.log")).unwrap());
        let mut written = 0usize;
        let mut i = 0;
        while written < 100_000_000 {
            let l = line(i);
            f.write_all(l.as_bytes()).unwrap();
            written += l.len();
            i += 1;
        }
    }
    println!("median of {runs} runs, ms");
    let only = std::env::var("CHENG_BENCH_ONLY").unwrap_or_default();
    for offset in [1usize, 500_000]
        .into_iter()
        .filter(|_| only.is_empty() || only == "read")
    {
        let node: Vec<f64> = (0..runs)
            .map(|_| {
                let t = Instant::now();
                call(
                    &rt,
                    &ReadFile,
                    &ctx,
                    json!({"file_path": "big.log", "offset": offset, "limit": 2000}),
                );
                t.elapsed().as_secs_f64() * 1000.0
            })
            .collect();
        let bare: Vec<f64> = (0..runs)
            .map(|_| {
                let t = Instant::now();
                let f = std::io::BufReader::new(std::fs::File::open(root.join("big.log")).unwrap());
                let n = f
                    .lines()
                    .skip(offset - 1)
                    .take(2000)
                    .map(|l| l.unwrap().len())
                    .sum::<usize>();
                assert!(n > 0);
                t.elapsed().as_secs_f64() * 1000.0
            })
            .collect();
        let (node, bare) = (median(node), median(bare));
        println!(
            "read_file 2000 lines at offset {offset:>7} of 100 MB: node {node:>8.3}  bare BufReader::lines {bare:>8.3}  ratio {:.2}x  (target < 10 ms at offset 1)",
            node / bare
        );
    }

    if !only.is_empty() && only != "edit" {
        return;
    }
    // 10 MB source file; each edit toggles one unique token.
    let text: String = (0..200_000)
        .map(|i| format!("fn f{i}() {{ let value = {i}; println!(\"{{}}\", value); }}\n"))
        .collect();
    let ten = format!("{}// marker: A\n", &text[..10_000_000 - 20]);
    std::fs::write(root.join("big.rs"), &ten).unwrap();
    call(
        &rt,
        &ReadFile,
        &ctx,
        json!({"file_path": "big.rs", "limit": 1}),
    );
    if std::env::var_os("CHENG_BENCH_BREAKDOWN").is_some() {
        breakdown(&root);
    }
    let mut state = 'A';
    let node: Vec<f64> = (0..runs)
        .map(|_| {
            let next = if state == 'A' { 'B' } else { 'A' };
            let t = Instant::now();
            call(&rt, &EditFile, &ctx, json!({"file_path": "big.rs", "old": format!("// marker: {state}"), "new": format!("// marker: {next}")}));
            state = next;
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    let bare: Vec<f64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            let bytes = std::fs::read(root.join("big.rs")).unwrap();
            std::fs::write(root.join("copy.rs"), &bytes).unwrap();
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    let (node, bare) = (median(node), median(bare));
    println!(
        "edit_file on {} MB: node {node:>8.3}  bare read+write {bare:>8.3}  ratio {:.2}x  (target < 50 ms; the node also hashes twice, diffs and fsyncs)",
        (ten.len() as f64 / 1e6).round(),
        node / bare
    );
}

#[allow(dead_code)]
fn breakdown(root: &std::path::Path) {
    let bytes = std::fs::read(root.join("big.rs")).unwrap();
    let t = Instant::now();
    let tag = cheng_nodes_files::tag::tag(&bytes);
    println!("tag {tag} {:.1} ms", t.elapsed().as_secs_f64() * 1000.0);
    let t = Instant::now();
    let e = cheng_nodes_files::text::Editable::decode(&bytes).unwrap();
    println!("decode {:.1} ms", t.elapsed().as_secs_f64() * 1000.0);
    let new = e.text.replacen("// marker", "// marker2", 1);
    let t = Instant::now();
    let d = cheng_nodes_files::card::unified(&e.text, &new, "a", "b");
    println!(
        "diff {} {:.1} ms",
        d.len(),
        t.elapsed().as_secs_f64() * 1000.0
    );
    let t = Instant::now();
    cheng_fs::WorkspaceFs::open(root)
        .unwrap()
        .write("x.rs".as_ref(), &bytes)
        .unwrap();
    println!("atomic write {:.1} ms", t.elapsed().as_secs_f64() * 1000.0);
    let t = Instant::now();
    let n = e.text.match_indices("// marker").count();
    println!("match {n} {:.1} ms", t.elapsed().as_secs_f64() * 1000.0);
}
