//! Small /etc directories recreated in the read-only root (directories made, files copied,
//! symlinks recreated) instead of bound: the script sees the host's tree and contents, and can
//! change nothing in it.

use super::sandbox_support::*;
use cheng_nodes_code::shell::CodeShell;
use serde_json::json;

/// Every entry under `dirs` with its type and link target, then the checksum of each regular
/// file: what a read-only bind would show (a directory's size is its file system's own).
fn listing(dirs: &str) -> String {
    format!(
        "find {dirs} -printf '%p %y %l\\n' 2>/dev/null | LC_ALL=C sort; \
         find {dirs} -type f -readable -exec md5sum {{}} + 2>/dev/null | LC_ALL=C sort"
    )
}

#[tokio::test]
async fn copied_etc_directories_show_the_host_tree() {
    if !sandbox_available() { return; }
    let (_d, ws) = workspace();
    // The directories small enough to be recreated on a Debian-like host (any other is bound).
    let dirs = "/etc/ld.so.conf.d /etc/ca-certificates";
    let host = std::process::Command::new("sh").args(["-c", &listing(dirs)]).output().expect("sh").stdout;
    let host = String::from_utf8_lossy(&host).trim_end().to_string();
    let out = run(&CodeShell, &ws, json!({"script": listing(dirs)})).await;
    assert_eq!(out["success"], true, "{out:?}");
    assert_eq!(out["stdout"].as_str().unwrap_or_default().trim_end(), host);
}

#[tokio::test]
async fn copied_etc_directories_are_read_only() {
    if !sandbox_available() { return; }
    let (_d, ws) = workspace();
    let Some(dir) = ["/etc/ld.so.conf.d", "/etc/ca-certificates"].into_iter().find(|d| std::path::Path::new(d).is_dir()) else {
        return;
    };
    let script = format!(
        "for f in {dir}/* {dir}/new.conf; do (echo x >> \"$f\") 2>/dev/null && echo \"wrote $f\"; done; \
         mkdir {dir}/new 2>/dev/null && echo made; rm -rf {dir}/* 2>/dev/null; ls -A {dir} | wc -l"
    );
    let out = run(&CodeShell, &ws, json!({"script": script})).await;
    assert_eq!(out["success"], true, "{out:?}");
    let count = std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0);
    assert_eq!(out["stdout"].as_str().unwrap_or_default().trim(), count.to_string(), "{out:?}");
}
