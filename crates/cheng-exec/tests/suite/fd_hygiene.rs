//! Only stdin, stdout, stderr and the declared `inherit_fds` reach a child: a descriptor the
//! caller of cheng left open without FD_CLOEXEC (a shell's `exec 7>file`, an MCP host's pipe)
//! must be neither visible nor writable.

use super::support::run;
use cheng_exec::ProcessSpec;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;

/// A file in a fresh directory opened for writing, with FD_CLOEXEC cleared: what `exec 7>file`
/// in the caller's shell leaves behind. The descriptor is above 100 so it is not confused with
/// those the child opens itself.
struct Planted {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    fd: OwnedFd,
}

fn plant() -> Planted {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("leak.txt");
    let file = std::fs::File::create(&path).unwrap();
    // SAFETY: duplicating a descriptor we own to a free number at or above 150.
    let raw = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_DUPFD, 150) };
    assert!(raw >= 150, "{}", std::io::Error::last_os_error());
    // SAFETY: `raw` is a new descriptor owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: reading the descriptor flags of our own descriptor.
    let flags = unsafe { libc::fcntl(raw, libc::F_GETFD) };
    assert_eq!(
        flags & libc::FD_CLOEXEC,
        0,
        "F_DUPFD does not set close-on-exec"
    );
    Planted {
        _dir: dir,
        path,
        fd,
    }
}

impl Planted {
    fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    fn contents(&self) -> String {
        std::fs::read_to_string(&self.path).unwrap()
    }
}

/// The script every test runs: list the descriptors, then try to write to the planted one.
fn probe(fd: RawFd) -> String {
    format!("ls /proc/self/fd; echo PWNED >&{fd}")
}

/// `bash -c script` (dash cannot redirect to descriptors above 9).
fn bash(script: &str) -> ProcessSpec {
    ProcessSpec::new("bash", ["-c", script], std::env::temp_dir())
}

#[test]
fn without_hygiene_a_planted_descriptor_reaches_the_child() {
    // The attack, with a plain std::process::Command: the child can write through it.
    let planted = plant();
    let out = std::process::Command::new("bash")
        .args(["-c", &probe(planted.raw())])
        .output()
        .unwrap();
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(
        listing.lines().any(|l| l == planted.raw().to_string()),
        "{listing}"
    );
    assert_eq!(planted.contents(), "PWNED\n");
}

#[test]
fn a_planted_descriptor_is_neither_visible_nor_writable() {
    let planted = plant();
    let out = run(bash(&probe(planted.raw())));
    // ls itself opens /proc/self/fd as 3.
    assert_eq!(out.stdout.text, "0\n1\n2\n3\n", "{}", out.stderr.text);
    assert_ne!(out.exit_code, Some(0));
    assert!(
        out.stderr.text.contains("Bad file descriptor"),
        "{}",
        out.stderr.text
    );
    assert_eq!(planted.contents(), "");
}

#[test]
fn the_rlimit_path_closes_them_too() {
    let planted = plant();
    let spec = bash(&probe(planted.raw())).rlimit(cheng_exec::RlimitResource::OpenFiles, 256);
    let out = run(spec);
    assert_eq!(out.stdout.text, "0\n1\n2\n3\n", "{}", out.stderr.text);
    assert_eq!(planted.contents(), "");
}

#[test]
fn stdin_bytes_do_not_open_a_way_in() {
    let planted = plant();
    let out = run(bash(&format!("cat >/dev/null; {}", probe(planted.raw()))).stdin(b"x".to_vec()));
    assert_eq!(out.stdout.text, "0\n1\n2\n3\n", "{}", out.stderr.text);
    assert_eq!(planted.contents(), "");
}

#[test]
fn declared_descriptors_and_only_those_arrive_at_their_numbers() {
    let planted = plant();
    let dir = tempfile::tempdir().unwrap();
    let declared = std::fs::File::create(dir.path().join("declared.txt")).unwrap();
    let mut spec = bash(&format!(
        "ls /proc/self/fd; echo via-9 >&9; {}",
        probe(planted.raw())
    ));
    spec.inherit_fds
        .push((Arc::new(OwnedFd::from(declared)), 9));
    let out = run(spec);
    assert_eq!(
        out.stdout.text, "0\n1\n2\n3\n9\n0\n1\n2\n3\n9\n",
        "{}",
        out.stderr.text
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("declared.txt")).unwrap(),
        "via-9\n"
    );
    assert_eq!(planted.contents(), "");
}

#[test]
fn a_declared_number_held_by_one_of_chengs_own_descriptors_still_gets_the_declared_one() {
    // Number 3 is nearly always one of this process's own descriptors (the runtime's epoll, a
    // pipe): the child must see the declared file there, not ours.
    let dir = tempfile::tempdir().unwrap();
    let declared = std::fs::File::create(dir.path().join("three.txt")).unwrap();
    let mut spec = bash("echo via-3 >&3; readlink /proc/self/fd/3");
    spec.inherit_fds
        .push((Arc::new(OwnedFd::from(declared)), 3));
    let out = run(spec);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("three.txt")).unwrap(),
        "via-3\n",
        "{}",
        out.stderr.text
    );
    assert!(
        out.stdout.text.trim_end().ends_with("three.txt"),
        "{}",
        out.stdout.text
    );
}

#[test]
fn invalid_declared_numbers_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let file = Arc::new(OwnedFd::from(
        std::fs::File::create(dir.path().join("f")).unwrap(),
    ));
    let mut spec = ProcessSpec::new("touch", ["marker"], dir.path());
    spec.inherit_fds.push((file.clone(), 1));
    let out = run(spec);
    assert_eq!(out.termination, cheng_exec::Termination::SpawnFailed);
    assert!(out.spawn_error.unwrap_or_default().contains("inherit_fds"));
    let mut spec = ProcessSpec::new("touch", ["marker"], dir.path());
    spec.inherit_fds.extend([(file.clone(), 5), (file, 5)]);
    let out = run(spec);
    assert!(out.spawn_error.unwrap_or_default().contains("given twice"));
    assert!(!dir.path().join("marker").exists());
}

#[test]
fn probes_run_through_std_close_what_they_inherited_too() {
    // bwrap's and python's one-off probes use std::process::Command.
    let planted = plant();
    let mut cmd = std::process::Command::new("bash");
    cmd.args(["-c", &probe(planted.raw())]);
    cheng_exec::fds::close_inherited_on_exec(&mut cmd);
    let out = cmd.output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "0\n1\n2\n3\n");
    assert_eq!(planted.contents(), "");
    // std's own exec-error reporting still works.
    let mut missing = std::process::Command::new("/nonexistent/cheng-probe");
    cheng_exec::fds::close_inherited_on_exec(&mut missing);
    assert_eq!(
        missing.output().unwrap_err().kind(),
        std::io::ErrorKind::NotFound
    );
}
