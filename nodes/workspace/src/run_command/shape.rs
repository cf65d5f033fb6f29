//! The output levels of `tools/run_command`, as the command runner's design gives them: which
//! stream is kept, how much of it, from which end, and the markers that say what was cut.
//!
//! | level | stdout | stderr |
//! |---|---|---|
//! | `error` | dropped | tail, 100 KiB |
//! | `warning` | lines containing `warn` (any case), tail 200 KiB | tail, 100 KiB |
//! | `info` | tail, 500 KiB | tail, 100 KiB |
//! | `all` | head, 1 000 000 bytes | head, 500 KiB |
//!
//! A tail cut starts the text with `...[omitted N bytes]\n`; a head cut ends it with
//! `...[truncated, N bytes total]`. The design's functions cut at a byte offset and decode the
//! rest lossily, which can split a character (a `U+FFFD` where the text had none); here a tail
//! starts and a head ends on a character boundary instead (at most 3 bytes fewer), and N in the
//! `omitted` marker is the number of bytes really dropped. N counts the command's bytes (after
//! the warning filter, before decoding); invalid UTF-8 is decoded lossily as the design does.
//!
//! Streaming: each stream is shaped as its chunks arrive ([`Shaper`] is the process's output
//! sink), so memory is bounded by the budgets, never by what the command writes; the warning
//! filter works line by line with the same bound, however long a line is.

use cheng_node::output::{Output, OutputSink, OutputStream};
use std::sync::Mutex;

/// `info` stdout: the last 500 KiB.
pub const MAX_STDOUT_INFO: usize = 500 * 1024;
/// `info` stderr: the last 100 KiB.
pub const MAX_STDERR_INFO: usize = 100 * 1024;
/// `all` stdout: the first 1 000 000 bytes.
pub const MAX_STDOUT_ALL: usize = 1_000_000;
/// `all` stderr: the first 500 KiB.
pub const MAX_STDERR_ALL: usize = 500 * 1024;
/// `error` and `warning` stderr: the last 100 KiB.
pub const MAX_ERROR: usize = 100 * 1024;
/// `warning` stdout after the line filter: the last 200 KiB.
pub const MAX_WARNING_STDOUT: usize = 200 * 1024;

/// The `output_level` port's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Error,
    Warning,
    Info,
    All,
}

impl Level {
    pub const NAMES: &'static [&'static str] = &["error", "warning", "info", "all"];

    pub fn parse(name: &str) -> Option<Level> {
        match name {
            "error" => Some(Level::Error),
            "warning" => Some(Level::Warning),
            "info" => Some(Level::Info),
            "all" => Some(Level::All),
            _ => None,
        }
    }

    fn stdout(self) -> Stream {
        match self {
            Level::Error => Stream::Dropped,
            Level::Warning => Stream::Warn(WarnLines::new(MAX_WARNING_STDOUT)),
            Level::Info => Stream::Tail(Tail::new(MAX_STDOUT_INFO)),
            Level::All => Stream::Head(Head::new(MAX_STDOUT_ALL)),
        }
    }

    fn stderr(self) -> Stream {
        match self {
            Level::Error | Level::Warning => Stream::Tail(Tail::new(MAX_ERROR)),
            Level::Info => Stream::Tail(Tail::new(MAX_STDERR_INFO)),
            Level::All => Stream::Head(Head::new(MAX_STDERR_ALL)),
        }
    }
}

/// One stream's text as the model gets it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shaped {
    pub text: String,
    pub truncated: bool,
}

/// What a finished run's two streams became at one level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub level: Level,
    /// `info` and `all`: stdout; `warning`: the warning lines; `error`: nothing.
    pub stdout: Option<Shaped>,
    pub stderr: Shaped,
    /// Bytes the command wrote to each stream (before any filter or cut).
    pub stdout_total: u64,
    pub stderr_total: u64,
    /// `warning` only: how many stdout lines contain `warn`.
    pub warning_count: Option<u64>,
}

impl Report {
    /// `info` only, when either stream was cut: the design's hint at the other levels.
    pub fn truncation_note(&self) -> Option<String> {
        let cut = self.stderr.truncated || self.stdout.as_ref().is_some_and(|s| s.truncated);
        (self.level == Level::Info && cut).then(|| {
            format!(
                "Output was truncated. Use output_level=\"error\" for errors only ({} bytes stderr), or output_level=\"all\" for full output (up to 1MB).",
                self.stderr_total
            )
        })
    }
}

/// The last `max` bytes of a stream, and how many there were in all.
#[derive(Debug)]
struct Tail {
    buf: Vec<u8>,
    max: usize,
    total: u64,
}

impl Tail {
    fn new(max: usize) -> Tail {
        Tail {
            buf: Vec::new(),
            max,
            total: 0,
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if bytes.len() >= self.max {
            self.buf.clear();
            self.buf.extend_from_slice(&bytes[bytes.len() - self.max..]);
            return;
        }
        self.buf.extend_from_slice(bytes);
        // Compact only once twice the budget is held, so each byte is moved at most once.
        if self.buf.len() > 2 * self.max {
            let excess = self.buf.len() - self.max;
            self.buf.drain(..excess);
        }
    }

    /// `n` bytes whose content is not kept, followed by at least `max` kept ones (a long line's
    /// start, when the line is longer than the budget).
    fn skip(&mut self, n: u64) {
        self.total += n;
        self.buf.clear();
    }

    fn kept(&self) -> &[u8] {
        &self.buf[self.buf.len().saturating_sub(self.max)..]
    }

    /// The design's `smart_truncate`: the tail, with the omitted marker in front when cut.
    fn finish(&self) -> Shaped {
        if self.total <= self.max as u64 {
            return Shaped {
                text: String::from_utf8_lossy(&self.buf).into_owned(),
                truncated: false,
            };
        }
        let kept = self.kept();
        // Start on a character: skip the continuation bytes of one cut in two (at most 3).
        let skip = kept
            .iter()
            .take(3)
            .take_while(|b| is_continuation(**b))
            .count();
        let kept = &kept[skip..];
        let omitted = self.total - kept.len() as u64;
        Shaped {
            text: format!(
                "...[omitted {omitted} bytes]\n{}",
                String::from_utf8_lossy(kept)
            ),
            truncated: true,
        }
    }
}

/// The first `max` bytes of a stream (and the one after, to see a character cut in two).
#[derive(Debug)]
struct Head {
    buf: Vec<u8>,
    max: usize,
    total: u64,
}

impl Head {
    fn new(max: usize) -> Head {
        Head {
            buf: Vec::new(),
            max,
            total: 0,
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = (self.max + 1).saturating_sub(self.buf.len());
        self.buf.extend_from_slice(&bytes[..room.min(bytes.len())]);
    }

    /// The design's `hard_truncate`: the head, with the truncated marker after it when cut.
    fn finish(&self) -> Shaped {
        if self.total <= self.max as u64 {
            return Shaped {
                text: String::from_utf8_lossy(&self.buf).into_owned(),
                truncated: false,
            };
        }
        // End on a character: when the first byte left out continues a character, leave out
        // the start of that character too (at most 3 bytes).
        let mut cut = self.max.min(self.buf.len());
        while cut > 0
            && self.max - cut < 3
            && self.buf.get(cut).copied().is_some_and(is_continuation)
        {
            cut -= 1;
        }
        Shaped {
            text: format!(
                "{}...[truncated, {} bytes total]",
                String::from_utf8_lossy(&self.buf[..cut]),
                self.total
            ),
            truncated: true,
        }
    }
}

fn is_continuation(byte: u8) -> bool {
    byte & 0xC0 == 0x80
}

/// The design's `filter_warning_lines`, streaming: the lines containing `warn` in any case
/// (as Rust's `str::lines` splits them: at `\n`, dropping a `\r` before it), joined with `\n`,
/// and of those only the last `max` bytes.
#[derive(Debug)]
struct WarnLines {
    /// The current line's last `max` bytes (its `total` is the line's length so far).
    line: Tail,
    /// How much of `warn` the current line's last bytes spell (4: the line matches).
    progress: usize,
    /// The matched lines, joined.
    out: Tail,
    count: u64,
}

const WARN: &[u8; 4] = b"warn";

impl WarnLines {
    fn new(max: usize) -> WarnLines {
        WarnLines {
            line: Tail::new(max),
            progress: 0,
            out: Tail::new(max),
            count: 0,
        }
    }

    fn push(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let (part, ended) = match memchr::memchr(b'\n', bytes) {
                Some(at) => (&bytes[..at], true),
                None => (bytes, false),
            };
            self.scan(part);
            self.line.push(part);
            if ended {
                self.end_line(true);
                bytes = &bytes[part.len() + 1..];
            } else {
                bytes = &[];
            }
        }
    }

    fn scan(&mut self, mut part: &[u8]) {
        while let Some((&byte, rest)) = part.split_first() {
            if self.progress == WARN.len() {
                return;
            }
            if self.progress == 0 {
                // Nothing spelt yet: jump to the next `w` (most bytes of a log are not one).
                match memchr::memchr2(b'w', b'W', part) {
                    Some(at) => part = &part[at..],
                    None => return,
                }
                self.progress = 1;
                part = &part[1..];
                continue;
            }
            part = rest;
            let byte = byte.to_ascii_lowercase();
            // `warn` has no repeated prefix: a mismatch restarts at 0, or at 1 on a `w`.
            self.progress = if byte == WARN[self.progress] {
                self.progress + 1
            } else {
                usize::from(byte == b'w')
            };
        }
    }

    /// Ends the current line; `newline`: it ended with `\n` (a `\r` before it is dropped).
    fn end_line(&mut self, newline: bool) {
        if newline && self.line.buf.last() == Some(&b'\r') {
            self.line.buf.pop();
            self.line.total -= 1;
        }
        if self.progress == WARN.len() {
            if self.count > 0 {
                self.out.push(b"\n");
            }
            let kept = self.line.kept();
            let unkept = self.line.total - kept.len() as u64;
            if unkept > 0 {
                self.out.skip(unkept);
            }
            self.out.push(kept);
            self.count += 1;
        }
        // Reuse the line's buffer: a log has many short lines.
        self.line.buf.clear();
        self.line.total = 0;
        self.progress = 0;
    }

    fn finish(&mut self) -> (Shaped, u64) {
        // A last line without `\n` is still a line (an empty remainder is not).
        if self.line.total > 0 {
            self.end_line(false);
        }
        (self.out.finish(), self.count)
    }
}

#[derive(Debug)]
enum Stream {
    Dropped,
    Tail(Tail),
    Head(Head),
    Warn(WarnLines),
}

/// One stream being shaped, with its byte count.
#[derive(Debug)]
struct Shaping {
    stream: Stream,
    total: u64,
}

impl Shaping {
    fn new(stream: Stream) -> Shaping {
        Shaping { stream, total: 0 }
    }

    fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        match &mut self.stream {
            Stream::Dropped => {}
            Stream::Tail(tail) => tail.push(bytes),
            Stream::Head(head) => head.push(bytes),
            Stream::Warn(warn) => warn.push(bytes),
        }
    }

    fn finish(&mut self) -> (Option<Shaped>, Option<u64>) {
        match &mut self.stream {
            Stream::Dropped => (None, None),
            Stream::Tail(tail) => (Some(tail.finish()), None),
            Stream::Head(head) => (Some(head.finish()), None),
            Stream::Warn(warn) => {
                let (shaped, count) = warn.finish();
                (Some(shaped), Some(count))
            }
        }
    }
}

/// Shapes a run's output at one level as the process writes it, and passes every chunk on to
/// the run's live output handle unchanged. Given to `cheng_exec` as the process's output sink.
pub struct Shaper {
    level: Level,
    streams: Mutex<(Shaping, Shaping)>,
    live: Output,
}

impl Shaper {
    pub fn new(level: Level, live: Output) -> Shaper {
        Shaper {
            level,
            streams: Mutex::new((Shaping::new(level.stdout()), Shaping::new(level.stderr()))),
            live,
        }
    }

    fn push(&self, stream: OutputStream, bytes: &[u8]) {
        // A poisoned lock only means a push panicked; the buffers are still bounded.
        let mut streams = self
            .streams
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match stream {
            OutputStream::Stdout => streams.0.push(bytes),
            OutputStream::Stderr => streams.1.push(bytes),
        }
    }

    /// The shaped streams, once the process's output has been drained.
    pub fn finish(&self) -> Report {
        let mut streams = self
            .streams
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (stdout, warning_count) = streams.0.finish();
        let (stderr, _) = streams.1.finish();
        Report {
            level: self.level,
            stdout,
            stderr: stderr.unwrap_or(Shaped {
                text: String::new(),
                truncated: false,
            }),
            stdout_total: streams.0.total,
            stderr_total: streams.1.total,
            warning_count,
        }
    }
}

impl OutputSink for Shaper {
    fn chunk(&self, stream: OutputStream, bytes: &[u8], offset: u64) {
        self.push(stream, bytes);
        self.live.chunk(stream, bytes, offset);
    }
}

#[cfg(test)]
#[path = "shape_tests.rs"]
mod tests;
