//! The detectors, one per ecosystem: each looks for its manifest in one directory and adds what
//! it finds (commands, runner, confidence, evidence) to the projects.

use super::*;

pub(super) fn cargo(ctx: &mut Ctx, dir: &Path, projects: &mut Vec<Project>) {
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

pub(super) fn node(ctx: &mut Ctx, dir: &Path, projects: &mut Vec<Project>) {
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

pub(super) fn python(ctx: &mut Ctx, dir: &Path, projects: &mut Vec<Project>) {
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

pub(super) fn go(ctx: &mut Ctx, dir: &Path, projects: &mut Vec<Project>) {
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

pub(super) fn jvm(ctx: &mut Ctx, dir: &Path, projects: &mut Vec<Project>) {
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

pub(super) fn make(ctx: &mut Ctx, dir: &Path, projects: &mut Vec<Project>) {
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
