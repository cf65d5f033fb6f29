//! GitHub-style heading anchors, matching the `github-slugger` package GitHub uses.
//!
//! A slug is the heading's text lowercased, with every character removed except letters,
//! marks, decimal and letter numbers, connector punctuation (`_`), `-` and space, and each space
//! turned into `-`. Repeated slugs get `-1`, `-2`, … in document order, skipping any suffix that
//! is already taken (so `echo`, `echo`, `echo 1` give `echo`, `echo-1`, `echo-1-1`).

use regex::Regex;
use std::collections::HashMap;
use std::sync::LazyLock;

/// Characters github-slugger keeps (it strips the complement: other numbers, symbols,
/// punctuation except `_`-like connectors and `-`, controls, formats, separators except space).
static STRIP: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"[^\p{L}\p{M}\p{Nd}\p{Nl}\p{Pc}\p{Alphabetic} \-]").ok());

/// The slug of one heading text, without duplicate handling.
pub fn slug(text: &str) -> String {
    if text.is_ascii() {
        // Fast path: in ASCII only letters, digits, `_`, `-` and space survive.
        return text
            .bytes()
            .filter_map(|b| match b {
                b'A'..=b'Z' => Some((b + 32) as char),
                b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' => Some(b as char),
                b' ' => Some('-'),
                _ => None,
            })
            .collect();
    }
    let lower = text.to_lowercase();
    let kept = match STRIP.as_ref() {
        Some(re) => re.replace_all(&lower, ""),
        // The pattern is a constant; if it ever failed to compile, keep alphanumerics only.
        None => lower.chars().filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_')).collect::<String>().into(),
    };
    kept.replace(' ', "-")
}

/// Assigns unique slugs in document order, like github-slugger's `BananaSlug`.
#[derive(Debug, Default, Clone)]
pub struct Slugger {
    occurrences: HashMap<String, u32>,
}

impl Slugger {
    pub fn new() -> Self {
        Self::default()
    }

    /// The unique anchor for a heading with this text.
    pub fn slug(&mut self, text: &str) -> String {
        let original = slug(text);
        let mut result = original.clone();
        while self.occurrences.contains_key(&result) {
            let count = self.occurrences.entry(original.clone()).or_insert(0);
            *count += 1;
            result = format!("{original}-{count}");
        }
        self.occurrences.insert(result.clone(), 0);
        result
    }

    /// Records an explicit `{#id}` so later generated slugs do not collide with it.
    pub fn reserve(&mut self, id: &str) {
        self.occurrences.entry(id.to_string()).or_insert(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_and_unicode_paths_agree_on_ascii() {
        let text = "Hello, World! (v2.0) _x_ - y";
        let lower = text.to_lowercase();
        let re = STRIP.as_ref().unwrap();
        assert_eq!(slug(text), re.replace_all(&lower, "").replace(' ', "-"));
    }
}
