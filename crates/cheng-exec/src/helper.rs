//! Finding cheng's helper program, [`HELPER_NAME`].
//!
//! One small executable serves two modes: the per-run reaper around every host command
//! ([`crate::reaper`]) and the sandbox's init step (the `cheng-sandbox` crate's `init`). It is
//! installed next to `cheng`; a binary that can serve those modes itself (`cheng`) says so with
//! [`mark_launcher`], and benchmarks or tests built elsewhere name one with [`use_helper`].
//! The lookup lives here, with the process layer, because the reaper needs it even when no
//! sandbox is ever built.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// The dedicated helper executable looked for next to the running binary.
pub const HELPER_NAME: &str = "cheng-sandbox-init";

static LAUNCHER: AtomicBool = AtomicBool::new(false);
/// A helper named by [`use_helper`] (benchmarks and tests, whose binary lives elsewhere).
static HELPER: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Records that the running binary serves the helper's modes itself (it dispatches them first
/// thing in `main`).
pub fn mark_launcher() {
    LAUNCHER.store(true, Ordering::Relaxed);
}

/// Whether the running binary called [`mark_launcher`].
pub fn is_launcher() -> bool {
    LAUNCHER.load(Ordering::Relaxed)
}

/// Use `path` as the helper executable; for binaries that are not next to one, such as a
/// benchmark built by cargo. The first call wins.
pub fn use_helper(path: impl Into<PathBuf>) {
    let _ = HELPER.set(path.into());
}

/// The helper named by [`use_helper`], if any.
pub fn named_helper() -> Option<PathBuf> {
    HELPER.get().cloned()
}

/// The helper executable for other modes than the init step (the per-run reaper): the one
/// named by [`use_helper`], else [`HELPER_NAME`] next to the running binary or in its parent
/// directory (test harnesses run from cargo's `deps/`), else the running binary itself when it
/// opted in with [`mark_launcher`]. Looked up once.
pub fn helper_or_self() -> Option<PathBuf> {
    static FOUND: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    FOUND
        .get_or_init(|| {
            let exe = std::env::current_exe()
                .ok()
                .and_then(|p| p.canonicalize().ok())?;
            let dir = exe.parent();
            let candidates = named_helper()
                .into_iter()
                .chain(dir.map(|d| d.join(HELPER_NAME)))
                .chain(dir.and_then(|d| d.parent()).map(|d| d.join(HELPER_NAME)));
            let helper = candidates
                .filter(|p| is_executable_file(p))
                .find_map(|p| p.canonicalize().ok());
            helper.or_else(|| is_launcher().then_some(exe))
        })
        .clone()
}

/// The running binary, when it opted in with [`mark_launcher`] (so it serves every mode).
pub fn self_if_launcher() -> Option<PathBuf> {
    if !is_launcher() {
        return None;
    }
    std::env::current_exe()
        .ok()
        .and_then(|p| p.canonicalize().ok())
}

/// A regular file with some execute bit set.
pub fn is_executable_file(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
