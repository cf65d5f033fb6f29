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
        "area"
            | "base"
            | "br"
            | "col"
            | "embed"
            | "hr"
            | "img"
            | "input"
            | "link"
            | "meta"
            | "source"
            | "track"
            | "wbr"
            | "param"
            | "keygen"
            | "frame"
            | "basefont"
            | "bgsound"
            | "image"
    )
}

/// Elements whose start tag implicitly closes an open element of the same name on top of the
/// stack (`<li>x<li>`, `<p>a<p>b`, …): closing them here keeps ordinary unclosed markup from
/// counting as nesting.
fn closes_same(name: &str) -> bool {
    matches!(
        name,
        "p" | "li"
            | "dt"
            | "dd"
            | "option"
            | "tr"
            | "td"
            | "th"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
    )
}

/// Where [`flatten`]'s well-nested element stream goes: serialised as HTML ([`Serialise`]) or
/// read directly (the streaming HTML summary, `html_text::summarize_stream`). Every `open` of a
/// non-void element is matched by exactly one later `close`, innermost first.
pub trait Emit {
    /// A start tag; `void`: an element without content or end tag (no `close` follows).
    fn open(&mut self, tag: &Tag, void: bool);
    /// The end of the innermost open element.
    fn close(&mut self, name: &LocalName);
    /// Text (character references decoded).
    fn text(&mut self, text: &str);
}

/// [`Emit`] as HTML text, re-escaped.
pub struct Serialise(pub String);

impl Emit for Serialise {
    fn open(&mut self, tag: &Tag, void: bool) {
        let out = &mut self.0;
        out.push('<');
        out.push_str(&tag.name);
        for attr in &tag.attrs {
            // Namespaced attributes (xlink:href …) only matter in SVG/MathML, which the
            // sanitiser removes; the local name is enough.
            out.push(' ');
            out.push_str(&attr.name.local);
            out.push_str("=\"");
            escape_into(out, &attr.value, true);
            out.push('"');
        }
        if void {
            out.push_str(" /");
        }
        out.push('>');
    }

    fn close(&mut self, name: &LocalName) {
        self.0.push_str("</");
        self.0.push_str(name);
        self.0.push('>');
    }

    fn text(&mut self, text: &str) {
        escape_into(&mut self.0, text, false);
    }
}

struct State<O> {
    out: O,
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

struct Sink<O>(RefCell<State<O>>);

impl<O: Emit> State<O> {
    fn depth(&self) -> usize {
        self.stack.len()
    }

    fn start(&mut self, tag: Tag) -> TokenSinkResult<()> {
        let name: &str = &tag.name;
        let raw_kind = match name {
            "script" => Some(TokenSinkResult::RawData(RawKind::ScriptData)),
            "style" | "xmp" | "iframe" | "noembed" | "noframes" | "noscript" => {
                Some(TokenSinkResult::RawData(RawKind::Rawtext))
            }
            "title" | "textarea" => Some(TokenSinkResult::RawData(RawKind::Rcdata)),
            "plaintext" => Some(TokenSinkResult::Plaintext),
            _ => None,
        };
        if void(name) {
            self.out.open(&tag, true);
            return TokenSinkResult::Continue;
        }
        if closes_same(name) && self.stack.last().is_some_and(|top| &**top == name) {
            self.close_top();
        }
        if tag.self_closing && raw_kind.is_none() {
            // `<div/>` opens a div in HTML; written as an empty element it opens nothing.
            self.out.open(&tag, false);
            self.out.close(&tag.name);
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
        self.out.open(&tag, false);
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
        if let Some((_, count)) = self
            .dropped_open
            .iter_mut()
            .find(|(n, c)| &**n == name && *c > 0)
        {
            *count -= 1;
        }
        // No open match: dropped (an HTML parser ignores it or inserts an empty element).
    }

    fn close_top(&mut self) {
        if let Some(name) = self.stack.pop() {
            self.out.close(&name);
        }
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

impl<O: Emit> TokenSink for Sink<O> {
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
                    state.out.text(&text);
                }
            }
            Token::NullCharacterToken if !state.skip_text => state.out.text("\u{fffd}"),
            Token::NullCharacterToken => {}
            Token::CommentToken(_)
            | Token::DoctypeToken(_)
            | Token::EOFToken
            | Token::ParseError(_) => {}
        }
        TokenSinkResult::Continue
    }
}

/// Re-serialises `html` at most [`MAX_DEPTH`] elements deep (see the module docs). `check` is
/// called after every [`CHUNK_BYTES`] of input; its error stops the pass.
pub fn flatten<E>(html: &str, check: impl FnMut() -> Result<(), E>) -> Result<Flattened, E> {
    let (out, dropped) = flatten_into(
        html,
        Serialise(String::with_capacity(html.len() + html.len() / 8)),
        check,
    )?;
    Ok(Flattened {
        html: out.0,
        dropped,
    })
}

/// [`flatten`] into any [`Emit`]: returns it and the number of start tags dropped.
pub fn flatten_into<O: Emit, E>(
    html: &str,
    out: O,
    mut check: impl FnMut() -> Result<(), E>,
) -> Result<(O, usize), E> {
    let sink = Sink(RefCell::new(State {
        out,
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
    Ok((state.out, state.dropped))
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
        assert!(
            f.html.contains("&lt;b>not a tag&lt;/b>") && !f.html.contains("<xmp>"),
            "a dropped xmp's content is text: {}",
            &f.html[f.html.len() - 80..]
        );
        let f = run("<title>&lt;/title&gt;&lt;i&gt;</title><xmp><i></xmp>");
        assert_eq!(f.html, "<title>&lt;/title>&lt;i></title><xmp>&lt;i></xmp>");
        let f = run("<script>if (a < b) {}</script><style>p{}</style><p>x");
        assert_eq!(
            f.html, "<script></script><style></style><p>x</p>",
            "script and style content is left out"
        );
    }

    #[test]
    fn implied_closes_are_written_out() {
        let f = run(&"<p><b></p>".repeat(1000));
        assert_eq!(f.dropped, 0);
        assert_eq!(
            f.html,
            "<p><b></b></p>".repeat(1000),
            "a parser sees no <b> left open to re-open"
        );
    }

    #[test]
    fn check_is_called_and_stops() {
        let html = "x".repeat(3 * CHUNK_BYTES);
        let mut calls = 0;
        let r = flatten(&html, || {
            calls += 1;
            if calls == 2 {
                Err("stop")
            } else {
                Ok(())
            }
        });
        assert_eq!(r, Err("stop"));
        assert_eq!(calls, 2);
    }
}
