//! Pre-execution warnings: things a script reaches for that this sandbox does not have.
//!
//! A textual scan (it may also match inside strings or comments): warnings explain a likely
//! failure before it happens, they never block a run.

/// What to look for, and what to say when it is found.
const CHECKS: &[(&str, &str)] = &[
    ("require(", "require() does not exist here: there are no modules in this sandbox; inline the code you need"),
    ("import(", "import() is not available: there is no module loader in this sandbox"),
    ("import ", "import statements are not available: the script is not a module and there is no module loader"),
    ("fetch(", "fetch() does not exist: this sandbox has no network; use tools/code_shell with allow_network"),
    (
        "XMLHttpRequest",
        "XMLHttpRequest does not exist: this sandbox has no network; use tools/code_shell with allow_network",
    ),
    ("WebSocket", "WebSocket does not exist: this sandbox has no network; use tools/code_shell with allow_network"),
    ("setTimeout", "setTimeout does not exist: this sandbox has no timers"),
    ("setInterval", "setInterval does not exist: this sandbox has no timers"),
    ("process.", "process does not exist: this is QuickJS, not Node.js (the JSON input is the global input)"),
    ("Deno.", "Deno does not exist: this is QuickJS with only the language built-ins"),
    ("std.", "the QuickJS std module is not available: there is no file or system access"),
    ("os.", "the QuickJS os module is not available: there is no file or system access"),
];

pub fn warnings(script: &str) -> Vec<String> {
    if script.trim().is_empty() {
        return vec!["script is empty: nothing runs and result is null".to_string()];
    }
    CHECKS
        .iter()
        .filter(|(token, _)| uses(script, token))
        .map(|(_, message)| message.to_string())
        .collect()
}

/// Whether `token` occurs as a word of its own (not as the tail of a longer name or a property).
fn uses(script: &str, token: &str) -> bool {
    script.match_indices(token).any(|(at, _)| {
        let before = script[..at].chars().next_back();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$' || c == '.')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_scripts_are_flagged() {
        assert_eq!(warnings("  \n").len(), 1);
    }

    #[test]
    fn escapes_are_flagged_once_each() {
        let found = warnings("const fs = require('fs'); fetch('http://x'); import('os')");
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(found[0].contains("require"));
    }

    #[test]
    fn longer_names_and_properties_do_not_match() {
        assert!(warnings("myrequire(1); a.fetch(2); const costs = 1; photos.length").is_empty());
        assert!(warnings("input.values.reduce((a, b) => a + b, 0)").is_empty());
    }
}
