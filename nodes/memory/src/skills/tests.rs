use super::*;

fn skill(root: &Path, dir: &str, text: &str) {
    std::fs::create_dir_all(root.join(dir)).unwrap();
    std::fs::write(root.join(dir).join(SKILL_FILE), text).unwrap();
}

fn dirs(paths: &[&Path]) -> Vec<String> {
    paths.iter().map(|p| p.display().to_string()).collect()
}

#[test]
fn frontmatter_gives_name_and_description() {
    assert_eq!(
        frontmatter("---\nname: deploy\ndescription: \"How to deploy: steps\"\n---\nbody").unwrap(),
        (Some("deploy".into()), Some("How to deploy: steps".into()))
    );
    assert_eq!(frontmatter("no frontmatter").unwrap(), (None, None));
    assert_eq!(
        frontmatter("---\r\ndescription: >\r\n  folded\r\n  text\r\n---\r\n").unwrap(),
        (None, Some("folded text\n".into()))
    );
    assert!(frontmatter("---\nname: [unclosed\n---\n")
        .unwrap_err()
        .contains("YAML"));
    assert!(frontmatter("---\nname: x\n")
        .unwrap_err()
        .contains("closing"));
    assert!(frontmatter("---\n- a\n---\n")
        .unwrap_err()
        .contains("mapping"));
    assert!(frontmatter("---\nname: {a: 1}\n---\n")
        .unwrap_err()
        .contains("`name`"));
}

#[test]
fn the_first_directory_wins_and_the_directory_name_is_the_default() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    skill(
        a.path(),
        "deploy",
        "---\ndescription: Deploy\n  the app\n---\nA",
    );
    skill(
        b.path(),
        "other",
        "---\nname: deploy\ndescription: shadowed\n---\nB",
    );
    skill(b.path(), "review", "# no frontmatter");
    std::fs::create_dir(b.path().join("empty")).unwrap();
    let catalogue = Catalogue::scan(&dirs(&[a.path(), b.path()]));
    let names: Vec<_> = catalogue.skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["deploy", "review"]);
    assert_eq!(catalogue.skills[0].description, "Deploy the app");
    assert_eq!(
        catalogue.skills[0].content,
        "---\ndescription: Deploy\n  the app\n---\nA"
    );
    assert_eq!(catalogue.skills[1].description, "");
    assert_eq!(catalogue.problems.len(), 1, "{:?}", catalogue.problems);
    assert!(catalogue.problems[0].contains("first directory wins"));
}

#[test]
fn symlinks_are_refused_and_never_read() {
    let a = tempfile::tempdir().unwrap();
    std::fs::create_dir(a.path().join("evil")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", a.path().join("evil").join(SKILL_FILE)).unwrap();
    std::os::unix::fs::symlink("/etc", a.path().join("linked")).unwrap();
    skill(a.path(), "good", "---\nname: good\n---\n");
    let catalogue = Catalogue::scan(&dirs(&[a.path()]));
    let names: Vec<_> = catalogue.skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["good"]);
    let problems = catalogue.problems.join("\n");
    assert!(
        problems.contains("evil/SKILL.md: is a symlink"),
        "{problems}"
    );
    assert!(problems.contains("linked is a symlink"), "{problems}");
    assert!(catalogue
        .skills
        .iter()
        .all(|s| !s.content.contains("root:")));
    // Positive control: by name, the planted link does reach the host's file.
    assert!(
        std::fs::read_to_string(a.path().join("evil").join(SKILL_FILE))
            .unwrap()
            .contains("root:")
    );
}

#[test]
fn bounds_and_bad_entries_are_named() {
    let a = tempfile::tempdir().unwrap();
    skill(a.path(), "huge", &"x".repeat(MAX_SKILL_BYTES as usize + 1));
    std::fs::create_dir(a.path().join("binary")).unwrap();
    std::fs::write(a.path().join("binary").join(SKILL_FILE), [0xff, 0xfe]).unwrap();
    skill(
        a.path(),
        "long",
        &format!("---\ndescription: {}\n---\n", "d".repeat(300)),
    );
    let catalogue = Catalogue::scan(&[
        a.path().display().to_string(),
        "relative/skills".into(),
        "/nonexistent/skills-dir".into(),
    ]);
    let problems = catalogue.problems.join("\n");
    assert!(problems.contains("at most 131072"), "{problems}");
    assert!(problems.contains("not UTF-8"), "{problems}");
    assert!(
        problems.contains("skill_dirs[1]: `relative/skills` is not an absolute path"),
        "{problems}"
    );
    assert!(
        problems.contains("/nonexistent/skills-dir cannot be opened"),
        "{problems}"
    );
    assert_eq!(catalogue.skills.len(), 1);
    assert_eq!(
        catalogue.skills[0].description.chars().count(),
        MAX_DESCRIPTION_CHARS + 1
    );
}

/// Nesting deep enough to overflow the YAML library's stack is refused before it is parsed,
/// naming the limit; nesting within it still loads.
#[test]
fn deeply_nested_frontmatter_is_refused_before_parsing() {
    for deep in [
        format!("---\n{}x\n---\n", "- ".repeat(100_000)),
        format!("---\nname: x\nd: {}\n---\n", "[".repeat(100_000)),
        format!(
            "---\n{}---\n",
            (0..200)
                .map(|i| format!("{}k:\n", " ".repeat(i)))
                .collect::<String>()
        ),
        format!("---\nd: {}x\n---\n", "[a: ".repeat(40)),
    ] {
        let problem = frontmatter(&deep).unwrap_err();
        assert!(
            problem.contains(&format!("more than {MAX_FRONTMATTER_DEPTH} levels")),
            "{problem}"
        );
    }
    let within = format!(
        "---\nname: x\nd: {}x{}\n---\n",
        "[".repeat(30),
        "]".repeat(30)
    );
    assert_eq!(frontmatter(&within).unwrap().0.as_deref(), Some("x"));
}

/// Aliases that would expand past the bound (the "billion laughs") are refused; a few are fine.
#[test]
fn frontmatter_aliases_that_blow_up_are_refused() {
    let mut yaml = String::from("---\nname: lol\na: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
    for pair in ["ab", "bc", "cd", "de", "ef", "fg", "gh", "hi"].map(str::as_bytes) {
        let (prev, next) = (pair[0] as char, pair[1] as char);
        yaml.push_str(&format!(
            "{next}: &{next} [{}]\n",
            vec![format!("*{prev}"); 9].join(",")
        ));
    }
    yaml.push_str("description: *i\n---\n");
    let problem = frontmatter(&yaml).unwrap_err();
    assert!(
        problem.contains("aliases expand it past 256 KiB"),
        "{problem}"
    );
    assert_eq!(
        frontmatter("---\nname: &n deploy\ndescription: *n\n---\n").unwrap(),
        (Some("deploy".into()), Some("deploy".into()))
    );
}

/// A YAML error is quoted cut short and without control characters.
#[test]
fn a_yaml_error_is_quoted_bounded_and_clean() {
    let text = format!(
        "---\nname: \"\u{1}\u{1b}[31m{}\n\tnot: [closed\n---\n",
        "x".repeat(5000)
    );
    let problem = frontmatter(&text).unwrap_err();
    assert!(
        problem.starts_with("the frontmatter is not valid YAML: "),
        "{problem}"
    );
    assert!(
        problem.chars().count() <= MAX_YAML_ERROR_CHARS + 40,
        "{problem}"
    );
    assert!(!problem.chars().any(char::is_control), "{problem:?}");
    assert_eq!(quoted_error("a\nb\u{7}c"), "a b c");
    assert_eq!(
        quoted_error(&"y".repeat(300)).chars().count(),
        MAX_YAML_ERROR_CHARS + 1
    );
}
