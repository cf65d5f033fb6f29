#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cheng_nodes_documents::fuzzing::preview_html(data));
