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
