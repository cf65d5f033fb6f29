//! Bare URLs and e-mail addresses in text runs (GFM's autolink extension), as byte ranges.

use super::*;

/// Finds `http://`, `https://` and `ftp://` URLs and bare e-mail addresses in a run of text,
/// trimming trailing punctuation the way GitHub's autolink extension does.
pub(super) fn scan_bare_urls(text: &str, run: Range<usize>, out: &mut Vec<Range<usize>>) {
    let first = out.len();
    let slice = &text[run.clone()];
    let bytes = slice.as_bytes();
    // Most runs hold neither a scheme separator nor an `@`: one vectorised scan rules them out.
    if memchr::memchr2(b':', b'@', bytes).is_none() {
        return;
    }
    let mut from = 0;
    while let Some(found) = memchr::memmem::find(&bytes[from..], b"://") {
        let sep = from + found;
        from = sep + 3;
        let scheme_start = bytes[..sep]
            .iter()
            .rposition(|b| !b.is_ascii_alphabetic())
            .map_or(0, |p| p + 1);
        let scheme = &slice[scheme_start..sep];
        if !["http", "https", "ftp"]
            .iter()
            .any(|s| s.eq_ignore_ascii_case(scheme))
        {
            continue;
        }
        if scheme_start > 0
            && (bytes[scheme_start - 1].is_ascii_alphanumeric() || bytes[scheme_start - 1] == b'<')
        {
            continue;
        }
        let rest = &slice[sep + 3..];
        let mut len = rest
            .find(|c: char| c.is_whitespace() || matches!(c, '<' | '>' | '"' | '`'))
            .unwrap_or(rest.len());
        loop {
            let url = &rest[..len];
            match url.chars().last() {
                Some(c @ ('?' | '!' | '.' | ',' | ':' | '*' | '_' | '~' | '\'' | ';')) => {
                    len -= c.len_utf8()
                }
                Some(')') if url.matches(')').count() > url.matches('(').count() => len -= 1,
                _ => break,
            }
        }
        if len == 0 {
            continue;
        }
        let start = run.start + scheme_start;
        let end = run.start + sep + 3 + len;
        out.push(start..end);
        from = sep + 3 + len;
    }
    scan_bare_emails(text, run, first, out);
}

/// Characters of an e-mail address's local part in GFM's autolink-literal extension.
fn email_local(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'+' | b'-' | b'_')
}

/// Bare e-mail addresses (GFM autolink literals, which markdownlint's MD034 reports too):
/// `local@domain.tld` where the domain has at least one `.` and does not end in `-` or `_`.
/// Addresses inside a URL already found in this run (`https://user@host`) are skipped.
fn scan_bare_emails(text: &str, run: Range<usize>, urls_from: usize, out: &mut Vec<Range<usize>>) {
    let slice = &text[run.clone()];
    let bytes = slice.as_bytes();
    if memchr::memchr(b'@', bytes).is_none() {
        return; // nothing to add; the URLs are already in order
    }
    let urls: Vec<Range<usize>> = out[urls_from..].to_vec();
    let mut from = 0;
    while let Some(found) = memchr::memchr(b'@', &bytes[from..]) {
        let at = from + found;
        from = at + 1;
        let start = bytes[..at]
            .iter()
            .rposition(|&b| !email_local(b))
            .map_or(0, |p| p + 1);
        if start == at || (start > 0 && matches!(bytes[start - 1], b'<' | b'/' | b':')) {
            continue;
        }
        // Domain: labels of [A-Za-z0-9_-] separated by single dots.
        let mut end = at + 1;
        let mut last_dot = None;
        while end < bytes.len() {
            let b = bytes[end];
            if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
                end += 1;
            } else if b == b'.'
                && end + 1 < bytes.len()
                && (bytes[end + 1].is_ascii_alphanumeric() || matches!(bytes[end + 1], b'-' | b'_'))
                && bytes[end - 1] != b'.'
                && end > at + 1
            {
                last_dot = Some(end);
                end += 1;
            } else {
                break;
            }
        }
        if last_dot.is_none()
            || matches!(bytes[end - 1], b'-' | b'_')
            || end < bytes.len() && bytes[end] == b'>'
        {
            continue;
        }
        let range = run.start + start..run.start + end;
        if urls
            .iter()
            .any(|u| u.start < range.end && range.start < u.end)
        {
            continue;
        }
        out.push(range);
        from = end;
    }
    out[urls_from..].sort_by_key(|r| r.start);
}
