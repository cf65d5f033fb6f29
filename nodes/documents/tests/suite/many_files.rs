//! diagnostics and link_check_local over a folder or a glob.

use super::support::*;
use cheng_node::ErrorKind;
use cheng_nodes_documents::WorkspaceMarkdown;
use serde_json::{json, Value};

fn tree() -> (tempfile::TempDir, std::path::PathBuf, tempfile::TempDir) {
    let (d, root) = temp_workspace();
    let write = |rel: &str, text: &[u8]| {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("top.md", b"# Top\n");
    write("docs/a.md", b"# A\ntext   \n");
    write("docs/sub/b.md", b"# B\n\n[gone](missing.md)\n");
    write("docs/notes.txt", b"# not markdown   \n");
    write("docs/ignored.md", b"# I\ntext   \n");
    write("docs/.gitignore", b"ignored.md\n");
    write("docs/.hidden/c.md", b"# C\ntext   \n");
    write("docs/bin.md", b"\x00\x01binary");
    // A link out of the workspace is never walked into.
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.md"), "# S\ntext   \n").unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("docs/out")).unwrap();
    (d, root, outside)
}

fn files_of(out: &Value) -> Vec<String> {
    let mut files: Vec<String> = out["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["path"].as_str().unwrap().to_string())
        .collect();
    files.dedup();
    files
}

#[test]
fn a_folder_is_every_markdown_file_under_it_grouped_per_file() {
    let (_d, root, _o) = tree();
    let out = Value::Object(
        run(
            &WorkspaceMarkdown,
            &root,
            json!({"operation": "diagnostics", "path": "docs"}),
        )
        .unwrap(),
    );
    assert_eq!(files_of(&out), ["docs/a.md"], "{out}");
    let summary = out["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("docs: 2 Markdown files checked, 2 findings in 1 file"),
        "{summary}"
    );
    assert!(
        summary.contains("skipped 1: docs/bin.md"),
        "the binary file is named: {summary}"
    );
    assert_eq!(out["path"], "docs");
    // link_check_local over the same folder finds the broken link in the nested file.
    let out = Value::Object(
        run(
            &WorkspaceMarkdown,
            &root,
            json!({"operation": "link_check_local", "path": "docs"}),
        )
        .unwrap(),
    );
    assert_eq!(files_of(&out), ["docs/sub/b.md"], "{out}");
}

#[test]
fn a_glob_matches_relative_to_the_workspace() {
    let (_d, root, _o) = tree();
    let out = Value::Object(
        run(
            &WorkspaceMarkdown,
            &root,
            json!({"operation": "diagnostics", "path": "**/*.md"}),
        )
        .unwrap(),
    );
    assert!(
        out["summary"]
            .as_str()
            .unwrap()
            .contains("3 Markdown files"),
        "{out}"
    );
    // `*` stays within one directory.
    let out = Value::Object(
        run(
            &WorkspaceMarkdown,
            &root,
            json!({"operation": "diagnostics", "path": "*.md"}),
        )
        .unwrap(),
    );
    assert!(
        out["summary"]
            .as_str()
            .unwrap()
            .starts_with("*.md: 1 Markdown file checked, no findings"),
        "{out}"
    );
    let out = Value::Object(
        run(
            &WorkspaceMarkdown,
            &root,
            json!({"operation": "diagnostics", "path": "docs/{a,sub/b}.md"}),
        )
        .unwrap(),
    );
    assert!(
        out["summary"]
            .as_str()
            .unwrap()
            .contains("2 Markdown files"),
        "{out}"
    );
}

#[test]
fn many_files_are_refused_where_they_make_no_sense_or_leave_the_workspace() {
    let (_d, root, _o) = tree();
    let err = run(
        &WorkspaceMarkdown,
        &root,
        json!({"operation": "format_suggestions", "path": "docs"}),
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidInput);
    assert!(
        err.message.contains("is a directory") && err.message.contains("takes one file"),
        "{}",
        err.message
    );
    let err = run(
        &WorkspaceMarkdown,
        &root,
        json!({"operation": "diagnostics", "path": "../*.md"}),
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::PathOutsideWorkspace);
    let err = run(
        &WorkspaceMarkdown,
        &root,
        json!({"operation": "diagnostics", "path": "docs/out/*.md"}),
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::PathOutsideWorkspace, "{}", err.message);
    let err = run(
        &WorkspaceMarkdown,
        &root,
        json!({"operation": "diagnostics", "path": "docs/[.md"}),
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidInput);
}
