//! Integration tests, compiled into one binary (cases in `suite/`).

mod suite;
