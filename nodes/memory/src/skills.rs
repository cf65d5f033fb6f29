//! The skill catalogue: the author's directories, in order; each subdirectory holding a
//! `SKILL.md` is one skill, named by its frontmatter's `name` (else the directory's name) and
//! described by its `description`. The first directory wins on a name clash.
//!
//! Every directory is opened once and read through the workspace handle beneath it: a
//! subdirectory or a `SKILL.md` that is a symlink is refused (named in `problems`), never
//! followed, also when it is swapped in between the listing and the read.
//!
//! The frontmatter is YAML an author or a repository controls: one nesting deeper than
//! [`MAX_FRONTMATTER_DEPTH`] or growing past [`MAX_FRONTMATTER_EXPANDED`] through its aliases is
//! refused before it is loaded, and a YAML error is quoted bounded (both named in `problems`).

use cheng_fs::{Kind, WorkspaceFs};
use std::io::Read;
use std::path::{Path, PathBuf};
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, Scanner, TokenType};
use yaml_rust2::{Yaml, YamlLoader};

/// The file each skill directory holds.
pub const SKILL_FILE: &str = "SKILL.md";
/// Largest `SKILL.md`, in bytes.
pub const MAX_SKILL_BYTES: u64 = 128 * 1024;
/// Most skills one catalogue holds (the rest are named in `problems`).
pub const MAX_SKILLS: usize = 200;
/// A description's longest length in the catalogue, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 200;

/// The deepest nesting of collections a frontmatter may hold (deeper YAML is refused before it
/// is parsed: the YAML library recurses over it).
pub const MAX_FRONTMATTER_DEPTH: usize = 64;
/// The largest a frontmatter may grow to once its aliases are expanded, in bytes (scalar text
/// plus one per node): aliases copy what they name, so a few lines could otherwise expand to
/// gigabytes ("billion laughs").
pub const MAX_FRONTMATTER_EXPANDED: usize = 256 * 1024;
/// The longest a YAML error quoted in a problem may be, in characters.
pub const MAX_YAML_ERROR_CHARS: usize = 200;

/// One skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillEntry {
    pub name: String,
    /// One line (whitespace folded, cut at [`MAX_DESCRIPTION_CHARS`]); empty when none is given.
    pub description: String,
    /// The `SKILL.md`'s absolute path.
    pub path: PathBuf,
    /// The whole file.
    pub content: String,
}

/// What a scan found.
#[derive(Debug, Clone, Default)]
pub struct Catalogue {
    pub skills: Vec<SkillEntry>,
    /// What was skipped and why, one sentence each.
    pub problems: Vec<String>,
}

impl Catalogue {
    /// Scans `dirs` in order (absolute paths, or `~/…` under `$HOME`).
    pub fn scan(dirs: &[String]) -> Catalogue {
        let mut catalogue = Catalogue::default();
        for (index, dir) in dirs.iter().enumerate() {
            match expand(dir) {
                Ok(path) => catalogue.scan_dir(&path),
                Err(problem) => catalogue
                    .problems
                    .push(format!("skill_dirs[{index}]: {problem}")),
            }
        }
        catalogue
    }

    pub fn find(&self, name: &str) -> Option<&SkillEntry> {
        self.skills.iter().find(|s| s.name == name)
    }

    /// The names, comma-separated (for "no such skill" messages).
    pub fn names(&self) -> String {
        self.skills
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn scan_dir(&mut self, dir: &Path) {
        let shown = dir.display();
        let fs = match WorkspaceFs::open(dir) {
            Ok(fs) => fs,
            Err(e) => {
                self.problems
                    .push(format!("skill directory {shown} cannot be opened: {e}"));
                return;
            }
        };
        let entries = match fs.read_dir(Path::new(".")) {
            Ok(entries) => entries,
            Err(e) => {
                self.problems
                    .push(format!("skill directory {shown} cannot be listed: {e}"));
                return;
            }
        };
        for entry in entries {
            let sub = PathBuf::from(&entry.name);
            let at = dir.join(&sub);
            if entry.name.to_string_lossy().starts_with('.') {
                continue;
            }
            match entry.kind {
                Kind::Dir => {}
                Kind::Symlink => {
                    self.problems.push(format!(
                        "{} is a symlink; skills are read only from real directories",
                        at.display()
                    ));
                    continue;
                }
                Kind::File | Kind::Other => continue,
            }
            let file = sub.join(SKILL_FILE);
            let content = match read_bounded(&fs, &file) {
                Ok(Some(content)) => content,
                Ok(None) => continue,
                Err(e) => {
                    let why = if cheng_fs::changed_under_us(&e) {
                        "is a symlink or lies behind one; refused".to_string()
                    } else {
                        e.to_string()
                    };
                    self.problems
                        .push(format!("{}: {why}", at.join(SKILL_FILE).display()));
                    continue;
                }
            };
            let dir_name = entry.name.to_string_lossy().into_owned();
            let (name, description) = match frontmatter(&content) {
                Ok(fields) => fields,
                Err(problem) => {
                    self.problems
                        .push(format!("{}: {problem}", at.join(SKILL_FILE).display()));
                    continue;
                }
            };
            let name = name.unwrap_or(dir_name);
            if let Err(problem) = check_skill_name(&name) {
                self.problems
                    .push(format!("{}: {problem}", at.join(SKILL_FILE).display()));
                continue;
            }
            if let Some(first) = self.find(&name) {
                self.problems.push(format!(
                    "{}: skill `{name}` is already defined by {} (the first directory wins)",
                    at.join(SKILL_FILE).display(),
                    first.path.display()
                ));
                continue;
            }
            if self.skills.len() >= MAX_SKILLS {
                self.problems.push(format!(
                    "{}: more than {MAX_SKILLS} skills; the rest are left out",
                    at.join(SKILL_FILE).display()
                ));
                return;
            }
            self.skills.push(SkillEntry {
                name,
                description: one_line(&description.unwrap_or_default()),
                path: at.join(SKILL_FILE),
                content,
            });
        }
    }
}

/// An absolute path, or `~/…` under `$HOME`; a relative path is refused (it would depend on
/// where cheng was started). The notes directory is given the same way.
pub(crate) fn expand(dir: &str) -> Result<PathBuf, String> {
    if let Some(rest) = dir.strip_prefix("~/") {
        return match std::env::var_os("HOME") {
            Some(home) if !home.is_empty() => Ok(PathBuf::from(home).join(rest)),
            _ => Err(format!("`{dir}` starts with ~/ but HOME is not set")),
        };
    }
    let path = PathBuf::from(dir);
    if path.is_absolute() {
        Ok(path)
    } else {
        Err(format!(
            "`{dir}` is not an absolute path; give the directory as an absolute path (or ~/…)"
        ))
    }
}

/// The file's text, `None` when the subdirectory has no `SKILL.md`.
fn read_bounded(fs: &WorkspaceFs, file: &Path) -> std::io::Result<Option<String>> {
    let opened = match fs.open_read(file) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let meta = opened.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    if meta.len() > MAX_SKILL_BYTES {
        return Err(std::io::Error::other(format!(
            "{} bytes; a SKILL.md is at most {MAX_SKILL_BYTES}",
            meta.len()
        )));
    }
    let mut bytes = Vec::new();
    opened.take(MAX_SKILL_BYTES).read_to_end(&mut bytes)?;
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| std::io::Error::other("not UTF-8 text"))
}

/// `name` and `description` from a leading `---` … `---` YAML block (both optional; no block
/// is no fields).
pub fn frontmatter(content: &str) -> Result<(Option<String>, Option<String>), String> {
    let text = content.strip_prefix('\u{feff}').unwrap_or(content);
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return Ok((None, None));
    };
    let mut yaml = String::new();
    let mut closed = false;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        yaml.push_str(line);
    }
    if !closed {
        return Err("the frontmatter's closing `---` line is missing".into());
    }
    let invalid = |e: yaml_rust2::ScanError| {
        format!(
            "the frontmatter is not valid YAML: {}",
            quoted_error(&e.to_string())
        )
    };
    let depth = nesting_bound(&yaml).map_err(invalid)?;
    if depth > MAX_FRONTMATTER_DEPTH {
        return Err(format!(
            "the frontmatter nests more than {MAX_FRONTMATTER_DEPTH} levels deep; refused"
        ));
    }
    let mut expansion = Expansion::default();
    Parser::new_from_str(&yaml)
        .load(&mut expansion, true)
        .map_err(invalid)?;
    if expansion.total > MAX_FRONTMATTER_EXPANDED {
        return Err(format!(
            "the frontmatter's aliases expand it past {} KiB; refused",
            MAX_FRONTMATTER_EXPANDED / 1024
        ));
    }
    let docs = YamlLoader::load_from_str(&yaml).map_err(invalid)?;
    let Some(doc) = docs.first() else {
        return Ok((None, None));
    };
    if !matches!(doc, Yaml::Hash(_)) {
        return Err(
            "the frontmatter must be a mapping such as `name: …` / `description: …`".into(),
        );
    }
    let field = |key: &str| -> Result<Option<String>, String> {
        match &doc[key] {
            Yaml::BadValue | Yaml::Null => Ok(None),
            Yaml::String(s) => Ok(Some(s.clone())),
            Yaml::Integer(n) => Ok(Some(n.to_string())),
            Yaml::Real(text) => Ok(Some(text.clone())),
            Yaml::Boolean(b) => Ok(Some(b.to_string())),
            _ => Err(format!("the frontmatter's `{key}` must be text")),
        }
    };
    Ok((field("name")?, field("description")?))
}

/// An upper bound on how deeply the YAML's collections nest, from its tokens alone (the scanner
/// keeps its own stack, so it does not recurse): every block or flow collection opens a level,
/// and a sequence entry or a flow key (which can open an indentless sequence or a single-pair
/// mapping without a token of its own) counts one more.
fn nesting_bound(yaml: &str) -> Result<usize, yaml_rust2::ScanError> {
    let mut scanner = Scanner::new(yaml.chars());
    let mut depth = 0usize;
    let mut deepest = 0usize;
    let mut flow = 0usize;
    for token in scanner.by_ref() {
        match token.1 {
            TokenType::BlockSequenceStart | TokenType::BlockMappingStart => depth += 1,
            TokenType::FlowSequenceStart | TokenType::FlowMappingStart => {
                depth += 1;
                flow += 1;
            }
            TokenType::FlowSequenceEnd | TokenType::FlowMappingEnd => {
                depth = depth.saturating_sub(1);
                flow = flow.saturating_sub(1);
            }
            TokenType::BlockEnd => depth = depth.saturating_sub(1),
            TokenType::BlockEntry => deepest = deepest.max(depth + 1),
            TokenType::Key if flow > 0 => deepest = deepest.max(depth + 1),
            _ => {}
        }
        deepest = deepest.max(depth);
        if deepest > MAX_FRONTMATTER_DEPTH {
            // Enough to refuse: the rest is not read.
            break;
        }
    }
    match scanner.get_error() {
        // The scanner's own bound on flow nesting (255), met before its tokens came out.
        Some(e) if e.info() == "recursion limit exceeded" => Ok(usize::MAX),
        Some(e) if deepest <= MAX_FRONTMATTER_DEPTH => Err(e),
        _ => Ok(deepest),
    }
}

/// The size of the YAML with every alias expanded: scalar bytes plus one per node.
#[derive(Default)]
struct Expansion {
    total: usize,
    /// The collections open now: their anchor (0 for none) and the size where they started.
    open: Vec<(usize, usize)>,
    /// Each finished anchored node's expanded size.
    anchored: std::collections::HashMap<usize, usize>,
}

impl MarkedEventReceiver for Expansion {
    fn on_event(&mut self, event: Event, _mark: Marker) {
        match event {
            Event::Scalar(value, _, anchor, _) => {
                let size = value.len().saturating_add(1);
                self.total = self.total.saturating_add(size);
                if anchor > 0 {
                    self.anchored.insert(anchor, size);
                }
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                self.open.push((anchor, self.total));
                self.total = self.total.saturating_add(1);
            }
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some((anchor, start)) = self.open.pop() {
                    if anchor > 0 {
                        self.anchored.insert(anchor, self.total - start);
                    }
                }
            }
            // An alias of a node not finished yet loads as nothing (one node).
            Event::Alias(anchor) => {
                let size = self.anchored.get(&anchor).copied().unwrap_or(1);
                self.total = self.total.saturating_add(size);
            }
            _ => {}
        }
    }
}

/// A YAML error as quoted in a problem: control characters (line breaks too) as spaces, cut at
/// [`MAX_YAML_ERROR_CHARS`] with `…`.
fn quoted_error(text: &str) -> String {
    let mut out: String = text
        .chars()
        .take(MAX_YAML_ERROR_CHARS)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if text.chars().nth(MAX_YAML_ERROR_CHARS).is_some() {
        out.push('…');
    }
    out
}

/// Skill names are what a model types back: one line, no control character, at most 64
/// characters.
pub(crate) fn check_skill_name(name: &str) -> Result<(), String> {
    if name.trim().is_empty() {
        return Err("the skill's name is empty".into());
    }
    if name.chars().count() > 64 {
        return Err("the skill's name is longer than 64 characters".into());
    }
    if name.chars().any(|c| c.is_control()) {
        return Err("the skill's name contains a control character".into());
    }
    Ok(())
}

/// Whitespace (line breaks and control characters included) folded to single spaces, cut at
/// [`MAX_DESCRIPTION_CHARS`] with `…`.
pub(crate) fn one_line(text: &str) -> String {
    let folded = text
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    if folded.chars().count() <= MAX_DESCRIPTION_CHARS {
        return folded;
    }
    let mut cut: String = folded.chars().take(MAX_DESCRIPTION_CHARS).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests;
