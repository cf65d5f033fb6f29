#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cheng_nodes_workspace::fuzzing::git_status(data));
