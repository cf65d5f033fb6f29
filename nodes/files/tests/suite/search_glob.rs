//! `tools/glob`: each glob form through the node, limit and total, ignore rules, `.git`, hidden
//! entries, symlink escapes, an invalid pattern, and a huge result kept bounded.

use super::search_support::*;
use cheng_node::ErrorKind;
use cheng_nodes_files::walk::MAX_CONTENT_BYTES;
use serde_json::json;
use std::fs;
use std::path::Path;

fn files(root: &Path, input: serde_json::Value) -> Vec<String> {
    strings(&ok(&Glob, root, input), "files")
}

fn sample(root: &Path) {
    for rel in [
        "main.rs",
        "Cargo.toml",
        "src/lib.rs",
        "src/a/b/deep.rs",
        "src/x.rs",
        "src/a/x.rs",
        "docs/a.md",
        "docs/ab.md",
        "docs/b.md",
        "docs/c.md",
        "web/app.ts",
        "web/app.tsx",
        "web/app.js",
        "weird/*.txt",
        "weird/a.txt",
    ] {
        write(root, rel, "x\n");
    }
}

#[test]
fn star_stays_within_one_segment() {
    let (_d, root) = temp_workspace();
    sample(&root);
    assert_eq!(files(&root, json!({"pattern": "*.rs"})), ["main.rs"]);
    assert_eq!(
        files(&root, json!({"pattern": "src/*.rs"})),
        ["src/lib.rs", "src/x.rs"]
    );
}

#[test]
fn double_star_crosses_directories_and_matches_none() {
    let (_d, root) = temp_workspace();
    sample(&root);
    assert_eq!(
        files(&root, json!({"pattern": "**/*.rs"})),
        [
            "main.rs",
            "src/a/b/deep.rs",
            "src/a/x.rs",
            "src/lib.rs",
            "src/x.rs"
        ],
        "**/ also matches zero directories (main.rs at the top)"
    );
    assert_eq!(
        files(&root, json!({"pattern": "src/**/x.rs"})),
        ["src/a/x.rs", "src/x.rs"]
    );
    assert_eq!(files(&root, json!({"pattern": "src/**"})).len(), 4);
}

#[test]
fn question_mark_classes_and_alternatives() {
    let (_d, root) = temp_workspace();
    sample(&root);
    assert_eq!(
        files(&root, json!({"pattern": "docs/?.md"})),
        ["docs/a.md", "docs/b.md", "docs/c.md"]
    );
    assert_eq!(
        files(&root, json!({"pattern": "docs/[ab].md"})),
        ["docs/a.md", "docs/b.md"]
    );
    assert_eq!(
        files(&root, json!({"pattern": "docs/[!ab].md"})),
        ["docs/c.md"]
    );
    assert_eq!(
        files(&root, json!({"pattern": "web/*.{ts,tsx}"})),
        ["web/app.ts", "web/app.tsx"]
    );
    assert_eq!(
        files(&root, json!({"pattern": "weird/\\*.txt"})),
        ["weird/*.txt"],
        "\\ escapes"
    );
}

#[test]
fn patterns_are_relative_to_path_and_absolute_ones_work() {
    let (_d, root) = temp_workspace();
    sample(&root);
    let out = ok(&Glob, &root, json!({"pattern": "*.rs", "path": "src"}));
    assert_eq!(strings(&out, "files"), ["src/lib.rs", "src/x.rs"]);
    assert_eq!(out["path"], "src");
    let absolute = format!("{}/src/*.rs", root.display());
    assert_eq!(
        files(&root, json!({"pattern": absolute})),
        ["src/lib.rs", "src/x.rs"]
    );
    assert_eq!(
        files(&root, json!({"pattern": "./docs/a.md"})),
        ["docs/a.md"]
    );
}

#[test]
fn content_lists_paths_or_says_nothing_matched() {
    let (_d, root) = temp_workspace();
    sample(&root);
    let out = ok(&Glob, &root, json!({"pattern": "docs/*.md", "limit": 2}));
    assert_eq!(
        text(&out, "content"),
        "docs/a.md\ndocs/ab.md\nMore than 2 matches found"
    );
    assert_eq!(out["total"], 4);
    assert_eq!(out["truncated"], true);
    let out = ok(&Glob, &root, json!({"pattern": "*.nothing"}));
    assert_eq!(text(&out, "content"), "No matches found.");
    assert_eq!(out["total"], 0);
    assert_eq!(out["files"], json!([]));
}

#[test]
fn limit_defaults_to_100_and_stops_at_2000() {
    let (_d, root) = temp_workspace();
    for i in 0..150 {
        write(&root, &format!("many/{i:03}.txt"), "");
    }
    let out = ok(&Glob, &root, json!({"pattern": "**/*.txt"}));
    let found = strings(&out, "files");
    assert_eq!(found.len(), 100);
    assert_eq!(found[0], "many/000.txt");
    assert_eq!(found[99], "many/099.txt", "the first 100 by path");
    assert_eq!(out["total"], 150);
    assert_eq!(out["truncated"], true);
    assert!(text(&out, "content").ends_with("\nMore than 100 matches found"));
    for bad in [0, 2001] {
        let message = fails(
            &Glob,
            &root,
            json!({"pattern": "*", "limit": bad}),
            ErrorKind::InvalidInput,
        );
        assert!(
            message.starts_with("limit") && message.contains("2000"),
            "{message}"
        );
    }
    assert_eq!(
        ok(&Glob, &root, json!({"pattern": "**/*.txt", "limit": 2000}))["truncated"],
        false
    );
}

#[test]
fn gitignore_and_ignore_files_are_respected() {
    let (_d, root) = temp_workspace();
    write(&root, ".gitignore", "target/\n*.log\n!keep.log\n");
    write(&root, "sub/.ignore", "generated.rs\n");
    for rel in [
        "target/debug/out.rs",
        "app.log",
        "keep.log",
        "sub/generated.rs",
        "sub/real.rs",
        "sub/sub.log",
        "top.rs",
    ] {
        write(&root, rel, "");
    }
    assert_eq!(
        files(&root, json!({"pattern": "**/*.rs"})),
        ["sub/real.rs", "top.rs"]
    );
    assert_eq!(files(&root, json!({"pattern": "*.log"})), ["keep.log"]);
    // Ignore files above the searched directory still apply, and an ignored directory named on
    // purpose is searched.
    assert_eq!(
        files(&root, json!({"pattern": "*.rs", "path": "sub"})),
        ["sub/real.rs"]
    );
    assert_eq!(
        files(&root, json!({"pattern": "*.log", "path": "sub"})),
        Vec::<String>::new()
    );
    assert_eq!(
        files(&root, json!({"pattern": "**/*.rs", "path": "target"})),
        ["target/debug/out.rs"]
    );
}

#[test]
fn git_is_always_skipped_and_hidden_entries_are_optional() {
    let (_d, root) = temp_workspace();
    for rel in [
        ".git/config",
        ".git/hooks/pre-commit.sample",
        ".github/ci.yml",
        ".env",
        "visible.yml",
    ] {
        write(&root, rel, "");
    }
    assert_eq!(files(&root, json!({"pattern": "**/*"})), ["visible.yml"]);
    assert_eq!(
        files(&root, json!({"pattern": "**/*", "include_hidden": true})),
        [".env", ".github/ci.yml", "visible.yml"]
    );
    assert_eq!(
        files(&root, json!({"pattern": ".git/**", "include_hidden": true})),
        Vec::<String>::new()
    );
    // A `.git` file (a worktree's) is skipped too.
    write(&root, "wt/.git", "gitdir: /elsewhere\n");
    assert_eq!(
        files(&root, json!({"pattern": "wt/*", "include_hidden": true})),
        Vec::<String>::new()
    );
}

#[test]
fn symlinks_are_reported_never_followed() {
    let (_d, root) = temp_workspace();
    let outside = outside_dir();
    write(&root, "real.txt", "x");
    symlink(outside.path(), root.join("out_dir"));
    symlink(outside.path().join("secret.txt"), root.join("out.txt"));
    symlink(root.join("missing.txt"), root.join("dangling.txt"));
    symlink(root.join("real.txt"), root.join("alias.txt"));
    // The attack: the links do lead outside.
    assert!(fs::read_to_string(root.join("out_dir/inner/leak.txt"))
        .unwrap()
        .contains("TOPSECRET"));

    let out = ok(&Glob, &root, json!({"pattern": "**/*.txt"}));
    assert_eq!(
        strings(&out, "files"),
        ["real.txt"],
        "nothing under out_dir/ and no link as a file"
    );
    assert_eq!(
        links(&out),
        [
            ("alias.txt".to_string(), "inside".to_string()),
            ("dangling.txt".to_string(), "dangling".to_string()),
            ("out.txt".to_string(), "outside".to_string()),
        ]
    );
    assert_eq!(
        text(&out, "content"),
        "alias.txt@ (symlink, not followed to real.txt)\ndangling.txt@ (dangling symlink)\nout.txt@ (symlink leaving the workspace, not followed)\nreal.txt"
    );
    assert!(
        !text(&out, "content").contains("leak"),
        "{}",
        text(&out, "content")
    );
    // The directory link matches by name, and is not entered.
    let out = ok(&Glob, &root, json!({"pattern": "out_dir*"}));
    assert_eq!(
        links(&out),
        [("out_dir".to_string(), "outside".to_string())]
    );
    for path in [
        "out_dir",
        "out_dir/inner",
        outside.path().to_str().unwrap(),
        "../",
    ] {
        let message = fails(
            &Glob,
            &root,
            json!({"pattern": "*", "path": path}),
            ErrorKind::PathOutsideWorkspace,
        );
        assert!(message.starts_with("path"), "{message}");
    }
}

#[test]
fn an_invalid_glob_names_the_port() {
    let (_d, root) = temp_workspace();
    for bad in ["[unclosed", "{a,b", "src/[z"] {
        let message = fails(
            &Glob,
            &root,
            json!({"pattern": bad}),
            ErrorKind::InvalidInput,
        );
        assert!(
            message.starts_with(&format!("pattern {bad:?} is not a valid glob")),
            "{message}"
        );
    }
    let message = fails(
        &Glob,
        &root,
        json!({"pattern": "  "}),
        ErrorKind::InvalidInput,
    );
    assert!(message.starts_with("pattern is required"), "{message}");
}

#[test]
fn a_huge_result_is_bounded() {
    let (_d, root) = temp_workspace();
    let paths = long_paths(&root, 2000, "");
    let total: usize = paths.iter().map(|p| p.len() + 1).sum();
    assert!(
        total > 2 * MAX_CONTENT_BYTES,
        "the attack needs more than the bound: {total}"
    );
    let out = ok(&Glob, &root, json!({"pattern": "**/*.txt", "limit": 2000}));
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
    assert!(content.ends_with(&format!("[{} more matching paths not shown: the output is limited to 256 KiB; narrow the pattern or path]", 2000 - shown.len())), "{}", &content[content.len() - 200..]);
}
