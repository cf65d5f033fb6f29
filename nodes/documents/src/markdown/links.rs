//! `link_check_local`: every relative link and image must name something inside the workspace;
//! fragments must match the target file's anchors; nothing is fetched and nothing outside the
//! workspace is read.
//!
//! Targets resolve against the Markdown file's directory; a target starting with `/` resolves
//! against the workspace root (as GitHub resolves it against the repository root). A link that
//! climbs out, lexically or through a symlink, is reported as `outside-workspace` and not read.
//! Findings go to the node's `diagnostics` output (there is no separate link port); links that
//! resolve are only counted, in the summary. Checking fragments in other files reads each
//! linked Markdown file once, within [`LIMITS`] (200 files, 64 MiB per run).

use super::diagnostics::{fragment_exists, percent_decode, Diagnostic};
use super::document::Document;
use super::rules;
use crate::source::{read_text, MAX_TEXT_BYTES};
use cheng_node::paths::resolve_existing;
use cheng_node::ErrorKind;
use pulldown_cmark::LinkType;
use std::collections::{HashMap, HashSet};
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;

#[derive(Debug, Default, Clone, PartialEq)]
pub struct LinkReport {
    pub diagnostics: Vec<Diagnostic>,
    /// Local links and images checked (fragment-only links included).
    pub checked: usize,
    pub ok: usize,
    pub broken: usize,
    pub outside: usize,
    pub bad_fragments: usize,
    pub external: usize,
    pub undefined_references: usize,
    /// Fragments into other Markdown files left unchecked because [`Limits`] were reached.
    pub unchecked_fragments: usize,
}

/// How much of the workspace one run may read to check fragments in other files. Every linked
/// Markdown file is read and parsed once; past these bounds further fragments into not yet read
/// files are counted as unchecked (in the summary) instead of read.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Most other Markdown files read.
    pub files: usize,
    /// Most bytes read across them (each file is also capped at `MAX_TEXT_BYTES`).
    pub bytes: u64,
}

/// Default [`Limits`]: 200 files, 64 MiB.
pub const LIMITS: Limits = Limits {
    files: 200,
    bytes: 64 * 1024 * 1024,
};

/// Checks the links of `doc`, the file at `file` (canonical, inside the canonical `root`).
pub fn check(root: &Path, file: &Path, doc: &Document<'_>) -> LinkReport {
    check_with_limits(root, file, doc, LIMITS)
}

/// [`check`] with explicit read limits.
pub fn check_with_limits(
    root: &Path,
    file: &Path,
    doc: &Document<'_>,
    limits: Limits,
) -> LinkReport {
    let mut checker = Checker {
        root,
        file,
        own_path: Rc::new(file.to_path_buf()),
        own_anchors: Anchors::Unchecked,
        report: LinkReport::default(),
        by_text: HashMap::new(),
        targets: HashMap::new(),
        anchors: HashMap::new(),
        limits,
        files_read: 0,
        bytes_read: 0,
        listings: HashMap::new(),
    };
    checker.own_anchors = Anchors::Known(doc.anchors().into_iter().map(str::to_string).collect());
    for link in &doc.links {
        // Positions cost a line lookup and a character count; only findings need one.
        let at = || doc.position(link.range.start);
        let dest = link.dest.trim();
        let kind = if link.image { "Image" } else { "Link" };
        if dest.is_empty() {
            continue; // empty-link-target is a diagnostics finding
        }
        if matches!(link.link_type, LinkType::Autolink | LinkType::Email) || is_external(dest) {
            checker.report.external += 1;
            checker.report.diagnostics.push(
                Diagnostic::new(
                    rules::SKIPPED_EXTERNAL,
                    at(),
                    format!("{kind} to {dest} is external; not checked (no network)."),
                )
                .with_target(dest),
            );
            continue;
        }
        checker.report.checked += 1;
        checker.check_local(dest, kind, &at);
    }
    // Raw-HTML `<a href>` and `<img src>`: the same checks (empty values are not links).
    for (offset, image, dest) in &doc.html_links {
        let at = || doc.position(*offset);
        let dest = dest.trim();
        let kind = if *image { "HTML image" } else { "HTML link" };
        if dest.is_empty() || dest == "#" {
            continue;
        }
        if is_external(dest) {
            checker.report.external += 1;
            checker.report.diagnostics.push(
                Diagnostic::new(
                    rules::SKIPPED_EXTERNAL,
                    at(),
                    format!("{kind} to {dest} is external; not checked (no network)."),
                )
                .with_target(dest),
            );
            continue;
        }
        checker.report.checked += 1;
        checker.check_local(dest, kind, &at);
    }
    for broken in &doc.broken_refs {
        checker.report.undefined_references += 1;
        checker.report.diagnostics.push(Diagnostic::new(
            rules::UNDEFINED_REFERENCE,
            doc.position(broken.range.start),
            format!(
                "Reference [{}] has no definition, so the link cannot be resolved.",
                broken.label
            ),
        ));
    }
    // Counted, not listed: they all come after the kept ones, past what is shown.
    checker.report.undefined_references += doc.broken_refs_omitted;
    let mut report = checker.report;
    report.diagnostics.sort_by_key(|d| (d.line, d.column));
    report
}

/// A scheme (`https:`, `mailto:`, `file:`) or a network-path reference (`//host/x`).
fn is_external(dest: &str) -> bool {
    if dest.starts_with("//") {
        return true;
    }
    let scheme_len = dest.find(':').unwrap_or(0);
    scheme_len > 0
        && dest[..scheme_len].starts_with(|c: char| c.is_ascii_alphabetic())
        && dest[..scheme_len].chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        // `C:` drive letters are not schemes worth skipping; treat them as (broken) local paths.
        && scheme_len > 1
}

/// Outcome of resolving one relative path (cached per workspace-relative path).
#[derive(Clone)]
enum Target {
    /// Shared: most documents link to a few files many times.
    Found(Rc<PathBuf>),
    Missing(String),
    Outside(String),
}

struct Checker<'r> {
    root: &'r Path,
    file: &'r Path,
    /// `file`, shared by every fragment-only link.
    own_path: Rc<PathBuf>,
    /// Anchors of `file` itself (looked up without hashing its path).
    own_anchors: Anchors,
    report: LinkReport,
    /// Outcomes by the target exactly as written (most documents repeat a few targets).
    by_text: HashMap<String, Target>,
    /// Outcomes by normalised workspace-relative path.
    targets: HashMap<String, Target>,
    /// Anchors per target file.
    anchors: HashMap<PathBuf, Anchors>,
    limits: Limits,
    files_read: usize,
    bytes_read: u64,
    /// Directory names, by workspace-relative directory.
    listings: HashMap<String, Listing>,
}

/// Links into one directory before its names are listed (see [`Checker::listing`]).
const LIST_AFTER_LINKS: usize = 64;
/// Largest directory listed.
const MAX_LISTED: usize = 1 << 20;

/// A directory's names, for [`Checker::listing`].
enum Listing {
    /// Links into it so far.
    Counting(usize),
    Names(HashSet<std::ffi::OsString>),
    /// Not listable (or too large): every target is resolved.
    Unlisted,
}

/// What a target file offers for fragment checks.
enum Anchors {
    Known(HashSet<String>),
    /// Not Markdown, or not analysable (too big, binary): fragments are not checked.
    Unchecked,
    /// Not read because the run's [`Limits`] were reached.
    OverLimit,
}

impl Checker<'_> {
    fn check_local(&mut self, dest: &str, kind: &str, at: &dyn Fn() -> (usize, usize)) {
        let (before_fragment, fragment) = match dest.split_once('#') {
            Some((p, f)) => (p, Some(f)),
            None => (dest, None),
        };
        let path_part = before_fragment
            .split_once('?')
            .map_or(before_fragment, |(p, _)| p);
        let target_file = if path_part.is_empty() {
            Target::Found(Rc::clone(&self.own_path))
        } else if let Some(known) = self.by_text.get(path_part) {
            known.clone()
        } else {
            let resolved = self.resolve(&percent_decode(path_part));
            self.by_text.insert(path_part.to_string(), resolved.clone());
            resolved
        };
        let path = match target_file {
            Target::Found(path) => path,
            Target::Missing(why) => {
                self.report.broken += 1;
                self.report.diagnostics.push(
                    Diagnostic::new(
                        rules::BROKEN_LOCAL_LINK,
                        at(),
                        format!("{kind} target {path_part} does not exist ({why})."),
                    )
                    .with_target(dest),
                );
                return;
            }
            Target::Outside(why) => {
                self.report.outside += 1;
                self.report.diagnostics.push(
                    Diagnostic::new(
                        rules::OUTSIDE_WORKSPACE,
                        at(),
                        format!("{kind} target {path_part} {why}; it was not followed."),
                    )
                    .with_target(dest),
                );
                return;
            }
        };
        let Some(fragment) = fragment.filter(|f| !f.is_empty()) else {
            self.report.ok += 1;
            return;
        };
        let decoded = percent_decode(fragment);
        let found = match self.anchors_of(&path) {
            // Fragments into non-Markdown files (source lines, PDFs) are not checked.
            Anchors::Unchecked => true,
            Anchors::OverLimit => {
                self.report.unchecked_fragments += 1;
                return;
            }
            Anchors::Known(set) => {
                let has = |f: &str| set.contains(f);
                fragment_exists(has, &decoded) || fragment_exists(has, fragment)
            }
        };
        if found {
            self.report.ok += 1;
        } else {
            self.report.bad_fragments += 1;
            let mut d = Diagnostic::new(
                rules::BROKEN_FRAGMENT,
                at(),
                if path.as_path() == self.file {
                    format!(
                        "{kind} fragment #{fragment} matches no heading or HTML id in this file."
                    )
                } else {
                    format!(
                        "{kind} fragment #{fragment} matches no heading or HTML id in {path_part}."
                    )
                },
            )
            .with_target(dest);
            if path.as_path() != self.file {
                d.alias = None; // markdownlint's MD051 covers only same-file fragments
            }
            self.report.diagnostics.push(d);
        }
    }

    /// Workspace-relative path of `target` (relative to the file's directory, or to the root
    /// when it starts with `/`), without touching the file system.
    fn resolve(&mut self, target: &str) -> Target {
        let base: Vec<String> = if target.starts_with('/') {
            Vec::new()
        } else {
            let dir = self.file.parent().unwrap_or(self.root);
            match dir.strip_prefix(self.root) {
                Ok(rel) => rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect(),
                Err(_) => Vec::new(),
            }
        };
        let mut parts = base;
        for component in Path::new(target.trim_start_matches('/')).components() {
            match component {
                Component::Normal(name) => parts.push(name.to_string_lossy().into_owned()),
                Component::ParentDir => {
                    let Some(_) = parts.pop() else {
                        return Target::Outside("climbs above the workspace root".into());
                    };
                }
                _ => {}
            }
        }
        let rel = parts.join("/");
        if let Some(known) = self.targets.get(&rel) {
            return known.clone();
        }
        if let Some(name) = parts.last() {
            let dir = parts[..parts.len() - 1].join("/");
            if self
                .listing(&dir)
                .is_some_and(|names| !names.contains(std::ffi::OsStr::new(name)))
            {
                // Not in its directory: what resolving would find, without a path walk.
                let outcome = Target::Missing(format!("looked for {rel} in the workspace"));
                self.targets.insert(rel, outcome.clone());
                return outcome;
            }
        }
        let outcome = match resolve_existing(self.root, Some(&rel), "link") {
            Ok(path) => Target::Found(Rc::new(path)),
            Err(e) if e.kind == ErrorKind::PathOutsideWorkspace => {
                Target::Outside("resolves outside the workspace through a symlink".into())
            }
            Err(e) if e.kind == ErrorKind::NotFound => {
                Target::Missing(format!("looked for {rel} in the workspace"))
            }
            Err(e) => Target::Missing(e.message),
        };
        self.targets.insert(rel, outcome.clone());
        outcome
    }

    /// The names in workspace directory `dir` (relative, `""` for the root), once links into it
    /// are many: a document with hundreds of thousands of links to missing files would otherwise
    /// walk the path (a `readlink` per component) for each. Only a name's absence is taken from
    /// the listing; a present name is still resolved (symlinks, the workspace boundary), so the
    /// outcome is the same as resolving. `None`: few links so far, or not listable.
    fn listing(&mut self, dir: &str) -> Option<&HashSet<std::ffi::OsString>> {
        let entry = self
            .listings
            .entry(dir.to_string())
            .or_insert(Listing::Counting(0));
        if let Listing::Counting(n) = entry {
            *n += 1;
            if *n < LIST_AFTER_LINKS {
                return None;
            }
            // Only a directory inside the workspace is listed (a symlinked one leading out is not).
            let listed = if dir.is_empty() {
                Ok(self.root.to_path_buf())
            } else {
                resolve_existing(self.root, Some(dir), "link")
            };
            // Listed through the workspace handle: beneath the root, no symlink followed.
            let read = listed.ok().and_then(|dir| {
                cheng_fs::WorkspaceFs::open(self.root)
                    .and_then(|fs| fs.read_dir(&dir))
                    .ok()
            });
            *entry = match read {
                Some(items) if items.len() <= MAX_LISTED => {
                    Listing::Names(items.into_iter().map(|item| item.name).collect())
                }
                _ => Listing::Unlisted,
            };
        }
        match entry {
            Listing::Names(names) => Some(names),
            _ => None,
        }
    }

    fn anchors_of(&mut self, path: &Path) -> &Anchors {
        if path == self.file {
            return &self.own_anchors;
        }
        if !self.anchors.contains_key(path) {
            let is_markdown = path.extension().and_then(|e| e.to_str()).is_some_and(|e| {
                matches!(
                    e.to_ascii_lowercase().as_str(),
                    "md" | "markdown" | "mdx" | "mkd" | "mdown"
                )
            });
            let size = cheng_fs::WorkspaceFs::open(self.root)
                .and_then(|fs| fs.symlink_metadata(path))
                .ok()
                .filter(|m| m.is_file())
                .map(|m| m.len());
            let anchors = match size {
                Some(size) if is_markdown => {
                    let remaining = self.limits.bytes.saturating_sub(self.bytes_read);
                    if self.files_read >= self.limits.files || size > remaining {
                        Anchors::OverLimit
                    } else {
                        self.files_read += 1;
                        self.bytes_read += size;
                        let rel = path
                            .strip_prefix(self.root)
                            .map(|p| p.to_string_lossy().into_owned())
                            .unwrap_or_default();
                        match read_text(self.root, &rel, "link", MAX_TEXT_BYTES.min(remaining)) {
                            Ok(file) => Anchors::Known(
                                Document::parse(&file.text)
                                    .anchors()
                                    .into_iter()
                                    .map(str::to_string)
                                    .collect(),
                            ),
                            Err(_) => Anchors::Unchecked,
                        }
                    }
                }
                _ => Anchors::Unchecked,
            };
            self.anchors.insert(path.to_path_buf(), anchors);
        }
        self.anchors.get(path).unwrap_or(&Anchors::Unchecked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemes_and_network_paths_are_external() {
        for dest in [
            "https://x.example",
            "mailto:a@b.example",
            "//cdn.example/x",
            "file:///etc/passwd",
            "tel:+1",
        ] {
            assert!(is_external(dest), "{dest}");
        }
        for dest in [
            "a.md",
            "./a.md#x",
            "../b/c.png",
            "/docs/x.md",
            "a:b.md".trim_start_matches("a:"),
        ] {
            assert!(!is_external(dest), "{dest}");
        }
    }
}
