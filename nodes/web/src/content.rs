//! What the model is shown of a body: Content-Type decides. HTML is reduced to readable text by
//! workspace_preview's HTML-to-text code (title, headings, links, text; scripts and styles
//! dropped); text, JSON and XML are shown as they are; anything else is described, never dumped.
//! The result is cut to `max_chars` characters with a note saying how many there were.

use cheng_nodes_documents::preview::html_text;

/// How a body is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Html,
    Text,
    Other,
}

/// What the model gets of one body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    pub kind: Kind,
    /// The text, cut to the character limit (a note at its end says so).
    pub text: String,
    /// Characters of the whole text before the cut.
    pub chars_total: usize,
    pub truncated: bool,
}

/// The kind of a body: by its Content-Type's media type; without one, HTML or text when the
/// body is UTF-8 text (looking like HTML or not), else other.
pub fn kind(content_type: Option<&str>, body: &[u8]) -> Kind {
    let Some(media) = content_type.map(media_type) else {
        let Ok(text) = std::str::from_utf8(body) else {
            return Kind::Other;
        };
        if text.contains('\0') {
            return Kind::Other;
        }
        let start = text
            .trim_start()
            .get(..15)
            .unwrap_or("")
            .to_ascii_lowercase();
        return if start.starts_with("<!doctype html") || start.starts_with("<html") {
            Kind::Html
        } else {
            Kind::Text
        };
    };
    match media.as_str() {
        "text/html" | "application/xhtml+xml" => Kind::Html,
        m if m.starts_with("text/") => Kind::Text,
        "application/json"
        | "application/xml"
        | "application/javascript"
        | "application/ecmascript"
        | "application/x-ndjson"
        | "application/yaml"
        | "application/x-yaml"
        | "application/toml" => Kind::Text,
        m if m.ends_with("+json") || m.ends_with("+xml") => Kind::Text,
        _ => Kind::Other,
    }
}

/// The media type of a Content-Type value, lower case, without its parameters.
pub fn media_type(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// The body as the model is shown it, at most `max_chars` characters plus the cut note.
pub fn show(content_type: Option<&str>, body: &[u8], max_chars: usize) -> Shown {
    let kind = kind(content_type, body);
    let whole = match kind {
        Kind::Html => {
            let page = String::from_utf8_lossy(body);
            let (text, _flattened) =
                html_text::readable_text(&page, || Ok::<(), std::convert::Infallible>(()))
                    .unwrap_or_else(|never| match never {});
            text
        }
        Kind::Text => String::from_utf8_lossy(body).into_owned(),
        Kind::Other => format!(
            "({} bytes of {} not shown: web_fetch shows HTML as readable text, and text, JSON and XML as they are)",
            body.len(),
            content_type.map_or_else(|| "binary content".to_string(), media_type)
        ),
    };
    let chars_total = whole.chars().count();
    if chars_total <= max_chars {
        return Shown {
            kind,
            text: whole,
            chars_total,
            truncated: false,
        };
    }
    let cut = whole
        .char_indices()
        .nth(max_chars)
        .map_or(whole.len(), |(i, _)| i);
    let text = format!(
        "{}\n…[cut: {max_chars} of {chars_total} characters shown; ask again with a larger max_chars, at most {}]",
        &whole[..cut],
        crate::web_fetch::MAX_CHARS_CEILING
    );
    Shown {
        kind,
        text,
        chars_total,
        truncated: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_type_decides_and_sniffing_covers_its_absence() {
        assert_eq!(kind(Some("text/html; charset=utf-8"), b""), Kind::Html);
        assert_eq!(kind(Some("Application/XHTML+XML"), b""), Kind::Html);
        assert_eq!(kind(Some("text/plain"), b""), Kind::Text);
        assert_eq!(kind(Some("application/json"), b""), Kind::Text);
        assert_eq!(kind(Some("application/vnd.api+json"), b""), Kind::Text);
        assert_eq!(kind(Some("image/png"), b"<html>"), Kind::Other);
        assert_eq!(kind(None, b"  <!DOCTYPE html><p>x"), Kind::Html);
        assert_eq!(kind(None, b"plain words"), Kind::Text);
        assert_eq!(kind(None, b"\x89PNG\x00\x01"), Kind::Other);
        assert_eq!(kind(None, &[0xff, 0xfe]), Kind::Other);
    }

    #[test]
    fn html_becomes_readable_text_without_scripts() {
        let page = b"<html><head><title>Docs</title><script>var secret = 1;</script></head><body><h1>Install</h1><p>Run <code>pip install x</code>.</p><a href=\"/next\">Next</a></body></html>";
        let shown = show(Some("text/html"), page, 40_000);
        assert!(shown.text.contains("Title: Docs"), "{}", shown.text);
        assert!(shown.text.contains("# Install"), "{}", shown.text);
        assert!(shown.text.contains("Run pip install x."), "{}", shown.text);
        assert!(shown.text.contains("Next </next>"), "{}", shown.text);
        assert!(!shown.text.contains("secret"), "{}", shown.text);
    }

    #[test]
    fn a_page_nested_past_any_stack_is_read_quickly() {
        // Without the flattening pass the tree walk over such a page does not finish in minutes;
        // a thread with a deadline turns that into a failure rather than a hung test.
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let depth = 200_000;
            let page = format!(
                "{}deep text{}",
                "<div>".repeat(depth),
                "</div>".repeat(depth)
            );
            let deep = show(Some("text/html"), page.as_bytes(), 40_000);
            let small = format!("{}small{}", "<b>".repeat(50_000), "</b>".repeat(50_000));
            let shallow = show(Some("text/html"), small.as_bytes(), 40_000);
            let _ = done.send((deep.text, shallow.text));
        });
        let (deep, shallow) = finished
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("a deeply nested page is read within a minute");
        assert!(
            deep.contains("deep text"),
            "{}",
            &deep[..200.min(deep.len())]
        );
        assert!(
            shallow.contains("small"),
            "{}",
            &shallow[..200.min(shallow.len())]
        );
    }

    #[test]
    fn other_types_are_described_and_long_text_is_cut_with_a_note() {
        let shown = show(Some("image/png"), &[0u8; 300], 40_000);
        assert_eq!(shown.kind, Kind::Other);
        assert!(
            shown.text.starts_with("(300 bytes of image/png not shown"),
            "{}",
            shown.text
        );
        let shown = show(Some("text/plain"), "é".repeat(10).as_bytes(), 4);
        assert!(shown.truncated);
        assert_eq!(shown.chars_total, 10);
        assert!(
            shown
                .text
                .starts_with("éééé\n…[cut: 4 of 10 characters shown"),
            "{}",
            shown.text
        );
        let shown = show(Some("text/plain"), b"abcd", 4);
        assert!(!shown.truncated);
        assert_eq!(shown.text, "abcd");
    }
}
