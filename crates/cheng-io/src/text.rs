//! Bounded text: head+tail truncation (memory bounded whatever is pushed) and human-readable
//! sizes and durations.

/// Keeps the first and last halves of a byte stream within `cap` bytes.
///
/// Errors, test summaries and build results sit at the end of an output, context at the start:
/// keeping both halves and naming what was dropped in the middle serves a reader best.
#[derive(Debug, Clone)]
pub struct HeadTail {
    head_cap: usize,
    head: Vec<u8>,
    tail: Ring,
    total: u64,
}

/// The result of `HeadTail::finish`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bounded {
    /// The kept text (lossy UTF-8), with an `...[omitted N bytes]...` marker where bytes were dropped.
    pub text: String,
    pub truncated: bool,
    /// How many bytes were pushed in all.
    pub total_bytes: u64,
    pub omitted_bytes: u64,
    /// The kept bytes as pushed (head then tail, no marker), for [`Bounded::recap`]: `text` is
    /// lossy, so its length is not the number of bytes it stands for.
    kept: KeptBytes,
}

/// The raw bytes behind a [`Bounded`]: `head` of them precede the dropped middle.
#[derive(Clone, PartialEq, Eq)]
struct KeptBytes {
    bytes: Vec<u8>,
    head: usize,
}

impl std::fmt::Debug for KeptBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "KeptBytes({} bytes, head {})",
            self.bytes.len(),
            self.head
        )
    }
}

impl HeadTail {
    pub fn new(cap: usize) -> Self {
        let head_cap = cap / 2;
        HeadTail {
            head_cap,
            head: Vec::with_capacity(head_cap.min(64 * 1024)),
            tail: Ring::new(cap - head_cap),
            total: 0,
        }
    }

    pub fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if self.head.len() < self.head_cap {
            let take = (self.head_cap - self.head.len()).min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        self.tail.push(bytes);
    }

    pub fn total_bytes(&self) -> u64 {
        self.total
    }

    pub fn finish(self) -> Bounded {
        let tail = self.tail.into_vec();
        let kept = (self.head.len() + tail.len()) as u64;
        let omitted = self.total - kept;
        if omitted == 0 {
            let mut all = self.head;
            all.extend_from_slice(&tail);
            let head = all.len();
            return Bounded {
                text: lossy(&all),
                truncated: false,
                total_bytes: self.total,
                omitted_bytes: 0,
                kept: KeptBytes { bytes: all, head },
            };
        }
        spliced(&self.head, &tail, self.total)
    }
}

/// `head`, the marker, `tail`, cut on character boundaries so the marker never splits a UTF-8
/// sequence; the marker counts every byte of `total` not kept.
fn spliced(head: &[u8], tail: &[u8], total: u64) -> Bounded {
    let head = &head[..utf8_prefix_len(head)];
    let tail = &tail[utf8_suffix_start(tail)..];
    let omitted = total - head.len() as u64 - tail.len() as u64;
    let text = format!("{}{}{}", lossy(head), omitted_marker(omitted), lossy(tail));
    let mut bytes = head.to_vec();
    bytes.extend_from_slice(tail);
    Bounded {
        text,
        truncated: true,
        total_bytes: total,
        omitted_bytes: omitted,
        kept: KeptBytes {
            bytes,
            head: head.len(),
        },
    }
}

impl Bounded {
    /// The same stream bounded again, to at most `cap` kept bytes (head+tail): the marker
    /// counts bytes of the original stream, whatever the lossy text's length.
    pub fn recap(&self, cap: usize) -> Bounded {
        let KeptBytes { bytes, head } = &self.kept;
        if bytes.len() <= cap {
            return self.clone();
        }
        let (before, after) = bytes.split_at(*head);
        let (head_cap, tail_cap) = (cap / 2, cap - cap / 2);
        // Nothing dropped yet: one contiguous run, cut from both of its ends.
        let (before, after) = if self.truncated {
            (before, after)
        } else {
            (&bytes[..], &bytes[..])
        };
        let new_head = &before[..head_cap.min(before.len())];
        let new_tail = &after[after.len() - tail_cap.min(after.len())..];
        spliced(new_head, new_tail, self.total_bytes)
    }
}

/// Head+tail truncation of a complete buffer.
pub fn head_tail(bytes: &[u8], cap: usize) -> Bounded {
    let mut buffer = HeadTail::new(cap);
    buffer.push(bytes);
    buffer.finish()
}

/// The marker placed where bytes were dropped.
pub fn omitted_marker(omitted: u64) -> String {
    format!("\n...[omitted {omitted} bytes]...\n")
}

/// `1.5 KiB`, `12 B`, `3.0 MiB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// `850 ms`, `3.2 s`, `2 min 5 s`.
pub fn human_duration_ms(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{:.1} s", ms as f64 / 1000.0)
    } else {
        format!("{} min {} s", ms / 60_000, (ms % 60_000) / 1000)
    }
}

/// `a string`, `an integer`, `an object`, ... for error messages about a JSON value.
pub fn json_kind(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Length of `bytes` without a trailing incomplete UTF-8 sequence.
fn utf8_prefix_len(bytes: &[u8]) -> usize {
    // A UTF-8 sequence is at most 4 bytes: look back at most 3 for its lead byte.
    for back in 1..=3.min(bytes.len()) {
        let b = bytes[bytes.len() - back];
        if b & 0xC0 == 0x80 {
            continue; // continuation byte
        }
        let needed = if b >= 0xF8 {
            1 // never a lead byte: shown on its own as U+FFFD, so nothing to keep whole
        } else if b >= 0xF0 {
            4
        } else if b >= 0xE0 {
            3
        } else if b >= 0xC0 {
            2
        } else {
            1
        };
        return if needed > back {
            bytes.len() - back
        } else {
            bytes.len()
        };
    }
    bytes.len()
}

/// Index of the first byte of `bytes` that starts a character (skips leading continuation bytes).
fn utf8_suffix_start(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .take(3)
        .take_while(|b| **b & 0xC0 == 0x80)
        .count()
}

/// A fixed-capacity ring keeping the last `cap` bytes.
#[derive(Debug, Clone)]
struct Ring {
    buf: Vec<u8>,
    cap: usize,
    /// Next write position once `buf` is full.
    pos: usize,
}

impl Ring {
    fn new(cap: usize) -> Self {
        Ring {
            buf: Vec::new(),
            cap,
            pos: 0,
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        if self.cap == 0 || bytes.is_empty() {
            return;
        }
        if bytes.len() >= self.cap {
            self.buf.clear();
            self.buf.extend_from_slice(&bytes[bytes.len() - self.cap..]);
            self.pos = 0;
            return;
        }
        if self.buf.len() < self.cap {
            let room = self.cap - self.buf.len();
            let take = room.min(bytes.len());
            self.buf.extend_from_slice(&bytes[..take]);
            self.push_full(&bytes[take..]);
        } else {
            self.push_full(bytes);
        }
    }

    /// Overwrites the oldest bytes; `buf` is full and `bytes.len() < cap`.
    fn push_full(&mut self, bytes: &[u8]) {
        let first = (self.cap - self.pos).min(bytes.len());
        self.buf[self.pos..self.pos + first].copy_from_slice(&bytes[..first]);
        let rest = &bytes[first..];
        self.buf[..rest.len()].copy_from_slice(rest);
        self.pos = (self.pos + bytes.len()) % self.cap;
    }

    fn into_vec(mut self) -> Vec<u8> {
        if self.buf.len() == self.cap {
            self.buf.rotate_left(self.pos);
        }
        self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_input_is_kept_whole() {
        let out = head_tail(b"hello", 10);
        assert_eq!(out.text, "hello");
        assert!(!out.truncated);
        let out = head_tail(b"0123456789", 10);
        assert_eq!(out.text, "0123456789");
        assert!(!out.truncated);
    }

    #[test]
    fn long_input_keeps_head_and_tail_with_marker() {
        let out = head_tail(b"0123456789abcdefghij", 10);
        assert!(out.truncated);
        assert_eq!(out.text, "01234\n...[omitted 10 bytes]...\nfghij");
        // Bounded again, counted in bytes of the stream: from 10 kept to 4, then unchanged at 20.
        assert_eq!(out.recap(4).text, "01\n...[omitted 16 bytes]...\nij");
        assert_eq!(out.recap(4).omitted_bytes, 16);
        assert_eq!(out.recap(20), out);
        assert_eq!(out.total_bytes, 20);
        assert_eq!(
            head_tail(b"0123456789", 10).recap(4).text,
            "01\n...[omitted 6 bytes]...\n89"
        );
    }

    #[test]
    fn recap_counts_bytes_not_replacement_characters() {
        // Each 0xff is one U+FFFD (three bytes of text) but one byte of the stream.
        let out = head_tail(&[0xff; 20], 20).recap(4);
        let (head, rest) = out.text.split_once("\n...[omitted ").unwrap_or_default();
        let (count, tail) = rest.split_once(" bytes]...\n").unwrap_or_default();
        let kept = head.chars().count() + tail.chars().count();
        assert_eq!(
            kept as u64 + count.parse::<u64>().unwrap_or_default(),
            20,
            "{:?}",
            out.text
        );
        assert_eq!(out.omitted_bytes, 20 - kept as u64);
    }

    #[test]
    fn bytes_that_lead_no_character_are_kept_up_to_the_cap() {
        // 0xff starts no UTF-8 sequence: the head keeps its last one, and head + tail is the cap.
        let out = head_tail(&[0xff; 20], 10);
        assert_eq!(out.omitted_bytes, 10, "{:?}", out.text);
        let out = head_tail(&[0xff; 20], 20).recap(4);
        assert_eq!(out.omitted_bytes, 16, "{:?}", out.text);
    }

    #[test]
    fn streaming_in_small_chunks_matches_one_push() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        for chunk in [1, 3, 7, 64, 999, 5000] {
            let mut buffer = HeadTail::new(1000);
            for piece in data.chunks(chunk) {
                buffer.push(piece);
            }
            assert_eq!(buffer.finish(), head_tail(&data, 1000), "chunk {chunk}");
        }
    }

    #[test]
    fn cuts_never_split_a_character() {
        let text = "é".repeat(100); // 2 bytes each
        let out = head_tail(text.as_bytes(), 11);
        assert!(!out.text.contains('\u{FFFD}'), "{}", out.text);
        let text = "😀".repeat(100); // 4 bytes each
        let out = head_tail(text.as_bytes(), 13);
        assert!(!out.text.contains('\u{FFFD}'), "{}", out.text);
        assert!(out.text.starts_with("😀"));
        assert!(out.text.ends_with("😀"));
    }

    #[test]
    fn memory_stays_bounded() {
        let mut buffer = HeadTail::new(1024);
        let chunk = vec![b'x'; 64 * 1024];
        for _ in 0..100 {
            buffer.push(&chunk);
        }
        assert!(buffer.head.capacity() <= 64 * 1024);
        assert!(buffer.tail.buf.capacity() <= 1024);
        assert_eq!(buffer.total_bytes(), 6_553_600);
    }

    #[test]
    fn human_units() {
        assert_eq!(human_bytes(12), "12 B");
        assert_eq!(human_bytes(4198), "4.1 KiB");
        assert_eq!(human_duration_ms(3200), "3.2 s");
        assert_eq!(human_duration_ms(45), "45 ms");
    }
}
