#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cheng_patch::fuzzing::patch(data));
