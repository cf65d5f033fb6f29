//! link_check_local attacks and edge cases in a temporary workspace.

use super::support::*;
use cheng_nodes_documents::WorkspaceMarkdown;
use serde_json::{json, Value};

fn rules_and_targets(out: &Value) -> Vec<(String, String)> {
    out["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .map(|d| {
            (
                d["rule"].as_str().unwrap_or("").to_string(),
                d["target"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[test]
fn symlinks_and_dot_dot_out_of_the_workspace_are_reported_not_followed() {
    let (_outer, outer) = temp_workspace();
    let root = outer.join("ws");
    std::fs::create_dir_all(root.join("docs")).expect("mkdir");
    std::fs::write(outer.join("secret.md"), "# Secret heading\n").expect("secret");
    std::os::unix::fs::symlink(outer.join("secret.md"), root.join("docs/escape.md"))
        .expect("symlink");
    std::os::unix::fs::symlink(&outer, root.join("up")).expect("dir symlink");
    std::fs::write(
        root.join("docs/a.md"),
        "# A\n\n[s](escape.md#secret-heading) [u](../up/secret.md) [d](../../secret.md) [r](/../secret.md) [ok](a.md#a)\n",
    )
    .expect("a.md");
    let out = run(
        &WorkspaceMarkdown,
        &root,
        json!({"operation": "link_check_local", "path": "docs/a.md"}),
    )
    .expect("runs");
    let out = Value::Object(out);
    assert_eq!(
        rules_and_targets(&out),
        [
            (
                "outside-workspace".to_string(),
                "escape.md#secret-heading".to_string()
            ),
            (
                "outside-workspace".to_string(),
                "../up/secret.md".to_string()
            ),
            (
                "outside-workspace".to_string(),
                "../../secret.md".to_string()
            ),
            ("outside-workspace".to_string(), "/../secret.md".to_string()),
        ]
    );
    assert!(
        out["summary"]
            .as_str()
            .is_some_and(|s| s.contains("1 ok") && s.contains("4 outside")),
        "{}",
        out["summary"]
    );
}

#[test]
fn reference_links_images_and_anchors_in_other_files() {
    let (_d, root) = temp_workspace();
    std::fs::create_dir_all(root.join("img")).expect("mkdir");
    std::fs::write(root.join("img/a.png"), b"png").expect("png");
    std::fs::write(
        root.join("other.md"),
        "# Other\n\n## Part Two\n\n<div id=\"custom\"></div>\n",
    )
    .expect("other");
    std::fs::write(
        root.join("main.md"),
        "# Main\n\n[one][r1] [two][r2] ![pic](img/a.png) ![gone](img/b.png) [c](other.md#custom) [case](other.md#Part-Two)\n\n[r1]: other.md#part-two\n[r2]: other.md#part-three\n",
    )
    .expect("main");
    let out = Value::Object(
        run(
            &WorkspaceMarkdown,
            &root,
            json!({"operation": "link_check_local", "path": "main.md"}),
        )
        .expect("runs"),
    );
    let found = rules_and_targets(&out);
    assert_eq!(
        found,
        [
            (
                "broken-link-fragment".to_string(),
                "other.md#part-three".to_string()
            ),
            ("broken-local-link".to_string(), "img/b.png".to_string()),
            (
                "broken-link-fragment".to_string(),
                "other.md#Part-Two".to_string()
            ),
        ]
    );
    let first = &out["diagnostics"][0];
    assert_eq!(first["line"], 3, "reported where the reference is used");
    assert_eq!(first["column"], 11);
    assert_eq!(
        first["alias"],
        Value::Null,
        "cross-file fragments are not markdownlint's MD051"
    );
}

#[test]
fn external_links_are_listed_never_fetched() {
    let (_d, root) = temp_workspace();
    std::fs::write(root.join("x.md"), "[a](https://198.51.100.1/unroutable) <https://b.example> [m](mailto:x@y.example) [f](file:///etc/passwd)\n").expect("x");
    let out = Value::Object(
        run(
            &WorkspaceMarkdown,
            &root,
            json!({"operation": "link_check_local", "path": "x.md"}),
        )
        .expect("runs"),
    );
    let found = rules_and_targets(&out);
    assert_eq!(found.len(), 4);
    assert!(
        found.iter().all(|(rule, _)| rule == "skipped-external"),
        "{found:?}"
    );
    assert!(out["diagnostics"]
        .as_array()
        .is_some_and(|d| d.iter().all(|d| d["severity"] == "info")));
}

#[test]
fn linked_files_are_read_within_a_bound() {
    use cheng_nodes_documents::markdown::links::{check_with_limits, Limits, LIMITS};
    use cheng_nodes_documents::markdown::Document;
    let (_d, root) = temp_workspace();
    let mut main = String::from("# Main\n\n");
    for i in 0..5 {
        std::fs::write(
            root.join(format!("f{i}.md")),
            format!("# File {i}\n\n{}\n", "x".repeat(100 * i)),
        )
        .expect("file");
        main.push_str(&format!("[a](f{i}.md#file-{i}) [b](f{i}.md#gone)\n"));
    }
    std::fs::write(root.join("main.md"), &main).expect("main");
    let file = root.join("main.md");
    let doc = Document::parse(&main);
    // Default bound: everything read, the five bad fragments found.
    let report = check_with_limits(&root, &file, &doc, LIMITS);
    assert_eq!(
        (report.ok, report.bad_fragments, report.unchecked_fragments),
        (5, 5, 0)
    );
    // At most two files: fragments into the other three are counted, not read.
    let report = check_with_limits(
        &root,
        &file,
        &doc,
        Limits {
            files: 2,
            bytes: u64::MAX,
        },
    );
    assert_eq!(
        (report.ok, report.bad_fragments, report.unchecked_fragments),
        (2, 2, 6)
    );
    // A byte budget that fits f0 (10 bytes) and f1 (111 bytes) only.
    let report = check_with_limits(
        &root,
        &file,
        &doc,
        Limits {
            files: 100,
            bytes: 150,
        },
    );
    assert_eq!(
        (report.ok, report.bad_fragments, report.unchecked_fragments),
        (2, 2, 6)
    );
    // Links without fragments still resolve past the bound: existence needs no read.
    std::fs::write(root.join("plain.md"), "[a](f4.md) [b](f3.md)\n").expect("plain");
    let text = std::fs::read_to_string(root.join("plain.md")).expect("read");
    let report = check_with_limits(
        &root,
        &root.join("plain.md"),
        &Document::parse(&text),
        Limits { files: 0, bytes: 0 },
    );
    assert_eq!((report.ok, report.unchecked_fragments), (2, 0));
}

#[test]
fn the_summary_names_the_bound() {
    let (_d, root) = temp_workspace();
    let mut main = String::from("# Main\n\n");
    for i in 0..201 {
        std::fs::write(root.join(format!("f{i}.md")), format!("# F{i}\n")).expect("file");
        main.push_str(&format!("[x](f{i}.md#f{i})\n"));
    }
    std::fs::write(root.join("main.md"), &main).expect("main");
    let out = Value::Object(
        run(
            &WorkspaceMarkdown,
            &root,
            json!({"operation": "link_check_local", "path": "main.md"}),
        )
        .expect("runs"),
    );
    let summary = out["summary"].as_str().expect("summary");
    assert!(
        summary.contains("200 ok")
            && summary.contains("1 fragment in other files not checked (over the limit of 200"),
        "{summary}"
    );
}

#[test]
fn raw_html_links_and_images_are_checked_too() {
    let (_outer, outer) = temp_workspace();
    let root = outer.join("ws");
    std::fs::create_dir_all(root.join("img")).expect("mkdir");
    std::fs::write(root.join("img/a.png"), b"png").expect("png");
    std::fs::write(root.join("other.md"), "# Other\n").expect("other");
    std::fs::write(
        root.join("x.md"),
        "# X\n\n<a href=\"other.md#other\">ok</a> <a href='other.md#nope'>bad</a> <img src=img/a.png alt=a>\n\n\
         <p><img alt=\"b\" src=\"img/b.png\"><A HREF=\"../secret.md\">up</A> <a href=\"https://e.example/?a=1&amp;b=2\">e</a></p>\n",
    )
    .expect("x");
    let out = Value::Object(
        run(
            &WorkspaceMarkdown,
            &root,
            json!({"operation": "link_check_local", "path": "x.md"}),
        )
        .expect("runs"),
    );
    assert_eq!(
        rules_and_targets(&out),
        [
            (
                "broken-link-fragment".to_string(),
                "other.md#nope".to_string()
            ),
            ("broken-local-link".to_string(), "img/b.png".to_string()),
            ("outside-workspace".to_string(), "../secret.md".to_string()),
            (
                "skipped-external".to_string(),
                "https://e.example/?a=1&b=2".to_string()
            ),
        ]
    );
    assert_eq!(
        (
            out["diagnostics"][0]["line"].as_u64(),
            out["diagnostics"][0]["column"].as_u64()
        ),
        (Some(3), Some(33))
    );
    assert!(
        out["summary"].as_str().is_some_and(|s| s.contains("2 ok")),
        "{}",
        out["summary"]
    );
}
