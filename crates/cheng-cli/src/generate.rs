//! `cheng schemas` and `cheng docs`: generated files, written or checked for freshness.
//!
//! Both are pure functions of every linked spec (sorted by id), so output is deterministic and
//! does not depend on the environment: nodes behind a gate variable are generated too, their pages
//! saying which variable registers them.

use crate::args::GenerateArgs;
use crate::out::{errln, outln};
use crate::{complain, Exit};
use cheng_engine::catalog;
use cheng_node::{schema, Registry};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Every node linked into this binary, gated ones included, whatever the environment says.
fn every_linked_node() -> Registry {
    Registry::from_inventory_with(|_| true)
}

/// Relative path → expected content.
type Files = BTreeMap<PathBuf, String>;

pub fn schemas(args: &GenerateArgs) -> Exit {
    let Some(dir) = output_dir(args, "schemas") else {
        return Exit::Usage;
    };
    let registry = every_linked_node();
    let mut files = Files::new();
    for spec in registry.specs() {
        let text = match serde_json::to_string_pretty(&schema::node_schemas(spec)) {
            Ok(text) => text,
            Err(e) => {
                complain(format!("cannot render the schema of {}: {e}", spec.id));
                return Exit::Failed;
            }
        };
        if files
            .insert(
                PathBuf::from(format!("{}.json", spec.short_name())),
                text + "\n",
            )
            .is_some()
        {
            complain(format!(
                "two node types share the file name {}.json",
                spec.short_name()
            ));
            return Exit::Failed;
        }
    }
    match serde_json::to_string_pretty(&crate::graph_schema::graph_schema(&registry)) {
        Ok(text) => {
            files.insert(PathBuf::from("graph.json"), text + "\n");
        }
        Err(e) => {
            complain(format!("cannot render the graph schema: {e}"));
            return Exit::Failed;
        }
    }
    match serde_json::to_string_pretty(&cheng_http::openapi::document()) {
        Ok(text) => {
            files.insert(PathBuf::from(cheng_http::openapi::FILE), text + "\n");
        }
        Err(e) => {
            complain(format!(
                "cannot render the HTTP API's OpenAPI document: {e}"
            ));
            return Exit::Failed;
        }
    }
    let managed = |rel: &Path| {
        rel.parent() == Some(Path::new("")) && rel.extension().is_some_and(|e| e == "json")
    };
    sync(&dir, &files, &managed, args.write, "cheng schemas --write")
}

pub fn docs(args: &GenerateArgs) -> Exit {
    let Some(dir) = output_dir(args, "docs") else {
        return Exit::Usage;
    };
    let registry = every_linked_node();
    let mut files = Files::new();
    for spec in registry.specs() {
        if files
            .insert(
                Path::new("nodes").join(format!("{}.md", spec.short_name())),
                catalog::node_markdown(spec),
            )
            .is_some()
        {
            complain(format!(
                "two node types share the file name {}.md",
                spec.short_name()
            ));
            return Exit::Failed;
        }
    }
    files.insert(
        Path::new("nodes").join("README.md"),
        catalog::index_markdown(registry.specs()),
    );
    files.insert(PathBuf::from("errors.md"), catalog::errors_markdown());
    // Hand-written guides elsewhere in docs/ are left alone.
    let managed = |rel: &Path| {
        rel == Path::new("errors.md")
            || (rel.parent() == Some(Path::new("nodes"))
                && rel.extension().is_some_and(|e| e == "md"))
    };
    sync(&dir, &files, &managed, args.write, "cheng docs --write")
}

/// Writes `files` under `dir` (removing managed files not among them), or checks that `dir`
/// already holds exactly them.
/// `--dir`, else `default` under the current directory when that is the cheng repository's root;
/// elsewhere these maintainer commands say so instead of reporting every file as missing.
fn output_dir(args: &GenerateArgs, default: &str) -> Option<PathBuf> {
    if let Some(dir) = &args.dir {
        return Some(dir.clone());
    }
    if Path::new("crates/cheng-cli/Cargo.toml").is_file() {
        return Some(PathBuf::from(default));
    }
    complain(format!(
        "`cheng {default}` maintains the generated files of the cheng repository, and the current directory \
         is not its root (no crates/cheng-cli/Cargo.toml here); run it at the repository's root, or pass --dir DIR"
    ));
    None
}

fn sync(
    dir: &Path,
    files: &Files,
    managed: &dyn Fn(&Path) -> bool,
    write: bool,
    fix: &str,
) -> Exit {
    let existing = match existing_files(dir, managed) {
        Ok(existing) => existing,
        Err(e) => {
            complain(format!("cannot read {}: {e}", dir.display()));
            return Exit::Failed;
        }
    };
    let extra: Vec<&PathBuf> = existing
        .iter()
        .filter(|p| !files.contains_key(*p))
        .collect();
    if write {
        for (rel, text) in files {
            let path = dir.join(rel);
            let result = path
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| {
                    if std::fs::read_to_string(&path).ok().as_deref() == Some(text) {
                        Ok(())
                    } else {
                        std::fs::write(&path, text)
                    }
                });
            if let Err(e) = result {
                complain(format!("cannot write {}: {e}", path.display()));
                return Exit::Failed;
            }
        }
        for rel in &extra {
            let path = dir.join(rel);
            if let Err(e) = std::fs::remove_file(&path) {
                complain(format!("cannot remove stale {}: {e}", path.display()));
                return Exit::Failed;
            }
        }
        let _ = outln!(
            "wrote {} files to {}{}",
            files.len(),
            dir.display(),
            removed_note(extra.len())
        );
        return Exit::Ok;
    }
    let mut problems = Vec::new();
    for (rel, text) in files {
        match std::fs::read_to_string(dir.join(rel)) {
            Ok(current) if &current == text => {}
            Ok(_) => problems.push(format!("stale:   {}", rel.display())),
            Err(_) => problems.push(format!("missing: {}", rel.display())),
        }
    }
    problems.extend(
        extra
            .iter()
            .map(|rel| format!("extra:   {}", rel.display())),
    );
    if problems.is_empty() {
        let _ = outln!(
            "ok: {} files in {} are up to date",
            files.len(),
            dir.display()
        );
        return Exit::Ok;
    }
    complain(format!("{} is out of date:", dir.display()));
    for problem in &problems {
        errln!("  {problem}");
    }
    errln!("run `{fix}` to regenerate (gated nodes are generated only when their CHENG_ENABLE_* variable is set; the checked-in files have them unset)");
    Exit::Failed
}

fn removed_note(n: usize) -> String {
    if n == 0 {
        String::new()
    } else {
        format!(" (removed {n} stale)")
    }
}

/// Managed files under `dir`, relative, one directory level deep (enough for `nodes/`).
fn existing_files(dir: &Path, managed: &dyn Fn(&Path) -> bool) -> std::io::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    if !dir.exists() {
        return Ok(found);
    }
    let mut stack = vec![(dir.to_path_buf(), PathBuf::new(), 0)];
    while let Some((abs, rel, depth)) = stack.pop() {
        for entry in std::fs::read_dir(&abs)? {
            let entry = entry?;
            let rel = rel.join(entry.file_name());
            let kind = entry.file_type()?;
            if kind.is_dir() && depth == 0 {
                stack.push((entry.path(), rel, depth + 1));
            } else if kind.is_file() && managed(&rel) {
                found.push(rel);
            }
        }
    }
    found.sort();
    Ok(found)
}
