//! Integration tests driving the real `cheng` binary; one test binary for the whole CLI.

#![forbid(unsafe_code)]
// A test: `unwrap`/`expect` are allowed here (denied in library code, [workspace.lints]).
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod suite;
