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
    std::os::unix::fs::symlink(outside.path().join("Cargo.toml"), root.join("Cargo.toml")).unwrap();
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
