//! Pathological nesting (issue: preview time grew quadratically with nesting depth; 100 001 `>`
//! ran past 60 s, 40 000 `<div>`s took 5 s). Every family of `benches/support/families.rs` goes through
//! every tools/workspace_preview and tools/workspace_markdown operation: each must finish, keep
//! its output bounded, and keep the preview's element nesting within the documented bound, with
//! the flattening named in the summary. Speed is measured by `cargo bench --bench nesting` at
//! the 16 MiB cap; here the inputs are smaller (debug builds are slow), but still thousands of
//! levels deeper than the bound, which is what made the old pipeline quadratic.

#[path = "../../benches/support/families.rs"]
mod families;

use super::support::*;
use cheng_node::{Decision, ErrorKind, Node, RunContext, Values};
use cheng_nodes_documents::preview::flatten::MAX_DEPTH;
use cheng_nodes_documents::preview::marks::{self, MAX_MARKS};
use cheng_nodes_documents::preview::MAX_PREVIEW_BYTES;
use cheng_nodes_documents::{WorkspaceMarkdown, WorkspacePreview};
use serde_json::{json, Value};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Input size per family (`CHENG_NESTING_BYTES` raises it, up to the 16 MiB cap).
fn family_bytes() -> usize {
    std::env::var("CHENG_NESTING_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000)
}

/// Hang guard only, not a speed assertion (speed is the benchmark's job): before the fix the
/// larger families ran for many minutes, so a run still going after this long has hung.
const HANG_GUARD: Duration = Duration::from_secs(120);

fn run_guarded(
    node: &'static dyn Node,
    root: &std::path::Path,
    input: Value,
    what: &str,
) -> Values {
    let (tx, rx) = mpsc::channel();
    let root = root.to_path_buf();
    std::thread::spawn(move || {
        let _ = tx.send(run(node, &root, input));
    });
    match rx.recv_timeout(HANG_GUARD) {
        Ok(Ok(out)) => out,
        Ok(Err(e)) => panic!("{what}: {}", e.message),
        Err(_) => panic!(
            "{what}: still running after {} s: the pipeline hangs",
            HANG_GUARD.as_secs()
        ),
    }
}

/// Deepest element nesting of an HTML fragment, as an HTML parser builds it.
fn html_depth(html: &str) -> usize {
    let doc = scraper::Html::parse_fragment(html);
    let mut depth = 0usize;
    let mut deepest = 0usize;
    for edge in doc.tree.root().traverse() {
        match edge {
            ego_tree::iter::Edge::Open(n) if n.value().is_element() => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            ego_tree::iter::Edge::Close(n) if n.value().is_element() => depth -= 1,
            _ => {}
        }
    }
    deepest
}

/// Families whose markup is far deeper than the bound, so their preview must say it flattened.
const DEEP: &[&str] = &[
    "blockquote >",
    "blockquote > space",
    "list - inline",
    "html <div>",
    "html <span>",
    "html <ul><li>",
    "mixed",
];

#[test]
fn every_family_through_every_operation() {
    let (_d, root) = temp_workspace();
    let bytes = family_bytes();
    for (name, generate) in families::FAMILIES {
        let text = generate(bytes);
        assert!(
            text.len() <= bytes && text.len() > bytes / 2,
            "{name}: generator size {}",
            text.len()
        );
        std::fs::write(root.join("f.md"), &text).expect("write");
        for op in ["markdown", "html", "artifact_summary"] {
            let what = format!("{name} / workspace_preview {op}");
            let out = run_guarded(
                &WorkspacePreview,
                &root,
                json!({"operation": op, "path": "f.md"}),
                &what,
            );
            assert_eq!(out["success"], true, "{what}");
            let preview = out["preview"].as_str().expect("preview");
            assert!(
                preview.len() <= MAX_PREVIEW_BYTES as usize + 64,
                "{what}: preview of {} bytes",
                preview.len()
            );
            let summary = out["summary"].as_str().expect("summary");
            if op == "markdown" {
                let depth = html_depth(preview);
                assert!(
                    depth <= 2 * MAX_DEPTH + 8,
                    "{what}: preview nests {depth} deep"
                );
                if DEEP.contains(name) {
                    assert!(
                        summary.contains(&format!(
                            "nesting deeper than {MAX_DEPTH} levels was flattened"
                        )),
                        "{what}: {summary}"
                    );
                }
            }
            if op == "html" && DEEP.iter().any(|d| d.starts_with("html") && d == name) {
                assert!(summary.contains("was flattened"), "{what}: {summary}");
            }
        }
        for op in [
            "outline",
            "diagnostics",
            "format_suggestions",
            "link_check_local",
        ] {
            let what = format!("{name} / workspace_markdown {op}");
            let out = run_guarded(
                &WorkspaceMarkdown,
                &root,
                json!({"operation": op, "path": "f.md"}),
                &what,
            );
            assert_eq!(out["success"], true, "{what}");
            for port in ["outline", "diagnostics", "suggested_edits"] {
                if let Some(list) = out[port].as_array() {
                    assert!(
                        list.len() <= 10_000,
                        "{what}: {port} has {} entries",
                        list.len()
                    );
                }
            }
        }
    }
}

/// A million levels (1 MiB of `>`, 200 000 `<div>`s in Markdown and HTML) on the node's own
/// blocking thread: deep recursion anywhere in the pipeline would overflow its stack and abort
/// the whole test binary.
#[test]
fn a_million_levels_do_not_overflow_the_stack() {
    let (_d, root) = temp_workspace();
    for (name, text) in [
        ("quotes", ">".repeat(1 << 20)),
        ("divs", "<div>".repeat(200_000)),
        ("bold", "<b>".repeat(300_000)),
    ] {
        std::fs::write(root.join("deep.md"), &text).expect("write");
        for op in ["markdown", "html"] {
            let what = format!("{name} / {op}");
            let out = run_guarded(
                &WorkspacePreview,
                &root,
                json!({"operation": op, "path": "deep.md"}),
                &what,
            );
            let flattened = out["summary"]
                .as_str()
                .is_some_and(|s| s.contains("flattened"));
            // `>` is only nesting in Markdown; as HTML it is text.
            assert_eq!(
                flattened,
                !(name == "quotes" && op == "html"),
                "{what}: {}",
                out["summary"]
            );
        }
    }
}

/// Inline marks past [`MAX_MARKS`] are parsed as plain text, shown as written, and named in
/// every summary: 100 000 `[` after the bound (each a node pulldown-cmark would keep, and
/// rescan for a link) cost nothing more than text. The first `MAX_MARKS` are one run of `*` (a
/// thematic break), so the test stays fast in a debug build. Positive control: with the run
/// shorter by the marks after it, the same link is a link, checked and reported broken.
#[test]
fn inline_marks_past_the_bound_are_plain_text_and_named() {
    let (_d, root) = temp_workspace();
    let tail = format!(
        "# Late `code` *x*\n\n[gone](missing.md) {}\n",
        "[".repeat(100_000)
    );
    // `[kept](…)` holds two marks: the run brings them to exactly MAX_MARKS.
    let document = |run: usize| format!("[kept](missing-too.md)\n\n{}\n\n{tail}", "*".repeat(run));
    let link_targets = |out: &Values| -> Vec<String> {
        out["diagnostics"]
            .as_array()
            .expect("diagnostics")
            .iter()
            .filter_map(|d| d["target"].as_str().map(str::to_string))
            .collect()
    };

    std::fs::write(root.join("big.md"), document(MAX_MARKS - 2)).expect("write");
    // After the bound: the heading's four, the link's two and the 100 000 `[`.
    let plain = 4 + 2 + 100_000;
    let warning = marks::warning(plain);
    assert!(
        warning.contains(&format!("past the first {MAX_MARKS} marks"))
            && warning.contains(&format!("({plain} later marks)"))
            && warning.contains("split the file"),
        "{warning}"
    );
    let out = run(
        &WorkspacePreview,
        &root,
        json!({"operation": "markdown", "path": "big.md"}),
    )
    .expect("preview");
    let summary = out["summary"].as_str().expect("summary");
    assert!(summary.contains(&warning), "{summary}");
    let html = out["preview"].as_str().expect("preview");
    assert!(
        html.contains("href=\"missing-too.md\""),
        "the link before the bound is a link"
    );
    assert!(
        !html.contains("href=\"missing.md\""),
        "the link after it is text"
    );
    assert!(html.contains("[gone](missing.md) [[[["), "shown as written");
    assert!(
        html.contains("Late `code` *x*</h1>"),
        "{}",
        &html[..html.len().min(300)]
    );

    for op in ["outline", "link_check_local"] {
        let out = run(
            &WorkspaceMarkdown,
            &root,
            json!({"operation": op, "path": "big.md"}),
        )
        .expect(op);
        let summary = out["summary"].as_str().expect("summary");
        assert!(summary.contains(&warning), "{op}: {summary}");
        if op == "outline" {
            // Heading text is read back from the source as written.
            assert_eq!(
                out["outline"][0]["text"], "Late `code` *x*",
                "{}",
                out["outline"]
            );
        } else {
            assert_eq!(link_targets(&out), ["missing-too.md"], "{summary}");
        }
    }

    // Positive control: the run shorter by the marks after it, and nothing is past the bound.
    std::fs::write(root.join("big.md"), document(MAX_MARKS - 2 - plain)).expect("write");
    let out = run(
        &WorkspaceMarkdown,
        &root,
        json!({"operation": "link_check_local", "path": "big.md"}),
    )
    .expect("links");
    let summary = out["summary"].as_str().expect("summary");
    assert!(!summary.contains("past the first"), "{summary}");
    assert_eq!(
        link_targets(&out),
        ["missing-too.md", "missing.md"],
        "{summary}"
    );
}

/// Ordinary documents are not flattened and keep their structure.
#[test]
fn ordinary_nesting_is_kept() {
    let (_d, root) = temp_workspace();
    let text = format!(
        "{}deep\n\n- a\n  - b\n    - c\n\n<div><div><p>x</p></div></div>\n",
        "> ".repeat(50)
    );
    let out = run(
        &WorkspacePreview,
        &root,
        json!({"operation": "markdown", "content": text}),
    )
    .expect("preview");
    let html = out["preview"].as_str().expect("preview");
    assert_eq!(html.matches("<blockquote>").count(), 50, "{html}");
    assert!(
        !out["summary"].as_str().unwrap_or("").contains("flattened"),
        "{}",
        out["summary"]
    );
    let page = format!(
        "<title>T</title>{}<p>deep text</p>{}",
        "<div>".repeat(MAX_DEPTH + 10),
        "</div>".repeat(MAX_DEPTH + 10)
    );
    let out = run(
        &WorkspacePreview,
        &root,
        json!({"operation": "html", "content": page}),
    )
    .expect("preview");
    let text = out["preview"].as_str().expect("preview");
    // The 10 deepest <div>s and the <p> inside them are flattened; their text is kept.
    assert!(
        text.contains("Title: T") && text.contains("deep text"),
        "content below the bound is kept: {text}"
    );
    assert!(
        out["summary"]
            .as_str()
            .is_some_and(|s| s.contains("(11 elements kept as plain content")),
        "{}",
        out["summary"]
    );
}

/// Cancelling mid-preview stops it inside the pipeline. 16 MiB of `<div>`s took hours before
/// (cancellation was only looked at after rendering); the limit below is generous on purpose.
#[test]
fn cancel_stops_a_long_preview() {
    let (_d, root) = temp_workspace();
    std::fs::write(root.join("divs.md"), "<div>".repeat(16 * 1024 * 1024 / 5)).expect("write");
    for op in ["markdown", "html"] {
        let ctx =
            RunContext::for_workspace(WorkspacePreview.spec().id, root.clone(), Decision::Denied);
        let mut input = Values::new();
        input.insert("operation".into(), json!(op));
        input.insert("path".into(), json!("divs.md"));
        input.insert("sandbox_root".into(), json!(root.display().to_string()));
        let cancel = ctx.cancel.clone();
        let canceller = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            cancel.cancel();
            Instant::now()
        });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let result = runtime.block_on(WorkspacePreview.run(&ctx, input));
        let cancelled_at = canceller.join().expect("canceller");
        let after = cancelled_at.elapsed();
        let err = result.expect_err("a cancelled preview fails");
        assert_eq!(err.kind, ErrorKind::Cancelled, "{op}: {}", err.message);
        assert!(
            after < Duration::from_secs(20),
            "{op}: stopped {after:?} after the cancel (generous bound)"
        );
    }
}
