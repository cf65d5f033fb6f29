//! The markdown node's contract: ports verbatim from the reference page, input errors, file limits.

use super::support::*;
use cheng_node::{Audience, Effects, ErrorKind, Node, PortType};
use cheng_nodes_documents::markdown::rules::RULES;
use cheng_nodes_documents::{WorkspaceMarkdown, WorkspacePreview};
use serde_json::{json, Value};

#[test]
fn specs_match_the_reference_pages() {
    let md = WorkspaceMarkdown.spec();
    assert_eq!(md.id, "tools/workspace_markdown");
    assert_eq!(md.category, "workspace");
    assert_eq!(md.effects, Effects::ReadOnly);
    let inputs: Vec<_> = md.inputs.iter().map(|p| (p.name, p.default)).collect();
    // `operation` is required (the reference page's `""` default is no operation: a missing one is a
    // validation error, exit 2, like every other).
    assert_eq!(
        inputs,
        [
            ("operation", None),
            ("path", Some("\"\"")),
            ("sandbox_root", Some("null"))
        ]
    );
    assert!(md.inputs[0].required);
    assert_eq!(md.inputs[2].audience, Audience::Engine);
    let outputs: Vec<_> = md.outputs.iter().map(|p| p.name).collect();
    assert_eq!(
        outputs,
        [
            "operation",
            "path",
            "success",
            "summary",
            "outline",
            "diagnostics",
            "suggested_edits",
            "error_kind",
            "terminal",
            "error"
        ]
    );
    assert_eq!(
        md.inputs[0].choices,
        Some(
            &[
                "outline",
                "diagnostics",
                "format_suggestions",
                "link_check_local"
            ][..]
        )
    );

    let pv = WorkspacePreview.spec();
    assert_eq!(pv.id, "tools/workspace_preview");
    assert_eq!(pv.category, "workspace");
    assert_eq!(pv.effects, Effects::ReadOnly);
    let inputs: Vec<_> = pv
        .inputs
        .iter()
        .map(|p| (p.name, p.default, p.min, p.max))
        .collect();
    assert_eq!(
        inputs,
        [
            ("operation", None, None, None),
            ("path", Some("null"), None, None),
            ("content", Some("null"), None, None),
            ("max_bytes", Some("524288"), Some(1), Some(524_288)),
            ("sandbox_root", Some("null"), None, None),
        ]
    );
    assert_eq!(pv.inputs[3].ty, PortType::Integer);
    let outputs: Vec<_> = pv.outputs.iter().map(|p| p.name).collect();
    assert_eq!(
        outputs,
        // `metadata` is added to the reference table: artifact_summary's object, never JSON inside a string.
        [
            "operation",
            "success",
            "summary",
            "format",
            "preview",
            "preview_truncated",
            "source_bytes",
            "source_path",
            "metadata",
            "error_kind",
            "terminal",
            "error"
        ]
    );
}

#[test]
fn operation_and_path_are_required() {
    let (_d, root) = temp_workspace();
    let err = run(&WorkspaceMarkdown, &root, json!({"path": "a.md"})).unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidInput);
    assert!(
        err.message
            .contains("outline, diagnostics, format_suggestions, link_check_local"),
        "{}",
        err.message
    );
    let err = run(
        &WorkspaceMarkdown,
        &root,
        json!({"operation": "lint", "path": "a.md"}),
    )
    .unwrap_err();
    assert!(err.message.contains("\"lint\""), "{}", err.message);
    let err = run(&WorkspaceMarkdown, &root, json!({"operation": "outline"})).unwrap_err();
    assert!(err.message.contains("path is required"), "{}", err.message);
}

#[test]
fn file_errors_have_stable_kinds() {
    let (_d, root) = temp_workspace();
    std::fs::create_dir(root.join("dir")).expect("dir");
    std::fs::write(root.join("bin.md"), b"\x00\x01binary").expect("bin");
    let big = std::fs::File::create(root.join("big.md")).expect("big");
    big.set_len(17 * 1024 * 1024).expect("sparse 17 MiB file");
    let cases = [
        ("missing.md", ErrorKind::NotFound, "does not exist"),
        (
            "../escape.md",
            ErrorKind::PathOutsideWorkspace,
            "climbs above",
        ),
        ("/etc/passwd", ErrorKind::PathOutsideWorkspace, "relative"),
        ("dir", ErrorKind::InvalidInput, "directory"),
        ("bin.md", ErrorKind::InvalidInput, "binary"),
        ("big.md", ErrorKind::InvalidInput, "16.0 MiB cap"),
    ];
    for (path, kind, text) in cases {
        let err = run(
            &WorkspaceMarkdown,
            &root,
            json!({"operation": "outline", "path": path}),
        )
        .unwrap_err();
        assert_eq!(err.kind, kind, "{path}: {}", err.message);
        assert!(err.message.contains(text), "{path}: {}", err.message);
    }
}

#[test]
fn symlink_out_of_the_workspace_is_refused() {
    let (_outer, outer) = temp_workspace();
    let root = outer.join("ws");
    std::fs::create_dir(&root).expect("ws");
    std::fs::write(outer.join("secret.md"), "# secret\n").expect("secret");
    std::os::unix::fs::symlink(outer.join("secret.md"), root.join("link.md")).expect("symlink");
    let err = run(
        &WorkspaceMarkdown,
        &root,
        json!({"operation": "outline", "path": "link.md"}),
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::PathOutsideWorkspace);
}

#[test]
fn invalid_utf8_is_a_diagnostic_and_blocks_edits() {
    let (_d, root) = temp_workspace();
    std::fs::write(root.join("l.md"), b"# Title\n\nbad \xff byte  \t\n").expect("write");
    let out = Value::Object(
        run(
            &WorkspaceMarkdown,
            &root,
            json!({"operation": "diagnostics", "path": "l.md"}),
        )
        .expect("runs"),
    );
    let first = &out["diagnostics"][0];
    assert_eq!(
        (
            first["rule"].as_str(),
            first["line"].as_u64(),
            first["column"].as_u64()
        ),
        (Some("invalid-utf8"), Some(3), Some(5))
    );
    let out = Value::Object(
        run(
            &WorkspaceMarkdown,
            &root,
            json!({"operation": "format_suggestions", "path": "l.md"}),
        )
        .expect("runs"),
    );
    assert_eq!(out["suggested_edits"], json!([]));
    assert!(out["summary"]
        .as_str()
        .is_some_and(|s| s.contains("not valid UTF-8")));
}

#[test]
fn every_output_port_is_present() {
    let root = fixtures();
    for op in [
        "outline",
        "diagnostics",
        "format_suggestions",
        "link_check_local",
    ] {
        let out = run(
            &WorkspaceMarkdown,
            &root,
            json!({"operation": op, "path": "links.md"}),
        )
        .expect("runs");
        for port in WorkspaceMarkdown.spec().outputs {
            assert!(out.contains_key(port.name), "{op}: missing {}", port.name);
        }
        assert_eq!(out["success"], true);
        assert_eq!(out["operation"], op);
        assert_eq!(out["path"], "links.md");
    }
}

#[test]
fn rules_doc_lists_every_rule() {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../docs/guides/markdown_rules.md"),
    )
    .expect("docs/guides/markdown_rules.md");
    for rule in RULES {
        let alias = rule.alias.unwrap_or("—");
        let row = format!("| `{}` | {} |", rule.id, alias);
        assert!(
            doc.contains(&row),
            "docs/guides/markdown_rules.md lacks a row starting {row:?}"
        );
    }
}
