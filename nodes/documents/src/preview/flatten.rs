//! Bounded nesting before any HTML tree is built.
//!
//! html5ever's tree builder checks "is an element in scope" by walking the stack of open
//! elements, so every start tag costs time proportional to the current depth: 40 000 nested
//! `<div>`s take seconds, 16 MiB of them hours. [`flatten`] runs first, in one linear pass with
//! html5ever's tokenizer (no tree), and re-serialises the tokens as a well-nested stream at most
//! [`MAX_DEPTH`] elements deep: a start tag that would open deeper is dropped (its content is
//! kept, as text of the enclosing element) together with its end tag; an end tag closes every
//! element above its match (as an HTML parser would); an end tag with no open match is dropped;
//! whatever is still open at the end is closed. Every element is closed explicitly, so a
//! formatting element (`<b>`, `<a>`, …) never stays in the parser's list of active formatting
//! elements past its end, and the parser re-opens at most the ones this pass has open: the tree
//! it builds stays within a small multiple of the bound.
//!
//! The output is still untrusted markup: it is only ever fed to the sanitiser (ammonia) or the
//! text extractor, which parse it again. Attribute values and text are re-escaped; comments
//! and doctypes are dropped (the sanitiser strips comments anyway).

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{
    BufferQueue, Tag, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};
use html5ever::LocalName;
use std::cell::RefCell;

/// Deepest element nesting kept in a preview; deeper markup is flattened into its ancestor at
/// this depth.
pub const MAX_DEPTH: usize = 256;

/// Bytes of input tokenised between two calls of the caller's `check` (cancellation, deadline).
pub const CHUNK_BYTES: usize = 256 * 1024;

/// What [`flatten`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Flattened {
    pub html: String,
    /// Start tags dropped because they would have opened deeper than [`MAX_DEPTH`].
    pub dropped: usize,
}

/// Elements that never have content (no end tag, no depth).
fn void(name: &str) -> bool {
    matches!(
        name,
        "area" | "base" | "br" | "col" | "embed" | "hr" | "img" | "input" | "link" | "meta" | "source" | "track" | "wbr"
            | "param" | "keygen" | "frame" | "basefont" | "bgsound" | "image"
    )
}

/// Elements whose start tag implicitly closes an open element of the same name on top of the
/// stack (`<li>x<li>`, `<p>a<p>b`, …): closing them here keeps ordinary unclosed markup from
/// counting as nesting.
fn closes_same(name: &str) -> bool {
    matches!(name, "p" | "li" | "dt" | "dd" | "option" | "tr" | "td" | "th" | "h1" | "h2" | "h3" | "h4" | "h5" | "h6")
}

struct State {
    out: String,
    /// Open elements this pass emitted, innermost last.
    stack: Vec<LocalName>,
    /// Per dropped element name, how many of their end tags are still to be dropped.
    dropped_open: Vec<(LocalName, usize)>,
    dropped: usize,
    /// Inside script or style: their content is left out (the sanitiser drops it with the
    /// element, the text extractor skips it), so the output has no raw-text regions and any cut
    /// outside a tag falls between text and elements.
    skip_text: bool,
}

struct Sink(RefCell<State>);

impl State {
    fn depth(&self) -> usize {
        self.stack.len()
    }

    fn start(&mut self, tag: Tag) -> TokenSinkResult<()> {
        let name: &str = &tag.name;
        let raw_kind = match name {
            "script" => Some(TokenSinkResult::RawData(RawKind::ScriptData)),
            "style" | "xmp" | "iframe" | "noembed" | "noframes" | "noscript" => Some(TokenSinkResult::RawData(RawKind::Rawtext)),
            "title" | "textarea" => Some(TokenSinkResult::RawData(RawKind::Rcdata)),
            "plaintext" => Some(TokenSinkResult::Plaintext),
            _ => None,
        };
        if void(name) {
            self.write_tag(&tag, true);
            return TokenSinkResult::Continue;
        }
        if closes_same(name) && self.stack.last().is_some_and(|top| &**top == name) {
            self.close_top();
        }
        if tag.self_closing && raw_kind.is_none() {
            // `<div/>` opens a div in HTML; written as an empty element it opens nothing.
            self.write_tag(&tag, false);
            self.out.push_str(&format!("</{name}>"));
            return TokenSinkResult::Continue;
        }
        if self.depth() >= MAX_DEPTH {
            self.dropped += 1;
            match self.dropped_open.iter_mut().find(|(n, _)| &**n == name) {
                Some((_, count)) => *count += 1,
                None => self.dropped_open.push((tag.name.clone(), 1)),
            }
            // Raw-text content still has to be tokenised as raw text (markup inside a dropped
            // <xmp> is text), and is written escaped, as the text it now is.
            self.skip_text = matches!(name, "script" | "style");
            return raw_kind.unwrap_or(TokenSinkResult::Continue);
        }
        self.write_tag(&tag, false);
        self.stack.push(tag.name.clone());
        // Other raw text (xmp, textarea, title, …) is written escaped: the same text for a parser.
        self.skip_text = matches!(name, "script" | "style");
        raw_kind.unwrap_or(TokenSinkResult::Continue)
    }

    fn end(&mut self, tag: Tag) {
        let name: &str = &tag.name;
        self.skip_text = false;
        if void(name) {
            return;
        }
        // The innermost open match; the stack is at most MAX_DEPTH long, so this is bounded.
        if let Some(at) = self.stack.iter().rposition(|open| &**open == name) {
            while self.stack.len() > at {
                self.close_top();
            }
            return;
        }
        if let Some((_, count)) = self.dropped_open.iter_mut().find(|(n, c)| &**n == name && *c > 0) {
            *count -= 1;
        }
        // No open match: dropped (an HTML parser ignores it or inserts an empty element).
    }

    fn close_top(&mut self) {
        if let Some(name) = self.stack.pop() {
            self.out.push_str("</");
            self.out.push_str(&name);
            self.out.push('>');
        }
    }

    fn write_tag(&mut self, tag: &Tag, void: bool) {
        self.out.push('<');
        self.out.push_str(&tag.name);
        for attr in &tag.attrs {
            // Namespaced attributes (xlink:href …) only matter in SVG/MathML, which the
            // sanitiser removes; the local name is enough.
            self.out.push(' ');
            self.out.push_str(&attr.name.local);
            self.out.push_str("=\"");
            escape_into(&mut self.out, &attr.value, true);
            self.out.push('"');
        }
        if void {
            self.out.push_str(" /");
        }
        self.out.push('>');
    }
}

fn escape_into(out: &mut String, text: &str, attribute: bool) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '"' if attribute => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
}

impl TokenSink for Sink {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        let mut state = self.0.borrow_mut();
        match token {
            Token::TagToken(tag) => match tag.kind {
                TagKind::StartTag => return state.start(tag),
                TagKind::EndTag => state.end(tag),
            },
            Token::CharacterTokens(text) => {
                if !state.skip_text {
                    escape_into(&mut state.out, &text, false);
                }
            }
            Token::NullCharacterToken if !state.skip_text => state.out.push('\u{fffd}'),
            Token::NullCharacterToken => {}
            Token::CommentToken(_) | Token::DoctypeToken(_) | Token::EOFToken | Token::ParseError(_) => {}
        }
        TokenSinkResult::Continue
    }
}

/// Re-serialises `html` at most [`MAX_DEPTH`] elements deep (see the module docs). `check` is
/// called after every [`CHUNK_BYTES`] of input; its error stops the pass.
pub fn flatten<E>(html: &str, mut check: impl FnMut() -> Result<(), E>) -> Result<Flattened, E> {
    let sink = Sink(RefCell::new(State {
        out: String::with_capacity(html.len() + html.len() / 8),
        stack: Vec::new(),
        dropped_open: Vec::new(),
        dropped: 0,
        skip_text: false,
    }));
    let tokenizer = Tokenizer::new(sink, TokenizerOpts::default());
    let input = BufferQueue::default();
    let mut rest = html;
    while !rest.is_empty() {
        let mut cut = rest.len().min(CHUNK_BYTES);
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        let (chunk, tail) = rest.split_at(cut);
        input.push_back(StrTendril::from_slice(chunk));
        let _ = tokenizer.feed(&input);
        rest = tail;
        check()?;
    }
    tokenizer.end();
    let mut state = tokenizer.sink.0.into_inner();
    while !state.stack.is_empty() {
        state.close_top();
    }
    Ok(Flattened { html: state.out, dropped: state.dropped })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(html: &str) -> Flattened {
        flatten(html, || Ok::<(), ()>(())).unwrap_or_default()
    }

    #[test]
    fn deep_nesting_is_cut_at_the_bound_and_balanced() {
        let f = run(&format!("{}x", "<div>".repeat(1000)));
        assert_eq!(f.dropped, 1000 - MAX_DEPTH);
        assert_eq!(f.html.matches("<div>").count(), MAX_DEPTH);
        assert_eq!(f.html.matches("</div>").count(), MAX_DEPTH);
        assert!(f.html.contains(">x<"), "{}", &f.html[..100]);
    }

    #[test]
    fn ordinary_markup_passes_unchanged_in_meaning() {
        let f = run("<ul><li>a<li>b</ul><p>one<p>two <b>bold</b> &amp; <a href='x\"y'>l</a><br><img src=a alt=b>");
        assert_eq!(f.dropped, 0);
        assert_eq!(
            f.html,
            "<ul><li>a</li><li>b</li></ul><p>one</p><p>two <b>bold</b> &amp; <a href=\"x&quot;y\">l</a><br /><img src=\"a\" alt=\"b\" /></p>"
        );
    }

    #[test]
    fn raw_text_stays_raw_even_when_dropped() {
        let deep = "<div>".repeat(MAX_DEPTH);
        let f = run(&format!("{deep}<xmp><b>not a tag</b></xmp><b>tag</b>"));
        assert!(f.html.contains("&lt;b>not a tag&lt;/b>") && !f.html.contains("<xmp>"), "a dropped xmp's content is text: {}", &f.html[f.html.len() - 80..]);
        let f = run("<title>&lt;/title&gt;&lt;i&gt;</title><xmp><i></xmp>");
        assert_eq!(f.html, "<title>&lt;/title>&lt;i></title><xmp>&lt;i></xmp>");
        let f = run("<script>if (a < b) {}</script><style>p{}</style><p>x");
        assert_eq!(f.html, "<script></script><style></style><p>x</p>", "script and style content is left out");
    }

    #[test]
    fn implied_closes_are_written_out() {
        let f = run(&"<p><b></p>".repeat(1000));
        assert_eq!(f.dropped, 0);
        assert_eq!(f.html, "<p><b></b></p>".repeat(1000), "a parser sees no <b> left open to re-open");
    }

    #[test]
    fn check_is_called_and_stops() {
        let html = "x".repeat(3 * CHUNK_BYTES);
        let mut calls = 0;
        let r = flatten(&html, || {
            calls += 1;
            if calls == 2 { Err("stop") } else { Ok(()) }
        });
        assert_eq!(r, Err("stop"));
        assert_eq!(calls, 2);
    }
}
