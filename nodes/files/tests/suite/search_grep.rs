//! `tools/grep`: matches newest-modified first, limit and its maximum, binary files, ignore rules,
//! `.git` and hidden entries, include globs, symlink escapes, invalid patterns, a huge result
//! kept bounded, and the output modes (content with context, count), case_insensitive,
//! multiline, head_limit and offset.

use super::search_support::*;
use cheng_node::ErrorKind;
use cheng_nodes_files::walk::MAX_CONTENT_BYTES;
use serde_json::json;
use std::fs;
use std::path::Path;

fn found(root: &Path, input: serde_json::Value) -> Vec<String> {
    strings(&ok(&Grep, root, input), "files")
}

#[test]
fn matching_files_newest_modified_first() {
    let (_d, root) = temp_workspace();
    write(&root, "old.rs", "fn main() {}\n");
    write(&root, "src/new.rs", "pub fn   main() {}\n");
    write(&root, "src/mid.rs", "fn main\n");
    write(&root, "none.rs", "fn other() {}\n");
    set_mtime(&root, "old.rs", 1_000_000);
    set_mtime(&root, "src/mid.rs", 2_000_000);
    set_mtime(&root, "src/new.rs", 3_000_000);
    let out = ok(&Grep, &root, json!({"pattern": "fn\\s+main"}));
    assert_eq!(
        strings(&out, "files"),
        ["src/new.rs", "src/mid.rs", "old.rs"]
    );
    assert_eq!(text(&out, "content"), "src/new.rs\nsrc/mid.rs\nold.rs");
    assert_eq!(out["total"], 3);
    assert_eq!(out["truncated"], false);
    // Touch the oldest: it moves to the front.
    set_mtime(&root, "old.rs", 4_000_000);
    assert_eq!(
        found(&root, json!({"pattern": "fn\\s+main"})),
        ["old.rs", "src/new.rs", "src/mid.rs"]
    );
    // Equal times fall back to the path, so the order is stable.
    for rel in ["old.rs", "src/mid.rs", "src/new.rs"] {
        set_mtime(&root, rel, 5_000_000);
    }
    assert_eq!(
        found(&root, json!({"pattern": "fn\\s+main"})),
        ["old.rs", "src/mid.rs", "src/new.rs"]
    );
}

#[test]
fn no_match_is_a_success_that_says_so() {
    let (_d, root) = temp_workspace();
    write(&root, "a.txt", "hello\n");
    let out = ok(&Grep, &root, json!({"pattern": "absent"}));
    assert_eq!(text(&out, "content"), "No matches found.");
    assert_eq!(out["files"], json!([]));
    assert_eq!(out["total"], 0);
}

#[test]
fn limit_defaults_to_100_keeps_the_newest_and_stops_at_2000() {
    let (_d, root) = temp_workspace();
    for i in 0..120u64 {
        let rel = format!("m/{i:03}.txt");
        write(&root, &rel, "needle\n");
        set_mtime(&root, &rel, 1_000_000 + i);
    }
    let out = ok(&Grep, &root, json!({"pattern": "needle"}));
    let files = strings(&out, "files");
    assert_eq!(files.len(), 100);
    assert_eq!(files[0], "m/119.txt", "newest first");
    assert_eq!(files[99], "m/020.txt", "the 100 newest");
    assert_eq!(out["total"], 120);
    assert_eq!(out["truncated"], true);
    assert!(
        text(&out, "summary").contains("120 files"),
        "{}",
        text(&out, "summary")
    );
    assert_eq!(
        found(&root, json!({"pattern": "needle", "limit": 5})),
        [
            "m/119.txt",
            "m/118.txt",
            "m/117.txt",
            "m/116.txt",
            "m/115.txt"
        ]
    );
    for bad in [0, 2001] {
        let message = fails(
            &Grep,
            &root,
            json!({"pattern": "needle", "limit": bad}),
            ErrorKind::InvalidInput,
        );
        assert!(
            message.starts_with("limit") && message.contains("2000"),
            "{message}"
        );
    }
    assert_eq!(
        ok(&Grep, &root, json!({"pattern": "needle", "limit": 2000}))["total"],
        120
    );
}

#[test]
fn binary_files_are_skipped() {
    let (_d, root) = temp_workspace();
    let binary = b"needle\x00\x01\x02 binary needle\n";
    write(&root, "blob.bin", binary);
    write(&root, "text.txt", "a needle here\n");
    // The attack: the binary file does contain the pattern.
    assert!(fs::read(root.join("blob.bin"))
        .unwrap()
        .windows(6)
        .any(|w| w == b"needle"));
    assert_eq!(found(&root, json!({"pattern": "needle"})), ["text.txt"]);
}

#[test]
fn ignore_rules_git_and_hidden_entries() {
    let (_d, root) = temp_workspace();
    write(&root, ".gitignore", "target/\n*.log\n");
    write(&root, "sub/.ignore", "secret.rs\n");
    for rel in [
        "target/out.rs",
        "app.log",
        "sub/app.log",
        "sub/secret.rs",
        "sub/real.rs",
        ".git/config",
        ".git/objects/ab",
        ".hidden.rs",
        ".config/x.rs",
    ] {
        write(&root, rel, "needle\n");
    }
    assert_eq!(found(&root, json!({"pattern": "needle"})), ["sub/real.rs"]);
    // Ignore files above the searched directory apply; an ignored directory named on purpose is searched.
    assert_eq!(
        found(&root, json!({"pattern": "needle", "path": "sub"})),
        ["sub/real.rs"]
    );
    assert_eq!(
        found(&root, json!({"pattern": "needle", "path": "target"})),
        ["target/out.rs"]
    );
    // A single file can be searched by name.
    assert_eq!(
        found(&root, json!({"pattern": "needle", "path": "sub/real.rs"})),
        ["sub/real.rs"]
    );
}

#[test]
fn include_limits_the_files_and_never_overrides_ignore_rules() {
    let (_d, root) = temp_workspace();
    write(&root, ".gitignore", "ignored.rs\n");
    for rel in [
        "a.rs",
        "src/b.rs",
        "src/deep/c.rs",
        "src/d.ts",
        "docs/e.md",
        "ignored.rs",
    ] {
        write(&root, rel, "needle\n");
    }
    let mut by_name = found(&root, json!({"pattern": "needle", "include": "*.rs"}));
    by_name.sort();
    assert_eq!(
        by_name,
        ["a.rs", "src/b.rs", "src/deep/c.rs"],
        "no ignored.rs although it matches *.rs"
    );
    let mut by_path = found(
        &root,
        json!({"pattern": "needle", "include": "src/**/*.{rs,ts}"}),
    );
    by_path.sort();
    assert_eq!(by_path, ["src/b.rs", "src/d.ts", "src/deep/c.rs"]);
    let message = fails(
        &Grep,
        &root,
        json!({"pattern": "needle", "include": "*.{rs"}),
        ErrorKind::InvalidInput,
    );
    assert!(
        message.starts_with("include \"*.{rs\" is not a valid glob"),
        "{message}"
    );
}

#[test]
fn symlinks_leaving_the_workspace_are_reported_never_read() {
    let (_d, root) = temp_workspace();
    let outside = outside_dir();
    write(&root, "inside.txt", "TOPSECRET inside\n");
    symlink(outside.path(), root.join("out_dir"));
    symlink(outside.path().join("secret.txt"), root.join("out.txt"));
    symlink(root.join("gone.txt"), root.join("dangling.txt"));
    symlink(root.join("inside.txt"), root.join("alias.txt"));
    // The attack: through the links, the outside files are readable.
    assert!(fs::read_to_string(root.join("out.txt"))
        .unwrap()
        .contains("TOPSECRET"));
    assert!(fs::read_to_string(root.join("out_dir/inner/leak.txt"))
        .unwrap()
        .contains("TOPSECRET"));

    let out = ok(&Grep, &root, json!({"pattern": "TOPSECRET"}));
    assert_eq!(
        strings(&out, "files"),
        ["inside.txt"],
        "the inside link is not followed either (its target is searched once)"
    );
    assert_eq!(
        links(&out),
        [
            ("dangling.txt".to_string(), "dangling".to_string()),
            ("out.txt".to_string(), "outside".to_string()),
            ("out_dir".to_string(), "outside".to_string()),
        ]
    );
    assert!(
        text(&out, "summary").contains("3 symlinks leaving the workspace or dangling not searched"),
        "{}",
        text(&out, "summary")
    );
    for path in [
        "out_dir",
        "out.txt",
        "out_dir/inner",
        outside.path().to_str().unwrap(),
        "..",
    ] {
        let message = fails(
            &Grep,
            &root,
            json!({"pattern": "TOPSECRET", "path": path}),
            ErrorKind::PathOutsideWorkspace,
        );
        assert!(message.starts_with("path"), "{message}");
    }
}

#[test]
fn an_invalid_regex_names_the_port() {
    let (_d, root) = temp_workspace();
    write(&root, "a.txt", "x\n");
    for bad in ["(unclosed", "[z-a]", "a{3,1}", "*"] {
        let message = fails(
            &Grep,
            &root,
            json!({"pattern": bad}),
            ErrorKind::InvalidInput,
        );
        assert!(
            message.starts_with(&format!(
                "pattern {bad:?} is not a valid regular expression"
            )),
            "{message}"
        );
    }
    let message = fails(
        &Grep,
        &root,
        json!({"pattern": " "}),
        ErrorKind::InvalidInput,
    );
    assert!(message.starts_with("pattern is required"), "{message}");
}

#[test]
fn a_huge_result_is_bounded() {
    let (_d, root) = temp_workspace();
    let paths = long_paths(&root, 2000, "needle\n");
    let total: usize = paths.iter().map(|p| p.len() + 1).sum();
    assert!(
        total > 2 * MAX_CONTENT_BYTES,
        "the attack needs more than the bound: {total}"
    );
    let out = ok(&Grep, &root, json!({"pattern": "needle", "limit": 2000}));
    let content = text(&out, "content");
    assert!(
        content.len() <= MAX_CONTENT_BYTES + 200,
        "{}",
        content.len()
    );
    let shown = strings(&out, "files");
    assert!(shown.len() < 2000 && shown.len() > 100, "{}", shown.len());
    assert_eq!(out["total"], 2000);
    assert_eq!(out["truncated"], true);
    assert!(
        content.ends_with("narrow the pattern, include or path]"),
        "{}",
        &content[content.len() - 200..]
    );
}

/// Two files, `a.rs` newer than `b.rs`, for the output modes.
fn two_files(root: &Path) {
    write(
        root,
        "a.rs",
        "one\nfn main() {}\nthree\nfour\nfive\nfn helper() {}\nseven\n",
    );
    write(root, "b.rs", "fn b() {}\n");
    set_mtime(root, "b.rs", 1_000_000);
    set_mtime(root, "a.rs", 2_000_000);
}

#[test]
fn content_mode_shows_numbered_lines_newest_file_first() {
    let (_d, root) = temp_workspace();
    two_files(&root);
    let out = ok(
        &Grep,
        &root,
        json!({"pattern": "fn \\w+", "output_mode": "content"}),
    );
    assert_eq!(
        text(&out, "content"),
        "a.rs:2:fn main() {}\na.rs:6:fn helper() {}\nb.rs:1:fn b() {}"
    );
    assert_eq!(out["total"], 3);
    assert_eq!(out["truncated"], false);
    assert_eq!(strings(&out, "files"), ["a.rs", "b.rs"]);
    // The default mode is still the plain file list.
    let plain = ok(&Grep, &root, json!({"pattern": "fn \\w+"}));
    assert_eq!(text(&plain, "content"), "a.rs\nb.rs");
    let named = ok(
        &Grep,
        &root,
        json!({"pattern": "fn \\w+", "output_mode": "files_with_matches"}),
    );
    assert_eq!(named, plain);
}

#[test]
fn context_before_after_and_around_merge_overlapping_ranges() {
    let (_d, root) = temp_workspace();
    two_files(&root);
    let run = |extra: serde_json::Value| {
        let mut input = json!({"pattern": "fn (main|helper)", "output_mode": "content"});
        for (k, v) in extra.as_object().into_iter().flatten() {
            input[k] = v.clone();
        }
        text(&ok(&Grep, &root, input), "content").to_string()
    };
    assert_eq!(
        run(json!({"context_before": 1})),
        "a.rs-1-one\na.rs:2:fn main() {}\n--\na.rs-5-five\na.rs:6:fn helper() {}"
    );
    assert_eq!(
        run(json!({"context_after": 1})),
        "a.rs:2:fn main() {}\na.rs-3-three\n--\na.rs:6:fn helper() {}\na.rs-7-seven"
    );
    // Two lines around each: lines 1-4 and 4-7 overlap, so one group, line 4 once.
    assert_eq!(
        run(json!({"context": 2})),
        "a.rs-1-one\na.rs:2:fn main() {}\na.rs-3-three\na.rs-4-four\na.rs-5-five\na.rs:6:fn helper() {}\na.rs-7-seven"
    );
    // An explicit side overrides context.
    assert_eq!(
        run(json!({"context": 2, "context_after": 0, "context_before": 1})),
        "a.rs-1-one\na.rs:2:fn main() {}\n--\na.rs-5-five\na.rs:6:fn helper() {}"
    );
}

#[test]
fn files_are_separated_when_context_is_on() {
    let (_d, root) = temp_workspace();
    two_files(&root);
    let out = ok(
        &Grep,
        &root,
        json!({"pattern": "fn (helper|b)", "output_mode": "content", "context_before": 1}),
    );
    assert_eq!(
        text(&out, "content"),
        "a.rs-5-five\na.rs:6:fn helper() {}\n--\nb.rs:1:fn b() {}"
    );
}

#[test]
fn long_matched_lines_are_cut_at_500_bytes_and_marked() {
    let (_d, root) = temp_workspace();
    let long = format!("needle {}", "x".repeat(2000));
    write(&root, "long.txt", format!("{long}\n"));
    let out = ok(
        &Grep,
        &root,
        json!({"pattern": "needle", "output_mode": "content"}),
    );
    let line = text(&out, "content");
    let expected = format!("long.txt:1:{}…[cut]", &long[..500]);
    assert_eq!(line, expected);
}

#[test]
fn content_output_stays_within_the_content_cap() {
    let (_d, root) = temp_workspace();
    let line = format!("needle {}\n", "y".repeat(400));
    write(&root, "big.txt", line.repeat(2000));
    let out = ok(
        &Grep,
        &root,
        json!({"pattern": "needle", "output_mode": "content"}),
    );
    let content = text(&out, "content");
    assert!(
        content.len() <= MAX_CONTENT_BYTES + 200,
        "{}",
        content.len()
    );
    assert!(content.contains("more lines not shown"), "{content:.200}");
    assert_eq!(out["total"], 2000);
    assert_eq!(out["truncated"], true);
}

#[test]
fn case_insensitive_matches_any_case() {
    let (_d, root) = temp_workspace();
    write(&root, "a.txt", "Needle\nNEEDLE\nneedle\nother\n");
    let sensitive = ok(
        &Grep,
        &root,
        json!({"pattern": "needle", "output_mode": "count"}),
    );
    assert_eq!(text(&sensitive, "content"), "a.txt:1");
    let insensitive = ok(
        &Grep,
        &root,
        json!({"pattern": "needle", "output_mode": "count", "case_insensitive": true}),
    );
    assert_eq!(text(&insensitive, "content"), "a.txt:3");
}

#[test]
fn multiline_patterns_span_lines() {
    let (_d, root) = temp_workspace();
    write(&root, "a.rs", "struct A {\n    x: u8,\n}\nfn f() {}\n");
    write(&root, "b.rs", "struct B;\n");
    let input = json!({"pattern": "struct A \\{\\n.*x", "output_mode": "content"});
    // Without multiline the search is line by line: a line end in the pattern is refused, and
    // the error names the port that allows it.
    let msg = fails(&Grep, &root, input.clone(), ErrorKind::InvalidInput);
    assert!(msg.contains("set multiline to true"), "{msg}");
    let mut multi = input;
    multi["multiline"] = json!(true);
    let out = ok(&Grep, &root, multi);
    assert_eq!(
        text(&out, "content"),
        "a.rs:1:struct A {\na.rs:2:    x: u8,"
    );
    let files = ok(
        &Grep,
        &root,
        json!({"pattern": "\\{.*\\}", "multiline": true}),
    );
    assert_eq!(strings(&files, "files"), ["a.rs"]);
}

#[test]
fn head_limit_and_offset_window_every_mode() {
    let (_d, root) = temp_workspace();
    for i in 0..5u64 {
        let rel = format!("f{i}.txt");
        write(&root, &rel, "needle\nneedle\n");
        set_mtime(&root, &rel, 1_000_000 + i);
    }
    // Files mode: entries.
    let out = ok(
        &Grep,
        &root,
        json!({"pattern": "needle", "offset": 1, "head_limit": 2}),
    );
    assert_eq!(strings(&out, "files"), ["f3.txt", "f2.txt"]);
    assert_eq!(text(&out, "content"), "f3.txt\nf2.txt");
    assert_eq!(out["total"], 5);
    assert_eq!(out["truncated"], true);
    // Content mode: lines.
    let out = ok(
        &Grep,
        &root,
        json!({"pattern": "needle", "output_mode": "content", "offset": 3, "head_limit": 2}),
    );
    assert_eq!(text(&out, "content"), "f3.txt:2:needle\nf2.txt:1:needle");
    assert_eq!(out["total"], 10);
    assert_eq!(out["truncated"], true);
    // Count mode: files.
    let out = ok(
        &Grep,
        &root,
        json!({"pattern": "needle", "output_mode": "count", "offset": 4}),
    );
    assert_eq!(text(&out, "content"), "f0.txt:2");
    assert_eq!(out["total"], 5);
    // Past the end: says so.
    let out = ok(
        &Grep,
        &root,
        json!({"pattern": "needle", "output_mode": "count", "offset": 9}),
    );
    assert_eq!(
        text(&out, "content"),
        "No results at offset 9: there are 5."
    );
}

#[test]
fn count_mode_counts_matching_lines_per_file() {
    let (_d, root) = temp_workspace();
    two_files(&root);
    let out = ok(
        &Grep,
        &root,
        json!({"pattern": "fn", "output_mode": "count"}),
    );
    assert_eq!(text(&out, "content"), "a.rs:2\nb.rs:1");
    assert_eq!(out["total"], 2);
    let none = ok(
        &Grep,
        &root,
        json!({"pattern": "absent", "output_mode": "count"}),
    );
    assert_eq!(text(&none, "content"), "No matches found.");
}

#[test]
fn invalid_combinations_are_refused_naming_the_port() {
    let (_d, root) = temp_workspace();
    two_files(&root);
    for port in ["context", "context_before", "context_after"] {
        for mode in [json!(null), json!("files_with_matches"), json!("count")] {
            let msg = fails(
                &Grep,
                &root,
                json!({"pattern": "fn", "output_mode": mode, port: 1}),
                ErrorKind::InvalidInput,
            );
            assert!(msg.starts_with(&format!("{port}: ")), "{msg}");
            assert!(msg.contains("output_mode content"), "{msg}");
        }
    }
    for (input, port) in [
        (
            json!({"pattern": "fn", "output_mode": "lines"}),
            "output_mode",
        ),
        (json!({"pattern": "fn", "head_limit": 0}), "head_limit"),
        (json!({"pattern": "fn", "offset": -1}), "offset"),
        (
            json!({"pattern": "fn", "output_mode": "content", "context": 101}),
            "context",
        ),
        (
            json!({"pattern": "fn", "case_insensitive": "yes"}),
            "case_insensitive",
        ),
    ] {
        let msg = fails(&Grep, &root, input, ErrorKind::InvalidInput);
        assert!(msg.contains(port), "{port}: {msg}");
    }
}
