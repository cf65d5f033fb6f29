//! The heading tree: each heading with its level, text, 1-indexed line, anchor and children.

use super::document::Heading;
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutlineEntry {
    pub level: u8,
    pub text: String,
    pub line: usize,
    pub anchor: String,
    pub children: Vec<OutlineEntry>,
}

/// Nests headings under the nearest earlier heading of a lower level. A document that starts
/// with an h2 (or jumps levels) still nests correctly: an entry's children are the following
/// headings deeper than it, up to the next heading at its level or above.
pub fn build(headings: &[Heading]) -> Vec<OutlineEntry> {
    let mut roots: Vec<OutlineEntry> = Vec::new();
    // Path of open entries from a root down, as (level, entry) owned until closed.
    let mut stack: Vec<OutlineEntry> = Vec::new();
    for heading in headings {
        let entry = OutlineEntry {
            level: heading.level,
            text: heading.text.clone(),
            line: heading.first_line + 1,
            anchor: heading.anchor.clone(),
            children: Vec::new(),
        };
        while stack.last().is_some_and(|top| top.level >= entry.level) {
            close(&mut stack, &mut roots);
        }
        stack.push(entry);
    }
    while !stack.is_empty() {
        close(&mut stack, &mut roots);
    }
    roots
}

fn close(stack: &mut Vec<OutlineEntry>, roots: &mut Vec<OutlineEntry>) {
    if let Some(done) = stack.pop() {
        match stack.last_mut() {
            Some(parent) => parent.children.push(done),
            None => roots.push(done),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::markdown::document::Document;

    #[test]
    fn nests_by_level_and_handles_jumps() {
        let doc = Document::parse("# A\n\n## B\n\n#### C\n\n## D\n\n# E\n");
        let tree = build(&doc.headings);
        assert_eq!(tree.len(), 2);
        assert_eq!(tree[0].children.len(), 2);
        assert_eq!(tree[0].children[0].children[0].text, "C");
        assert_eq!(tree[0].children[1].line, 7);
        assert_eq!(tree[1].anchor, "e");
    }
}
