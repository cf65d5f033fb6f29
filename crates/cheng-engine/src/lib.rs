//! cheng graphs.
