//! GitHub-style heading anchors, matching the `github-slugger` package GitHub uses.
//!
//! A slug is the heading's text lowercased, with every character removed except letters,
//! marks, decimal and letter numbers, connector punctuation (`_`), `-` and space, and each space
//! turned into `-`. Repeated slugs get `-1`, `-2`, … in document order, skipping any suffix that
//! is already taken (so `echo`, `echo`, `echo 1` give `echo`, `echo-1`, `echo-1-1`).

use super::slug_table::KEPT;
use std::collections::HashMap;

/// Whether github-slugger keeps this character (it strips the complement: other numbers,
/// symbols, punctuation except `_`-like connectors and `-`, controls, formats, separators
/// except space, and code points unassigned in its Unicode version).
pub fn kept(c: char) -> bool {
    let cp = c as u32;
    KEPT.binary_search_by(|&(a, b)| {
        if b < cp {
            std::cmp::Ordering::Less
        } else if a > cp {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    })
    .is_ok()
}

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
    // Lowercase the whole text first (final sigma depends on context), then filter.
    text.to_lowercase()
        .chars()
        .filter(|&c| kept(c))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
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
        if !self.occurrences.contains_key(&original) {
            self.occurrences.insert(original.clone(), 0);
            return original;
        }
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
    fn ascii_fast_path_agrees_with_the_table() {
        for b in 0u8..128 {
            let c = b as char;
            let via_table: String = c
                .to_lowercase()
                .filter(|&c| kept(c))
                .map(|c| if c == ' ' { '-' } else { c })
                .collect();
            assert_eq!(slug(&c.to_string()), via_table, "{c:?}");
        }
    }

    #[test]
    fn table_is_sorted_and_disjoint() {
        assert!(KEPT.windows(2).all(|w| w[0].1 < w[1].0 && w[0].0 <= w[0].1));
    }
}
