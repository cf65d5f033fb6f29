//! Live output and logging: a call's `output_chunk` events as `notifications/progress`, the
//! server's own warnings as `notifications/message`.
//!
//! - **Progress**: when a `tools/call` carries `_meta.progressToken`, the call's run gets an
//!   event sink ([`Progress`]) that turns each `output_chunk` (already coalesced and bounded by
//!   the engine, see `cheng_engine::live`) into one progress notification: `message` is the text,
//!   `progress` the bytes of output so far (both streams), no `total`. Notifications leave in
//!   order through one task per call, all before the call's answer, and none after the client
//!   cancelled the call. Without a token the run has no event sink and no live output at all.
//! - **Logging**: handshake era, `logging/setLevel` sets the connection's level (none until
//!   then: nothing is sent); stateless era, only a request whose `_meta` carries
//!   `io.modelcontextprotocol/logLevel` gets messages, at or above that level. The server logs
//!   (logger `cheng`, level `warning`): a run that reached its bound on live output, and an
//!   approval decided by `--approve`/`--deny` because the client cannot ask a person.
//!
//! MCP deprecates logging (SEP-2577) but its clients still offer it; rmcp marks its types
//! deprecated, hence the `allow(deprecated)` here.
#![allow(deprecated)]

use cheng_engine::{Event, EventSink};
use rmcp::model::{
    LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
    ProtocolVersion,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use serde_json::Value;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The connection's logging level (handshake era; `None` until `logging/setLevel`).
#[derive(Clone, Default)]
pub struct LogLevel(Arc<Mutex<Option<LoggingLevel>>>);

impl LogLevel {
    pub fn set(&self, level: LoggingLevel) {
        if let Ok(mut current) = self.0.lock() {
            *current = Some(level);
        }
    }

    fn get(&self) -> Option<LoggingLevel> {
        self.0.lock().ok().and_then(|l| *l)
    }
}

fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// Where one request's log messages go, if anywhere: the level this request asked for (stateless
/// era, in its `_meta`) or the connection's (handshake era).
#[derive(Clone)]
pub struct Logger {
    peer: Peer<RoleServer>,
    threshold: Option<LoggingLevel>,
    cancelled: CancellationToken,
}

impl Logger {
    pub fn for_request(ctx: &RequestContext<RoleServer>, connection: &LogLevel) -> Logger {
        let stateless = ctx
            .protocol_version()
            .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
        let threshold = if stateless {
            ctx.meta.log_level()
        } else {
            connection.get()
        };
        Logger {
            peer: ctx.peer.clone(),
            threshold,
            cancelled: ctx.ct.clone(),
        }
    }

    /// Whether a message at `level` would be sent.
    pub fn wants(&self, level: LoggingLevel) -> bool {
        self.threshold.is_some_and(|t| rank(level) >= rank(t)) && !self.cancelled.is_cancelled()
    }

    /// Sends `text` at `level` when this request's level lets it through.
    pub async fn log(&self, level: LoggingLevel, text: String) {
        if !self.wants(level) {
            return;
        }
        let mut param = LoggingMessageNotificationParam::new(level, Value::String(text));
        param.logger = Some("cheng".to_string());
        if let Err(e) = self.peer.notify_logging_message(param).await {
            eprintln!("cheng serve: cannot send a log message: {e}");
        }
    }
}

/// What the forwarding task sends.
enum Note {
    Progress { progress: u64, message: String },
    Warning(String),
}

/// The event sink of a call whose client gave a progress token.
pub struct Progress {
    tx: Mutex<Option<mpsc::UnboundedSender<Note>>>,
    /// Output bytes so far (the `progress` value).
    bytes: Mutex<u64>,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Progress {
    /// A sink for the call of `ctx` when it carries a progress token; `None` otherwise.
    pub fn for_request(ctx: &RequestContext<RoleServer>, logger: Logger) -> Option<Arc<Progress>> {
        let token = ctx.meta.get_progress_token()?;
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(forward(rx, ctx.peer.clone(), token, logger, ctx.ct.clone()));
        Some(Arc::new(Progress {
            tx: Mutex::new(Some(tx)),
            bytes: Mutex::new(0),
            task: Mutex::new(Some(task)),
        }))
    }

    /// Waits until every notification queued so far has been handed to the transport (called
    /// when the run is over, before the answer is sent). Later events are dropped.
    pub async fn close(&self) {
        if let Ok(mut tx) = self.tx.lock() {
            tx.take();
        }
        let task = self.task.lock().ok().and_then(|mut t| t.take());
        if let Some(task) = task {
            let _ = task.await;
        }
    }

    fn send(&self, note: Note) {
        if let Ok(tx) = self.tx.lock() {
            if let Some(tx) = tx.as_ref() {
                let _ = tx.send(note);
            }
        }
    }
}

impl EventSink for Progress {
    fn emit(&self, event: Event) {
        match event {
            Event::OutputChunk { bytes, text, .. } => {
                // Counted and queued under one lock, so `progress` increases in queue order.
                let Ok(mut total) = self.bytes.lock() else {
                    return;
                };
                *total += bytes;
                let progress = *total;
                self.send(Note::Progress {
                    progress,
                    message: text,
                });
            }
            Event::OutputDropped { node, message, .. } => {
                self.send(Note::Warning(format!("tool `{node}`: {message}")))
            }
            // A refused connection is worth a warning while the call runs (the script may be
            // waiting on it); every attempt is in the result's metrics.network.
            Event::NetworkConnection {
                node, connection, ..
            } if connection.outcome == "refused" => {
                let reason = connection.reason.as_deref().unwrap_or("refused");
                self.send(Note::Warning(format!("tool `{node}`: {reason}")))
            }
            _ => {}
        }
    }
}

async fn forward(
    mut rx: mpsc::UnboundedReceiver<Note>,
    peer: Peer<RoleServer>,
    token: ProgressToken,
    logger: Logger,
    cancelled: CancellationToken,
) {
    while let Some(note) = rx.recv().await {
        // The client cancelled the call: nothing further is sent for it.
        if cancelled.is_cancelled() {
            continue;
        }
        match note {
            Note::Progress { progress, message } => {
                let mut param = ProgressNotificationParam::new(token.clone(), progress as f64);
                param.message = Some(message);
                if peer.notify_progress(param).await.is_err() {
                    return;
                }
            }
            Note::Warning(text) => logger.log(LoggingLevel::Warning, text).await,
        }
    }
}
