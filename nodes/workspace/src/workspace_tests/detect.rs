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
        cargo(&mut ctx, dir, &mut projects);
        node(&mut ctx, dir, &mut projects);
        python(&mut ctx, dir, &mut projects);
        go(&mut ctx, dir, &mut projects);
        jvm(&mut ctx, dir, &mut projects);
        make(&mut ctx, dir, &mut projects);
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

fn cargo(ctx: &mut Ctx, dir: &Path, projects: &mut Vec<Project>) {
    if !ctx.has(dir, "Cargo.toml") {
        return;
    }
    let text = ctx.read(dir, "Cargo.toml").unwrap_or_default();
    let workspace_line = line_of(&text, |l| l == "[workspace]");
    let package_line = line_of(&text, |l| l == "[package]");
    if workspace_line.is_none() {
        // A member of an enclosing cargo workspace is tested from there.
        for ancestor in ctx.walked_ancestors(dir) {
            let is_root = ctx
                .read(&ancestor, "Cargo.toml")
                .is_some_and(|t| t.lines().any(|l| l.trim() == "[workspace]"));
            if is_root {
                let member = ctx.rel(dir);
                if let Some(root) = projects
                    .iter_mut()
                    .find(|p| p.kind == "cargo" && p.dir == ancestor)
                {
                    root.members.push(member);
                }
                return;
            }
        }
    }
    let mut p = Project::new(dir, "cargo");
    p.package_manager = Some("cargo".into());
    p.test_runner = Some("cargo test".into());
    p.confidence = "high";
    p.workspace = workspace_line.is_some();
    if let Some(line) = workspace_line {
        p.evidence
            .push(ctx.evidence(dir, "Cargo.toml", "[workspace]", Some(line)));
        p.command("cargo", &["test", "--workspace"]);
    } else {
        p.evidence
            .push(ctx.evidence(dir, "Cargo.toml", "[package]", package_line));
        p.command("cargo", &["test"]);
    }
    if ctx.exists(&dir.join(".config"), "nextest.toml") {
        p.evidence
            .push(ctx.evidence(dir, ".config/nextest.toml", "nextest configuration", None));
        p.test_runner = Some("cargo nextest".into());
        let args: &[&str] = if p.workspace {
            &["nextest", "run", "--workspace"]
        } else {
            &["nextest", "run"]
        };
        p.command("cargo", args);
    }
    projects.push(p);
}

/// Lockfiles in preference order, with the package manager each names.
const LOCKFILES: &[(&str, &str)] = &[
    ("pnpm-lock.yaml", "pnpm"),
    ("yarn.lock", "yarn"),
    ("bun.lockb", "bun"),
    ("bun.lock", "bun"),
    ("package-lock.json", "npm"),
];

fn node(ctx: &mut Ctx, dir: &Path, projects: &mut Vec<Project>) {
    if !ctx.has(dir, "package.json") {
        return;
    }
    let text = ctx.read(dir, "package.json").unwrap_or_default();
    let mut p = Project::new(dir, "node");
    let Ok(manifest) = serde_json::from_str::<Value>(&text) else {
        p.evidence
            .push(ctx.evidence(dir, "package.json", "not valid JSON", None));
        projects.push(p);
        return;
    };
    // Package manager: the `packageManager` field, else the nearest lockfile (a monorepo keeps
    // one at its root), else npm.
    if let Some(pm) = manifest.get("packageManager").and_then(Value::as_str) {
        let name = pm.split('@').next().unwrap_or(pm).to_string();
        p.evidence
            .push(ctx.evidence(dir, "package.json", &format!("packageManager: {pm}"), None));
        p.package_manager = Some(name);
    } else {
        let dirs: Vec<PathBuf> = std::iter::once(dir)
            .chain(ctx.ancestors(dir))
            .map(Path::to_path_buf)
            .collect();
        'search: for d in dirs {
            for (lock, pm) in LOCKFILES {
                if ctx.exists(&d, lock) {
                    p.evidence.push(ctx.evidence(&d, lock, "lockfile", None));
                    p.package_manager = Some((*pm).to_string());
                    break 'search;
                }
            }
        }
    }
    let pm = p.package_manager.clone().unwrap_or_else(|| {
        p.evidence.push(json!({"file": ctx.rel(&dir.join("package.json")), "key": "no lockfile; npm assumed", "line": null}));
        "npm".to_string()
    });
    p.package_manager = Some(pm.clone());
    if manifest.get("workspaces").is_some() || ctx.exists(dir, "pnpm-workspace.yaml") {
        p.workspace = true;
        p.evidence
            .push(ctx.evidence(dir, "package.json", "workspaces", None));
    }
    let script = manifest
        .pointer("/scripts/test")
        .and_then(Value::as_str)
        .filter(|s| !s.contains("no test specified"));
    let dependency = |name: &str| {
        ["devDependencies", "dependencies"]
            .iter()
            .any(|k| manifest.get(*k).and_then(|d| d.get(name)).is_some())
    };
    let runner_in = |text: &str| -> Option<&'static str> {
        [
            ("vitest", "vitest"),
            ("jest", "jest"),
            ("node --test", "node --test"),
            ("node:test", "node --test"),
            ("mocha", "mocha"),
        ]
        .iter()
        .find(|(needle, _)| text.contains(needle))
        .map(|(_, runner)| *runner)
    };
    if let Some(script) = script {
        p.evidence.push(ctx.evidence(
            dir,
            "package.json",
            &format!("scripts.test: {script}"),
            None,
        ));
        p.test_runner = Some(runner_in(script).unwrap_or("package script").to_string());
        p.confidence = "high";
        match pm.as_str() {
            "bun" => p.command("bun", &["run", "test"]),
            other => p.command(other, &["test"]),
        }
    } else if let Some(runner) = ["vitest", "jest", "mocha"]
        .into_iter()
        .find(|r| dependency(r))
    {
        p.evidence.push(ctx.evidence(
            dir,
            "package.json",
            &format!("devDependencies.{runner} (no test script)"),
            None,
        ));
        p.test_runner = Some(runner.to_string());
        p.confidence = "medium";
        let run_args: &[&str] = if runner == "vitest" {
            &["vitest", "run"]
        } else {
            &[runner]
        };
        match pm.as_str() {
            "pnpm" => p.command("pnpm", &[&["exec"], run_args].concat()),
            "yarn" => p.command("yarn", run_args),
            "bun" => p.command("bunx", run_args),
            _ => p.command("npx", &[&["--no-install"], run_args].concat()),
        }
    } else {
        p.evidence.push(ctx.evidence(
            dir,
            "package.json",
            "no test script or test runner dependency",
            None,
        ));
    }
    projects.push(p);
}

fn python(ctx: &mut Ctx, dir: &Path, projects: &mut Vec<Project>) {
    let manifests = [
        "pyproject.toml",
        "setup.cfg",
        "setup.py",
        "pytest.ini",
        "tox.ini",
    ];
    if !manifests.iter().any(|m| ctx.has(dir, m)) {
        return;
    }
    let mut p = Project::new(dir, "python");
    let mut pytest_config = false;
    let mut pytest_hint = false;
    if ctx.has(dir, "pytest.ini") {
        pytest_config = true;
        p.evidence
            .push(ctx.evidence(dir, "pytest.ini", "pytest configuration", None));
    }
    let sections: [(&str, &str); 3] = [
        ("pyproject.toml", "[tool.pytest.ini_options]"),
        ("setup.cfg", "[tool:pytest]"),
        ("tox.ini", "[pytest]"),
    ];
    for (file, section) in sections {
        if let Some(text) = ctx.read(dir, file) {
            if let Some(line) = line_of(&text, |l| l == section) {
                pytest_config = true;
                p.evidence
                    .push(ctx.evidence(dir, file, section, Some(line)));
            } else if let Some(line) = line_of(&text, |l| l.contains("pytest")) {
                pytest_hint = true;
                p.evidence
                    .push(ctx.evidence(dir, file, "mentions pytest", Some(line)));
            }
        }
    }
    if ctx.has(dir, "conftest.py") {
        pytest_hint = true;
        p.evidence
            .push(ctx.evidence(dir, "conftest.py", "pytest conftest", None));
    }
    let pyproject = ctx.read(dir, "pyproject.toml").unwrap_or_default();
    p.package_manager = Some(if ctx.has(dir, "uv.lock") {
        p.evidence
            .push(ctx.evidence(dir, "uv.lock", "lockfile", None));
        "uv".to_string()
    } else if ctx.has(dir, "poetry.lock") || pyproject.lines().any(|l| l.trim() == "[tool.poetry]")
    {
        p.evidence.push(ctx.evidence(
            dir,
            if ctx.has(dir, "poetry.lock") {
                "poetry.lock"
            } else {
                "pyproject.toml"
            },
            "poetry",
            None,
        ));
        "poetry".to_string()
    } else {
        "pip".to_string()
    });
    p.test_runner = Some("pytest".into());
    p.confidence = if pytest_config {
        "high"
    } else if pytest_hint {
        "medium"
    } else {
        "low"
    };
    if !pytest_config && !pytest_hint {
        let file = manifests
            .iter()
            .find(|m| ctx.has(dir, m))
            .copied()
            .unwrap_or("pyproject.toml");
        p.evidence.push(ctx.evidence(
            dir,
            file,
            "python project without pytest configuration; pytest also runs unittest tests",
            None,
        ));
    }
    match p.package_manager.as_deref() {
        Some("uv") => p.command("uv", &["run", "pytest"]),
        Some("poetry") => p.command("poetry", &["run", "pytest"]),
        _ => p.command("python3", &["-m", "pytest"]),
    }
    if let Some(text) = ctx.read(dir, "tox.ini") {
        if let Some(line) = line_of(&text, |l| l == "[tox]" || l == "[tox:tox]") {
            p.evidence
                .push(ctx.evidence(dir, "tox.ini", "[tox]", Some(line)));
            p.command("tox", &[]);
        }
    }
    projects.push(p);
}

fn go(ctx: &mut Ctx, dir: &Path, projects: &mut Vec<Project>) {
    for (file, workspace) in [("go.work", true), ("go.mod", false)] {
        if !ctx.has(dir, file) {
            continue;
        }
        let text = ctx.read(dir, file).unwrap_or_default();
        let key = if workspace { "go" } else { "module" };
        let mut p = Project::new(dir, "go");
        p.workspace = workspace;
        p.package_manager = Some("go".into());
        p.test_runner = Some("go test".into());
        p.confidence = "high";
        let line = line_of(&text, |l| {
            l.starts_with(key) || (workspace && l.starts_with("use"))
        });
        p.evidence.push(ctx.evidence(
            dir,
            file,
            if workspace { "go.work" } else { "module" },
            line,
        ));
        // -v: plain `go test` prints no passing tests, so run could not count them.
        p.command("go", &["test", "-v", "./..."]);
        projects.push(p);
        return;
    }
}

fn jvm(ctx: &mut Ctx, dir: &Path, projects: &mut Vec<Project>) {
    if ctx.has(dir, "pom.xml") {
        for a in ctx.walked_ancestors(dir) {
            if ctx
                .read(&a, "pom.xml")
                .is_some_and(|t| t.contains("<modules>"))
            {
                let member = ctx.rel(dir);
                if let Some(root) = projects
                    .iter_mut()
                    .find(|p| p.kind == "maven" && p.dir == a)
                {
                    root.members.push(member);
                }
                return;
            }
        }
        let text = ctx.read(dir, "pom.xml").unwrap_or_default();
        let mut p = Project::new(dir, "maven");
        p.package_manager = Some("maven".into());
        p.test_runner = Some("maven surefire".into());
        p.confidence = "high";
        p.workspace = text.contains("<modules>");
        p.evidence.push(ctx.evidence(
            dir,
            "pom.xml",
            "maven project",
            line_of(&text, |l| l.starts_with("<project")),
        ));
        if ctx.has(dir, "mvnw") {
            p.evidence
                .push(ctx.evidence(dir, "mvnw", "maven wrapper", None));
            p.command("./mvnw", &["test"]);
        } else {
            p.command("mvn", &["test"]);
        }
        projects.push(p);
    }
    let gradle_files = [
        "settings.gradle",
        "settings.gradle.kts",
        "build.gradle",
        "build.gradle.kts",
    ];
    if let Some(file) = gradle_files.iter().find(|f| ctx.has(dir, f)) {
        for a in ctx.walked_ancestors(dir) {
            if ctx.exists(&a, "settings.gradle") || ctx.exists(&a, "settings.gradle.kts") {
                let member = ctx.rel(dir);
                if let Some(root) = projects
                    .iter_mut()
                    .find(|p| p.kind == "gradle" && p.dir == a)
                {
                    root.members.push(member);
                }
                return;
            }
        }
        let mut p = Project::new(dir, "gradle");
        p.package_manager = Some("gradle".into());
        p.test_runner = Some("gradle test".into());
        p.confidence = "high";
        p.workspace = file.starts_with("settings");
        p.evidence
            .push(ctx.evidence(dir, file, "gradle build", None));
        if ctx.has(dir, "gradlew") {
            p.evidence
                .push(ctx.evidence(dir, "gradlew", "gradle wrapper", None));
            p.command("./gradlew", &["test"]);
        } else {
            p.command("gradle", &["test"]);
        }
        projects.push(p);
    }
}

fn make(ctx: &mut Ctx, dir: &Path, projects: &mut Vec<Project>) {
    static TEST_TARGET: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^test\s*::?(?:[^=]|$)")
            .unwrap_or_else(|e| panic!("invalid built-in pattern: {e}"))
    });
    for file in ["GNUmakefile", "makefile", "Makefile"] {
        if !ctx.has(dir, file) {
            continue;
        }
        let text = ctx.read(dir, file).unwrap_or_default();
        // Targets start in column 0; `.PHONY: test` is not a target definition.
        let Some(line) = text
            .lines()
            .position(|l| TEST_TARGET.is_match(l))
            .map(|i| i + 1)
        else {
            return;
        };
        let mut p = Project::new(dir, "make");
        p.package_manager = Some("make".into());
        p.test_runner = Some("make test".into());
        p.confidence = "high";
        p.evidence
            .push(ctx.evidence(dir, file, "test:", Some(line)));
        p.command("make", &["test"]);
        projects.push(p);
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, files: &[(&str, &str)]) {
        for (name, content) in files {
            let path = root.join(name);
            std::fs::create_dir_all(path.parent().unwrap_or(root)).unwrap();
            std::fs::write(path, content).unwrap();
        }
    }

    fn find<'a>(d: &'a Detection, cwd: &str, kind: &str) -> &'a Value {
        d.projects
            .iter()
            .find(|p| p["cwd"] == cwd && p["type"] == kind)
            .unwrap_or_else(|| panic!("no {kind} at {cwd}: {:#?}", d.projects))
    }

    #[test]
    fn monorepo_projects_each_with_commands_and_evidence() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        write(
            &root,
            &[
                ("Cargo.toml", "[workspace]\nmembers = [\"crates/*\"]\n"),
                ("crates/a/Cargo.toml", "[package]\nname = \"a\"\n"),
                (
                    "package.json",
                    r#"{"private": true, "workspaces": ["web"], "scripts": {"test": "echo \"Error: no test specified\" && exit 1"}}"#,
                ),
                ("pnpm-lock.yaml", "lockfileVersion: 9\n"),
                (
                    "web/package.json",
                    r#"{"scripts": {"test": "vitest run"}, "devDependencies": {"vitest": "1"}}"#,
                ),
                (
                    "tools/py/pyproject.toml",
                    "[project]\nname='x'\n\n[tool.pytest.ini_options]\n",
                ),
                ("tools/py/uv.lock", ""),
                ("svc/go.mod", "module example.com/svc\n\ngo 1.22\n"),
                (
                    "Makefile",
                    ".PHONY: test\nVAR := 1\ntest: build\n\tcargo test\n",
                ),
                (
                    "java/pom.xml",
                    "<project>\n<modules><module>m</module></modules>\n</project>\n",
                ),
                ("java/m/pom.xml", "<project></project>\n"),
            ],
        );
        let d = detect(&root, &root, DEFAULT_LIMITS);
        let cargo = find(&d, ".", "cargo");
        assert_eq!(cargo["workspace"], true);
        assert_eq!(cargo["members"], json!(["crates/a"]));
        assert_eq!(
            cargo["commands"][0],
            json!({"command": "cargo", "args": ["test", "--workspace"], "cwd": "."})
        );
        assert_eq!(cargo["evidence"][0]["line"], 1);
        let web = find(&d, "web", "node");
        assert_eq!(
            web["package_manager"], "pnpm",
            "lockfile at the monorepo root"
        );
        assert_eq!(web["test_runner"], "vitest");
        assert_eq!(
            web["commands"][0],
            json!({"command": "pnpm", "args": ["test"], "cwd": "web"})
        );
        let root_node = find(&d, ".", "node");
        assert_eq!(root_node["workspace"], true);
        assert_eq!(
            root_node["commands"],
            json!([]),
            "npm's placeholder script is not a test command"
        );
        let py = find(&d, "tools/py", "python");
        assert_eq!(
            py["commands"][0],
            json!({"command": "uv", "args": ["run", "pytest"], "cwd": "tools/py"})
        );
        assert_eq!(py["confidence"], "high");
        assert_eq!(
            find(&d, "svc", "go")["commands"][0]["args"],
            json!(["test", "-v", "./..."])
        );
        let make = find(&d, ".", "make");
        assert_eq!(make["evidence"][0]["line"], 3);
        let maven = find(&d, "java", "maven");
        assert_eq!(maven["members"], json!(["java/m"]));
        assert!(!d
            .projects
            .iter()
            .any(|p| p["cwd"] == "crates/a" || p["cwd"] == "java/m"));
        assert!(!d.truncated);
    }

    #[test]
    fn package_managers_runners_and_python_configs_each_with_their_evidence() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        write(
            &root,
            &[
                ("y/package.json", r#"{"devDependencies": {"jest": "30"}}"#),
                ("y/yarn.lock", ""),
                ("b/package.json", r#"{"scripts": {"test": "bun test"}}"#),
                ("b/bun.lock", ""),
                ("n/package.json", r#"{"scripts": {"test": "node --test"}}"#),
                ("n/package-lock.json", "{}"),
                ("v/package.json", r#"{"devDependencies": {"vitest": "4"}}"#),
                ("v/pnpm-lock.yaml", ""),
                (
                    "pm/package.json",
                    r#"{"packageManager": "yarn@4.1.0", "scripts": {"test": "jest"}}"#,
                ),
                ("poetry/pyproject.toml", "[tool.poetry]\nname = \"p\"\n"),
                ("poetry/poetry.lock", ""),
                (
                    "cfg/setup.cfg",
                    "[metadata]\nname = x\n\n[tool:pytest]\naddopts = -q\n",
                ),
                ("ini/pytest.ini", "[pytest]\n"),
                ("tox/tox.ini", "[tox]\nenvlist = py3\n\n[pytest]\n"),
                ("gr/settings.gradle", "include 'app'\n"),
                ("gr/app/build.gradle", "plugins {}\n"),
                ("gr/gradlew", "#!/bin/sh\n"),
            ],
        );
        let d = detect(&root, &root, DEFAULT_LIMITS);
        let cmd = |p: &Value| {
            (
                p["commands"][0]["command"].clone(),
                p["commands"][0]["args"].clone(),
            )
        };
        let keys = |p: &Value| -> Vec<String> {
            p["evidence"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| {
                    format!(
                        "{}: {}",
                        e["file"].as_str().unwrap(),
                        e["key"].as_str().unwrap()
                    )
                })
                .collect()
        };

        let y = find(&d, "y", "node");
        assert_eq!(
            (y["package_manager"].as_str(), y["test_runner"].as_str()),
            (Some("yarn"), Some("jest"))
        );
        assert_eq!(cmd(y), (json!("yarn"), json!(["jest"])));
        assert_eq!(y["confidence"], "medium", "inferred from a dependency");
        assert!(
            keys(y).contains(&"y/yarn.lock: lockfile".to_string()),
            "{:?}",
            keys(y)
        );
        let b = find(&d, "b", "node");
        assert_eq!(b["package_manager"], "bun");
        assert_eq!(cmd(b), (json!("bun"), json!(["run", "test"])));
        let n = find(&d, "n", "node");
        assert_eq!(
            (n["package_manager"].as_str(), n["test_runner"].as_str()),
            (Some("npm"), Some("node --test"))
        );
        assert!(keys(n).contains(&"n/package.json: scripts.test: node --test".to_string()));
        let v = find(&d, "v", "node");
        assert_eq!(cmd(v), (json!("pnpm"), json!(["exec", "vitest", "run"])));
        let pm = find(&d, "pm", "node");
        assert_eq!(
            pm["package_manager"], "yarn",
            "the packageManager field wins"
        );
        assert_eq!(cmd(pm), (json!("yarn"), json!(["test"])));

        let poetry = find(&d, "poetry", "python");
        assert_eq!(poetry["package_manager"], "poetry");
        assert_eq!(cmd(poetry), (json!("poetry"), json!(["run", "pytest"])));
        let cfg = find(&d, "cfg", "python");
        assert_eq!(cfg["confidence"], "high");
        assert!(
            keys(cfg).contains(&"cfg/setup.cfg: [tool:pytest]".to_string()),
            "{:?}",
            keys(cfg)
        );
        assert_eq!(cfg["evidence"][0]["line"], 4);
        assert!(keys(find(&d, "ini", "python"))
            .contains(&"ini/pytest.ini: pytest configuration".to_string()));
        let tox = find(&d, "tox", "python");
        assert_eq!(
            tox["commands"][1],
            json!({"command": "tox", "args": [], "cwd": "tox"})
        );

        let gradle = find(&d, "gr", "gradle");
        assert_eq!(gradle["workspace"], true);
        assert_eq!(gradle["members"], json!(["gr/app"]));
        assert_eq!(cmd(gradle), (json!("./gradlew"), json!(["test"])));
    }

    #[test]
    fn ignored_dependency_and_symlinked_trees_are_not_walked() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let outside = tempfile::tempdir().unwrap();
        write(
            outside.path(),
            &[("Cargo.toml", "[package]\nname='outside'\n")],
        );
        write(
            &root,
            &[
                (".gitignore", "generated/\n"),
                ("generated/package.json", "{}"),
                ("node_modules/dep/package.json", "{}"),
                ("app/go.mod", "module x\n"),
            ],
        );
        std::os::unix::fs::symlink(outside.path(), root.join("linked")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("Cargo.toml"), root.join("Cargo.toml"))
            .unwrap();
        let d = detect(&root, &root, DEFAULT_LIMITS);
        assert_eq!(d.projects.len(), 1, "{:#?}", d.projects);
        assert_eq!(d.projects[0]["cwd"], "app");
    }

    #[test]
    fn limits_stop_the_walk_and_say_so() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for i in 0..30 {
            write(&root, &[(&format!("d{i}/f.txt"), "")]);
        }
        write(&root, &[("a/b/c/d/e/go.mod", "module deep\n")]);
        let d = detect(
            &root,
            &root,
            Limits {
                max_entries: 10,
                ..DEFAULT_LIMITS
            },
        );
        assert!(d.truncated);
        assert_eq!(d.entries, 10);
        let shallow = detect(
            &root,
            &root,
            Limits {
                max_depth: 3,
                ..DEFAULT_LIMITS
            },
        );
        assert!(
            shallow.projects.is_empty(),
            "go.mod lies deeper than max_depth"
        );
    }
}
