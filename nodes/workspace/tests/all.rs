//! Integration tests for the workspace nodes; one test binary for the whole crate.
mod suite;
