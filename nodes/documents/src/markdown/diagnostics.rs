//! markdownlint-style rules over a parsed [`Document`]: findings with exact positions, and the
//! mechanical fixes `format_suggestions` turns into edits.

use super::document::Document;
use super::rules::{self, Severity};
use regex::Regex;
use serde::Serialize;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Range;
use std::sync::LazyLock;

/// One finding.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diagnostic {
    pub rule: &'static str,
    /// markdownlint rule number, or null for cheng-only rules.
    pub alias: Option<&'static str>,
    pub severity: Severity,
    /// 1-indexed.
    pub line: usize,
    /// 1-indexed, counted in characters.
    pub column: usize,
    pub message: String,
    /// The link target as written (link_check_local and fragment findings).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

impl Diagnostic {
    pub fn new(rule: &'static str, (line, column): (usize, usize), message: String) -> Self {
        let spec = rules::rule(rule);
        Diagnostic {
            rule,
            alias: spec.and_then(|r| r.alias),
            severity: spec.map_or(Severity::Warning, |r| r.severity),
            line,
            column,
            message,
            target: None,
        }
    }

    pub fn with_target(mut self, target: &str) -> Self {
        self.target = Some(target.to_string());
        self
    }
}

/// What to change on one line (0-based), composed from every rule that wants it changed.
#[derive(Debug, Clone, Default)]
pub struct LineFix {
    /// Byte ranges within the line and their replacements (non-overlapping once sorted).
    pub replacements: Vec<(Range<usize>, String)>,
    pub trim_trailing: bool,
    pub append_newline: bool,
    pub delete: bool,
    pub rules: Vec<&'static str>,
    pub reasons: Vec<String>,
}

/// A line to insert before line `p` (0-based), e.g. a blank line above a heading.
#[derive(Debug, Clone, Default)]
pub struct Insert {
    pub content: String,
    pub rules: Vec<&'static str>,
    pub reasons: Vec<String>,
}

/// Every mechanical fix, by line.
#[derive(Debug, Clone, Default)]
pub struct FixPlan {
    pub lines: BTreeMap<usize, LineFix>,
    pub inserts: BTreeMap<usize, Insert>,
    /// (rule, 1-indexed line) of every finding some fix addresses.
    pub covered: HashSet<(&'static str, usize)>,
}

impl FixPlan {
    /// Whether a fix addresses this finding.
    pub fn covers(&self, d: &Diagnostic) -> bool {
        self.covered.contains(&(d.rule, d.line))
    }
}

impl FixPlan {
    /// Adds the fixes of `later` after this plan's own, as if they had been recorded into this
    /// plan after everything already in it.
    fn absorb(&mut self, later: FixPlan) {
        for (i, fix) in later.lines {
            let mine = self.lines.entry(i).or_default();
            mine.replacements.extend(fix.replacements);
            mine.trim_trailing |= fix.trim_trailing;
            mine.append_newline |= fix.append_newline;
            mine.delete |= fix.delete;
            for rule in fix.rules {
                if !mine.rules.contains(&rule) {
                    mine.rules.push(rule);
                }
            }
            mine.reasons.extend(fix.reasons);
        }
        for (p, insert) in later.inserts {
            match self.inserts.entry(p) {
                std::collections::btree_map::Entry::Vacant(slot) => {
                    slot.insert(insert);
                }
                std::collections::btree_map::Entry::Occupied(mut slot) => {
                    let mine = slot.get_mut();
                    for rule in insert.rules {
                        if !mine.rules.contains(&rule) {
                            mine.rules.push(rule);
                        }
                    }
                    mine.reasons.extend(insert.reasons);
                }
            }
        }
        self.covered.extend(later.covered);
    }

    fn line(&mut self, i: usize, rule: &'static str, reason: String) -> &mut LineFix {
        self.covered.insert((rule, i + 1));
        let fix = self.lines.entry(i).or_default();
        if !fix.rules.contains(&rule) {
            fix.rules.push(rule);
        }
        fix.reasons.push(reason);
        fix
    }

    fn insert(
        &mut self,
        p: usize,
        content: &str,
        rule: &'static str,
        reason: String,
        finding_line: usize,
    ) {
        self.covered.insert((rule, finding_line));
        let insert = self.inserts.entry(p).or_insert_with(|| Insert {
            content: content.to_string(),
            ..Insert::default()
        });
        if !insert.rules.contains(&rule) {
            insert.rules.push(rule);
        }
        insert.reasons.push(reason);
    }

    /// The new lines replacing original line `i` (empty when deleted).
    pub fn apply_line(fix: &LineFix, line: &str) -> Vec<String> {
        if fix.delete {
            return Vec::new();
        }
        let mut replacements = fix.replacements.clone();
        replacements.sort_by_key(|(r, _)| r.start);
        let mut out = String::with_capacity(line.len() + 8);
        let mut at = 0;
        for (range, with) in replacements {
            if range.start < at || range.end > line.len() {
                continue; // overlapping or stale; the other fix wins
            }
            out.push_str(&line[at..range.start]);
            out.push_str(&with);
            at = range.end;
        }
        out.push_str(&line[at..]);
        if fix.trim_trailing {
            let cr = out.ends_with('\r');
            let body = out.trim_end_matches('\r').trim_end().len();
            out.truncate(body);
            if cr {
                out.push('\r');
            }
        }
        // A last line that trimming emptied already leaves the file ending in a newline.
        if fix.append_newline && !out.is_empty() {
            vec![out, String::new()]
        } else {
            vec![out]
        }
    }
}

/// Findings of every diagnostics rule, sorted by position, and the fixes for the fixable ones.
pub fn check(doc: &Document<'_>, invalid_utf8_at: Option<usize>) -> (Vec<Diagnostic>, FixPlan) {
    check_with(doc, invalid_utf8_at, doc.text.len() >= PARALLEL_MIN_BYTES)
}

/// [`check`], with half the rules on a second thread or not (same result either way).
fn check_with(
    doc: &Document<'_>,
    invalid_utf8_at: Option<usize>,
    parallel: bool,
) -> (Vec<Diagnostic>, FixPlan) {
    let mut out = Vec::new();
    let mut plan = FixPlan::default();
    if let Some(at) = invalid_utf8_at {
        out.push(Diagnostic::new(
            rules::INVALID_UTF8,
            doc.position(at.min(doc.text.len())),
            "The file is not valid UTF-8 from here on; it was decoded lossily (shown as U+FFFD). Re-save it as UTF-8.".into(),
        ));
    }
    // The rules fall in two independent halves of similar cost: the line-based whitespace rules
    // (MD009, MD012) with the heading rules, and the link, code-block, bare-URL and final-newline
    // rules. On a large file the first half runs on a second thread; its findings and fixes go
    // first, exactly where the sequential order puts them.
    let lines_and_headings = |out: &mut Vec<Diagnostic>, plan: &mut FixPlan| {
        let verbatim = doc.verbatim_lines();
        whitespace_rules(doc, &verbatim, out, plan);
        heading_rules(doc, out, plan);
    };
    let mut rest = Vec::new();
    let mut rest_plan = FixPlan::default();
    if parallel {
        std::thread::scope(|scope| {
            let lines = std::thread::Builder::new()
                .name("markdown-lines".into())
                .spawn_scoped(scope, || {
                    let mut out = Vec::new();
                    let mut plan = FixPlan::default();
                    lines_and_headings(&mut out, &mut plan);
                    (out, plan)
                });
            link_and_text_rules(doc, &mut rest, &mut rest_plan);
            match lines.map(|handle| handle.join()) {
                Ok(Ok((found, lines_plan))) => {
                    out.extend(found);
                    plan = lines_plan;
                }
                // The rules panicked: the same panic the sequential pass would raise.
                Ok(Err(panic)) => std::panic::resume_unwind(panic),
                // No thread could be started: run them here.
                Err(_) => lines_and_headings(&mut out, &mut plan),
            }
        });
    } else {
        lines_and_headings(&mut out, &mut plan);
        link_and_text_rules(doc, &mut rest, &mut rest_plan);
    }
    out.append(&mut rest);
    plan.absorb(rest_plan);
    out.sort_by(|a, b| (a.line, a.column, a.rule).cmp(&(b.line, b.column, b.rule)));
    (out, plan)
}

/// Texts at least this long run half the rules on a second thread.
const PARALLEL_MIN_BYTES: usize = 256 * 1024;

/// The rules after the whitespace and heading rules, in the order their findings and fixes are
/// recorded.
fn link_and_text_rules(doc: &Document<'_>, out: &mut Vec<Diagnostic>, plan: &mut FixPlan) {
    link_rules(doc, out, plan);
    for block in doc
        .code_blocks
        .iter()
        .filter(|c| c.fenced && c.info.trim().is_empty())
    {
        out.push(Diagnostic::new(
            rules::FENCE_LANGUAGE,
            doc.position(block.range.start),
            "Fenced code block has no language; name one after the opening fence (for example ```text).".into(),
        ));
    }
    for url in &doc.bare_urls {
        let line = doc.lines.line_of(url.start);
        let start = doc.lines.start(line);
        let value = &doc.text[url.clone()];
        out.push(Diagnostic::new(
            rules::BARE_URL,
            doc.position(url.start),
            if value.contains("://") {
                format!("Bare URL {value}; wrap it in <...> or make it a [link](...).")
            } else {
                format!("Bare e-mail address {value}; wrap it in <...> or make it a [link](mailto:...).")
            },
        ));
        plan.line(
            line,
            rules::BARE_URL,
            format!(
                "wrap the bare {} {value} in <...>",
                if value.contains("://") {
                    "URL"
                } else {
                    "e-mail address"
                }
            ),
        )
        .replacements
        .push((url.start - start..url.end - start, format!("<{value}>")));
    }
    if !doc.text.is_empty() && !doc.text.ends_with('\n') {
        let last = doc.lines.count() - 1;
        let len = doc.line_text(last).chars().count();
        out.push(Diagnostic::new(
            rules::TRAILING_NEWLINE,
            // markdownlint points at the last character of the file.
            (last + 1, len.max(1)),
            "The file does not end with a newline; add one.".into(),
        ));
        plan.line(
            last,
            rules::TRAILING_NEWLINE,
            "end the file with a newline".into(),
        )
        .append_newline = true;
    }
}

fn whitespace_rules(
    doc: &Document<'_>,
    verbatim: &[bool],
    out: &mut Vec<Diagnostic>,
    plan: &mut FixPlan,
) {
    let first = doc.first_content_line();
    let mut blank_run: Option<(usize, usize)> = None; // (first blank line, count)
    let flush = |run: &mut Option<(usize, usize)>, plan: &mut FixPlan| {
        if let Some((start, count)) = run.take() {
            for extra in start + 1..start + count {
                plan.line(
                    extra,
                    rules::MULTIPLE_BLANKS,
                    format!("keep one blank line instead of {count}"),
                )
                .delete = true;
            }
        }
    };
    for (i, &in_verbatim) in verbatim.iter().enumerate() {
        let raw = doc.line_text(i);
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if in_verbatim || i < first {
            flush(&mut blank_run, plan);
            continue;
        }
        let body = line.trim_end();
        let trailing = line.len() - body.len();
        if trailing > 0 && !(trailing == 2 && line.ends_with("  ")) {
            let column = body.chars().count() + 1;
            let count = line[body.len()..].chars().count();
            out.push(Diagnostic::new(
                rules::TRAILING_WHITESPACE,
                (i + 1, column),
                format!(
                    "Trailing whitespace ({count} character{}); remove it.",
                    if count == 1 { "" } else { "s" }
                ),
            ));
            plan.line(
                i,
                rules::TRAILING_WHITESPACE,
                "remove trailing whitespace".into(),
            )
            .trim_trailing = true;
        }
        if body.is_empty() {
            let run = blank_run.get_or_insert((i, 0));
            run.1 += 1;
            if run.1 > 1 {
                out.push(Diagnostic::new(
                    rules::MULTIPLE_BLANKS,
                    (i + 1, 1),
                    format!("Multiple consecutive blank lines ({}); keep one.", run.1),
                ));
            }
        } else {
            flush(&mut blank_run, plan);
        }
    }
    flush(&mut blank_run, plan);
}

/// A line that is blank once blockquote markers are ignored.
fn is_blank(line: &str) -> bool {
    line.trim_matches(|c: char| c.is_whitespace() || c == '>')
        .is_empty()
}

fn heading_rules(doc: &Document<'_>, out: &mut Vec<Diagnostic>, plan: &mut FixPlan) {
    let first = doc.first_content_line();
    let mut previous_level: Option<u8> = None;
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let first_h1 = doc
        .headings
        .first()
        .filter(|h| h.level == 1)
        .map(|h| h.first_line + 1);
    let top = if doc.front_matter_title {
        Some(0)
    } else {
        first_h1
    };
    for (index, heading) in doc.headings.iter().enumerate() {
        let line = heading.first_line + 1;
        let at = || doc.position(heading.range.start);
        if let Some(prev) = previous_level {
            if heading.level > prev + 1 {
                out.push(Diagnostic::new(
                    rules::HEADING_JUMP,
                    at(),
                    format!(
                        "Heading level jumps from h{prev} to h{}; use h{} here.",
                        heading.level,
                        prev + 1
                    ),
                ));
            }
        }
        previous_level = Some(heading.level);
        match seen.get(heading.text.as_str()) {
            Some(first_line) => out.push(Diagnostic::new(
                rules::DUPLICATE_HEADING,
                at(),
                format!(
                    "Duplicate heading \"{}\" (first at line {first_line}); make the text unique.",
                    heading.text
                ),
            )),
            None => {
                seen.insert(&heading.text, line);
            }
        }
        if heading.level == 1 {
            if let Some(top_line) = top {
                if index > 0 || doc.front_matter_title {
                    let why = if top_line == 0 {
                        "the front matter already sets a title".to_string()
                    } else {
                        format!("the document already has one at line {top_line}")
                    };
                    out.push(Diagnostic::new(
                        rules::MULTIPLE_H1,
                        at(),
                        format!("Multiple top-level headings: {why}; make this an h2."),
                    ));
                }
            }
        }
        // Blank lines around the heading. The inserted line carries the blockquote markers in
        // front of the heading (`>`), nothing else: a heading in a list item (`- # H`, `> 1. # H`)
        // gets a plain (or `>`) blank line, which is valid inside and between list items.
        let line_start = doc.lines.start(heading.first_line);
        let prefix = &doc.text[line_start..heading.range.start.max(line_start)];
        let quote_end = prefix
            .find(|c: char| !(c == ' ' || c == '\t' || c == '>'))
            .unwrap_or(prefix.len());
        let blank = prefix[..quote_end].trim_end();
        if heading.first_line > first && !is_blank(doc.line_text(heading.first_line - 1)) {
            out.push(Diagnostic::new(
                rules::BLANKS_AROUND_HEADINGS,
                at(),
                "Expected a blank line above the heading.".into(),
            ));
            plan.insert(
                heading.first_line,
                blank,
                rules::BLANKS_AROUND_HEADINGS,
                "add a blank line above the heading".into(),
                line,
            );
        }
        let below = heading.last_line + 1;
        if below < doc.lines.count() && !is_blank(doc.line_text(below)) {
            out.push(Diagnostic::new(
                rules::BLANKS_AROUND_HEADINGS,
                at(),
                "Expected a blank line below the heading.".into(),
            ));
            plan.insert(
                below,
                blank,
                rules::BLANKS_AROUND_HEADINGS,
                "add a blank line below the heading".into(),
                line,
            );
        }
    }
}

static LINE_FRAGMENT: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^L\d+(C\d+)?(-L\d+(C\d+)?)?$").ok());

/// Whether `fragment` (already percent-decoded) names something in a document with `anchors`.
pub fn fragment_exists(has_anchor: impl Fn(&str) -> bool, fragment: &str) -> bool {
    has_anchor(fragment)
        || fragment == "top"
        || LINE_FRAGMENT
            .as_ref()
            .is_some_and(|re| re.is_match(fragment))
}

/// Percent-decodes a URL component; invalid escapes or UTF-8 leave the input unchanged.
pub fn percent_decode(s: &str) -> Cow<'_, str> {
    if !s.contains('%') {
        return Cow::Borrowed(s);
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(hi), Some(lo)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push(hi * 16 + lo);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).map_or(Cow::Borrowed(s), Cow::Owned)
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

fn link_rules(doc: &Document<'_>, out: &mut Vec<Diagnostic>, plan: &mut FixPlan) {
    use pulldown_cmark::LinkType;
    let anchors = doc.anchors();
    let has = |f: &str| anchors.contains(f);
    // Lowercased anchor → anchor, for "did you mean" on case-only mismatches (first wins).
    let mut by_lower: HashMap<String, &str> = HashMap::new();
    for heading in &doc.headings {
        by_lower
            .entry(heading.anchor.to_lowercase())
            .or_insert(&heading.anchor);
    }
    for link in &doc.links {
        // Positions cost a line lookup and a character count; only findings need one.
        let at = || doc.position(link.range.start);
        if link.image {
            if link.text_empty {
                out.push(Diagnostic::new(
                    rules::MISSING_ALT,
                    at(),
                    "Image has no alternative text; describe it inside ![...].".into(),
                ));
            }
            continue;
        }
        if matches!(link.link_type, LinkType::Autolink | LinkType::Email) {
            continue;
        }
        let dest = link.dest.trim();
        if dest.is_empty() || dest == "#" {
            out.push(
                Diagnostic::new(
                    rules::EMPTY_LINK,
                    at(),
                    "Link has an empty target; point it somewhere or remove the link.".into(),
                )
                .with_target(dest),
            );
            continue;
        }
        if let Some(fragment) = dest.strip_prefix('#') {
            let decoded = percent_decode(fragment);
            if fragment_exists(has, &decoded) || fragment_exists(has, fragment) {
                continue;
            }
            let near = by_lower.get(&decoded.to_lowercase()).copied();
            match near {
                Some(anchor) => {
                    out.push(Diagnostic::new(
                        rules::BROKEN_FRAGMENT,
                        at(),
                        format!("Link fragment #{fragment} matches no heading; anchors are case-sensitive: use #{anchor}."),
                    ).with_target(dest));
                    fragment_fix(doc, link.range.clone(), fragment, anchor, plan);
                }
                None => out.push(
                    Diagnostic::new(
                        rules::BROKEN_FRAGMENT,
                        at(),
                        format!(
                            "Link fragment #{fragment} matches no heading or HTML id in this file."
                        ),
                    )
                    .with_target(dest),
                ),
            }
        }
    }
    for img in &doc.html_images_without_alt {
        out.push(Diagnostic::new(
            rules::MISSING_ALT,
            doc.position(*img),
            "HTML <img> has no alt attribute; add alt=\"...\".".into(),
        ));
    }
    for broken in &doc.broken_refs {
        out.push(Diagnostic::new(
            rules::UNDEFINED_REFERENCE,
            doc.position(broken.range.start),
            format!(
                "Reference [{}] has no definition; add `[{}]: target` or fix the label.",
                broken.label, broken.label
            ),
        ));
    }
}

/// Replaces `#fragment` with `#anchor` when it occurs exactly once inside a one-line link.
fn fragment_fix(
    doc: &Document<'_>,
    range: Range<usize>,
    fragment: &str,
    anchor: &str,
    plan: &mut FixPlan,
) {
    let line = doc.lines.line_of(range.start);
    if doc.lines.line_of(range.end.saturating_sub(1)) != line {
        return;
    }
    let source = &doc.text[range.clone()];
    let needle = format!("#{fragment}");
    let mut hits = source.match_indices(&needle);
    if let (Some((at, _)), None) = (hits.next(), hits.next()) {
        let start = range.start + at - doc.lines.start(line);
        plan.line(
            line,
            rules::BROKEN_FRAGMENT,
            format!("link to #{anchor} (anchors are case-sensitive)"),
        )
        .replacements
        .push((start..start + needle.len(), format!("#{anchor}")));
    }
}

#[cfg(test)]
mod tests;
