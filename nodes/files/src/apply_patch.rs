//! `tools/apply_patch` (work in progress).
#![allow(dead_code)]
mod commit;
