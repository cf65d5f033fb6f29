//! tools/workspace_preview: precedence, limits, the three operations.

use super::support::*;
use cheng_node::ErrorKind;
use cheng_nodes_documents::WorkspacePreview;
use serde_json::{json, Value};

fn preview(root: &std::path::Path, input: Value) -> Value {
    Value::Object(run(&WorkspacePreview, root, input).expect("preview runs"))
}

fn metadata(root: &std::path::Path, path: &str) -> Value {
    let out = preview(root, json!({"operation": "artifact_summary", "path": path}));
    assert_eq!(out["format"], "metadata");
    let meta = out["metadata"].clone();
    assert!(
        meta.is_object(),
        "metadata is an object, not JSON text: {out}"
    );
    // The preview shows the same fields as rows for a reader.
    let preview = out["preview"].as_str().expect("preview text");
    for key in meta.as_object().expect("object").keys() {
        assert!(
            preview.lines().any(|l| l.starts_with(key.as_str())),
            "{key} missing from {preview}"
        );
    }
    meta
}

#[test]
fn path_takes_precedence_over_content() {
    let (_d, root) = temp_workspace();
    std::fs::write(root.join("a.md"), "# From file\n").expect("write");
    let out = preview(
        &root,
        json!({"operation": "markdown", "path": "a.md", "content": "# From content"}),
    );
    assert!(
        out["preview"]
            .as_str()
            .is_some_and(|p| p.contains("From file")),
        "{out}"
    );
    assert_eq!(out["source_path"], "a.md");
    assert_eq!(out["source_bytes"], 12);
    assert_eq!(out["format"], "html");
    let out = preview(
        &root,
        json!({"operation": "markdown", "content": "# From content"}),
    );
    assert_eq!(out["source_path"], Value::Null);
    assert_eq!(
        out["metadata"],
        Value::Null,
        "metadata belongs to artifact_summary"
    );
    assert!(
        out["preview"]
            .as_str()
            .is_some_and(|p| p.contains(r#"<h1 id="user-content-from-content">From content</h1>"#)),
        "{out}"
    );
}

#[test]
fn input_errors() {
    let (_d, root) = temp_workspace();
    let err = run(&WorkspacePreview, &root, json!({"operation": "markdown"})).unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidInput);
    assert!(
        err.message.contains("path") && err.message.contains("content"),
        "{}",
        err.message
    );
    let err = run(
        &WorkspacePreview,
        &root,
        json!({"operation": "", "content": "x"}),
    )
    .unwrap_err();
    assert!(
        err.message.contains("markdown, html, artifact_summary"),
        "{}",
        err.message
    );
    let err = run(
        &WorkspacePreview,
        &root,
        json!({"operation": "markdown", "path": "../x.md"}),
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::PathOutsideWorkspace);
    for bad in [0, -1, 524_289] {
        let err = run(
            &WorkspacePreview,
            &root,
            json!({"operation": "markdown", "content": "x", "max_bytes": bad}),
        )
        .unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidInput, "max_bytes {bad}");
        assert!(err.message.contains("524288"), "{}", err.message);
    }
    let err = run(
        &WorkspacePreview,
        &root,
        json!({"operation": "html", "path": "nope.html"}),
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::NotFound);
}

#[test]
fn previews_are_head_tail_bounded() {
    let (_d, root) = temp_workspace();
    let body: String = (0..2000)
        .map(|i| format!("Paragraph {i} with [a link](https://e.example/{i}).\n\n"))
        .collect();
    std::fs::write(root.join("long.md"), &body).expect("write");
    let out = preview(
        &root,
        json!({"operation": "markdown", "path": "long.md", "max_bytes": 4096}),
    );
    let text = out["preview"].as_str().expect("preview");
    assert_eq!(out["preview_truncated"], true);
    assert!(
        text.len() <= 4096,
        "the cap includes the marker: {}",
        text.len()
    );
    assert!(
        text.contains("Paragraph 0 ") && text.contains("Paragraph 1999 "),
        "head and tail kept"
    );
    assert!(text.contains("omitted"), "the cut is marked");
    assert_eq!(out["source_bytes"], body.len());
    let out = preview(&root, json!({"operation": "markdown", "path": "long.md"}));
    assert_eq!(out["preview_truncated"], false);
}

#[test]
fn the_cap_includes_the_omission_marker_for_every_operation_and_size() {
    let (_d, root) = temp_workspace();
    let markdown: String = (0..400)
        .map(|i| format!("Paragraph {i} é with *emphasis*.\n\n"))
        .collect();
    let html: String = (0..400).map(|i| format!("<p>Line {i} é</p>")).collect();
    for (operation, content) in [("markdown", &markdown), ("html", &html)] {
        for max in [1, 2, 10, 30, 31, 40, 64, 100, 1000, 4096] {
            let out = preview(
                &root,
                json!({"operation": operation, "content": content, "max_bytes": max}),
            );
            let text = out["preview"].as_str().expect("preview");
            assert!(
                text.len() <= max,
                "{operation} max_bytes {max}: {} bytes: {text:?}",
                text.len()
            );
            assert_eq!(out["preview_truncated"], true, "{operation} {max}");
        }
    }
}

#[test]
fn html_becomes_a_text_summary() {
    let (_d, root) = temp_workspace();
    std::fs::write(
        root.join("page.html"),
        "<!doctype html><html><head><title>Release notes</title><script>track()</script></head><body>\
         <h1>v2.0</h1><p>Faster   and\n smaller.</p><style>.x{}</style><h2>Fixes</h2>\
         <ul><li>One <a href=\"https://e.example/1\">issue</a></li></ul><noscript>enable js</noscript></body></html>",
    )
    .expect("write");
    let out = preview(&root, json!({"operation": "html", "path": "page.html"}));
    assert_eq!(out["format"], "text");
    let text = out["preview"].as_str().expect("text");
    assert!(text.starts_with("Title: Release notes\n"), "{text}");
    assert!(text.contains("# v2.0\n## Fixes\n"), "{text}");
    assert!(text.contains("- issue <https://e.example/1>"), "{text}");
    assert!(text.contains("Faster and smaller."), "{text}");
    for gone in ["track()", ".x{}", "enable js"] {
        assert!(!text.contains(gone), "{gone} in {text}");
    }
}

fn png(width: u32, height: u32) -> Vec<u8> {
    let mut b = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
    b.extend_from_slice(&width.to_be_bytes());
    b.extend_from_slice(&height.to_be_bytes());
    b.extend_from_slice(&[8, 2, 0, 0, 0, 0, 0, 0, 0]);
    b
}

fn gif(width: u16, height: u16) -> Vec<u8> {
    let mut b = b"GIF89a".to_vec();
    b.extend_from_slice(&width.to_le_bytes());
    b.extend_from_slice(&height.to_le_bytes());
    b.extend_from_slice(&[0; 16]);
    b
}

fn jpeg(width: u16, height: u16) -> Vec<u8> {
    let mut b = vec![0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10];
    b.extend_from_slice(b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00");
    b.extend_from_slice(&[0xFF, 0xC0, 0x00, 0x11, 0x08]);
    b.extend_from_slice(&height.to_be_bytes());
    b.extend_from_slice(&width.to_be_bytes());
    b.extend_from_slice(&[3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1, 0xFF, 0xD9]);
    b
}

fn webp(width: u32, height: u32) -> Vec<u8> {
    let mut chunk = b"VP8X".to_vec();
    chunk.extend_from_slice(&10u32.to_le_bytes());
    chunk.extend_from_slice(&[0, 0, 0, 0]);
    chunk.extend_from_slice(&(width - 1).to_le_bytes()[..3]);
    chunk.extend_from_slice(&(height - 1).to_le_bytes()[..3]);
    let mut b = b"RIFF".to_vec();
    b.extend_from_slice(&((chunk.len() + 4) as u32).to_le_bytes());
    b.extend_from_slice(b"WEBP");
    b.extend_from_slice(&chunk);
    b
}

#[test]
fn artifact_summary_of_images() {
    let (_d, root) = temp_workspace();
    // Extensions deliberately wrong: the MIME type comes from the magic bytes.
    std::fs::write(root.join("a.bin"), png(640, 480)).expect("png");
    std::fs::write(root.join("b.dat"), jpeg(320, 200)).expect("jpeg");
    std::fs::write(root.join("c.gif"), gif(16, 9)).expect("gif");
    std::fs::write(root.join("d"), webp(1920, 1080)).expect("webp");
    for (path, mime, w, h) in [
        ("a.bin", "image/png", 640, 480),
        ("b.dat", "image/jpeg", 320, 200),
        ("c.gif", "image/gif", 16, 9),
        ("d", "image/webp", 1920, 1080),
    ] {
        let meta = metadata(&root, path);
        assert_eq!(meta["mime"], mime, "{path}: {meta}");
        assert_eq!(meta["mime_source"], "magic");
        assert_eq!(meta["kind"], "binary", "{path}");
        assert_eq!(
            meta["image"],
            json!({"width": w, "height": h}),
            "{path}: {meta}"
        );
        assert_eq!(meta["lines"], Value::Null);
    }
}

#[test]
fn artifact_summary_of_text_json_and_csv() {
    let (_d, root) = temp_workspace();
    std::fs::write(root.join("hello.txt"), "hello\n").expect("txt");
    std::fs::write(
        root.join("data.json"),
        r#"{"name": "x", "version": 2, "deps": {}}"#,
    )
    .expect("json");
    std::fs::write(
        root.join("rows.csv"),
        "id,name,\"quoted, col\"\n1,a,\"x\ny\"\n2,b,z\n3,c,w\n",
    )
    .expect("csv");
    std::fs::write(
        root.join("notes"),
        "plain text without extension\nsecond line",
    )
    .expect("notes");
    let meta = metadata(&root, "hello.txt");
    assert_eq!(
        meta["sha256"],
        "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"
    );
    assert_eq!(
        (
            meta["lines"].as_u64(),
            meta["encoding"].as_str(),
            meta["mime"].as_str()
        ),
        (Some(1), Some("ascii"), Some("text/plain"))
    );
    assert_eq!(meta["size_bytes"], 6);
    let meta = metadata(&root, "data.json");
    assert_eq!(
        meta["json"],
        json!({"type": "object", "key_count": 3, "keys": ["name", "version", "deps"]})
    );
    assert_eq!(meta["mime"], "application/json");
    let meta = metadata(&root, "rows.csv");
    assert_eq!(meta["csv"]["columns"], json!(["id", "name", "quoted, col"]));
    assert_eq!(
        meta["csv"]["rows"], 3,
        "a quoted newline does not start a row: {meta}"
    );
    let meta = metadata(&root, "notes");
    assert_eq!(
        (
            meta["mime"].as_str(),
            meta["mime_source"].as_str(),
            meta["lines"].as_u64()
        ),
        (Some("text/plain"), Some("content"), Some(2))
    );
    let out = preview(
        &root,
        json!({"operation": "artifact_summary", "path": "hello.txt"}),
    );
    assert_eq!(out["source_path"], "hello.txt");
    assert_eq!(out["source_bytes"], 6);
    assert!(
        out["summary"]
            .as_str()
            .is_some_and(|s| s.contains("text/plain")),
        "{}",
        out["summary"]
    );
}

#[test]
fn artifact_summary_refuses_directories() {
    let (_d, root) = temp_workspace();
    std::fs::create_dir(root.join("sub")).expect("dir");
    let err = run(
        &WorkspacePreview,
        &root,
        json!({"operation": "artifact_summary", "path": "sub"}),
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidInput);
}
