//! Process-level tests of cheng-sandbox, compiled into one binary (one link step).
// A test: `unwrap`/`expect` are allowed here (denied in library code, [workspace.lints]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
