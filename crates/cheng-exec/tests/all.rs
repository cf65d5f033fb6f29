//! Process-level tests of cheng-exec, compiled into one binary (one link step).

mod suite;
