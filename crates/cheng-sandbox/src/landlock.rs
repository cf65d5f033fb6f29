//! Landlock write confinement: the second layer under bubblewrap's mounts.
//!
//! The calling thread (and everything it executes afterwards) may read and execute anywhere its
//! mounts allow, but write, create, remove, rename or link only beneath the writable roots. The
//! kernel decides how much of that it can enforce; the outcome is reported, never assumed.

use landlock::{
    path_beneath_rules, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus,
    ABI,
};
use std::path::PathBuf;

/// The newest ABI this code asks for; older kernels get the best they support.
const TARGET_ABI: ABI = ABI::V5;

/// What Landlock enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LandlockOutcome {
    Full,
    Partial,
    /// The kernel has no Landlock (or it is disabled).
    NotEnforced,
}

/// Restricts writes of the calling thread to `writable` (paths that do not exist are skipped).
/// Reads and execution stay as the mounts allow. Sets no_new_privs as Landlock requires.
pub fn confine_writes(writable: &[PathBuf]) -> Result<LandlockOutcome, String> {
    let all = AccessFs::from_all(TARGET_ABI);
    let read = AccessFs::from_read(TARGET_ABI);
    let status = Ruleset::default()
        .handle_access(all)
        .and_then(|r| r.create())
        .and_then(|r| r.add_rules(path_beneath_rules(["/"], read)))
        .and_then(|r| r.add_rules(path_beneath_rules(writable, all)))
        .and_then(|r| r.restrict_self())
        .map_err(|e| format!("landlock: {e}"))?;
    Ok(match status.ruleset {
        RulesetStatus::FullyEnforced => LandlockOutcome::Full,
        RulesetStatus::PartiallyEnforced => LandlockOutcome::Partial,
        RulesetStatus::NotEnforced => LandlockOutcome::NotEnforced,
    })
}

/// The Landlock ABI version the running kernel offers (`None`: no Landlock). Restricts nothing.
pub fn kernel_abi() -> Option<i32> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a NULL attribute and the VERSION flag the call only returns the ABI number.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    (v > 0).then_some(v as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_outside_the_roots_are_refused_in_a_confined_thread() {
        let allowed = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        let (a, o) = (allowed.path().to_path_buf(), other.path().to_path_buf());
        // Landlock binds the calling thread, so confine a throwaway thread only.
        let result = std::thread::spawn(move || {
            let outcome = confine_writes(std::slice::from_ref(&a)).unwrap();
            let inside = std::fs::write(a.join("ok.txt"), "x");
            let outside = std::fs::write(o.join("no.txt"), "x");
            let read = std::fs::read_dir("/usr").is_ok();
            (outcome, inside.is_ok(), outside.is_err(), read)
        })
        .join()
        .unwrap();
        if result.0 == LandlockOutcome::NotEnforced {
            eprintln!("skipped: this kernel has no Landlock");
            return;
        }
        assert_eq!(
            (result.1, result.2, result.3),
            (true, true, true),
            "{result:?}"
        );
    }
}
