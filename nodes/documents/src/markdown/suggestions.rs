//! Turning a [`FixPlan`] into edit_file-ready replacements.
//!
//! Each suggestion's `old_string` is a run of whole lines (with the newline before and after it
//! when there is one) that occurs exactly once in the file *as it will be when the suggestion is
//! applied* — that is, after every earlier suggestion in the list has been applied. Context is
//! widened line by line until that holds, up to [`MAX_WINDOW`] lines; edits that never become
//! unique are merged with the next edit or, failing that, left out (and counted).
//!
//! Why lines: an `old_string` that starts and ends with `\n` can only match at line boundaries,
//! so counting its occurrences is counting equal line windows, which a hash map per window size
//! answers in O(1). The maps describe the mixed state "earlier suggestions applied, later ones
//! not" and are updated in O(window²) per applied suggestion, so the whole pass stays linear in
//! the file size. A hash collision can only make a window look repeated (never unique), so the
//! uniqueness promise is exact. Windows touching the first or last line (no newline on that
//! side) are checked by searching the text itself.

use super::diagnostics::FixPlan;
use serde::Serialize;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Most lines an `old_string` may span.
pub const MAX_WINDOW: usize = 24;
/// Most consecutive edits merged into one suggestion when none is unique on its own.
const MAX_MERGES: usize = 8;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Suggestion {
    pub path: String,
    pub old_string: String,
    pub new_string: String,
    /// 1-indexed line of the first changed line (for an insertion: the line it goes before).
    pub line: usize,
    /// Rule id; several joined with "," when edits on neighbouring lines had to be merged.
    pub rule: String,
    pub reason: String,
}

/// Suggestions for `plan`, at most `limit`; also returns how many edits were left out because
/// no unique context exists within [`MAX_WINDOW`] lines, and how many were over the limit.
pub fn build(
    text: &str,
    path: &str,
    plan: &FixPlan,
    limit: usize,
) -> (Vec<Suggestion>, usize, usize) {
    build_prepared(Prepared::new(text), path, plan, limit)
}

/// What the sweep needs from the text alone (its lines, their hashes and how often each line
/// occurs), so it can be computed while the document is still being parsed.
pub struct Prepared<'t> {
    lines: Vec<&'t str>,
    hashes: Vec<u64>,
    single_line_counts: Counts,
}

impl<'t> Prepared<'t> {
    pub fn new(text: &'t str) -> Self {
        let lines: Vec<&str> = text.split('\n').collect();
        let hashes: Vec<u64> = lines.iter().map(|l| line_hash(l)).collect();
        let mut single_line_counts =
            Counts::with_capacity_and_hasher(hashes.len(), Default::default());
        for &h in &hashes {
            *single_line_counts.entry(mix(1, h)).or_insert(0) += 1;
        }
        Prepared {
            lines,
            hashes,
            single_line_counts,
        }
    }
}

/// [`build`] from a [`Prepared`] text.
pub fn build_prepared(
    prepared: Prepared<'_>,
    path: &str,
    plan: &FixPlan,
    limit: usize,
) -> (Vec<Suggestion>, usize, usize) {
    let Prepared {
        lines,
        hashes,
        single_line_counts,
    } = prepared;
    let mut edits = edits_from_plan(&lines, plan).peekable();
    let mut sweep = Sweep::new(&lines, hashes, single_line_counts);
    let mut out = Vec::new();
    let mut skipped = 0;
    while let Some(mut edit) = edits.next() {
        if out.len() >= limit {
            return (out, skipped, 1 + edits.count());
        }
        let mut merges = 0;
        let window = loop {
            if let Some(window) = sweep.find_window(&edit) {
                break Some(window);
            }
            match edits.peek() {
                Some(next) if merges < MAX_MERGES && next.a <= edit.b + MAX_WINDOW => {
                    let Some(next) = edits.next() else { break None };
                    edit = edit.merge(next, &lines);
                    merges += 1;
                }
                _ => break None,
            }
        };
        match window {
            Some((s, e)) => {
                let (old_string, new_string) = sweep.strings(&edit, s, e);
                out.push(Suggestion {
                    path: path.to_string(),
                    old_string,
                    new_string,
                    line: edit.a + 1,
                    rule: edit.rules.join(","),
                    reason: edit.reasons.join("; "),
                });
                sweep.apply(&edit);
            }
            None => skipped += 1 + merges,
        }
    }
    (out, skipped, 0)
}

/// Replace original lines `a..b` with `new` (an insertion when `a == b`).
#[derive(Debug, Clone)]
struct Edit {
    a: usize,
    b: usize,
    new: Vec<String>,
    rules: Vec<&'static str>,
    reasons: Vec<String>,
}

impl Edit {
    fn merge(mut self, next: Edit, lines: &[&str]) -> Edit {
        self.new
            .extend(lines[self.b..next.a].iter().map(|l| l.to_string()));
        self.new.extend(next.new);
        self.b = next.b;
        for rule in next.rules {
            if !self.rules.contains(&rule) {
                self.rules.push(rule);
            }
        }
        self.reasons.extend(next.reasons);
        self
    }
}

/// The plan's edits in line order, built one at a time: a capped run builds only the edits it
/// returns, and counts the rest from the plan's shape alone.
struct Edits<'p, 'l> {
    lines: &'l [&'l str],
    plan: &'p FixPlan,
    positions: std::vec::IntoIter<usize>,
    /// The edit being extended by a run of deleted lines, returned once the run ends.
    pending: Option<Edit>,
}

fn edits_from_plan<'p, 'l>(lines: &'l [&'l str], plan: &'p FixPlan) -> Edits<'p, 'l> {
    let mut positions: Vec<usize> = plan
        .lines
        .keys()
        .chain(plan.inserts.keys())
        .copied()
        .collect();
    positions.sort_unstable();
    positions.dedup();
    Edits {
        lines,
        plan,
        positions: positions.into_iter(),
        pending: None,
    }
}

impl Edits<'_, '_> {
    /// (end, whether it only deletes) of the edit at `p`, or None when there is nothing to do.
    fn shape(&self, p: usize) -> Option<(usize, bool)> {
        let insert = self.plan.inserts.contains_key(&p);
        let fix = self.plan.lines.get(&p).filter(|_| p < self.lines.len());
        let b = if fix.is_some() { p + 1 } else { p };
        let deletes_only = !insert && fix.is_none_or(|f| f.delete);
        if b == p && deletes_only {
            return None;
        }
        Some((b, deletes_only))
    }

    fn edit_at(&self, p: usize) -> Edit {
        let mut edit = Edit {
            a: p,
            b: p,
            new: Vec::new(),
            rules: Vec::new(),
            reasons: Vec::new(),
        };
        if let Some(insert) = self.plan.inserts.get(&p) {
            edit.new.push(insert.content.clone());
            edit.rules.extend(&insert.rules);
            edit.reasons.extend(insert.reasons.iter().cloned());
        }
        if let (Some(fix), Some(line)) = (self.plan.lines.get(&p), self.lines.get(p)) {
            edit.b = p + 1;
            edit.new.extend(FixPlan::apply_line(fix, line));
            for rule in &fix.rules {
                if !edit.rules.contains(rule) {
                    edit.rules.push(rule);
                }
            }
            edit.reasons.extend(fix.reasons.iter().cloned());
        }
        edit
    }
}

impl Iterator for Edits<'_, '_> {
    type Item = Edit;

    fn next(&mut self) -> Option<Edit> {
        while let Some(p) = self.positions.next() {
            if self.shape(p).is_none() {
                continue;
            }
            let edit = self.edit_at(p);
            // A run of deleted lines (extra blank lines) is one edit, not one per line.
            match self.pending.as_mut() {
                Some(prev) if prev.b == edit.a && prev.new.is_empty() && edit.new.is_empty() => {
                    prev.b = edit.b;
                    for rule in edit.rules {
                        if !prev.rules.contains(&rule) {
                            prev.rules.push(rule);
                        }
                    }
                }
                _ => {
                    if let Some(done) = self.pending.replace(edit) {
                        return Some(done);
                    }
                }
            }
        }
        self.pending.take()
    }

    /// How many edits are left, without building them.
    fn count(self) -> usize {
        let mut count = 0;
        // (end, deletes only) of the last edit counted.
        let mut last: Option<(usize, bool)> = self.pending.as_ref().map(|e| {
            count += 1;
            (e.b, e.new.is_empty())
        });
        for p in self.positions.clone() {
            let Some((b, deletes_only)) = self.shape(p) else {
                continue;
            };
            match last.as_mut() {
                Some((prev_b, true)) if *prev_b == p && deletes_only => *prev_b = b,
                _ => {
                    count += 1;
                    last = Some((b, deletes_only));
                }
            }
        }
        count
    }
}

/// Keys are already hashes: pass them through.
#[derive(Default)]
struct IdentityHasher(u64);

impl Hasher for IdentityHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8) | u64::from(*b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type Counts = HashMap<u64, u32, BuildHasherDefault<IdentityHasher>>;

/// A fast line hash, eight bytes at a time. Collisions are harmless (see the module docs), so
/// speed matters more than strength; equal lines always hash equal.
fn line_hash(line: &str) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let bytes = line.as_bytes();
    let mut h = 0x243F_6A88_85A3_08D3 ^ (bytes.len() as u64).wrapping_mul(K);
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        h = (h ^ u64::from_le_bytes(word))
            .wrapping_mul(K)
            .rotate_left(29);
    }
    let mut tail = [0u8; 8];
    tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    h = (h ^ u64::from_le_bytes(tail)).wrapping_mul(K);
    h ^= h >> 32;
    h = h.wrapping_mul(0xD6E8_FEB8_6659_FD93);
    h ^ (h >> 29)
}

fn mix(h: u64, x: u64) -> u64 {
    (h.rotate_left(23) ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// A line of the applied prefix: unchanged (by original index) or new.
enum Line {
    Original(usize),
    New(String),
}

/// The file "earlier suggestions applied, later ones not", as line hashes, with window counts.
struct Sweep<'a> {
    original: &'a [&'a str],
    original_hashes: Vec<u64>,
    /// Lines before original line `ob`, as they are once earlier suggestions are applied.
    prefix: Vec<(u64, Line)>,
    prefix_text_len: usize,
    ob: usize,
    /// `counts[w]`: occurrences of each window hash of `w` lines; built on first use.
    counts: Vec<Option<Counts>>,
    materialized: Option<String>,
}

impl<'a> Sweep<'a> {
    fn new(original: &'a [&'a str], original_hashes: Vec<u64>, single_line_counts: Counts) -> Self {
        let mut counts = vec![None; MAX_WINDOW + 1];
        counts[1] = Some(single_line_counts);
        Sweep {
            original,
            original_hashes,
            prefix: Vec::new(),
            prefix_text_len: 0,
            ob: 0,
            counts,
            materialized: None,
        }
    }

    fn len(&self) -> usize {
        self.prefix.len() + self.original.len() - self.ob
    }

    fn hash_at(&self, i: usize) -> u64 {
        match self.prefix.get(i) {
            Some((h, _)) => *h,
            None => self.original_hashes[self.ob + i - self.prefix.len()],
        }
    }

    fn window_hash(&self, start: usize, w: usize) -> u64 {
        (start..start + w).fold(w as u64, |h, i| mix(h, self.hash_at(i)))
    }

    fn counts(&mut self, w: usize) -> &mut Counts {
        if self.counts[w].is_none() {
            let len = self.len();
            let mut map = Counts::with_capacity_and_hasher(len, Default::default());
            for s in 0..(len + 1).saturating_sub(w) {
                *map.entry(self.window_hash(s, w)).or_insert(0) += 1;
            }
            self.counts[w] = Some(map);
        }
        self.counts[w].get_or_insert_with(Counts::default)
    }

    fn state_index(&self, original_line: usize) -> usize {
        self.prefix.len() + original_line - self.ob
    }

    /// A window of original lines `[s, e)` around the edit whose text is unique now.
    fn find_window(&mut self, edit: &Edit) -> Option<(usize, usize)> {
        if let Some(window) = self.anchored_window(edit) {
            return Some(window);
        }
        self.smallest_window(edit)
    }

    /// The window from the edit to the nearest line that is itself unique in the current state
    /// (any other occurrence of the window would contain another copy of that line). One
    /// lookup per line, no per-size maps: the common case costs O(distance).
    fn anchored_window(&mut self, edit: &Edit) -> Option<(usize, usize)> {
        let n = self.original.len();
        let needs_extra = edit.a == edit.b || edit.new.is_empty();
        for dist in 0..=MAX_WINDOW {
            let mut anchors: Vec<usize> = Vec::new();
            if dist == 0 {
                anchors.extend(edit.a..edit.b);
            } else {
                if edit.a >= dist && edit.a - dist >= self.ob {
                    anchors.push(edit.a - dist);
                }
                if edit.b + dist - 1 < n && (edit.b > edit.a || dist > 0) {
                    anchors.push(edit.b + dist - 1);
                }
            }
            for anchor in anchors {
                let hash = self.window_hash(self.state_index(anchor), 1);
                if self.counts(1).get(&hash).copied().unwrap_or(0) > 1 {
                    continue;
                }
                let mut s = edit.a.min(anchor);
                let mut e = edit.b.max(anchor + 1);
                if needs_extra && s == edit.a && e == edit.b {
                    if e < n {
                        e += 1;
                    } else if s > self.ob {
                        s -= 1;
                    } else {
                        continue;
                    }
                }
                if e - s > MAX_WINDOW {
                    return None;
                }
                if self.state_index(s) == 0 || e == n {
                    let (old, _) = self.strings(edit, s, e);
                    if count_overlapping(self.materialize(), &old) > 1 {
                        continue;
                    }
                }
                return Some((s, e));
            }
        }
        None
    }

    /// The smallest window around the edit whose text is unique now, by window-hash counts.
    fn smallest_window(&mut self, edit: &Edit) -> Option<(usize, usize)> {
        let n = self.original.len();
        let extra = usize::from(edit.a == edit.b || edit.new.is_empty());
        let min_w = (edit.b - edit.a + extra).max(1);
        for w in min_w..=MAX_WINDOW.min(n) {
            let s_min = self.ob.max(edit.b.saturating_sub(w));
            let s_max = edit.a.min(n - w);
            if s_min > s_max {
                continue;
            }
            let mut edges = Vec::new();
            for s in (s_min..=s_max).rev() {
                let start = self.state_index(s);
                if start == 0 || s + w == n {
                    edges.push(s);
                    continue;
                }
                let hash = self.window_hash(start, w);
                if self.counts(w).get(&hash).copied().unwrap_or(0) <= 1 {
                    return Some((s, s + w));
                }
            }
            for s in edges {
                let (old, _) = self.strings(edit, s, s + w);
                if count_overlapping(self.materialize(), &old) <= 1 {
                    return Some((s, s + w));
                }
            }
        }
        None
    }

    fn strings(&self, edit: &Edit, s: usize, e: usize) -> (String, String) {
        let lead = if self.state_index(s) > 0 { "\n" } else { "" };
        let trail = if e < self.original.len() { "\n" } else { "" };
        let old = self.original[s..e].join("\n");
        let mut new_lines: Vec<&str> = self.original[s..edit.a].to_vec();
        new_lines.extend(edit.new.iter().map(String::as_str));
        new_lines.extend(&self.original[edit.b..e]);
        (
            format!("{lead}{old}{trail}"),
            format!("{lead}{}{trail}", new_lines.join("\n")),
        )
    }

    fn materialize(&mut self) -> &str {
        if self.materialized.is_none() {
            let mut text = String::with_capacity(self.prefix_text_len + 1024);
            let mut first = true;
            let prefix = self.prefix.iter().map(|(_, line)| match line {
                Line::New(s) => s.as_str(),
                Line::Original(i) => self.original[*i],
            });
            for line in prefix.chain(self.original[self.ob..].iter().copied()) {
                if !first {
                    text.push('\n');
                }
                first = false;
                text.push_str(line);
            }
            self.materialized = Some(text);
        }
        self.materialized.as_deref().unwrap_or("")
    }

    /// Moves the state past `edit`, keeping every built window count exact.
    fn apply(&mut self, edit: &Edit) {
        let pa = self.state_index(edit.a);
        let pb = pa + (edit.b - edit.a);
        let built: Vec<usize> = (1..=MAX_WINDOW)
            .filter(|w| self.counts[*w].is_some())
            .collect();
        for &w in &built {
            let len = self.len();
            for s in (pa + 1).saturating_sub(w)..pb.max(pa).min((len + 1).saturating_sub(w)) {
                let hash = self.window_hash(s, w);
                if let Some(count) = self.counts(w).get_mut(&hash) {
                    *count = count.saturating_sub(1);
                }
            }
        }
        for i in self.ob..edit.a {
            self.prefix
                .push((self.original_hashes[i], Line::Original(i)));
            self.prefix_text_len += self.original[i].len() + 1;
        }
        for line in &edit.new {
            self.prefix.push((line_hash(line), Line::New(line.clone())));
            self.prefix_text_len += line.len() + 1;
        }
        self.ob = edit.b;
        self.materialized = None;
        let end = pa + edit.new.len();
        for &w in &built {
            let len = self.len();
            for s in (pa + 1).saturating_sub(w)..end.min((len + 1).saturating_sub(w)) {
                let hash = self.window_hash(s, w);
                *self.counts(w).entry(hash).or_insert(0) += 1;
            }
        }
    }
}

/// Occurrences of `needle` in `hay`, overlapping ones included (the strictest reading of
/// "occurs exactly once").
pub fn count_overlapping(hay: &str, needle: &str) -> usize {
    if needle.is_empty() {
        return usize::MAX;
    }
    // A needle as long as the text can only be all of it (a one-line 16 MiB document's window).
    if needle.len() >= hay.len() {
        return usize::from(needle == hay);
    }
    let mut count = 0;
    let mut from = 0;
    while let Some(at) = hay[from..].find(needle) {
        count += 1;
        if count > 1 {
            return count;
        }
        let next = from + at + 1;
        from = match hay.get(next..) {
            Some(_) => next,
            None => (next..=hay.len())
                .find(|i| hay.is_char_boundary(*i))
                .unwrap_or(hay.len()),
        };
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::markdown::diagnostics::check;
    use crate::markdown::document::Document;

    #[test]
    fn overlapping_occurrences_count_up_to_two_and_a_whole_text_needle_once() {
        assert_eq!(count_overlapping("aaaa", "aaa"), 2);
        assert_eq!(count_overlapping("xabcx", "abc"), 1);
        assert_eq!(count_overlapping("abc", "abc"), 1);
        assert_eq!(count_overlapping("abc", "abd"), 0);
        assert_eq!(count_overlapping("ab", "abc"), 0);
        assert_eq!(count_overlapping("é", "é"), 1);
    }

    #[test]
    fn counting_the_rest_agrees_with_building_it() {
        // Runs of extra blank lines (merged deletions), inserts next to line fixes, a last line
        // without a newline.
        let text =
            "# A\ntext  \t\n\n\n\n## B\nx https://a.example \n\n\n# A\n\n\n\nend   \n## C\nlast";
        let doc = Document::parse(text);
        let (_, plan) = check(&doc, None);
        let lines: Vec<&str> = text.split('\n').collect();
        let all: Vec<Edit> = edits_from_plan(&lines, &plan).collect();
        assert!(all.len() >= 8, "{}", all.len());
        assert!(
            all.iter().any(|e| e.new.is_empty() && e.b - e.a > 1),
            "a merged run of deletions"
        );
        for taken in 0..=all.len() {
            let mut rest = edits_from_plan(&lines, &plan);
            for expected in &all[..taken] {
                let got = rest.next().map(|e| (e.a, e.b, e.new, e.rules, e.reasons));
                let want = (
                    expected.a,
                    expected.b,
                    expected.new.clone(),
                    expected.rules.clone(),
                    expected.reasons.clone(),
                );
                assert_eq!(got, Some(want));
            }
            assert_eq!(rest.count(), all.len() - taken, "after {taken}");
        }
    }
}
