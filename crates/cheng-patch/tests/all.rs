//! Integration tests for the patch format, compiled into one binary.
// A test: `unwrap`/`expect` are allowed here (denied in library code, [workspace.lints]).
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod suite;
