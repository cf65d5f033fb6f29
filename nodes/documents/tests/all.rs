//! Integration tests for the document nodes, compiled into one binary.
mod suite;
