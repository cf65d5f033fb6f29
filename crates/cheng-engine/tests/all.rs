//! Engine integration tests with hand-made test nodes; one test binary for the crate.
// A test: `unwrap`/`expect` are allowed here (denied in library code, [workspace.lints]).
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod suite;
