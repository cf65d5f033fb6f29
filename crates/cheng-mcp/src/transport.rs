//! JSON-RPC over stdio, one message per line — written here rather than taken from rmcp's
//! `transport-io`, because that transport silently drops what this server must answer:
//!
//! - a line that is not JSON gets `-32700 Parse error` (rmcp ignores it) and the server goes on;
//! - a line over the size cap gets `-32600` naming the cap, is discarded without being held in
//!   memory, and the server goes on (rmcp drops it without a word);
//! - a request whose params do not fit its method gets `-32602` naming the field (rmcp answers a
//!   bare `Invalid request` without the request's id);
//! - after `notifications/cancelled` nothing more is sent for that request id.
//!
//! Everything else — the message types, dispatch, negotiation — is rmcp's.

use rmcp::model::{CallToolRequestParams, InitializeRequestParams};
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::future::Future;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// The largest message accepted, in bytes (one line).
pub const MAX_MESSAGE: usize = 16 * 1024 * 1024;

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const INVALID_PARAMS: i64 = -32602;

/// The server side of a line-delimited JSON-RPC stream.
pub struct LineTransport<R> {
    reader: R,
    line: Vec<u8>,
    /// Skipping the rest of an oversized line.
    discarding: bool,
    max: usize,
    out: mpsc::UnboundedSender<Vec<u8>>,
    /// Request ids (as JSON text) the client cancelled: their responses are not sent.
    cancelled: Arc<Mutex<HashSet<String>>>,
    /// Cancelled when the input ends (the client closed stdin or went away).
    pub eof: tokio_util::sync::CancellationToken,
}

/// Errors writing to the stream.
#[derive(Debug)]
pub struct Closed;

impl std::fmt::Display for Closed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the output stream is closed")
    }
}

impl std::error::Error for Closed {}

impl<R: AsyncBufRead + Unpin + Send + 'static> LineTransport<R> {
    /// Reads from `reader`; writes go through one task that owns `writer` (returned, to await
    /// at shutdown so every queued line is flushed).
    pub fn new<W: AsyncWrite + Unpin + Send + 'static>(reader: R, writer: W, max: usize) -> (Self, tokio::task::JoinHandle<()>) {
        let (out, rx) = mpsc::unbounded_channel();
        let writer_task = tokio::spawn(write_lines(writer, rx));
        (LineTransport { reader, line: Vec::new(), discarding: false, max, out, cancelled: Arc::default(), eof: Default::default() }, writer_task)
    }

    fn reply_error(&self, id: Value, code: i64, message: String) {
        let line = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
        let _ = self.out.send(line.to_string().into_bytes());
    }

    /// One complete line, or `None` at end of input. Oversized lines are answered and skipped.
    async fn next_line(&mut self) -> Option<Vec<u8>> {
        loop {
            // `fill_buf` is cancel-safe and the partial line lives in `self`, so a receive
            // dropped by the service's select loop loses nothing.
            let (consumed, complete) = {
                let available = match self.reader.fill_buf().await {
                    Ok(bytes) => bytes,
                    Err(e) => {
                        eprintln!("cheng serve: reading stdin failed: {e}");
                        return None;
                    }
                };
                if available.is_empty() {
                    return None;
                }
                match available.iter().position(|b| *b == b'\n') {
                    Some(pos) => {
                        if !self.discarding {
                            self.line.extend_from_slice(&available[..pos]);
                        }
                        (pos + 1, true)
                    }
                    None => {
                        if !self.discarding {
                            self.line.extend_from_slice(available);
                        }
                        (available.len(), false)
                    }
                }
            };
            self.reader.consume(consumed);
            if !self.discarding && self.line.len() > self.max {
                self.discarding = true;
                self.line = Vec::new();
                self.reply_error(
                    Value::Null,
                    INVALID_REQUEST,
                    format!(
                        "message too large: a single message may be at most {} bytes ({} MiB); it was discarded, send smaller messages",
                        self.max,
                        self.max / (1024 * 1024)
                    ),
                );
            }
            if complete {
                if self.discarding {
                    self.discarding = false;
                    continue;
                }
                return Some(std::mem::take(&mut self.line));
            }
        }
    }

    /// A parsed message, answering what cannot be one.
    fn parse(&mut self, line: &[u8]) -> Option<RxJsonRpcMessage<RoleServer>> {
        let line = line.strip_prefix(b"\xEF\xBB\xBF".as_slice()).unwrap_or(line);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        let value: Value = match serde_json::from_slice(line) {
            Ok(value) => value,
            Err(e) => {
                self.reply_error(Value::Null, PARSE_ERROR, format!("Parse error: the line is not valid JSON ({e}); send one JSON-RPC message per line"));
                return None;
            }
        };
        let Some(fields) = value.as_object() else {
            self.reply_error(Value::Null, INVALID_REQUEST, "Invalid request: expected a JSON-RPC message object (batches are not supported)".into());
            return None;
        };
        let id = fields.get("id").cloned();
        let method = fields.get("method").and_then(Value::as_str).map(str::to_string);
        if fields.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            if id.is_some() || method.is_some() {
                self.reply_error(id.unwrap_or(Value::Null), INVALID_REQUEST, "Invalid request: `jsonrpc` must be \"2.0\"".into());
            }
            return None;
        }
        if method.as_deref() == Some("notifications/cancelled") {
            if let Some(request) = fields.get("params").and_then(|p| p.get("requestId")) {
                if let Ok(mut cancelled) = self.cancelled.lock() {
                    cancelled.insert(request.to_string());
                }
            }
        }
        let params_problem = match (method.as_deref(), &id) {
            (Some(method), Some(_)) => check_params(method, fields.get("params")),
            _ => None,
        };
        if let (Some(problem), Some(id)) = (params_problem, id.clone()) {
            self.reply_error(id, INVALID_PARAMS, problem);
            return None;
        }
        match serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(value) {
            Ok(message) => Some(message),
            Err(e) => {
                match (id, method) {
                    (Some(id), Some(method)) => self.reply_error(id, INVALID_PARAMS, format!("Invalid params for {method}: {e}")),
                    (Some(id), None) => eprintln!("cheng serve: ignoring a response to request {id} that does not parse: {e}"),
                    (None, Some(method)) => eprintln!("cheng serve: ignoring notification {method}: {e}"),
                    (None, None) => self.reply_error(Value::Null, INVALID_REQUEST, "Invalid request: neither a request, a response nor a notification".into()),
                }
                None
            }
        }
    }
}

/// The precise problem with a known method's params, naming the field.
fn check_params(method: &str, params: Option<&Value>) -> Option<String> {
    fn field_error<T: serde::de::DeserializeOwned>(method: &str, params: Option<&Value>) -> Option<String> {
        let params = params.cloned().unwrap_or(Value::Null);
        if !params.is_object() {
            return Some(format!("Invalid params for {method}: `params` must be an object"));
        }
        serde_json::from_value::<T>(params).err().map(|e| format!("Invalid params for {method}: params: {e}"))
    }
    match method {
        "tools/call" => {
            let problem = field_error::<CallToolRequestParams>(method, params);
            if problem.is_none() {
                if let Some(arguments) = params.and_then(|p| p.get("arguments")) {
                    if !arguments.is_object() && !arguments.is_null() {
                        return Some("Invalid params for tools/call: params.arguments must be an object of the tool's input".into());
                    }
                }
            }
            problem
        }
        "initialize" => field_error::<InitializeRequestParams>(method, params),
        _ => None,
    }
}

async fn write_lines<W: AsyncWrite + Unpin>(mut writer: W, mut rx: mpsc::UnboundedReceiver<Vec<u8>>) {
    while let Some(mut line) = rx.recv().await {
        line.push(b'\n');
        if writer.write_all(&line).await.is_err() {
            return;
        }
        if rx.is_empty() && writer.flush().await.is_err() {
            return;
        }
    }
    let _ = writer.flush().await;
}

impl<R: AsyncBufRead + Unpin + Send + 'static> Transport<RoleServer> for LineTransport<R> {
    type Error = Closed;

    fn send(&mut self, item: TxJsonRpcMessage<RoleServer>) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let value = serde_json::to_value(&item);
        let out = self.out.clone();
        let cancelled = self.cancelled.clone();
        async move {
            let value = match value {
                Ok(value) => value,
                Err(e) => {
                    eprintln!("cheng serve: cannot serialise a message: {e}");
                    return Ok(());
                }
            };
            let is_reply = value.get("result").is_some() || value.get("error").is_some();
            if is_reply {
                if let Some(id) = value.get("id") {
                    if cancelled.lock().map(|mut c| c.remove(&id.to_string())).unwrap_or(false) {
                        // The client cancelled this request: nothing further is sent for it.
                        return Ok(());
                    }
                }
            }
            out.send(value.to_string().into_bytes()).map_err(|_| Closed)
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let Some(line) = self.next_line().await else {
                self.eof.cancel();
                return None;
            };
            if let Some(message) = self.parse(&line) {
                return Some(message);
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}
