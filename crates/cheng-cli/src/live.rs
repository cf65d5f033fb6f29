//! `cheng run` on a terminal: a shell, test or code node's output shown as the process writes
//! it (the engine's `output_chunk` events), the summary after it, as a person running the
//! command by hand would see it.

use cheng_engine::{Event, EventSink};
use cheng_node::OutputStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Writes output chunks to stdout and stderr as they arrive and passes every event on.
pub struct Echo {
    inner: Arc<dyn EventSink>,
    shown: AtomicBool,
    dropped: AtomicBool,
}

/// What [`Echo`] showed, for the text printed after the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Shown {
    /// Some output was shown live (so the final text leaves the streams out).
    pub output: bool,
    /// The run reached the engine's bound on live output: the rest was not shown.
    pub dropped: bool,
}

impl Echo {
    pub fn new(inner: Arc<dyn EventSink>) -> Arc<Echo> {
        Arc::new(Echo {
            inner,
            shown: AtomicBool::new(false),
            dropped: AtomicBool::new(false),
        })
    }

    pub fn shown(&self) -> Shown {
        Shown {
            output: self.shown.load(Ordering::SeqCst),
            dropped: self.dropped.load(Ordering::SeqCst),
        }
    }
}

impl EventSink for Echo {
    fn emit(&self, event: Event) {
        match &event {
            // The process's own bytes, as a terminal running it directly would get them.
            Event::OutputChunk { stream, text, .. } => {
                self.shown.store(true, Ordering::SeqCst);
                match stream {
                    OutputStream::Stdout => {
                        let _ = crate::out::print(text);
                    }
                    OutputStream::Stderr => crate::out::eprint(text),
                }
            }
            Event::OutputDropped { .. } => self.dropped.store(true, Ordering::SeqCst),
            Event::ApprovalDecided {
                node_type,
                decision: cheng_node::Decision::Approved,
                ..
            } if node_type == "tools/exec_command" => crate::out::errln!(
                "cheng: a single run keeps no session: exec_command waits for the command to exit \
                 (Ctrl-C ends it); `cheng serve` or a graph keeps it running for write_stdin"
            ),
            _ => {}
        }
        if self.inner.enabled() {
            self.inner.emit(event);
        }
    }
}
