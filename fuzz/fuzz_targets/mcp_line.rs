#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cheng_mcp::fuzzing::mcp_line(data));
