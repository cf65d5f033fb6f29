#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cheng_nodes_memory::fuzzing::skill_frontmatter(data));
