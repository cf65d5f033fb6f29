//! Run events: what a canvas needs to animate a run, one JSON object per line.
//!
//! Every event carries `event` (its name) and `ts` (RFC 3339, UTC, milliseconds); node events
//! carry the node id and type; `approval_decided` carries how long the decision took, and the
//! finish events how long the node or graph ran, both as `duration_ms`. While a node runs, its
//! processes' output arrives as `output_chunk` events (coalesced and bounded per run, see
//! [`crate::live`]), each before the node's `node_finished`; each connection its sandbox asks of
//! cheng's filtering proxy arrives as a `network_connection` event as it is decided.

use cheng_node::{ApprovalRequest, Decision};
use serde::Serialize;
use std::io::Write;
use std::sync::Mutex;
use std::time::SystemTime;

/// One event of a run.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    NodeStarted {
        ts: String,
        node: String,
        #[serde(rename = "type")]
        node_type: String,
    },
    ApprovalRequested {
        ts: String,
        node: String,
        #[serde(rename = "type")]
        node_type: String,
        request: Box<ApprovalRequest>,
    },
    ApprovalDecided {
        ts: String,
        node: String,
        #[serde(rename = "type")]
        node_type: String,
        decision: Decision,
        /// How long the approver took to decide (a person reading the card, or ~0 for a flag).
        duration_ms: u64,
    },
    NodeFinished {
        ts: String,
        node: String,
        #[serde(rename = "type")]
        node_type: String,
        status: crate::NodeStatus,
        duration_ms: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        error_kind: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Output a node's process wrote while it ran: `bytes` bytes of `stream` starting at byte
    /// `offset` of it, as text (a stream's chunks are contiguous: the next `offset` is this one
    /// plus `bytes`; `text` is UTF-8, with U+FFFD for bytes that are not).
    OutputChunk {
        ts: String,
        node: String,
        #[serde(rename = "type")]
        node_type: String,
        stream: cheng_node::OutputStream,
        offset: u64,
        bytes: u64,
        text: String,
    },
    /// The run reached its bound on live output (sent once per run); the chunk starting at
    /// `offset` of `stream` and everything after it is not sent as events.
    OutputDropped {
        ts: String,
        node: String,
        #[serde(rename = "type")]
        node_type: String,
        stream: cheng_node::OutputStream,
        offset: u64,
        limit_bytes: u64,
        limit_events: u64,
        message: String,
    },
    /// A connection the node's sandbox asked of cheng's filtering proxy, as it was decided (at
    /// most the first 200 per node run; the node's `metrics.network` has them with their bytes).
    NetworkConnection {
        ts: String,
        node: String,
        #[serde(rename = "type")]
        node_type: String,
        #[serde(flatten)]
        connection: cheng_node::output::Connection,
    },
    GraphFinished {
        ts: String,
        status: crate::GraphStatus,
        duration_ms: u64,
        succeeded: usize,
        failed: usize,
        skipped: usize,
        cancelled: usize,
    },
}

impl Event {
    /// The event's name as written in the `event` field.
    pub fn name(&self) -> &'static str {
        match self {
            Event::NodeStarted { .. } => "node_started",
            Event::ApprovalRequested { .. } => "approval_requested",
            Event::ApprovalDecided { .. } => "approval_decided",
            Event::NodeFinished { .. } => "node_finished",
            Event::OutputChunk { .. } => "output_chunk",
            Event::OutputDropped { .. } => "output_dropped",
            Event::NetworkConnection { .. } => "network_connection",
            Event::GraphFinished { .. } => "graph_finished",
        }
    }

    /// The node id for node events.
    pub fn node(&self) -> Option<&str> {
        match self {
            Event::NodeStarted { node, .. }
            | Event::ApprovalRequested { node, .. }
            | Event::ApprovalDecided { node, .. }
            | Event::NodeFinished { node, .. }
            | Event::OutputChunk { node, .. }
            | Event::OutputDropped { node, .. }
            | Event::NetworkConnection { node, .. } => Some(node),
            Event::GraphFinished { .. } => None,
        }
    }
}

/// The current time as RFC 3339 (UTC, milliseconds).
pub fn now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// Receives events. Must be cheap: it is called on the scheduling path.
pub trait EventSink: Send + Sync {
    fn emit(&self, event: Event);

    /// `false` lets the engine skip building events nobody reads.
    fn enabled(&self) -> bool {
        true
    }
}

/// Discards everything.
pub struct NullSink;

impl EventSink for NullSink {
    fn emit(&self, _event: Event) {}
    fn enabled(&self) -> bool {
        false
    }
}

/// Writes one JSON line per event and flushes it, so a reader sees events as they happen.
pub struct JsonlSink<W: Write + Send> {
    out: Mutex<JsonlState<W>>,
}

struct JsonlState<W> {
    writer: W,
    error: Option<std::io::Error>,
}

impl<W: Write + Send> JsonlSink<W> {
    pub fn new(writer: W) -> Self {
        JsonlSink {
            out: Mutex::new(JsonlState {
                writer,
                error: None,
            }),
        }
    }

    /// The first write error, if any (later events are dropped after one).
    pub fn take_error(&self) -> Option<std::io::Error> {
        self.out.lock().ok().and_then(|mut s| s.error.take())
    }
}

impl JsonlSink<std::fs::File> {
    /// Creates (truncates) `path`.
    pub fn create(path: &std::path::Path) -> std::io::Result<Self> {
        Ok(Self::new(std::fs::File::create(path)?))
    }
}

impl<W: Write + Send> EventSink for JsonlSink<W> {
    fn emit(&self, event: Event) {
        let Ok(mut state) = self.out.lock() else {
            return;
        };
        if state.error.is_some() {
            return;
        }
        // The lines often go to a terminal: control, bidi and invisible characters in a
        // purpose, a path or a command's output are written as JSON escapes (the same value).
        let mut line = match serde_json::to_string(&event) {
            Ok(line) => cheng_node::display::json(&line).into_bytes(),
            Err(e) => {
                state.error = Some(std::io::Error::other(e));
                return;
            }
        };
        line.push(b'\n');
        if let Err(e) = state
            .writer
            .write_all(&line)
            .and_then(|()| state.writer.flush())
        {
            state.error = Some(e);
        }
    }
}

/// Keeps every event in memory (tests, embedders that render a run afterwards).
#[derive(Default)]
pub struct MemorySink {
    events: Mutex<Vec<Event>>,
}

impl MemorySink {
    pub fn events(&self) -> Vec<Event> {
        self.events.lock().map(|e| e.clone()).unwrap_or_default()
    }
}

impl EventSink for MemorySink {
    fn emit(&self, event: Event) {
        if let Ok(mut events) = self.events.lock() {
            events.push(event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonl_lines_have_event_name_and_timestamp() {
        let sink = JsonlSink::new(Vec::new());
        sink.emit(Event::NodeStarted {
            ts: now(),
            node: "a".into(),
            node_type: "test/x".into(),
        });
        let bytes = sink.out.into_inner().unwrap().writer;
        let line: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(line["event"], "node_started");
        assert_eq!(line["type"], "test/x");
        let ts = line["ts"].as_str().unwrap();
        assert!(humantime::parse_rfc3339(ts).is_ok(), "{ts}");
    }

    #[test]
    fn jsonl_lines_hold_no_character_a_terminal_would_act_on() {
        let text = "a\u{1b}[2K\r\u{9b}1A\u{7f}\u{202e}\u{200b}é中";
        let sink = JsonlSink::new(Vec::new());
        sink.emit(Event::OutputChunk {
            ts: now(),
            node: "a".into(),
            node_type: "test/x".into(),
            stream: cheng_node::OutputStream::Stdout,
            offset: 0,
            bytes: text.len() as u64,
            text: text.into(),
        });
        let bytes = sink.out.into_inner().unwrap().writer;
        let written = String::from_utf8(bytes).unwrap();
        let body = written.strip_suffix('\n').unwrap();
        assert!(
            !body.chars().any(cheng_node::display::is_hidden),
            "{written:?}"
        );
        let line: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(line["text"], text);
        // serde_json alone leaves C1, DEL, bidi and zero-width characters as they are.
        let raw = serde_json::to_string(&line).unwrap();
        assert!(raw.chars().any(cheng_node::display::is_hidden), "{raw:?}");
    }
}
