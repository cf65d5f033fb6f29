//! What a person reads of text a node or a model chose: approval cards (the terminal's and the
//! MCP elicitation's), run events shown on a terminal, and any later view (a canvas) all pass
//! through this one escaper.
//!
//! A terminal obeys control characters and escape sequences (moving the cursor, erasing a line),
//! bidi controls reorder what is drawn, and invisible characters make two different texts look
//! the same: in a purpose, a path, a command or a diff, any of them lets text pose as something
//! it is not. Each such character ([`is_hidden`]) is shown as `\u{HEX}`; a backslash that would
//! begin that form is shown as `\u{5c}`, so the form is unambiguous while every other backslash
//! (a regex, a shell escape) stays as it is. A text's line breaks survive only in a [`Block`],
//! whose continuation lines are drawn behind [`CONTINUATION`], so no line of a value can pose as
//! a line of the card.

use crate::{ApprovalRequest, CapabilityRequest};
use std::fmt;

/// Whether `c` must not reach a person's screen as itself: control characters (C0, DEL, C1),
/// bidi controls, zero-width and other invisible or format characters, line and paragraph
/// separators, and spaces other than U+0020 (which look like one but are not).
pub fn is_hidden(c: char) -> bool {
    c.is_control() || is_bidi(c) || is_invisible(c) || (c.is_whitespace() && c != ' ')
}

/// Bidi controls: embeddings, overrides, isolates and marks.
fn is_bidi(c: char) -> bool {
    matches!(
        c,
        '\u{61C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
    )
}

/// Characters drawn as nothing (Unicode's default-ignorable and format characters): zero-width
/// spaces and joiners, the soft hyphen, fillers, variation selectors, tags, the BOM.
fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{AD}'
            | '\u{34F}'
            | '\u{600}'..='\u{605}'
            | '\u{6DD}'
            | '\u{70F}'
            | '\u{890}'..='\u{891}'
            | '\u{8E2}'
            | '\u{115F}'..='\u{1160}'
            | '\u{17B4}'..='\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200D}'
            | '\u{2060}'..='\u{2065}'
            | '\u{206A}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF0}'..='\u{FFFB}'
            | '\u{110BD}'
            | '\u{110CD}'
            | '\u{13430}'..='\u{1343F}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E0FFF}'
    )
}

/// One line of text that is safe to show: no hidden character, no line break. Made only by
/// [`line`] (or from a [`Block`]), so holding one means the text went through the escaper.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Shown(String);

impl Shown {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for Shown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `text` on one line: every hidden character, a line break included, as `\u{HEX}`.
pub fn line(text: &str) -> Shown {
    let mut out = String::with_capacity(text.len());
    push_escaped(&mut out, text);
    Shown(out)
}

/// Several lines, each escaped: text whose line breaks are part of what is read (a purpose, a
/// script, a diff). It has no `Display`: a renderer chooses [`Block::indented`] (continuation
/// lines behind the marker) or [`Block::joined`] (one line).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Block(Vec<Shown>);

/// Drawn before every continuation line of a [`Block`] (after the renderer's indent): a line of a
/// value always begins with it, never at a field's column.
pub const CONTINUATION: &str = "| ";

/// `text` split at its line breaks (`\n`; a `\r` is a hidden character, not a break), each line
/// escaped; a final line break ends the last line rather than starting an empty one.
pub fn block(text: &str) -> Block {
    let text = text.strip_suffix('\n').unwrap_or(text);
    Block(text.split('\n').map(line).collect())
}

impl Block {
    pub fn lines(&self) -> &[Shown] {
        &self.0
    }

    /// Every line empty or blank.
    pub fn is_blank(&self) -> bool {
        self.0.iter().all(|l| l.0.trim().is_empty())
    }

    /// The lines joined by `\n`, each after the first behind `indent` and [`CONTINUATION`]: with
    /// the first line placed after a field's label, the rest stay visibly inside the field.
    pub fn indented(&self, indent: &str) -> String {
        let mut out = String::new();
        for (i, l) in self.0.iter().enumerate() {
            if i > 0 {
                out.push('\n');
                out.push_str(indent);
                out.push_str(CONTINUATION);
            }
            out.push_str(&l.0);
        }
        out
    }

    /// The block on one line, its line breaks shown as `\u{a}` (what [`line`] gives for the
    /// text without a final line break).
    pub fn joined(&self) -> Shown {
        let texts: Vec<&str> = self.0.iter().map(Shown::as_str).collect();
        Shown(texts.join("\\u{a}"))
    }
}

/// The narrowest screen [`fit`] fits to: on a narrower one rows are too short to hold a marker
/// and some text, and the terminal's own wrapping cannot be helped.
pub const MIN_WIDTH: usize = 40;

/// `text`, lines already shown (a rendered card), fitted to a screen `width` columns wide: a
/// longer line is broken into rows, each further row behind `indent` and [`CONTINUATION`].
/// Left to the terminal, the rest of a long line would go on at column 0, where a value padded to
/// the screen's width could pose as a line of the card.
pub fn fit(text: &str, width: usize, indent: &str) -> String {
    let width = width.max(MIN_WIDTH);
    let lead = format!("{indent}{CONTINUATION}");
    let lead_width = columns(&lead);
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let mut used = 0;
        for c in line.chars() {
            let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
            if used + w > width {
                out.push('\n');
                out.push_str(&lead);
                used = lead_width;
            }
            out.push(c);
            used += w;
        }
    }
    out
}

/// Columns `text` takes on a terminal.
fn columns(text: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(text)
}

/// Appends `text` to `out` with hidden characters as `\u{HEX}` and a backslash that begins
/// `u{` as `\u{5c}`.
fn push_escaped(out: &mut String, text: &str) {
    for (at, c) in text.char_indices() {
        let starts_form = c == '\\' && text[at + 1..].starts_with("u{");
        if starts_form || is_hidden(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
}

/// JSON text (one serialised value) with every hidden character inside its strings written as a
/// `\uXXXX` escape: the same JSON value, safe to write where a person reads it (run events on a
/// terminal). Outside strings JSON has only ASCII; its whitespace there (a line break or a tab of
/// pretty-printed JSON) becomes a space, since a `\uXXXX` outside a string is not JSON.
pub fn json(text: &str) -> String {
    if !text.chars().any(is_hidden) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 16);
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        let outside = !in_string;
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
        }
        if outside && matches!(c, '\n' | '\r' | '\t') {
            out.push(' ');
        } else if is_hidden(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// An approval request as a person may read it: every field escaped. Card renderers take this,
/// never the raw request, so no field can be printed unescaped by mistake (and a field added to
/// [`ApprovalRequest`] does not compile here until it is given a shown form).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShownRequest {
    pub node_id: Shown,
    pub node_type: Shown,
    /// A block: a script on a code executor's card keeps its lines (a shell command line has
    /// none: its quoting shows a line break as `$'\n'`).
    pub command: Block,
    pub cwd: Shown,
    pub workspace: Shown,
    pub purpose: Option<Block>,
    pub requested_paths: Vec<Shown>,
    pub requested_hosts: Vec<Shown>,
    pub capabilities: Vec<ShownCapability>,
    pub details: Option<Block>,
}

/// A [`CapabilityRequest`] as shown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShownCapability {
    pub name: Shown,
    pub opens: Shown,
}

impl From<&ApprovalRequest> for ShownRequest {
    fn from(request: &ApprovalRequest) -> Self {
        // Destructured without `..`: a new field must be added here.
        let ApprovalRequest {
            node_id,
            node_type,
            command_display,
            cwd,
            workspace,
            purpose,
            requested_paths,
            requested_hosts,
            capabilities,
            details,
            // Not shown: what the engine checks the run against (the files' fingerprint, the
            // requested directories' device and inode), never read by a person.
            basis: _,
            path_identities: _,
        } = request;
        ShownRequest {
            node_id: line(node_id),
            node_type: line(node_type),
            command: block(command_display),
            cwd: line(cwd),
            workspace: line(workspace),
            purpose: purpose.as_deref().map(block),
            requested_paths: requested_paths.iter().map(|p| line(p)).collect(),
            requested_hosts: requested_hosts.iter().map(|h| line(h)).collect(),
            capabilities: capabilities
                .iter()
                .map(|CapabilityRequest { name, opens }| ShownCapability {
                    name: line(name),
                    opens: line(opens),
                })
                .collect(),
            details: details.as_deref().map(block),
        }
    }
}

impl ShownRequest {
    /// `id (type)`, or just the type when the node is named after it (`cheng run`).
    pub fn node_label(&self) -> String {
        if self.node_id == self.node_type {
            self.node_type.to_string()
        } else {
            format!("{} ({})", self.node_id, self.node_type)
        }
    }
}

/// The column where a card's values start: a value's continuation lines are drawn there,
/// behind [`cheng_node::display::CONTINUATION`], so none of them can pose as a field of the card.
pub const VALUE_INDENT: &str = "            ";

/// The card a person reads before deciding, as the terminal and the web canvas show it. It takes the request's shown form: every value in it
/// went through the display escaper, so nothing a node or a model chose can move the cursor,
/// erase a line or hide on the screen.
pub fn card(request: &ShownRequest) -> String {
    let mut text = format!("approval needed\n  node:     {}\n", request.node_label());
    text.push_str(&format!(
        "  command:  {}\n  workspace: {}\n  cwd:      {} (in the workspace)\n",
        request.command.indented(VALUE_INDENT),
        request.workspace,
        request.cwd
    ));
    if let Some(purpose) = &request.purpose {
        text.push_str(&format!("  purpose:  {}\n", purpose.indented(VALUE_INDENT)));
    }
    for path in &request.requested_paths {
        text.push_str(&format!("  path:     {path}\n"));
    }
    for host in &request.requested_hosts {
        text.push_str(&format!("  reach:    {host}\n"));
    }
    for capability in &request.capabilities {
        text.push_str(&format!(
            "  allows:   {}: {}\n",
            capability.name, capability.opens
        ));
    }
    if let Some(details) = &request.details {
        for line in details.lines() {
            text.push_str(&format!("  | {line}\n"));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No byte or character of `shown` can act on a terminal or hide.
    fn assert_inert(shown: &str) {
        for c in shown.chars() {
            assert!(
                !is_hidden(c) || c == '\n',
                "{c:?} reached the output: {shown:?}"
            );
        }
    }

    #[test]
    fn c0_controls_del_and_c1_are_shown_as_escapes() {
        for (raw, shown) in [
            ("a\u{1b}[2Kb", "a\\u{1b}[2Kb"),
            ("a\rb", "a\\u{d}b"),
            ("a\nb", "a\\u{a}b"),
            ("tab\there", "tab\\u{9}here"),
            ("nul\0", "nul\\u{0}"),
            ("bell\u{7}", "bell\\u{7}"),
            ("del\u{7f}", "del\\u{7f}"),
            ("csi\u{9b}2J", "csi\\u{9b}2J"),
            ("nel\u{85}", "nel\\u{85}"),
        ] {
            assert_eq!(line(raw).as_str(), shown);
            assert_inert(line(raw).as_str());
        }
        for c in (0u32..0x20).chain(0x7f..0xa0).filter_map(char::from_u32) {
            assert!(is_hidden(c), "{c:?}");
            assert_eq!(
                line(&c.to_string()).as_str(),
                format!("\\u{{{:x}}}", c as u32)
            );
        }
    }

    #[test]
    fn bidi_controls_are_shown_as_escapes() {
        let all = [
            '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}', '\u{202E}', '\u{2066}', '\u{2067}',
            '\u{2068}', '\u{2069}', '\u{200E}', '\u{200F}', '\u{61C}',
        ];
        for c in all {
            assert_inert(line(&format!("rm {c}txt.exe")).as_str());
            assert!(is_hidden(c), "{c:?}");
            assert_eq!(
                line(&c.to_string()).as_str(),
                format!("\\u{{{:x}}}", c as u32)
            );
        }
        assert_eq!(line("a\u{202E}cba").as_str(), "a\\u{202e}cba");
    }

    #[test]
    fn invisible_characters_are_shown_as_escapes() {
        for c in [
            '\u{200B}',
            '\u{200C}',
            '\u{200D}',
            '\u{2060}',
            '\u{FEFF}',
            '\u{AD}',
            '\u{34F}',
            '\u{180E}',
            '\u{2064}',
            '\u{3164}',
            '\u{FE0F}',
            '\u{E0041}',
            '\u{E0100}',
            '\u{FFF9}',
            '\u{2028}',
            '\u{2029}',
        ] {
            assert!(is_hidden(c), "{c:?}");
            assert_eq!(
                line(&format!("a{c}b")).as_str(),
                format!("a\\u{{{:x}}}b", c as u32)
            );
        }
    }

    #[test]
    fn spaces_other_than_the_space_are_shown_as_escapes() {
        assert_eq!(line("a b").as_str(), "a b");
        for c in ['\u{A0}', '\u{2002}', '\u{202F}', '\u{3000}', '\u{1680}'] {
            assert!(is_hidden(c), "{c:?}");
            assert_inert(line(&format!("a{c}b")).as_str());
        }
    }

    #[test]
    fn printable_text_is_kept_as_it_is() {
        for text in [
            "plain ascii: ls -la 'a b' \"c\" $HOME ~ {} [] |&;",
            "café résumé naïve",
            "中文 日本語 한국어",
            "emoji 😀🎉🦀",
            "עברית العربية",
            "C:\\Users\\me a\\.b \\n \\x1b \\u1b \\u",
            "combining e\u{301}",
        ] {
            assert_eq!(line(text).as_str(), text);
            assert_eq!(block(text).indented("    "), text);
        }
    }

    #[test]
    fn the_escape_form_is_unambiguous() {
        // Typed literally, the form cannot pass for an escaped character.
        assert_eq!(line("\\u{1b}").as_str(), "\\u{5c}u{1b}");
        assert_ne!(line("\\u{1b}"), line("\u{1b}"));
        // A backslash before an escaped character stays a backslash.
        assert_eq!(line("\\\u{1b}").as_str(), "\\\\u{1b}");
        assert_ne!(line("\\\u{1b}"), line("\\u{1b}"));
        // Distinct texts, distinct shown forms, over every pairing of a few tricky pieces.
        let pieces = ["\\", "u", "{", "1b", "}", "\u{1b}", "\\u{", "\n", "5c", "a"];
        let mut seen = std::collections::HashMap::new();
        for a in pieces {
            for b in pieces {
                for c in pieces {
                    let text = format!("{a}{b}{c}");
                    let shown = line(&text).0;
                    if let Some(other) = seen.insert(shown.clone(), text.clone()) {
                        assert_eq!(other, text, "both shown as {shown:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn blocks_keep_lines_behind_the_continuation_marker() {
        let purpose = "list the files\n  command:  ls -la\r\u{1b}[2K";
        let shown = block(purpose);
        assert_eq!(shown.lines().len(), 2);
        assert_eq!(
            shown.indented("    "),
            "list the files\n    |   command:  ls -la\\u{d}\\u{1b}[2K"
        );
        assert_eq!(shown.joined(), line(purpose));
        assert_inert(&shown.indented("  "));
        for (i, l) in shown.indented("  ").lines().enumerate().skip(1) {
            assert!(l.starts_with("  | "), "line {i}: {l:?}");
        }
        assert_eq!(block("a\nb\n").lines().len(), 2);
        assert!(block(" \n ").is_blank());
        assert!(!block("a").is_blank());
    }

    #[test]
    fn long_lines_are_fitted_to_the_screen_behind_the_marker() {
        let card = format!(
            "  purpose:  {}  command:  ls -la\n  cwd:      .\n",
            "x".repeat(68)
        );
        let fitted = fit(&card, 80, "            ");
        assert_eq!(
            fitted,
            format!(
                "  purpose:  {}\n            |   command:  ls -la\n  cwd:      .\n",
                "x".repeat(68)
            )
        );
        // Wide characters count two columns, and one never straddles the edge.
        let wide = format!("  purpose:  {}", "中".repeat(40));
        for row in fit(&wide, 41, "  ").lines() {
            assert!(columns(row) <= 41, "{row:?}");
        }
        assert!(fit(&wide, 41, "  ")
            .lines()
            .skip(1)
            .all(|r| r.starts_with("  | 中")));
        // Short lines are left alone; a screen too narrow is treated as MIN_WIDTH wide.
        assert_eq!(fit("a\nb\n", 80, "  "), "a\nb\n");
        assert_eq!(fit(&"y".repeat(MIN_WIDTH), 3, ""), "y".repeat(MIN_WIDTH));
    }

    #[test]
    fn json_keeps_the_value_and_drops_hidden_characters() {
        let value = serde_json::json!({
            "purpose": "a\u{1b}[3A\r\u{202E}b\u{200B}\u{9b}\u{7f}\u{E0041}é中😀\\u{1b}\n",
        });
        let text = serde_json::to_string(&value).unwrap_or_default();
        let safe = json(&text);
        assert_inert(&safe);
        assert!(!safe.contains('\n'));
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap_or_default();
        assert_eq!(back, value);
        assert!(safe.contains("é中😀"), "{safe}");
        assert!(safe.contains("\\udb40\\udc41"), "{safe}");
    }

    #[test]
    fn json_keeps_pretty_printed_json_valid() {
        // Whitespace between tokens was once escaped as `\u000a`, which is not JSON there.
        for text in ["202\n\n", "{\n\t\"a\": \"x\\\"\u{202E}\"\r\n}"] {
            let value: serde_json::Value = serde_json::from_str(text).unwrap();
            let safe = json(text);
            assert_inert(&safe);
            assert_eq!(
                serde_json::from_str::<serde_json::Value>(&safe).unwrap(),
                value,
                "{safe}"
            );
        }
    }

    #[test]
    fn a_shown_request_escapes_every_field() {
        let evil = "x\u{1b}[1A\r\u{202E}\u{200B}\ny";
        let request = ApprovalRequest {
            node_id: evil.into(),
            node_type: evil.into(),
            command_display: evil.into(),
            cwd: evil.into(),
            workspace: evil.into(),
            purpose: Some(evil.into()),
            requested_paths: vec![evil.into()],
            requested_hosts: vec![evil.into()],
            capabilities: vec![CapabilityRequest {
                name: evil.into(),
                opens: evil.into(),
            }],
            details: Some(evil.into()),
            basis: Some(evil.into()),
            path_identities: Vec::new(),
        };
        let shown = ShownRequest::from(&request);
        let text = format!("{shown:?}");
        assert!(!text.contains('\u{1b}') && !text.contains('\u{202E}'));
        for one in [
            &shown.node_id,
            &shown.node_type,
            &shown.cwd,
            &shown.workspace,
            &shown.requested_paths[0],
            &shown.requested_hosts[0],
            &shown.capabilities[0].name,
            &shown.capabilities[0].opens,
        ] {
            assert_eq!(one, &line(evil));
        }
        for lines in [
            Some(&shown.command),
            shown.purpose.as_ref(),
            shown.details.as_ref(),
        ] {
            assert_eq!(lines, Some(&block(evil)));
        }
        assert_eq!(shown.node_label(), line(evil).to_string());
    }
}
