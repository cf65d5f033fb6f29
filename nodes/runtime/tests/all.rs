//! Integration tests for tools/runtime; one test binary for the whole crate.
// A test: `unwrap`/`expect` are allowed here (denied in library code, [workspace.lints]).
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod suite;
