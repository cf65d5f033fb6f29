//! `tools/list_dir`: the Codex format (offset, limit, depth, 500-byte names, two-space
//! indentation, markers), paging, and symlinks that must never be followed.

use super::search_support::*;
use cheng_node::ErrorKind;
use cheng_nodes_files::list_dir::{entry_line, Kind, MAX_ENTRY_LENGTH};
use serde_json::json;
use std::fs;
use std::path::Path;

fn tree(root: &Path) {
    for rel in [
        "Cargo.toml",
        "README.md",
        "a/z.txt",
        "a-b.txt",
        "docs/guide.md",
        "src/lib.rs",
        "src/main.rs",
        "src/bin/tool.rs",
    ] {
        write(root, rel, "x\n");
    }
}

fn listing(root: &Path, lines: &[&str]) -> String {
    let mut all = vec![format!("Absolute path: {}", root.display())];
    all.extend(lines.iter().map(|l| l.to_string()));
    all.join("\n")
}

#[test]
fn default_listing_is_two_levels_in_tree_order_with_markers() {
    let (_d, root) = temp_workspace();
    tree(&root);
    let out = ok(&ListDir, &root, json!({}));
    // `a/` and its entry come before `a-b.txt`: tree order, not the order of the joined strings.
    let expected = listing(
        &root,
        &[
            "Cargo.toml",
            "README.md",
            "a/",
            "  z.txt",
            "a-b.txt",
            "docs/",
            "  guide.md",
            "src/",
            "  bin/",
            "  lib.rs",
            "  main.rs",
        ],
    );
    assert_eq!(text(&out, "content"), expected);
    assert_eq!(out["dir_path"], ".");
    assert_eq!(out["truncated"], false);
    let entries = out["entries"].as_array().unwrap();
    assert_eq!(
        entries[2],
        json!({"path": "a", "name": "a", "depth": 0, "kind": "directory"})
    );
    assert_eq!(
        entries[3],
        json!({"path": "a/z.txt", "name": "z.txt", "depth": 1, "kind": "file"})
    );
}

#[test]
fn depth_one_and_three() {
    let (_d, root) = temp_workspace();
    tree(&root);
    let out = ok(&ListDir, &root, json!({"depth": 1}));
    assert_eq!(
        text(&out, "content"),
        listing(
            &root,
            &["Cargo.toml", "README.md", "a/", "a-b.txt", "docs/", "src/"]
        )
    );
    let out = ok(&ListDir, &root, json!({"dir_path": "src", "depth": 3}));
    assert_eq!(
        text(&out, "content"),
        listing(
            &root.join("src"),
            &["bin/", "  tool.rs", "lib.rs", "main.rs"]
        )
    );
    let out = ok(&ListDir, &root, json!({"depth": 3}));
    assert!(
        text(&out, "content").contains("\n  bin/\n    tool.rs\n  lib.rs"),
        "{}",
        text(&out, "content")
    );
    let message = fails(
        &ListDir,
        &root,
        json!({"depth": 0}),
        ErrorKind::InvalidInput,
    );
    assert!(message.starts_with("depth"), "{message}");
}

#[test]
fn pages_follow_offset_and_limit() {
    let (_d, root) = temp_workspace();
    tree(&root);
    let out = ok(&ListDir, &root, json!({"offset": 3, "limit": 3}));
    assert_eq!(
        text(&out, "content"),
        listing(
            &root,
            &["a/", "  z.txt", "a-b.txt", "More than 3 entries found"]
        )
    );
    assert_eq!(out["truncated"], true);
    assert!(
        text(&out, "summary").contains("next page: offset 6"),
        "{}",
        text(&out, "summary")
    );
    let out = ok(&ListDir, &root, json!({"offset": 11, "limit": 3}));
    assert_eq!(text(&out, "content"), listing(&root, &["  main.rs"]));
    assert_eq!(out["truncated"], false);
}

#[test]
fn default_limit_is_25_and_offset_is_1_indexed() {
    let (_d, root) = temp_workspace();
    for i in 0..30 {
        write(&root, &format!("f{i:02}"), "");
    }
    let out = ok(&ListDir, &root, json!({}));
    let content = text(&out, "content");
    let lines: Vec<&str> = content.lines().collect();
    assert_eq!(lines.len(), 1 + 25 + 1, "{content}");
    assert_eq!(lines[1], "f00");
    assert_eq!(lines[25], "f24");
    assert_eq!(lines[26], "More than 25 entries found");
    let out = ok(&ListDir, &root, json!({"offset": 26}));
    assert_eq!(
        text(&out, "content"),
        listing(&root, &["f25", "f26", "f27", "f28", "f29"])
    );
    let out = ok(&ListDir, &root, json!({"offset": 30}));
    assert_eq!(text(&out, "content"), listing(&root, &["f29"]));
    let message = fails(
        &ListDir,
        &root,
        json!({"offset": 31}),
        ErrorKind::InvalidInput,
    );
    assert!(
        message.contains("offset 31 exceeds the directory's entry count (30 entries"),
        "{message}"
    );
    let message = fails(
        &ListDir,
        &root,
        json!({"offset": 0}),
        ErrorKind::InvalidInput,
    );
    assert!(message.starts_with("offset"), "{message}");
}

#[test]
fn limit_is_capped_so_the_output_stays_bounded() {
    let (_d, root) = temp_workspace();
    for i in 0..2100 {
        write(&root, &format!("{i:04}{}", "n".repeat(240)), "");
    }
    let message = fails(
        &ListDir,
        &root,
        json!({"limit": 2001}),
        ErrorKind::InvalidInput,
    );
    assert!(
        message.contains("limit") && message.contains("2000"),
        "{message}"
    );
    let out = ok(&ListDir, &root, json!({"limit": 2000}));
    let content = text(&out, "content");
    assert_eq!(content.lines().count(), 1 + 2000 + 1);
    assert!(
        content.len() <= 2000 * (MAX_ENTRY_LENGTH + 1) + 4096,
        "{}",
        content.len()
    );
    assert!(content.ends_with("More than 2000 entries found"));
}

#[test]
fn names_over_500_bytes_are_cut_at_a_character_boundary() {
    // No file system here takes names over 255 bytes; the line format is checked directly, and
    // a 255-byte name through the node is shown whole.
    let long = "n".repeat(600);
    assert_eq!(entry_line(&long, 0, Kind::File), "n".repeat(500));
    assert_eq!(
        entry_line(&long, 2, Kind::Directory),
        format!("    {}/", "n".repeat(500))
    );
    let wide = format!("a{}", "é".repeat(300)); // 601 bytes; byte 500 is inside an `é`
    let line = entry_line(&wide, 1, Kind::Symlink);
    assert_eq!(line, format!("  a{}@", "é".repeat(249)));
    assert_eq!(line.len(), 2 + 499 + 1);

    let (_d, root) = temp_workspace();
    let name = "x".repeat(255);
    write(&root, &name, "");
    let out = ok(&ListDir, &root, json!({}));
    assert_eq!(text(&out, "content"), listing(&root, &[&name]));
}

#[test]
fn special_files_are_marked() {
    let (_d, root) = temp_workspace();
    let _socket = std::os::unix::net::UnixListener::bind(root.join("sock")).expect("socket");
    write(&root, "plain", "");
    let out = ok(&ListDir, &root, json!({}));
    assert_eq!(text(&out, "content"), listing(&root, &["plain", "sock?"]));
    assert_eq!(out["entries"][1]["kind"], "other");
}

#[test]
fn symlinks_are_listed_never_followed() {
    let (_d, root) = temp_workspace();
    let outside = outside_dir();
    write(&root, "inside.txt", "x");
    symlink(outside.path(), root.join("out_dir"));
    symlink(outside.path().join("secret.txt"), root.join("out_file"));
    symlink(root.join("missing"), root.join("dangling"));
    symlink(root.join("inside.txt"), root.join("in_link"));
    fs::create_dir(root.join("sub")).unwrap();
    symlink(&root, root.join("sub/loop"));
    // The attack: following the link reads the outside directory.
    let names: Vec<String> = fs::read_dir(root.join("out_dir"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.contains(&"secret.txt".to_string()));

    let out = ok(&ListDir, &root, json!({"depth": 5}));
    let expected = listing(
        &root,
        &[
            "dangling@ (dangling symlink)",
            "in_link@",
            "inside.txt",
            "out_dir@ (symlink leaving the workspace, not followed)",
            "out_file@ (symlink leaving the workspace, not followed)",
            "sub/",
            "  loop@",
        ],
    );
    assert_eq!(text(&out, "content"), expected);
    let entries = out["entries"].as_array().unwrap();
    let link_of = |path: &str| {
        entries
            .iter()
            .find(|e| e["path"] == path)
            .map(|e| e["link"].clone())
            .unwrap()
    };
    assert_eq!(link_of("dangling"), "dangling");
    assert_eq!(link_of("in_link"), "inside");
    assert_eq!(link_of("out_dir"), "outside");
    assert_eq!(link_of("out_file"), "outside");
    assert_eq!(link_of("sub/loop"), "inside");

    // Naming the link (or the outside directory) as dir_path is refused.
    for dir in [
        "out_dir",
        "out_dir/inner",
        "..",
        outside.path().to_str().unwrap(),
    ] {
        let message = fails(
            &ListDir,
            &root,
            json!({"dir_path": dir}),
            ErrorKind::PathOutsideWorkspace,
        );
        assert!(message.starts_with("dir_path"), "{message}");
    }
    // A link inside the workspace, named on purpose, is resolved.
    let out = ok(&ListDir, &root, json!({"dir_path": "sub/loop", "depth": 1}));
    assert_eq!(out["dir_path"], ".");
}

#[test]
fn a_file_or_a_missing_path_is_a_clear_error() {
    let (_d, root) = temp_workspace();
    write(&root, "file.txt", "");
    let message = fails(
        &ListDir,
        &root,
        json!({"dir_path": "file.txt"}),
        ErrorKind::InvalidInput,
    );
    assert!(message.contains("is a file, not a directory"), "{message}");
    let message = fails(
        &ListDir,
        &root,
        json!({"dir_path": "nope"}),
        ErrorKind::NotFound,
    );
    assert!(message.starts_with("dir_path"), "{message}");
    let out = ok(
        &ListDir,
        &root,
        json!({"dir_path": root.join("file.txt").parent().unwrap().to_str().unwrap()}),
    );
    assert_eq!(text(&out, "content"), listing(&root, &["file.txt"]));
}

#[test]
fn an_empty_directory_lists_nothing() {
    let (_d, root) = temp_workspace();
    let out = ok(&ListDir, &root, json!({}));
    assert_eq!(text(&out, "content"), listing(&root, &[]));
    assert_eq!(out["entries"], json!([]));
}
