//! Editable text round trips through the real nodes: an edit changes exactly the edited bytes,
//! whatever the encoding, BOM and line endings; everything else stays byte-identical.

use super::support::*;
use cheng_node::ScopeKind;
use cheng_nodes_files::{EditFile, ReadFile, WriteFile};
use serde_json::json;

fn utf16(text: &str, le: bool) -> Vec<u8> {
    let bom: [u8; 2] = if le { [0xFF, 0xFE] } else { [0xFE, 0xFF] };
    bom.into_iter()
        .chain(
            text.encode_utf16()
                .flat_map(|u| if le { u.to_le_bytes() } else { u.to_be_bytes() }),
        )
        .collect()
}

fn gbk(text: &str) -> Vec<u8> {
    encoding_rs::GBK.encode(text).0.into_owned()
}

/// Text (LF line breaks) to a file's bytes.
type Encode = Box<dyn Fn(&str) -> Vec<u8>>;

/// `(name, encode)`: every format, as a function from text (with the file's own line breaks).
fn formats() -> Vec<(&'static str, Encode)> {
    vec![
        ("lf.txt", Box::new(|t: &str| t.as_bytes().to_vec())),
        (
            "crlf.txt",
            Box::new(|t: &str| t.replace('\n', "\r\n").into_bytes()),
        ),
        (
            "bom.txt",
            Box::new(|t: &str| {
                [
                    b"\xEF\xBB\xBF".as_slice(),
                    t.replace('\n', "\r\n").as_bytes(),
                ]
                .concat()
            }),
        ),
        (
            "utf16le.txt",
            Box::new(|t: &str| utf16(&t.replace('\n', "\r\n"), true)),
        ),
        ("utf16be.txt", Box::new(|t: &str| utf16(t, false))),
        ("gbk.txt", Box::new(|t: &str| gbk(&t.replace('\n', "\r\n")))),
    ]
}

#[test]
fn edits_keep_encoding_bom_and_line_endings_byte_identical() {
    let (_d, ws) = temp_workspace();
    let before = "第一行 first\n第二行 second\nthird 三\n";
    let after = "第一行 first\n第二行 changed 改\nthird 三\n";
    let c = ctx(&ReadFile, &ws, ScopeKind::Graph);
    for (name, encode) in formats() {
        std::fs::write(ws.join(name), encode(before)).unwrap();
        let read = ok(&ReadFile, &c, json!({"file_path": name}));
        assert!(
            read["content"]
                .as_str()
                .unwrap()
                .contains("L2: 第二行 second"),
            "{name}: {read:#?}"
        );
        ok(
            &EditFile,
            &c,
            json!({"file_path": name, "old": "second", "new": "changed 改"}),
        );
        assert_eq!(
            std::fs::read(ws.join(name)).unwrap(),
            encode(after),
            "{name}"
        );
        // And back: the original bytes exactly.
        ok(
            &EditFile,
            &c,
            json!({"file_path": name, "old": "changed 改", "new": "second"}),
        );
        assert_eq!(
            std::fs::read(ws.join(name)).unwrap(),
            encode(before),
            "{name}"
        );
    }
}

#[test]
fn write_file_over_an_existing_file_writes_its_format() {
    let (_d, ws) = temp_workspace();
    let c = ctx(&ReadFile, &ws, ScopeKind::Graph);
    for (name, encode) in formats() {
        std::fs::write(ws.join(name), encode("old 旧\n")).unwrap();
        ok(&ReadFile, &c, json!({"file_path": name}));
        ok(
            &WriteFile,
            &c,
            json!({"file_path": name, "content": "new 新\nline\n"}),
        );
        assert_eq!(
            std::fs::read(ws.join(name)).unwrap(),
            encode("new 新\nline\n"),
            "{name}"
        );
    }
}

#[test]
fn gbk_refuses_characters_it_cannot_write_and_undecodable_files_are_refused() {
    let (_d, ws) = temp_workspace();
    std::fs::write(ws.join("gbk.txt"), gbk("中文\n")).unwrap();
    std::fs::write(ws.join("latin1.txt"), b"caf\xE9 \xFF\n").unwrap();
    let c = ctx(&ReadFile, &ws, ScopeKind::Graph);
    ok(&ReadFile, &c, json!({"file_path": "gbk.txt"}));
    let err = fails(
        &EditFile,
        &c,
        json!({"file_path": "gbk.txt", "old": "中文", "new": "emoji \u{1F600}"}),
        "LOCAL_EXECUTOR_INVALID_INPUT",
    );
    assert!(err.contains("GBK has no code"), "{err}");
    assert_eq!(std::fs::read(ws.join("gbk.txt")).unwrap(), gbk("中文\n"));
    let read = ok(&ReadFile, &c, json!({"file_path": "latin1.txt"}));
    assert!(
        read["warnings"][0]
            .as_str()
            .unwrap()
            .contains("never guesses"),
        "{read:#?}"
    );
    let err = fails(
        &EditFile,
        &c,
        json!({"file_path": "latin1.txt", "old": "caf", "new": "tea"}),
        "LOCAL_EXECUTOR_INVALID_INPUT",
    );
    assert!(err.contains("cannot be edited as text"), "{err}");
}
