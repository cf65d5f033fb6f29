//! Properties the fuzzer checks on the policy file loader (fuzz/fuzz_targets/policy.rs).

use super::{check_tightens, parse, Origin, Policy};
use std::path::PathBuf;

/// Input: the policy file's text. A file either loads or is refused with a bounded message
/// naming the file; a loaded file tightens itself (as machine and user policy at once) and
/// answers every query.
pub fn policy(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let layer = match parse(text, PathBuf::from("fuzz.toml"), Origin::Flag) {
        Ok(layer) => layer,
        Err(e) => {
            assert!(
                e.0.contains("fuzz.toml"),
                "the error does not name the file: {}",
                e.0
            );
            assert!(
                e.0.len() <= 4 * text.len() + 4096,
                "error of {} bytes",
                e.0.len()
            );
            return;
        }
    };
    if let Err(e) = check_tightens(&layer, &layer) {
        panic!("a policy does not tighten itself: {}", e.0);
    }
    let Ok(policy) = Policy::from_toml_str(text, "fuzz.toml") else {
        panic!("parse accepted what from_toml_str refuses");
    };
    let mut types: Vec<String> = layer.file.nodes.keys().cloned().collect();
    types.push("tools/workspace_shell".into());
    for node_type in &types {
        let _ = policy.disabled(node_type);
        let _ = policy.env_allow(node_type);
        let _ = policy.read_paths(node_type);
        let _ = policy.max(node_type, "timeout_ms");
        let _ = policy.setting(node_type, "shell_syntax");
    }
    let _ = policy.honour_approve_flag();
}
