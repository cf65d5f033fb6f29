//! The fuzz targets' seeds through their property functions, in the ordinary tests.

use std::path::Path;

/// A fuzz target's property function: panics when a property fails for the input.
pub type FuzzProperty = fn(&[u8]);

/// Runs every checked-in seed of each fuzz target (`fuzz/corpus/<target>/`) through the
/// target's property function, so the ordinary tests check every seed on stable. Panics when a
/// target has no seeds (a renamed corpus folder would otherwise pass silently).
pub fn check_fuzz_seeds(targets: &[(&str, FuzzProperty)]) {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    for (target, check) in targets {
        let dir = corpus.join(target);
        let mut seeds = 0;
        for entry in std::fs::read_dir(&dir).expect("the target's seed folder") {
            let path = entry.expect("entry").path();
            check(&std::fs::read(&path).expect("seed"));
            seeds += 1;
        }
        assert!(seeds > 0, "no seeds in {}", dir.display());
    }
}
