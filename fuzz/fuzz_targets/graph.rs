#![no_main]

// The validator checks node types against the registry: link the node crates so theirs are in it.
use cheng_nodes_documents as _;
use cheng_nodes_files as _;
use cheng_nodes_workspace as _;

libfuzzer_sys::fuzz_target!(|data: &[u8]| cheng_engine::fuzzing::graph(data));
