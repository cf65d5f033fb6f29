//! Helpers for the list_dir, glob and grep suites.
#![allow(dead_code)]

use cheng_node::{ErrorKind, Node, NodeError, Values};
use serde_json::Value;
use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

pub use cheng_nodes_files::{Glob, Grep, ListDir};

pub use cheng_test_support::temp_workspace;

/// Runs a node the way the engine does: spec defaults applied, then `run`.
pub fn run(node: &dyn Node, root: &Path, input: Value) -> Result<Values, NodeError> {
    cheng_test_support::run_denied(node, root, input)
}

/// A run that must succeed.
pub fn ok(node: &dyn Node, root: &Path, input: Value) -> Values {
    match run(node, root, input.clone()) {
        Ok(out) => {
            assert_eq!(out["success"], true, "{input}: {out:?}");
            out
        }
        Err(e) => panic!("{} {input}: {e}", node.spec().id),
    }
}

/// A run that must fail with `kind`; its message.
pub fn fails(node: &dyn Node, root: &Path, input: Value, kind: ErrorKind) -> String {
    match run(node, root, input.clone()) {
        Ok(out) => panic!("{} {input} succeeded: {out:?}", node.spec().id),
        Err(e) => {
            assert_eq!(e.kind, kind, "{input}: {}", e.message);
            e.message
        }
    }
}

/// Writes `text` at `rel`, creating parents.
pub fn write(root: &Path, rel: &str, text: impl AsRef<[u8]>) {
    let path = root.join(rel);
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).expect("parent");
    }
    fs::write(path, text).expect("write");
}

/// Sets `rel`'s modification time to `secs` after the epoch.
pub fn set_mtime(root: &Path, rel: &str, secs: u64) {
    let file = fs::File::options()
        .write(true)
        .open(root.join(rel))
        .expect("open");
    file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
        .expect("set mtime");
}

pub fn symlink(target: impl AsRef<Path>, link: impl AsRef<Path>) {
    std::os::unix::fs::symlink(target, link).expect("symlink");
}

/// A directory outside the workspace holding `secret.txt` (content `TOPSECRET outside`) and a
/// subdirectory `inner/` with `leak.txt`.
pub fn outside_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    fs::write(dir.path().join("secret.txt"), "TOPSECRET outside\n").expect("write");
    fs::create_dir_all(dir.path().join("inner")).expect("mkdir");
    fs::write(dir.path().join("inner/leak.txt"), "TOPSECRET inner\n").expect("write");
    dir
}

/// `out[key]` as a list of strings.
pub fn strings(out: &Values, key: &str) -> Vec<String> {
    out[key]
        .as_array()
        .unwrap_or_else(|| panic!("{key} is not an array: {out:?}"))
        .iter()
        .map(|v| v.as_str().expect("string").to_string())
        .collect()
}

pub fn text<'a>(out: &'a Values, key: &str) -> &'a str {
    out[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} is not a string: {out:?}"))
}

/// `out["links"]` as (path, link) pairs.
pub fn links(out: &Values) -> Vec<(String, String)> {
    out["links"]
        .as_array()
        .expect("links")
        .iter()
        .map(|l| {
            (
                l["path"].as_str().expect("path").to_string(),
                l["link"].as_str().expect("link").to_string(),
            )
        })
        .collect()
}

/// `n` files under a directory with a 250-byte name, each file name 200 bytes long: paths of
/// about 460 bytes, so 2000 of them exceed any sensible output.
pub fn long_paths(root: &Path, n: usize, content: &str) -> Vec<String> {
    let dir = "d".repeat(250);
    fs::create_dir_all(root.join(&dir)).expect("mkdir");
    (0..n)
        .map(|i| {
            let rel = format!("{dir}/{i:05}{}.txt", "f".repeat(191));
            fs::write(root.join(&rel), content).expect("write");
            rel
        })
        .collect()
}
