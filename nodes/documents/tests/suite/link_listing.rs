//! link_check_local lists a directory once many links point into it, and takes only a name's
//! absence from the listing. The outcomes must stay exactly what resolving each link gives:
//! symlinks out of the workspace (to a file or through a directory) are still reported as
//! outside, names present are still resolved, and a directory leading out is never listed.

use super::support::*;
use cheng_nodes_documents::WorkspaceMarkdown;
use serde_json::{json, Value};

#[test]
fn many_links_into_one_directory_keep_every_outcome() {
    let (_outer, outer) = temp_workspace();
    let root = outer.join("ws");
    std::fs::create_dir_all(root.join("d")).expect("mkdir");
    std::fs::create_dir_all(outer.join("outside")).expect("mkdir");
    std::fs::write(outer.join("outside/there.md"), "# X\n").expect("outside file");
    std::fs::write(root.join("d/real.md"), "# Real\n").expect("real");
    std::os::unix::fs::symlink(outer.join("outside/there.md"), root.join("d/escape.md"))
        .expect("symlink");
    std::os::unix::fs::symlink(outer.join("outside"), root.join("out")).expect("dir symlink");
    let mut md = String::from("# Main\n\n");
    // Far more links per directory than the listing threshold, in both directories.
    for round in 0..3 {
        for i in 0..100 {
            md.push_str(&format!("[m](d/missing{i}.md) [o](out/missing{i}.md) "));
        }
        md.push_str(&format!(
            "[r{round}](d/real.md) [e{round}](d/escape.md) [t{round}](out/there.md)\n\n"
        ));
    }
    std::fs::write(root.join("main.md"), md).expect("main");
    let out = Value::Object(
        run(
            &WorkspaceMarkdown,
            &root,
            json!({"operation": "link_check_local", "path": "main.md"}),
        )
        .expect("runs"),
    );
    let summary = out["summary"].as_str().unwrap_or_default();
    // 600 missing (300 through the symlinked directory: not found either way), 3 real,
    // 3 file symlinks out, 3 found through the directory symlink out.
    assert!(
        summary.contains("609 local links checked: 3 ok, 600 broken, 6 outside"),
        "{summary}"
    );
    let diags = out["diagnostics"].as_array().cloned().unwrap_or_default();
    let outside: Vec<&str> = diags
        .iter()
        .filter(|d| d["rule"] == "outside-workspace")
        .filter_map(|d| d["target"].as_str())
        .collect();
    assert_eq!(
        outside,
        [
            "d/escape.md",
            "out/there.md",
            "d/escape.md",
            "out/there.md",
            "d/escape.md",
            "out/there.md"
        ]
    );
}
