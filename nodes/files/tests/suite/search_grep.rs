//! `tools/grep`: matches newest-modified first, limit and its maximum, binary files, ignore rules,
//! `.git` and hidden entries, include globs, symlink escapes, invalid patterns, and a huge result
//! kept bounded.

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
