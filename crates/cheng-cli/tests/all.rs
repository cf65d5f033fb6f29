//! Integration tests driving the real `cheng` binary; one test binary for the whole CLI.
mod suite;
