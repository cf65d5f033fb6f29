//! Engine integration tests with hand-made test nodes; one test binary for the crate.
mod suite;
