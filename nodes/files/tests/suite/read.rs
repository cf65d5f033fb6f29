//! read_file: every limit and format of the contract (golden), and a 100 MB file read only as far
//! as its window.

use super::support::*;
use cheng_node::ScopeKind;
use cheng_nodes_files::read_file::{read_window, ReadFile, MAX_LINE_LENGTH};
use cheng_nodes_files::tag::tag;
use serde_json::json;
use std::io::{BufReader, Read};

#[test]
fn slice_golden_header_prefixes_offset_limit_and_crlf() {
    let (_d, ws) = temp_workspace();
    let text = "one\r\ntwo\r\n\tthree\r\nfour\r\n";
    std::fs::write(ws.join("a.txt"), text).unwrap();
    let c = ctx(&ReadFile, &ws, ScopeKind::Call);
    let out = ok(&ReadFile, &c, json!({"file_path": "a.txt"}));
    let t = tag(text.as_bytes());
    assert_eq!(
        out["content"],
        format!("[a.txt#{t}]\nL1: one\nL2: two\nL3: \tthree\nL4: four")
    );
    assert_eq!(out["tag"], t);
    assert_eq!(out["lines"], 4);
    let out = ok(
        &ReadFile,
        &c,
        json!({"file_path": "a.txt", "offset": 2, "limit": 2}),
    );
    assert_eq!(out["content"], format!("[a.txt#{t}]\nL2: two\nL3: \tthree"));
    let err = fails(
        &ReadFile,
        &c,
        json!({"file_path": "a.txt", "offset": 5}),
        "LOCAL_EXECUTOR_INVALID_INPUT",
    );
    assert!(
        err.contains("offset 5 is past the end of the file (4 lines)"),
        "{err}"
    );
    // An absolute path inside the workspace is the same file.
    let out = ok(
        &ReadFile,
        &c,
        json!({"file_path": ws.join("a.txt").to_str().unwrap(), "limit": 1}),
    );
    assert_eq!(out["content"], format!("[a.txt#{t}]\nL1: one"));
}

#[test]
fn defaults_are_the_reference_pages_and_limits_are_enforced() {
    let spec = &cheng_nodes_files::read_file::SPEC;
    assert_eq!(spec.input("offset").unwrap().default, Some("1"));
    assert_eq!(spec.input("limit").unwrap().default, Some("2000"));
    let (_d, ws) = temp_workspace();
    let text: String = (1..=2500).map(|i| format!("line {i}\n")).collect();
    std::fs::write(ws.join("many.txt"), &text).unwrap();
    let c = ctx(&ReadFile, &ws, ScopeKind::Call);
    let out = ok(&ReadFile, &c, json!({"file_path": "many.txt"}));
    assert_eq!(out["lines"], 2000);
    assert!(out["content"]
        .as_str()
        .unwrap()
        .ends_with("\nL2000: line 2000"));
    let err = fails(
        &ReadFile,
        &c,
        json!({"file_path": "many.txt", "limit": 2001}),
        "LOCAL_EXECUTOR_INVALID_INPUT",
    );
    assert!(err.contains("2000"), "{err}");
}

#[test]
fn long_lines_are_cut_at_500_bytes_on_a_character_boundary() {
    let (_d, ws) = temp_workspace();
    // 499 ASCII bytes then a 3-byte character straddling byte 500.
    let line = format!("{}\u{4E2D}tail", "a".repeat(MAX_LINE_LENGTH - 1));
    std::fs::write(ws.join("long.txt"), format!("{line}\nshort\n")).unwrap();
    let c = ctx(&ReadFile, &ws, ScopeKind::Call);
    let out = ok(&ReadFile, &c, json!({"file_path": "long.txt"}));
    let content = out["content"].as_str().unwrap();
    let first = content.lines().nth(1).unwrap();
    assert_eq!(
        first,
        format!("L1: {} [...]", "a".repeat(MAX_LINE_LENGTH - 1))
    );
    assert!(
        out["warnings"][0].as_str().unwrap().contains("500 bytes"),
        "{out:#?}"
    );
}

#[test]
fn empty_binary_directory_and_fifo() {
    let (_d, ws) = temp_workspace();
    std::fs::write(ws.join("empty.txt"), "").unwrap();
    std::fs::write(ws.join("bin"), b"\x7fELF\0\0").unwrap();
    std::fs::create_dir(ws.join("dir")).unwrap();
    let c = ctx(&ReadFile, &ws, ScopeKind::Call);
    let out = ok(&ReadFile, &c, json!({"file_path": "empty.txt"}));
    assert_eq!(out["content"], format!("[empty.txt#{}]", tag(b"")));
    assert!(fails(
        &ReadFile,
        &c,
        json!({"file_path": "bin"}),
        "LOCAL_EXECUTOR_INVALID_INPUT"
    )
    .contains("binary"));
    assert!(fails(
        &ReadFile,
        &c,
        json!({"file_path": "dir"}),
        "LOCAL_EXECUTOR_INVALID_INPUT"
    )
    .contains("directory"));
    fails(
        &ReadFile,
        &c,
        json!({"file_path": "missing"}),
        "LOCAL_EXECUTOR_NOT_FOUND",
    );
    // A FIFO with no writer would block an ordinary open forever.
    let status = std::process::Command::new("mkfifo")
        .arg(ws.join("fifo"))
        .status()
        .unwrap();
    assert!(status.success());
    let err = fails(
        &ReadFile,
        &c,
        json!({"file_path": "fifo"}),
        "LOCAL_EXECUTOR_INVALID_INPUT",
    );
    assert!(err.contains("not a regular file"), "{err}");
}

#[test]
fn indentation_mode_golden() {
    let (_d, ws) = temp_workspace();
    let text = "fn outer() {\n    if cond {\n        inner();\n    }\n    tail();\n}\n";
    std::fs::write(ws.join("a.rs"), text).unwrap();
    let c = ctx(&ReadFile, &ws, ScopeKind::Call);
    let body = |out: &cheng_node::Values| {
        out["content"]
            .as_str()
            .unwrap()
            .lines()
            .skip(1)
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let out = ok(
        &ReadFile,
        &c,
        json!({"file_path": "a.rs", "mode": "indentation", "indentation": {"anchor_line": 3, "max_levels": 1}}),
    );
    assert_eq!(
        body(&out),
        ["L2:     if cond {", "L3:         inner();", "L4:     }"]
    );
    let out = ok(
        &ReadFile,
        &c,
        json!({"file_path": "a.rs", "mode": "indentation", "indentation": {"anchor_line": 3, "max_levels": 1, "include_siblings": true}}),
    );
    assert_eq!(
        body(&out),
        [
            "L2:     if cond {",
            "L3:         inner();",
            "L4:     }",
            "L5:     tail();"
        ]
    );
    // max_levels 0: no limit, the whole function.
    let out = ok(
        &ReadFile,
        &c,
        json!({"file_path": "a.rs", "mode": "indentation", "offset": 3}),
    );
    assert_eq!(body(&out).len(), 6);
    let out = ok(
        &ReadFile,
        &c,
        json!({"file_path": "a.rs", "mode": "indentation", "indentation": {"anchor_line": 3, "max_lines": 1}}),
    );
    assert_eq!(body(&out), ["L3:         inner();"]);
    // Header comments above a block at its level are kept, other lines at that level are not;
    // below, the first line at the block's level is kept (in C-like code it closes the block),
    // as Codex does.
    std::fs::write(
        ws.join("b.py"),
        "x = 1\n# about f\ndef f():\n    return 1\ndef g():\n    pass\n",
    )
    .unwrap();
    let out = ok(
        &ReadFile,
        &c,
        json!({"file_path": "b.py", "mode": "indentation", "indentation": {"anchor_line": 4, "max_levels": 1}}),
    );
    assert_eq!(
        body(&out),
        [
            "L2: # about f",
            "L3: def f():",
            "L4:     return 1",
            "L5: def g():",
            "L6:     pass"
        ]
    );
    let out = ok(
        &ReadFile,
        &c,
        json!({"file_path": "b.py", "mode": "indentation", "indentation": {"anchor_line": 4, "max_levels": 1, "include_header": false}}),
    );
    assert_eq!(
        body(&out),
        [
            "L3: def f():",
            "L4:     return 1",
            "L5: def g():",
            "L6:     pass"
        ]
    );
    let err = fails(
        &ReadFile,
        &c,
        json!({"file_path": "a.rs", "mode": "indentation", "indentation": {"anchor_line": 99}}),
        "LOCAL_EXECUTOR_INVALID_INPUT",
    );
    assert!(err.contains("anchor_line 99"), "{err}");
    let err = fails(
        &ReadFile,
        &c,
        json!({"file_path": "a.rs", "mode": "indentation", "indentation": {"anchr": 1}}),
        "LOCAL_EXECUTOR_INVALID_INPUT",
    );
    assert!(err.contains("indentation.anchr"), "{err}");
}

/// A reader that fails once more than `allowed` bytes are asked of it.
struct Fuse<R> {
    inner: R,
    allowed: u64,
    given: u64,
}

impl<R: Read> Read for Fuse<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.given >= self.allowed {
            return Err(std::io::Error::other("read past the window"));
        }
        let room = buf.len().min((self.allowed - self.given) as usize);
        let n = self.inner.read(&mut buf[..room])?;
        self.given += n as u64;
        Ok(n)
    }
}

#[test]
fn a_window_reads_only_as_far_as_its_last_line() {
    // 3000 lines, then a stream that fails: the 2000-line window never touches it.
    let head: Vec<u8> = (1..=3000)
        .flat_map(|i| format!("line {i}\n").into_bytes())
        .collect();
    let window_end = head
        .iter()
        .enumerate()
        .filter(|(_, &b)| b == b'\n')
        .nth(1999)
        .unwrap()
        .0 as u64
        + 1;
    let fused = Fuse {
        inner: std::io::Cursor::new(head.clone()),
        allowed: window_end + 64 * 1024,
        given: 0,
    };
    let window = read_window(BufReader::with_capacity(4096, fused), 1, 2000).unwrap();
    assert_eq!(window.lines.len(), 2000);
    assert_eq!(window.lines[1999], "L2000: line 2000");
    assert_eq!(window.bytes_read, window_end);
    // One line of 50 MB keeps 500 bytes of it.
    let huge = vec![b'x'; 50 << 20];
    let window = read_window(BufReader::new(&huge[..]), 1, 1).unwrap();
    assert!(window.lines[0].len() < 600);
}

#[test]
fn a_100_mb_file_is_read_by_its_window_untagged() {
    let (_d, ws) = temp_workspace();
    let path = ws.join("big.log");
    let head: String = (1..=3000).map(|i| format!("entry {i}\n")).collect();
    std::fs::write(&path, &head).unwrap();
    // Sparse: the rest are NUL bytes nobody needs to read (nor may call the file binary for).
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(100 << 20)
        .unwrap();
    let c = ctx(&ReadFile, &ws, ScopeKind::Graph);
    let out = ok(
        &ReadFile,
        &c,
        json!({"file_path": "big.log", "offset": 11, "limit": 5}),
    );
    assert_eq!(
        out["content"],
        "[big.log]\nL11: entry 11\nL12: entry 12\nL13: entry 13\nL14: entry 14\nL15: entry 15"
    );
    assert_eq!(out["tag"], serde_json::Value::Null);
    assert!(
        out["warnings"][0].as_str().unwrap().contains("has no tag"),
        "{out:#?}"
    );
    let err = fails(
        &ReadFile,
        &c,
        json!({"file_path": "big.log", "mode": "indentation"}),
        "LOCAL_EXECUTOR_INVALID_INPUT",
    );
    assert!(err.contains("slice"), "{err}");
}

#[test]
fn other_encodings_are_shown_decoded_with_a_note() {
    let (_d, ws) = temp_workspace();
    let utf16: Vec<u8> = [0xFF, 0xFE]
        .into_iter()
        .chain("héllo\nwörld\n".encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    std::fs::write(ws.join("u16.txt"), &utf16).unwrap();
    let c = ctx(&ReadFile, &ws, ScopeKind::Call);
    let out = ok(&ReadFile, &c, json!({"file_path": "u16.txt"}));
    assert_eq!(
        out["content"],
        format!("[u16.txt#{}]\nL1: héllo\nL2: wörld", tag(&utf16))
    );
    assert!(
        out["warnings"][0].as_str().unwrap().contains("UTF-16 LE"),
        "{out:#?}"
    );
}
