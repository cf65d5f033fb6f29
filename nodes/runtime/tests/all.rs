//! Integration tests for tools/runtime; one test binary for the whole crate.
mod suite;
