//! Live output: a node's process output as `output_chunk` events while the node runs.
//!
//! Each running node gets an [`cheng_node::Output`] handle (only when the run's event sink is
//! enabled). Chunks are coalesced per stream: the first chunk goes out at once, later ones at
//! most one event per [`COALESCE_INTERVAL`] per stream, except that a stream holding
//! [`COALESCE_BYTES`] goes out at once (in pieces of at most that size). What is still held when
//! the node returns goes out before its `node_finished`. Events split text on character
//! boundaries (a UTF-8 sequence cut by a read waits for its rest); `offset` and `bytes` count
//! the bytes the process wrote, so a stream's events are contiguous and their `bytes` sum to what
//! it wrote, however much the node's own head+tail capture kept.
//!
//! A run emits at most [`RUN_OUTPUT_BYTES`] of output text in at most [`RUN_OUTPUT_EVENTS`]
//! `output_chunk` events (over all its nodes); past either bound the rest of the run's output is
//! not sent as events, and one `output_dropped` event says so. The nodes' outputs are unaffected.

use crate::events::{now, Event, EventSink};
use cheng_node::output::{OutputSink, OutputStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// At most one `output_chunk` event per stream per this interval (unless [`COALESCE_BYTES`]
/// are waiting).
pub const COALESCE_INTERVAL: Duration = Duration::from_millis(100);
/// A stream holding this many bytes is sent at once; no event carries more.
pub const COALESCE_BYTES: usize = 64 * 1024;
/// Output text a run sends as events, over all its nodes and streams.
pub const RUN_OUTPUT_BYTES: u64 = 8 << 20;
/// `output_chunk` events a run sends, over all its nodes and streams.
pub const RUN_OUTPUT_EVENTS: u64 = 10_000;

/// One event's worth of a stream.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Piece {
    /// Bytes of the stream before this piece.
    pub offset: u64,
    /// Bytes of the stream in this piece.
    pub bytes: usize,
    pub text: String,
}

/// The coalescing rule for one stream, with time passed in (unit-testable without clocks).
#[derive(Debug, Default)]
pub(crate) struct Coalescer {
    pending: Vec<u8>,
    /// Stream bytes before `pending`.
    pending_offset: u64,
    last_emit: Option<Instant>,
}

impl Coalescer {
    /// Takes `bytes` that arrived at `now`; returns the pieces to send now.
    pub fn push(&mut self, now: Instant, bytes: &[u8]) -> Vec<Piece> {
        self.pending.extend_from_slice(bytes);
        let mut out = Vec::new();
        while self.pending.len() >= COALESCE_BYTES {
            let cut = char_boundary(&self.pending, COALESCE_BYTES);
            out.push(self.take(cut));
            self.last_emit = Some(now);
        }
        if self.is_due(now) {
            out.extend(self.take_complete(now));
        }
        out
    }

    /// What is due at `now` (the interval since the last event has passed).
    pub fn due(&mut self, now: Instant) -> Option<Piece> {
        if self.is_due(now) {
            self.take_complete(now)
        } else {
            None
        }
    }

    /// When the held bytes become due; `None` when nothing is held.
    pub fn deadline(&self) -> Option<Instant> {
        if self.pending.is_empty() {
            return None;
        }
        Some(
            self.last_emit
                .map_or_else(Instant::now, |last| last + COALESCE_INTERVAL),
        )
    }

    /// Everything still held (the node returned), an incomplete character included.
    pub fn finish(&mut self) -> Option<Piece> {
        if self.pending.is_empty() {
            return None;
        }
        Some(self.take(self.pending.len()))
    }

    fn is_due(&self, now: Instant) -> bool {
        !self.pending.is_empty()
            && self
                .last_emit
                .is_none_or(|last| now.saturating_duration_since(last) >= COALESCE_INTERVAL)
    }

    /// The held bytes up to the last complete character (nothing when that is none).
    fn take_complete(&mut self, now: Instant) -> Option<Piece> {
        let cut = complete_prefix(&self.pending);
        if cut == 0 {
            return None;
        }
        self.last_emit = Some(now);
        Some(self.take(cut))
    }

    fn take(&mut self, n: usize) -> Piece {
        let rest = self.pending.split_off(n);
        let bytes = std::mem::replace(&mut self.pending, rest);
        let piece = Piece {
            offset: self.pending_offset,
            bytes: bytes.len(),
            text: String::from_utf8_lossy(&bytes).into_owned(),
        };
        self.pending_offset += bytes.len() as u64;
        piece
    }
}

/// The length of `buf` without a UTF-8 sequence cut off at its end.
fn complete_prefix(buf: &[u8]) -> usize {
    let len = buf.len();
    for back in 1..=len.min(4) {
        let i = len - back;
        let b = buf[i];
        if b & 0xC0 == 0x80 {
            continue; // a continuation byte: look further back
        }
        let width = match b {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        return if i + width > len { i } else { len };
    }
    len
}

/// At most `max` bytes of `buf`, ending on a character boundary where one is near.
fn char_boundary(buf: &[u8], max: usize) -> usize {
    if buf.len() <= max {
        return buf.len();
    }
    let mut cut = max;
    while cut > max.saturating_sub(3) && cut > 0 && buf[cut] & 0xC0 == 0x80 {
        cut -= 1;
    }
    if cut == 0 || buf[cut] & 0xC0 == 0x80 {
        max
    } else {
        cut
    }
}

/// The run's bound on output events, shared by its nodes.
#[derive(Debug, Default)]
pub(crate) struct Budget {
    bytes: u64,
    events: u64,
    exhausted: bool,
}

/// Whether a piece may go out, or it is the first one dropped (say so once), or a later one.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Admit {
    Send,
    DropFirst,
    Drop,
}

impl Budget {
    /// Past the bound: nothing more of this run is sent.
    pub fn exhausted(&self) -> bool {
        self.exhausted
    }

    pub fn admit(&mut self, bytes: usize) -> Admit {
        if self.exhausted {
            return Admit::Drop;
        }
        if self.events + 1 > RUN_OUTPUT_EVENTS || self.bytes + bytes as u64 > RUN_OUTPUT_BYTES {
            self.exhausted = true;
            return Admit::DropFirst;
        }
        self.events += 1;
        self.bytes += bytes as u64;
        Admit::Send
    }
}

/// One running node's output handle: coalesces its chunks into events.
pub(crate) struct NodeOutput {
    node: String,
    node_type: &'static str,
    events: Arc<dyn EventSink>,
    budget: Arc<Mutex<Budget>>,
    /// stdout, stderr.
    streams: Mutex<[Coalescer; 2]>,
    /// A flush task is waiting for the held bytes' deadline.
    armed: AtomicBool,
    closed: AtomicBool,
    runtime: Option<tokio::runtime::Handle>,
    me: Weak<NodeOutput>,
}

impl NodeOutput {
    pub fn new(
        node: String,
        node_type: &'static str,
        events: Arc<dyn EventSink>,
        budget: Arc<Mutex<Budget>>,
    ) -> Arc<Self> {
        Arc::new_cyclic(|me| NodeOutput {
            node,
            node_type,
            events,
            budget,
            streams: Mutex::default(),
            armed: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            runtime: tokio::runtime::Handle::try_current().ok(),
            me: me.clone(),
        })
    }

    /// Sends what is still held; later chunks are ignored. Called when the node returns.
    pub fn finish(&self) {
        let Ok(mut streams) = self.streams.lock() else {
            return;
        };
        self.closed.store(true, Ordering::SeqCst);
        for (i, stream) in [OutputStream::Stdout, OutputStream::Stderr]
            .into_iter()
            .enumerate()
        {
            if let Some(piece) = streams[i].finish() {
                self.send(stream, piece);
            }
        }
    }

    /// Emits one piece within the run's budget (called with the streams locked, so a stream's
    /// events leave in order).
    fn send(&self, stream: OutputStream, piece: Piece) {
        let admit = match self.budget.lock() {
            Ok(mut budget) => budget.admit(piece.text.len()),
            Err(_) => Admit::Drop,
        };
        match admit {
            Admit::Send => self.events.emit(Event::OutputChunk {
                ts: now(),
                node: self.node.clone(),
                node_type: self.node_type.to_string(),
                stream,
                offset: piece.offset,
                bytes: piece.bytes as u64,
                text: piece.text,
            }),
            Admit::DropFirst => self.events.emit(Event::OutputDropped {
                ts: now(),
                node: self.node.clone(),
                node_type: self.node_type.to_string(),
                stream,
                offset: piece.offset,
                limit_bytes: RUN_OUTPUT_BYTES,
                limit_events: RUN_OUTPUT_EVENTS,
                message: format!(
                    "this run reached its bound on live output ({} MiB of text in {RUN_OUTPUT_EVENTS} events); \
                     further output is not sent as events, but each node's own output ports still hold it (head+tail)",
                    RUN_OUTPUT_BYTES >> 20
                ),
            }),
            Admit::Drop => {}
        }
    }

    /// Starts a task that sends the held bytes when they become due (one at a time).
    fn arm(&self, deadline: Instant) {
        let Some(runtime) = &self.runtime else { return };
        if self.armed.swap(true, Ordering::SeqCst) {
            return;
        }
        let me = self.me.clone();
        runtime.spawn(async move {
            let mut deadline = deadline;
            loop {
                tokio::time::sleep_until(deadline.into()).await;
                let Some(this) = me.upgrade() else { return };
                let Ok(mut streams) = this.streams.lock() else {
                    return;
                };
                if this.closed.load(Ordering::SeqCst) {
                    return;
                }
                let now = Instant::now();
                for (i, stream) in [OutputStream::Stdout, OutputStream::Stderr]
                    .into_iter()
                    .enumerate()
                {
                    if let Some(piece) = streams[i].due(now) {
                        this.send(stream, piece);
                    }
                }
                match streams.iter().filter_map(Coalescer::deadline).min() {
                    Some(next) => deadline = next,
                    None => {
                        this.armed.store(false, Ordering::SeqCst);
                        return;
                    }
                }
            }
        });
    }
}

impl OutputSink for NodeOutput {
    fn connection(&self, connection: &cheng_node::output::Connection) {
        if self.closed.load(Ordering::SeqCst) {
            return;
        }
        self.events.emit(Event::NetworkConnection {
            ts: now(),
            node: self.node.clone(),
            node_type: self.node_type.to_string(),
            connection: connection.clone(),
        });
    }

    fn chunk(&self, stream: OutputStream, bytes: &[u8], _offset: u64) {
        // Offsets are counted here, from what arrives: contiguous per stream by construction.
        let Ok(mut streams) = self.streams.lock() else {
            return;
        };
        if self.closed.load(Ordering::SeqCst) {
            return;
        }
        // Past the run's bound nothing is sent: skip the copying and coalescing too.
        if self.budget.lock().map_or(true, |b| b.exhausted()) {
            return;
        }
        let i = usize::from(stream == OutputStream::Stderr);
        let now = Instant::now();
        for piece in streams[i].push(now, bytes) {
            self.send(stream, piece);
        }
        if let Some(deadline) = streams[i].deadline() {
            drop(streams);
            self.arm(deadline);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemorySink;

    fn texts(pieces: &[Piece]) -> Vec<&str> {
        pieces.iter().map(|p| p.text.as_str()).collect()
    }

    #[test]
    fn the_first_chunk_goes_out_at_once_and_later_ones_wait_for_the_interval() {
        let t0 = Instant::now();
        let mut c = Coalescer::default();
        assert_eq!(texts(&c.push(t0, b"one\n")), ["one\n"]);
        // Within 100 ms: held.
        assert!(c.push(t0 + Duration::from_millis(10), b"two\n").is_empty());
        assert!(c
            .push(t0 + Duration::from_millis(60), b"three\n")
            .is_empty());
        assert_eq!(c.deadline(), Some(t0 + COALESCE_INTERVAL));
        assert_eq!(c.due(t0 + Duration::from_millis(99)), None);
        // Due at 100 ms: one event with both.
        let piece = c.due(t0 + COALESCE_INTERVAL).expect("due");
        assert_eq!(
            piece,
            Piece {
                offset: 4,
                bytes: 10,
                text: "two\nthree\n".into()
            }
        );
        assert_eq!(c.deadline(), None);
        // A chunk after the interval goes out at once again.
        let later = c.push(t0 + Duration::from_millis(250), b"four\n");
        assert_eq!(
            later,
            vec![Piece {
                offset: 14,
                bytes: 5,
                text: "four\n".into()
            }]
        );
    }

    #[test]
    fn sixty_four_kib_goes_out_at_once_in_pieces_of_at_most_that() {
        let t0 = Instant::now();
        let mut c = Coalescer::default();
        c.push(t0, b"x");
        // 150 KiB within the interval: two full pieces now, the rest held.
        let pieces = c.push(t0 + Duration::from_millis(1), &vec![b'a'; 150 * 1024]);
        assert_eq!(pieces.len(), 2);
        assert!(pieces.iter().all(|p| p.bytes == COALESCE_BYTES));
        assert_eq!(pieces[0].offset, 1);
        assert_eq!(pieces[1].offset, 1 + COALESCE_BYTES as u64);
        let rest = c.finish().expect("the rest");
        assert_eq!(rest.offset, 1 + 2 * COALESCE_BYTES as u64);
        assert_eq!(rest.bytes, 150 * 1024 - 2 * COALESCE_BYTES);
    }

    #[test]
    fn a_character_cut_by_a_read_waits_for_its_rest() {
        let t0 = Instant::now();
        let mut c = Coalescer::default();
        let snow = "☃".as_bytes(); // three bytes
        let first = c.push(t0, &[b"a".as_slice(), &snow[..1]].concat());
        assert_eq!(texts(&first), ["a"]);
        let second = c.push(t0 + COALESCE_INTERVAL, &snow[1..]);
        assert_eq!(
            second,
            vec![Piece {
                offset: 1,
                bytes: 3,
                text: "☃".into()
            }]
        );
        // Cut at 64 KiB: the piece ends before the character.
        let mut c = Coalescer::default();
        let mut big = vec![b'a'; COALESCE_BYTES - 1];
        big.extend_from_slice(snow);
        let mut pieces = c.push(t0, &big);
        assert_eq!(pieces[0].bytes, COALESCE_BYTES - 1);
        pieces.extend(c.finish());
        assert_eq!(pieces.last().map(|p| p.text.as_str()), Some("☃"));
        assert!(
            pieces.iter().all(|p| !p.text.contains('\u{FFFD}')),
            "no replacement characters"
        );
        assert_eq!(pieces.iter().map(|p| p.bytes).sum::<usize>(), big.len());
    }

    #[test]
    fn the_run_budget_admits_up_to_its_bounds_then_drops_and_says_so_once() {
        let mut budget = Budget::default();
        assert_eq!(budget.admit(RUN_OUTPUT_BYTES as usize - 10), Admit::Send);
        assert_eq!(budget.admit(10), Admit::Send);
        assert_eq!(budget.admit(1), Admit::DropFirst);
        assert_eq!(budget.admit(1), Admit::Drop);
        let mut budget = Budget::default();
        for _ in 0..RUN_OUTPUT_EVENTS {
            assert_eq!(budget.admit(1), Admit::Send);
        }
        assert_eq!(budget.admit(1), Admit::DropFirst);
        assert_eq!(budget.admit(0), Admit::Drop);
    }

    #[test]
    fn a_node_output_emits_chunks_then_one_dropped_event_past_the_run_bound() {
        let sink = Arc::new(MemorySink::default());
        let budget = Arc::new(Mutex::new(Budget::default()));
        let out = NodeOutput::new("n".into(), "test/x", sink.clone(), budget);
        // No runtime here: nothing is armed; every push after the first is held until finish,
        // except full 64 KiB pieces. 9 MiB crosses the 8 MiB bound.
        let block = vec![b'z'; COALESCE_BYTES];
        for _ in 0..(9 * 16) {
            out.chunk(OutputStream::Stdout, &block, 0);
        }
        out.chunk(OutputStream::Stderr, b"late", 0);
        out.finish();
        out.chunk(OutputStream::Stdout, b"after finish", 0);
        let events = sink.events();
        let chunks: Vec<&Event> = events
            .iter()
            .filter(|e| e.name() == "output_chunk")
            .collect();
        let dropped: Vec<&Event> = events
            .iter()
            .filter(|e| e.name() == "output_dropped")
            .collect();
        assert_eq!(dropped.len(), 1, "one event says output was dropped");
        let sent: u64 = chunks
            .iter()
            .map(|e| match e {
                Event::OutputChunk { bytes, .. } => *bytes,
                _ => 0,
            })
            .sum();
        assert_eq!(sent, RUN_OUTPUT_BYTES);
        assert_eq!(
            events.last().map(Event::name),
            Some("output_dropped"),
            "nothing after the bound"
        );
    }
}
