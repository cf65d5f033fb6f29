//! Read-only project detection: which test commands a workspace (or monorepo) offers.
//!
//! The walk uses the `ignore` crate: `.gitignore`/`.ignore` files are respected (even outside a
//! git repository), hidden entries and dependency/build directories (`node_modules`, `target`,
//! `vendor`, `dist`, `__pycache__`, …) are skipped, symlinks are never followed, the depth and the
//! number of entries are bounded ([`Limits`]), and the user's global gitignore (a file outside the
//! workspace) is not read. Only recognised manifest files are opened, each read up to
//! [`Limits::max_file_bytes`]; nothing is executed.
//!
//! Every project is reported with its `cwd` (relative to the workspace root), its `type`,
//! `package_manager`, `test_runner`, suggested `commands` as `{command, args, cwd}` objects that
//! the `run` operation accepts unchanged, a `confidence` (`high`: the test command is spelled out
//! by the project; `medium`: inferred from dependencies or conventions; `low`: a project without
//! a visible test setup) and the `evidence` (file, key or line) behind each conclusion. Members of
//! a cargo workspace, maven multi-module or gradle build are listed under the root's `members`
//! rather than as projects of their own.

use regex::Regex;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// Bounds of one detection walk.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Directory entries visited before the walk stops (reported as `truncated`).
    pub max_entries: usize,
    /// Directory levels below the start directory.
    pub max_depth: usize,
    /// Bytes read from one manifest.
    pub max_file_bytes: u64,
}

pub const DEFAULT_LIMITS: Limits = Limits {
    max_entries: 50_000,
    max_depth: 12,
    max_file_bytes: 1 << 20,
};

/// Directories never descended into, ignored or not: dependencies and build output.
const SKIP_DIRS: &[&str] = &[
    "node_modules",
    "target",
    "vendor",
    "dist",
    "__pycache__",
    "site-packages",
    "bower_components",
    ".git",
    ".hg",
    ".svn",
];

/// Files that say something about a project.
const MARKERS: &[&str] = &[
    "Cargo.toml",
    "package.json",
    "pnpm-lock.yaml",
    "pnpm-workspace.yaml",
    "yarn.lock",
    "package-lock.json",
    "bun.lockb",
    "bun.lock",
    "pyproject.toml",
    "setup.cfg",
    "setup.py",
    "pytest.ini",
    "tox.ini",
    "uv.lock",
    "poetry.lock",
    "conftest.py",
    "go.mod",
    "go.work",
    "pom.xml",
    "mvnw",
    "build.gradle",
    "build.gradle.kts",
    "settings.gradle",
    "settings.gradle.kts",
    "gradlew",
    "Makefile",
    "makefile",
    "GNUmakefile",
];

/// The result of a walk.
#[derive(Debug)]
pub struct Detection {
    pub projects: Vec<Value>,
    pub entries: usize,
    pub truncated: bool,
}

/// Detects projects under `start` (inside the canonical `workspace`).
pub fn detect(workspace: &Path, start: &Path, limits: Limits) -> Detection {
    let (markers, entries, truncated) = walk(start, limits);
    let mut ctx = Ctx {
        workspace,
        limits,
        markers,
        files: BTreeMap::new(),
    };
    let dirs: Vec<PathBuf> = ctx.markers.keys().cloned().collect();
    let mut projects: Vec<Project> = Vec::new();
    for dir in &dirs {
        ecosystems::cargo(&mut ctx, dir, &mut projects);
        ecosystems::node(&mut ctx, dir, &mut projects);
        ecosystems::python(&mut ctx, dir, &mut projects);
        ecosystems::go(&mut ctx, dir, &mut projects);
        ecosystems::jvm(&mut ctx, dir, &mut projects);
        ecosystems::make(&mut ctx, dir, &mut projects);
    }
    Detection {
        projects: projects.iter().map(|p| p.to_json(workspace)).collect(),
        entries,
        truncated,
    }
}

/// Walks `start` and returns marker files by directory, the entry count and whether it stopped early.
pub fn walk(start: &Path, limits: Limits) -> (BTreeMap<PathBuf, Vec<&'static str>>, usize, bool) {
    let walker = ignore::WalkBuilder::new(start)
        .hidden(true)
        .parents(false)
        .git_global(false)
        .require_git(false)
        .follow_links(false)
        .max_depth(Some(limits.max_depth))
        .filter_entry(|entry| {
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            !(is_dir
                && entry
                    .file_name()
                    .to_str()
                    .is_some_and(|n| SKIP_DIRS.contains(&n)))
        })
        .build();
    let mut markers: BTreeMap<PathBuf, Vec<&'static str>> = BTreeMap::new();
    let mut entries = 0usize;
    for entry in walker {
        let Ok(entry) = entry else { continue };
        entries += 1;
        if entries > limits.max_entries {
            return (markers, entries - 1, true);
        }
        // Regular files only: a symlinked manifest could point outside the workspace.
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Some(name) = entry.file_name().to_str() else {
            continue;
        };
        if let Some(marker) = MARKERS.iter().find(|m| **m == name) {
            if let Some(parent) = entry.path().parent() {
                markers
                    .entry(parent.to_path_buf())
                    .or_default()
                    .push(marker);
            }
        }
    }
    (markers, entries, false)
}

struct Ctx<'a> {
    workspace: &'a Path,
    limits: Limits,
    markers: BTreeMap<PathBuf, Vec<&'static str>>,
    /// Manifest contents read so far (None: unreadable).
    files: BTreeMap<PathBuf, Option<String>>,
}

impl Ctx<'_> {
    fn has(&self, dir: &Path, name: &str) -> bool {
        self.markers.get(dir).is_some_and(|m| m.contains(&name))
    }

    /// Whether `dir/name` is a regular file, for directories above the walk (inside the workspace).
    fn exists(&self, dir: &Path, name: &str) -> bool {
        self.has(dir, name)
            || (dir.starts_with(self.workspace)
                && std::fs::symlink_metadata(dir.join(name)).is_ok_and(|m| m.file_type().is_file()))
    }

    fn read(&mut self, dir: &Path, name: &str) -> Option<String> {
        let path = dir.join(name);
        if let Some(cached) = self.files.get(&path) {
            return cached.clone();
        }
        let text = if self.exists(dir, name) {
            read_small(&path, self.limits.max_file_bytes)
        } else {
            None
        };
        self.files.insert(path, text.clone());
        text
    }

    /// `dir`'s ancestors up to the workspace root, nearest first.
    fn ancestors<'p>(&self, dir: &'p Path) -> impl Iterator<Item = &'p Path> + 'p {
        let root = self.workspace.to_path_buf();
        dir.ancestors()
            .skip(1)
            .take_while(move |a| a.starts_with(&root))
    }

    /// Ancestors the walk saw (a workspace root above the start directory is not reported, so
    /// its members are reported as projects of their own).
    fn walked_ancestors(&self, dir: &Path) -> Vec<PathBuf> {
        self.ancestors(dir)
            .filter(|a| self.markers.contains_key(*a))
            .map(Path::to_path_buf)
            .collect()
    }

    fn rel(&self, path: &Path) -> String {
        cheng_node::paths::display_relative(self.workspace, path)
    }

    fn evidence(&self, dir: &Path, file: &str, key: &str, line: Option<usize>) -> Value {
        json!({"file": self.rel(&dir.join(file)), "key": key, "line": line})
    }
}

fn read_small(path: &Path, max: u64) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    let mut bytes = Vec::new();
    file.take(max).read_to_end(&mut bytes).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The 1-based line of the first line satisfying `pred`.
fn line_of(text: &str, pred: impl Fn(&str) -> bool) -> Option<usize> {
    text.lines().position(|l| pred(l.trim())).map(|i| i + 1)
}

struct Project {
    dir: PathBuf,
    kind: &'static str,
    workspace: bool,
    package_manager: Option<String>,
    test_runner: Option<String>,
    commands: Vec<(String, Vec<String>)>,
    confidence: &'static str,
    evidence: Vec<Value>,
    members: Vec<String>,
}

impl Project {
    fn new(dir: &Path, kind: &'static str) -> Self {
        Project {
            dir: dir.to_path_buf(),
            kind,
            workspace: false,
            package_manager: None,
            test_runner: None,
            commands: Vec::new(),
            confidence: "low",
            evidence: Vec::new(),
            members: Vec::new(),
        }
    }

    fn command(&mut self, program: &str, args: &[&str]) {
        self.commands.push((
            program.to_string(),
            args.iter().map(|a| a.to_string()).collect(),
        ));
    }

    fn to_json(&self, workspace: &Path) -> Value {
        let cwd = cheng_node::paths::display_relative(workspace, &self.dir);
        let commands: Vec<Value> = self
            .commands
            .iter()
            .map(|(c, a)| json!({"command": c, "args": a, "cwd": cwd}))
            .collect();
        json!({
            "cwd": cwd,
            "type": self.kind,
            "workspace": self.workspace,
            "package_manager": self.package_manager,
            "test_runner": self.test_runner,
            "commands": commands,
            "confidence": self.confidence,
            "evidence": self.evidence,
            "members": self.members,
        })
    }
}

mod ecosystems;
#[cfg(test)]
mod tests;
