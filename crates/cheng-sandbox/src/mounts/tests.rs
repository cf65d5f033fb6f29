use super::*;

#[test]
fn only_small_world_readable_files_are_copied_into_the_view() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name);
    std::fs::write(path("hosts"), "127.0.0.1 localhost\n").unwrap();
    std::fs::set_permissions(path("hosts"), std::fs::Permissions::from_mode(0o644)).unwrap();
    // A file only its owner may read: a copy (mode 0444 inside) would hand it to the
    // sandbox uid, a bind keeps its permissions.
    std::fs::write(path("secret.conf"), "token").unwrap();
    std::fs::set_permissions(path("secret.conf"), std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::write(path("big"), vec![b'x'; COPY_MAX_BYTES as usize + 1]).unwrap();
    std::fs::set_permissions(path("big"), std::fs::Permissions::from_mode(0o644)).unwrap();
    std::os::unix::fs::symlink(path("hosts"), path("link")).unwrap();
    std::fs::create_dir(path("ssl")).unwrap();
    assert_eq!(
        etc_entry(&path("hosts")),
        Some(SystemEntry::Copy(path("hosts")))
    );
    assert_eq!(
        etc_entry(&path("link")),
        Some(SystemEntry::Copy(path("link"))),
        "symlinks are followed"
    );
    assert_eq!(
        etc_entry(&path("secret.conf")),
        Some(SystemEntry::ReadOnly(path("secret.conf")))
    );
    assert_eq!(
        etc_entry(&path("big")),
        Some(SystemEntry::ReadOnly(path("big")))
    );
    assert_eq!(
        etc_entry(&path("ssl")),
        Some(SystemEntry::ReadOnly(path("ssl")))
    );
    assert_eq!(etc_entry(&path("missing")), None);
}

#[test]
fn existing_names_are_read_only_and_missing_ones_masked_then_cleaned() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir(root.join(".git")).unwrap();
    let mut warnings = Vec::new();
    let guard = protect(&root, &mut warnings).unwrap();
    let list = guard.list();
    assert!(list.contains(&Protection::ReadOnly(root.join(".git"))));
    assert!(list.contains(&Protection::Masked(root.join(".bashrc"))));
    assert!(root.join(".bashrc").exists());
    drop(guard);
    assert!(!root.join(".bashrc").exists());
    assert!(root.join(".git").is_dir());
}

#[test]
fn entries_of_several_components_pin_their_directory_or_mask_it_whole() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let cargo = root.join(".cargo");
    let of_cargo = |list: &[Protection]| -> Vec<Protection> {
        list.iter()
            .filter(|p| match p {
                Protection::ReadOnly(x) | Protection::Pinned(x) | Protection::Masked(x) => {
                    x.starts_with(&cargo)
                }
            })
            .cloned()
            .collect()
    };
    // No `.cargo`: masked whole, once, so that nothing can be created under it.
    let guard = protect(&root, &mut Vec::new()).unwrap();
    assert_eq!(of_cargo(guard.list()), [Protection::Masked(cargo.clone())]);
    drop(guard);
    assert!(!cargo.exists());
    // A `.cargo` directory: pinned (before anything inside it is bound), the existing
    // config read-only, the missing entries masked, the rest of it left alone.
    std::fs::create_dir(&cargo).unwrap();
    std::fs::write(cargo.join("config.toml"), "[alias]\n").unwrap();
    std::fs::write(cargo.join("notes.txt"), "").unwrap();
    let guard = protect(&root, &mut Vec::new()).unwrap();
    assert_eq!(
        of_cargo(guard.list()),
        [
            Protection::Pinned(cargo.clone()),
            Protection::Masked(cargo.join("config")),
            Protection::ReadOnly(cargo.join("config.toml")),
            Protection::Masked(cargo.join("credentials")),
            Protection::Masked(cargo.join("credentials.toml")),
        ]
    );
    drop(guard);
    let mut left: Vec<_> = std::fs::read_dir(&cargo)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    left.sort();
    assert_eq!(left, ["config.toml", "notes.txt"]);
}

#[test]
fn the_sandbox_guide_lists_exactly_the_protected_names() {
    let guide = include_str!("../../../../docs/guides/sandbox.md");
    let table = guide
        .split("| Name | Why a write there is dangerous | From |")
        .nth(1)
        .expect("the guide has the table of protected names");
    let mut listed: Vec<&str> = Vec::new();
    for row in table.lines().skip(2).take_while(|l| l.starts_with('|')) {
        let first = row.split('|').nth(1).unwrap_or_default();
        // The names come before any explanation in parentheses.
        let names = first.split('(').next().unwrap_or_default();
        listed.extend(names.split('`').skip(1).step_by(2));
    }
    listed.sort_unstable();
    let mut names = PROTECTED_NAMES.to_vec();
    names.sort_unstable();
    assert_eq!(
        listed, names,
        "docs/guides/sandbox.md's table and PROTECTED_NAMES"
    );
}

#[test]
fn a_gitdir_file_protects_its_target() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("modules/real")).unwrap();
    std::fs::write(root.join(".git"), "gitdir: modules/real\n").unwrap();
    let guard = protect(&root, &mut Vec::new()).unwrap();
    let list = guard.list();
    assert!(
        list.contains(&Protection::ReadOnly(root.join("modules/real"))),
        "{list:?}"
    );
    assert!(list.contains(&Protection::ReadOnly(root.join(".git"))));
}

#[test]
fn nested_repositories_are_protected_wherever_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    // A nested repository inside an ignored, hidden directory (standard filters are off).
    std::fs::write(root.join(".gitignore"), "vendor/\n").unwrap();
    std::fs::create_dir_all(root.join("vendor/.hidden/lib/.git/hooks")).unwrap();
    std::fs::write(root.join("vendor/.hidden/lib/.gitmodules"), "").unwrap();
    // A submodule-style `.git` file whose gitdir is relative to its own directory.
    std::fs::create_dir_all(root.join("sub2")).unwrap();
    std::fs::create_dir_all(root.join("sub2-gitdir")).unwrap();
    std::fs::write(root.join("sub2/.git"), "gitdir: ../sub2-gitdir\n").unwrap();
    // A gitdir outside the workspace is not bound (out of reach), and nothing breaks.
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.join("sub3")).unwrap();
    std::fs::write(
        root.join("sub3/.git"),
        format!("gitdir: {}\n", outside.path().display()),
    )
    .unwrap();
    // Nothing inside a `.git` directory is looked at (its own nested `.git` is covered).
    std::fs::create_dir_all(root.join("vendor/.hidden/lib/.git/modules/x/.git")).unwrap();
    let guard = protect(&root, &mut Vec::new()).unwrap();
    let list = guard.list();
    for expected in [
        "vendor/.hidden/lib/.git",
        "vendor/.hidden/lib/.gitmodules",
        "sub2/.git",
        "sub2-gitdir",
        "sub3/.git",
    ] {
        assert!(
            list.contains(&Protection::ReadOnly(root.join(expected))),
            "{expected} not protected: {list:?}"
        );
    }
    assert!(
        !list
            .iter()
            .any(|p| matches!(p, Protection::ReadOnly(x) if x.starts_with(outside.path()))),
        "{list:?}"
    );
    assert!(!list.contains(&Protection::ReadOnly(
        root.join("vendor/.hidden/lib/.git/modules/x/.git")
    )));
    // Other protected names are protected at the top only.
    std::fs::write(root.join("sub2/.bashrc"), "").unwrap();
    let guard2 = protect(&root, &mut Vec::new()).unwrap();
    assert!(!guard2
        .list()
        .iter()
        .any(|p| matches!(p, Protection::ReadOnly(x) if x.ends_with("sub2/.bashrc"))));
}

#[test]
fn a_workspace_past_the_walk_bound_fails_closed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let mut deep = root.clone();
    for _ in 0..=NESTED_WALK_MAX_DEPTH {
        deep.push("d");
    }
    std::fs::create_dir_all(&deep).unwrap();
    let names = || {
        let mut v: Vec<_> = std::fs::read_dir(&root)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        v.sort();
        v
    };
    let before = names();
    let err = protect(&root, &mut Vec::new()).unwrap_err().to_string();
    assert!(
        err.contains("deeper than 64 levels") && err.contains("allow_filesystem"),
        "{err}"
    );
    assert_eq!(
        before,
        names(),
        "placeholders left behind after the failure"
    );
}

#[test]
fn concurrent_users_share_a_placeholder_until_the_last_one_ends() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let first = protect(&root, &mut Vec::new()).unwrap();
    let second = protect(&root, &mut Vec::new()).unwrap();
    // The second sees the first's placeholder as a placeholder, not as a real file.
    assert!(
        second
            .list()
            .contains(&Protection::Masked(root.join(".bashrc"))),
        "{:?}",
        second.list()
    );
    drop(first);
    assert!(
        root.join(".bashrc").exists(),
        "removed while the second run still needs it"
    );
    drop(second);
    assert!(!root.join(".bashrc").exists());
}

#[test]
fn dropping_the_guard_removes_every_placeholder_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join(".profile"), "").unwrap();
    let names = || {
        let mut v: Vec<_> = std::fs::read_dir(&root)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        v.sort();
        v
    };
    let before = names();
    let guard = protect(&root, &mut Vec::new()).unwrap();
    for name in PROTECTED_NAMES {
        // `.cargo/config.toml`: a missing `.cargo` is masked whole.
        let top = name.split('/').next().unwrap_or(name);
        assert!(
            std::fs::symlink_metadata(root.join(top)).is_ok(),
            "{name} has no mount point"
        );
    }
    drop(guard);
    assert_eq!(
        before,
        names(),
        "placeholders left behind (or an existing empty file removed)"
    );
}
