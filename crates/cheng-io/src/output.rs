//! Live output: the bytes a node's process writes, passed on while it runs.
//!
//! The engine gives every node an [`Output`] in its `RunContext` (cheng-node); a node that runs a
//! process hands it to `cheng_exec` (`ProcessSpec::output`), which calls it with each chunk as
//! it is read, besides keeping its bounded head+tail capture. Where the chunks go (run events,
//! MCP progress notifications) is the engine's business; with nobody listening the handle is
//! off and costs one branch per read.

use serde::Serialize;
use std::sync::Arc;

/// Which of a process's output streams a chunk comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputStream {
    Stdout,
    Stderr,
}

impl OutputStream {
    pub fn as_str(&self) -> &'static str {
        match self {
            OutputStream::Stdout => "stdout",
            OutputStream::Stderr => "stderr",
        }
    }
}

/// Receives output chunks as a process writes them. Called on the capture path: it must be
/// cheap and must not block (copy the bytes, queue them, return).
pub trait OutputSink: Send + Sync {
    /// `bytes` exactly as read from `stream`; `offset` is how many bytes of that stream of this
    /// process came before them (so one process's chunks are contiguous: the next offset is
    /// `offset + bytes.len()`; a node that runs several processes, such as workspace_git,
    /// starts again at 0 with each). The engine's events count their own offsets per node.
    fn chunk(&self, stream: OutputStream, bytes: &[u8], offset: u64);

    /// A connection the node's sandbox asked of cheng's filtering proxy, as it was decided
    /// (the same must-not-block rule). Sinks that only show output ignore it.
    fn connection(&self, _connection: &Connection) {}
}

/// One connection asked of the filtering proxy, as decided: what a canvas shows while a
/// sandboxed script runs. The node's `metrics.network` lists the same attempts with their bytes
/// once the run is over.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Connection {
    /// `http`, `connect` or `socks5`.
    pub via: &'static str,
    /// As the client named it.
    pub host: String,
    pub port: u16,
    /// `connected`, `refused` or `failed`.
    pub outcome: &'static str,
    /// Connected: the address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// Refused or failed: why (a refusal names the rule to add).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A node's live output handle: off, or a sink. Cheap to clone.
#[derive(Clone, Default)]
pub struct Output(Option<Arc<dyn OutputSink>>);

impl Output {
    /// Nobody listens: chunks are not passed on.
    pub fn off() -> Self {
        Output(None)
    }

    pub fn new(sink: Arc<dyn OutputSink>) -> Self {
        Output(Some(sink))
    }

    /// Whether anybody listens.
    pub fn is_on(&self) -> bool {
        self.0.is_some()
    }

    /// Passes a proxied connection's decision on (nothing when off).
    pub fn connection(&self, connection: &Connection) {
        if let Some(sink) = &self.0 {
            sink.connection(connection);
        }
    }

    /// Passes a chunk on (nothing when off or when `bytes` is empty).
    pub fn chunk(&self, stream: OutputStream, bytes: &[u8], offset: u64) {
        if let Some(sink) = &self.0 {
            if !bytes.is_empty() {
                sink.chunk(stream, bytes, offset);
            }
        }
    }
}

impl std::fmt::Debug for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.is_on() {
            "Output(on)"
        } else {
            "Output(off)"
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Keep(Mutex<Vec<(OutputStream, Vec<u8>, u64)>>);

    impl OutputSink for Keep {
        fn chunk(&self, stream: OutputStream, bytes: &[u8], offset: u64) {
            self.0
                .lock()
                .unwrap()
                .push((stream, bytes.to_vec(), offset));
        }
    }

    #[test]
    fn an_off_handle_passes_nothing_and_empty_chunks_are_skipped() {
        Output::off().chunk(OutputStream::Stdout, b"x", 0);
        let keep = Arc::new(Keep::default());
        let output = Output::new(keep.clone());
        output.chunk(OutputStream::Stderr, b"", 0);
        output.chunk(OutputStream::Stderr, b"ab", 0);
        assert_eq!(
            *keep.0.lock().unwrap(),
            vec![(OutputStream::Stderr, b"ab".to_vec(), 0)]
        );
        assert!(output.is_on() && !Output::off().is_on());
    }
}
