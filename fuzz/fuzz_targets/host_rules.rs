#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cheng_net::fuzzing::host_rules(data));
