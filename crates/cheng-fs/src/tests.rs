use super::*;
use std::os::unix::fs::{symlink, PermissionsExt};

struct Layout {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    outside: PathBuf,
}

/// `ws/` (the root) and `outside/` beside it, holding `outside/victim/important.txt`.
fn layout() -> Layout {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let ws = base.join("ws");
    let outside = base.join("outside");
    std::fs::create_dir_all(ws.join("d/victim")).unwrap();
    std::fs::write(ws.join("d/victim/a.txt"), "a").unwrap();
    std::fs::create_dir_all(outside.join("victim")).unwrap();
    std::fs::write(outside.join("victim/important.txt"), "keep").unwrap();
    Layout {
        _dir: dir,
        ws,
        outside,
    }
}

fn both() -> [Resolver; 2] {
    [Resolver::Kernel, Resolver::Components]
}

fn p(s: &str) -> &Path {
    Path::new(s)
}

/// Swaps two names atomically (what an attacker racing the node does).
fn exchange(a: &Path, b: &Path) {
    rustix::fs::renameat_with(
        rustix::fs::CWD,
        a,
        rustix::fs::CWD,
        b,
        rustix::fs::RenameFlags::EXCHANGE,
    )
    .unwrap();
}

#[test]
fn writes_reads_lists_renames_and_removes_beneath_the_root() {
    for resolver in both() {
        let l = layout();
        let fs = WorkspaceFs::open_with(&l.ws, resolver).unwrap();
        fs.create_dir_all(p("x/y/z")).unwrap();
        fs.write(p("x/y/z/f.sh"), b"one").unwrap();
        std::fs::set_permissions(
            l.ws.join("x/y/z/f.sh"),
            std::fs::Permissions::from_mode(0o751),
        )
        .unwrap();
        fs.write(&l.ws.join("x/y/z/f.sh"), b"two").unwrap();
        assert_eq!(fs.read(p("x/y/z/f.sh")).unwrap(), b"two");
        let mode = fs.symlink_metadata(p("x/y/z/f.sh")).unwrap().permissions();
        assert_eq!(mode.mode() & 0o7777, 0o751, "{resolver:?}");
        // No temporary file left beside it.
        let names: Vec<_> = fs.read_dir(p("x/y/z")).unwrap();
        assert_eq!(names.len(), 1);
        assert_eq!(names[0].kind, Kind::File);
        assert_eq!(names[0].size, None);
        let mut sizes = Vec::new();
        fs.walk(p("x/y"), |_, entry| {
            sizes.push(entry.size);
            Ok(())
        })
        .unwrap();
        assert_eq!(sizes, [None, Some(3)]);
        fs.rename(p("x/y/z/f.sh"), p("x/g.sh")).unwrap();
        assert!(!fs.exists(p("x/y/z/f.sh")).unwrap());
        assert!(fs.exists(p("x/g.sh")).unwrap());
        let mut seen = Vec::new();
        fs.walk(p("x"), |path, _| {
            seen.push(path.to_path_buf());
            Ok(())
        })
        .unwrap();
        assert_eq!(seen.len(), 3, "{seen:?}");
        assert_eq!(fs.remove_dir_all(p("x"), |_| false).unwrap(), 1);
        assert!(!l.ws.join("x").exists());
        fs.remove_file(p("d/victim/a.txt")).unwrap();
        fs.remove_dir(p("d/victim")).unwrap();
        assert!(!l.ws.join("d/victim").exists());
    }
}

#[test]
fn a_dropped_stage_writes_nothing_and_leaves_no_temp() {
    let l = layout();
    let fs = WorkspaceFs::open(&l.ws).unwrap();
    fs.write(p("f"), b"old").unwrap();
    let staged = fs.stage(p("f"), b"new").unwrap();
    assert_eq!(fs.read_dir(p("")).unwrap().len(), 3);
    drop(staged);
    assert_eq!(fs.read(p("f")).unwrap(), b"old");
    assert_eq!(fs.read_dir(p("")).unwrap().len(), 2);
}

#[test]
fn a_symlinked_parent_is_refused_for_every_operation_never_followed() {
    for resolver in both() {
        let l = layout();
        symlink(&l.outside, l.ws.join("dlink")).unwrap();
        // A relative link that climbs out, and an absolute one.
        symlink("../outside", l.ws.join("rel")).unwrap();
        let fs = WorkspaceFs::open_with(&l.ws, resolver).unwrap();
        for link in ["dlink", "rel"] {
            let at = |rest: &str| PathBuf::from(format!("{link}/{rest}"));
            let errors = [
                fs.write(&at("victim/important.txt"), b"pwned").unwrap_err(),
                fs.write(&at("new.txt"), b"pwned").unwrap_err(),
                fs.read(&at("victim/important.txt")).unwrap_err(),
                fs.read_dir(&at("victim")).unwrap_err(),
                fs.remove_file(&at("victim/important.txt")).unwrap_err(),
                fs.remove_dir_all(&at("victim"), |_| false).unwrap_err(),
                fs.create_dir_all(&at("made")).unwrap_err(),
                fs.rename(p("d/victim/a.txt"), &at("moved.txt"))
                    .unwrap_err(),
                fs.symlink_metadata(&at("victim")).unwrap_err(),
            ];
            for e in errors {
                assert!(changed_under_us(&e), "{resolver:?} {link}: {e}");
            }
        }
        assert_eq!(
            std::fs::read_to_string(l.outside.join("victim/important.txt")).unwrap(),
            "keep"
        );
        assert_eq!(std::fs::read_dir(&l.outside).unwrap().count(), 1);
        assert!(l.ws.join("d/victim/a.txt").exists());
    }
}

#[test]
fn dangling_absolute_and_final_symlinks_are_refused() {
    for resolver in both() {
        let l = layout();
        symlink("/nonexistent/cheng-fs-test", l.ws.join("dangling")).unwrap();
        symlink(l.outside.join("victim/important.txt"), l.ws.join("abs")).unwrap();
        symlink("d/victim/a.txt", l.ws.join("inside")).unwrap();
        let fs = WorkspaceFs::open_with(&l.ws, resolver).unwrap();
        for name in ["dangling", "abs", "inside"] {
            let e = fs.read(p(name)).unwrap_err();
            assert!(changed_under_us(&e), "{resolver:?} {name}: {e}");
            let e = fs.read(&p(name).join("x")).unwrap_err();
            assert!(changed_under_us(&e), "{resolver:?} {name}/x: {e}");
        }
        // Replacing a link writes a file in its place; the target is untouched.
        fs.write(p("abs"), b"replaced").unwrap();
        assert_eq!(
            std::fs::read_to_string(l.outside.join("victim/important.txt")).unwrap(),
            "keep"
        );
        // The link itself can be examined and removed.
        assert!(fs
            .symlink_metadata(p("dangling"))
            .unwrap()
            .file_type()
            .is_symlink());
        fs.remove_file(p("dangling")).unwrap();
        assert!(!fs.exists(p("dangling")).unwrap());
    }
}

#[test]
fn dot_dot_and_paths_outside_the_root_are_refused() {
    let l = layout();
    let fs = WorkspaceFs::open(&l.ws).unwrap();
    for bad in ["../outside/victim/important.txt", "d/../../outside/x"] {
        let e = fs.read(p(bad)).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{bad}");
    }
    let e = fs
        .write(&l.outside.join("victim/important.txt"), b"x")
        .unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    let e = fs.remove_file(&l.ws).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
}

#[test]
fn a_parent_swapped_after_staging_keeps_the_write_inside() {
    for resolver in both() {
        let l = layout();
        symlink(&l.outside, l.ws.join("dlink")).unwrap();
        let fs = WorkspaceFs::open_with(&l.ws, resolver).unwrap();
        let staged = fs.stage(p("d/notes.txt"), b"notes").unwrap();
        exchange(&l.ws.join("d"), &l.ws.join("dlink"));
        staged.commit().unwrap();
        // The directory that was opened (now named `dlink`) got the file; outside did not.
        assert!(!l.outside.join("notes.txt").exists());
        assert_eq!(
            std::fs::read_to_string(l.ws.join("dlink/notes.txt")).unwrap(),
            "notes"
        );
        // And a fresh write by the old name is refused.
        let e = fs.write(p("d/notes.txt"), b"again").unwrap_err();
        assert!(changed_under_us(&e), "{e}");
        assert!(!l.outside.join("notes.txt").exists());
    }
}

#[test]
fn positive_control_the_same_swap_redirects_a_write_by_name() {
    // What the handle prevents: the same sequence through paths follows the swapped-in link.
    let l = layout();
    symlink(&l.outside, l.ws.join("dlink")).unwrap();
    let target = l.ws.join("d/notes.txt");
    assert!(target.parent().unwrap().is_dir());
    exchange(&l.ws.join("d"), &l.ws.join("dlink"));
    std::fs::write(&target, "notes").unwrap();
    assert!(l.outside.join("notes.txt").exists());
}

#[test]
fn remove_dir_all_never_follows_a_link_inside_and_stops_at_a_refused_name() {
    for resolver in both() {
        let l = layout();
        std::fs::create_dir_all(l.ws.join("t/deep/er")).unwrap();
        std::fs::write(l.ws.join("t/deep/er/f"), "f").unwrap();
        symlink(l.outside.join("victim"), l.ws.join("t/deep/link")).unwrap();
        let fs = WorkspaceFs::open_with(&l.ws, resolver).unwrap();
        assert_eq!(fs.remove_dir_all(p("t"), |_| false).unwrap(), 2);
        assert!(!l.ws.join("t").exists());
        assert!(l.outside.join("victim/important.txt").exists());

        std::fs::create_dir_all(l.ws.join("u/a/.git")).unwrap();
        std::fs::write(l.ws.join("u/a/.git/config"), "c").unwrap();
        std::fs::write(l.ws.join("u/a/x"), "x").unwrap();
        let e = fs
            .remove_dir_all(p("u"), |name| name == ".git")
            .unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied);
        // The directory holding it lost nothing.
        assert!(l.ws.join("u/a/x").exists());
        assert!(l.ws.join("u/a/.git/config").exists());
    }
}

/// Descriptors this process holds now.
fn open_descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

#[test]
fn a_walk_holds_descriptors_by_depth_not_by_width() {
    const WIDE: usize = 2_000;
    let l = layout();
    for i in 0..WIDE {
        std::fs::create_dir_all(l.ws.join(format!("wide/{i}/inner"))).unwrap();
    }
    let fs = WorkspaceFs::open(&l.ws).unwrap();
    let before = open_descriptors();
    let mut most = before;
    let mut seen = 0;
    fs.walk("wide".as_ref(), |_, _| {
        most = most.max(open_descriptors());
        seen += 1;
        Ok(())
    })
    .unwrap();
    assert_eq!(seen, 2 * WIDE);
    // A directory open per waiting sibling would hold about WIDE more; other tests of this
    // process may open a few meanwhile.
    assert!(
        most < before + 100,
        "{most} descriptors open during the walk, {before} before"
    );
}
