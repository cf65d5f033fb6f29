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
//! Output: when stdout is a pipe (how clients launch stdio servers), a message is written to it
//! at once, from the call that hands it over, with a non-blocking write; only what the pipe cannot
//! take right away (the client is not reading) is queued for a writer task, and later messages
//! queue behind it until it has drained, so the order never changes. Elsewhere (a file, a
//! terminal) every message goes through the writer task. Each message is serialised once,
//! straight to its line.
//!
//! Everything else — the message types, dispatch, negotiation — is rmcp's.

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, InitializeRequestParams, JsonRpcMessage,
    JsonRpcRequest, RequestId,
};
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::future::Future;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::sync::mpsc;

/// The largest message accepted, in bytes (one line).
pub const MAX_MESSAGE: usize = 16 * 1024 * 1024;

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const INVALID_PARAMS: i64 = -32602;

/// A message as the server receives it.
pub(crate) type RxMessage = RxJsonRpcMessage<RoleServer>;

/// The server side of a line-delimited JSON-RPC stream.
pub struct LineTransport<R> {
    reader: R,
    line: Vec<u8>,
    /// Skipping the rest of an oversized line.
    discarding: bool,
    max: usize,
    out: Out,
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

/// Where the server's messages go.
pub enum Stdout<W> {
    /// A pipe, written without blocking (see the module documentation).
    Pipe(pipe::Sender),
    /// Anything else, written by the writer task.
    Stream(W),
}

/// stdout as a non-blocking pipe of its own, when it is a pipe; `None` otherwise (or off Linux).
///
/// The descriptor is reopened through `/proc/self/fd/1`, as rmcp's `stdio_pipes` does, so
/// `O_NONBLOCK` is set on a private open file description: the process's own stdout, and
/// children that inherit it, stay blocking. Must be called inside the runtime.
pub fn stdout_pipe() -> Option<pipe::Sender> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open("/proc/self/fd/1")
            .ok()?;
        // Refuses anything that is not a pipe.
        pipe::Sender::from_file(file).ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// The sending half of the output: a direct pipe (with the writer task's queue behind it), or
/// the queue alone.
struct Out {
    direct: Option<Arc<pipe::Sender>>,
    /// True while the queue holds lines the pipe has not taken yet: new lines queue behind them.
    backlog: Arc<Mutex<bool>>,
    queue: mpsc::UnboundedSender<Vec<u8>>,
}

fn lock(backlog: &Mutex<bool>) -> std::sync::MutexGuard<'_, bool> {
    // A flag cannot be left half-written: keep using it after a panic elsewhere.
    backlog
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Out {
    /// Sends one message (without its newline).
    fn emit(&self, mut line: Vec<u8>) -> Result<(), Closed> {
        line.push(b'\n');
        let Some(pipe) = &self.direct else {
            return self.queue.send(line).map_err(|_| Closed);
        };
        let mut backlog = lock(&self.backlog);
        if !*backlog {
            let written = write_now(pipe, &line)?;
            if written == line.len() {
                return Ok(());
            }
            line.drain(..written);
            *backlog = true;
        }
        // Queued while the flag is held, so the writer task cannot clear it past this line.
        self.queue.send(line).map_err(|_| Closed)
    }
}

impl<R: AsyncBufRead + Unpin + Send + 'static> LineTransport<R> {
    /// Reads from `reader`; writes to `stdout` (see the module documentation) with one writer
    /// task behind it (returned, to await at shutdown so every queued line is written).
    pub fn new<W: AsyncWrite + Unpin + Send + 'static>(
        reader: R,
        stdout: Stdout<W>,
        max: usize,
    ) -> (Self, tokio::task::JoinHandle<()>) {
        let (queue, rx) = mpsc::unbounded_channel();
        let backlog = Arc::new(Mutex::new(false));
        let (direct, writer_task) = match stdout {
            Stdout::Pipe(pipe) => {
                let pipe = Arc::new(pipe);
                (
                    Some(pipe.clone()),
                    tokio::spawn(drain_backlog(pipe, backlog.clone(), rx)),
                )
            }
            Stdout::Stream(writer) => (None, tokio::spawn(write_lines(writer, rx))),
        };
        let out = Out {
            direct,
            backlog,
            queue,
        };
        let transport = LineTransport {
            reader,
            line: Vec::new(),
            discarding: false,
            max,
            out,
            cancelled: Arc::default(),
            eof: Default::default(),
        };
        (transport, writer_task)
    }

    /// Reads from `reader` with no stdout behind it: every message sent lands, one line each
    /// (newline included), in the returned receiver. For driving the reader in memory.
    pub(crate) fn in_memory(reader: R, max: usize) -> (Self, mpsc::UnboundedReceiver<Vec<u8>>) {
        let (queue, rx) = mpsc::unbounded_channel();
        let out = Out {
            direct: None,
            backlog: Arc::default(),
            queue,
        };
        let transport = LineTransport {
            reader,
            line: Vec::new(),
            discarding: false,
            max,
            out,
            cancelled: Arc::default(),
            eof: Default::default(),
        };
        (transport, rx)
    }

    fn reply_error(&self, id: Value, code: i64, message: String) {
        let line = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
        let _ = self.out.emit(line.to_string().into_bytes());
    }

    /// One complete line, or `None` at end of input (an unterminated last line is dropped).
    /// Oversized lines are answered and skipped; no more than `max` bytes of a line are held.
    pub(crate) async fn next_line(&mut self) -> Option<Vec<u8>> {
        loop {
            // `fill_buf` is cancel-safe and the partial line lives in `self`, so a receive
            // dropped by the service's select loop loses nothing.
            let (consumed, complete, too_large) = {
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
                let (part, consumed, complete) = match available.iter().position(|b| *b == b'\n') {
                    Some(pos) => (&available[..pos], pos + 1, true),
                    None => (available, available.len(), false),
                };
                // Refused before it is copied: the line never grows past the cap.
                let too_large =
                    !self.discarding && self.line.len().saturating_add(part.len()) > self.max;
                if !self.discarding && !too_large {
                    self.line.extend_from_slice(part);
                }
                (consumed, complete, too_large)
            };
            self.reader.consume(consumed);
            if too_large {
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

    fn write(&self, item: &TxJsonRpcMessage<RoleServer>) -> Result<(), Closed> {
        let reply_to = match item {
            JsonRpcMessage::Response(response) => Some(&response.id),
            JsonRpcMessage::Error(error) => error.id.as_ref(),
            _ => None,
        };
        if let Some(id) = reply_to {
            if let Ok(mut cancelled) = self.cancelled.lock() {
                // The key is the id's JSON text, as the cancellation carried it.
                if !cancelled.is_empty()
                    && serde_json::to_string(id).is_ok_and(|key| cancelled.remove(&key))
                {
                    // The client cancelled this request: nothing further is sent for it.
                    return Ok(());
                }
            }
        }
        match serde_json::to_vec(item) {
            Ok(line) => self.out.emit(line),
            Err(e) => {
                eprintln!("cheng serve: cannot serialise a message: {e}");
                Ok(())
            }
        }
    }

    /// A parsed message, answering what cannot be one.
    pub(crate) fn parse(&mut self, line: &[u8]) -> Option<RxJsonRpcMessage<RoleServer>> {
        let line = line
            .strip_prefix(b"\xEF\xBB\xBF".as_slice())
            .unwrap_or(line);
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
            self.reply_error(
                Value::Null,
                INVALID_REQUEST,
                "Invalid request: expected a JSON-RPC message object (batches are not supported)"
                    .into(),
            );
            return None;
        };
        let id = fields.get("id").cloned();
        let method = fields
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_string);
        if fields.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            if id.is_some() || method.is_some() {
                self.reply_error(
                    id.unwrap_or(Value::Null),
                    INVALID_REQUEST,
                    "Invalid request: `jsonrpc` must be \"2.0\"".into(),
                );
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
        if method.as_deref() == Some("tools/call") {
            if let Some(message) = call_request(&value) {
                return Some(message);
            }
        }
        match serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(value) {
            Ok(message) => Some(message),
            Err(e) => {
                match (id, method) {
                    (Some(id), Some(method)) => self.reply_error(
                        id,
                        INVALID_PARAMS,
                        format!("Invalid params for {method}: {e}"),
                    ),
                    (Some(id), None) => eprintln!(
                        "cheng serve: ignoring a response to request {id} that does not parse: {e}"
                    ),
                    (None, Some(method)) => {
                        eprintln!("cheng serve: ignoring notification {method}: {e}")
                    }
                    (None, None) => self.reply_error(
                        Value::Null,
                        INVALID_REQUEST,
                        "Invalid request: neither a request, a response nor a notification".into(),
                    ),
                }
                None
            }
        }
    }
}

/// A `tools/call` request read as one directly. rmcp's own reading tries every request type of
/// its untagged `ClientRequest` in turn, each from a buffered copy of the message, and
/// `tools/call` is the fourteenth: most of the cost of reading a call. Only `tools/call` accepts
/// the method name `tools/call` (the union's last member, a custom request, is reached only when
/// it fails), so reading it directly gives the same message; `None` (the params did not fit, or
/// the message also carries `result`/`error`, which rmcp refuses) leaves it to rmcp's reading,
/// errors and all.
fn call_request(value: &Value) -> Option<RxJsonRpcMessage<RoleServer>> {
    let fields = value.as_object()?;
    if fields.contains_key("result") || fields.contains_key("error") {
        return None;
    }
    let id = RequestId::deserialize(fields.get("id")?).ok()?;
    let request = CallToolRequest::deserialize(value).ok()?;
    Some(JsonRpcMessage::Request(JsonRpcRequest::new(
        id,
        ClientRequest::CallToolRequest(request),
    )))
}

/// The precise problem with a known method's params, naming the field.
fn check_params(method: &str, params: Option<&Value>) -> Option<String> {
    fn field_error<T: serde::de::DeserializeOwned>(
        method: &str,
        params: Option<&Value>,
    ) -> Option<String> {
        let Some(params) = params.filter(|p| p.is_object()) else {
            return Some(format!(
                "Invalid params for {method}: `params` must be an object"
            ));
        };
        // Read in place: the arguments are not copied to be checked.
        T::deserialize(params)
            .err()
            .map(|e| format!("Invalid params for {method}: params: {e}"))
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

/// Writes as much of `bytes` as the pipe takes without blocking; `Err` once it is closed.
fn write_now(pipe: &pipe::Sender, bytes: &[u8]) -> Result<usize, Closed> {
    let mut written = 0;
    while written < bytes.len() {
        match pipe.try_write(&bytes[written..]) {
            Ok(0) => return Err(Closed),
            Ok(n) => written += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(_) => return Err(Closed),
        }
    }
    Ok(written)
}

/// The writer task of a pipe: writes what the pipe could not take at once, then lets new
/// messages go straight to the pipe again.
async fn drain_backlog(
    pipe: Arc<pipe::Sender>,
    backlog: Arc<Mutex<bool>>,
    mut rx: mpsc::UnboundedReceiver<Vec<u8>>,
) {
    while let Some(line) = rx.recv().await {
        let mut written = 0;
        while written < line.len() {
            if pipe.writable().await.is_err() {
                return;
            }
            match write_now(&pipe, &line[written..]) {
                Ok(n) => written += n,
                Err(Closed) => return,
            }
        }
        let mut backlog = lock(&backlog);
        if rx.is_empty() {
            *backlog = false;
        }
    }
}

/// The writer task of any other stream: every message, in order, flushed when the queue is empty.
async fn write_lines<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut rx: mpsc::UnboundedReceiver<Vec<u8>>,
) {
    while let Some(line) = rx.recv().await {
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

    /// Written (or queued) here, before the returned future is polled: rmcp calls `send` from its
    /// one serve loop, so the order of the calls is the order on the wire.
    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        std::future::ready(self.write(&item))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// rmcp's own reading of a message, for comparison.
    fn by_rmcp(message: &Value) -> RxJsonRpcMessage<RoleServer> {
        serde_json::from_value(message.clone()).expect("rmcp reads the message")
    }

    /// The direct reading of `tools/call` is the message rmcp would have made: same id, method,
    /// params, `_meta` (progress token, the stateless era's protocol version) and retry fields.
    #[test]
    fn a_call_read_directly_is_the_call_rmcp_reads() {
        let messages = [
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "code_js", "arguments": {"script": "1 + 1", "input": {"a": [1, 2.5, null]}}}}),
            json!({"jsonrpc": "2.0", "id": "x-1", "method": "tools/call", "params": {"name": "outline"}}),
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
                "name": "workspace_shell", "arguments": {"command": "true"},
                "_meta": {"progressToken": 5, "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}},
                "requestState": "sealed", "inputResponses": {"approval-1": {"action": "accept"}}}}),
        ];
        for message in messages {
            let direct = call_request(&message).expect("a well-formed call is read directly");
            let rmcp = by_rmcp(&message);
            assert!(
                matches!(&rmcp, JsonRpcMessage::Request(r) if matches!(r.request, ClientRequest::CallToolRequest(_))),
                "{message}"
            );
            assert_eq!(
                serde_json::to_value(&direct).expect("serialises"),
                serde_json::to_value(&rmcp).expect("serialises"),
                "{message}"
            );
            let meta = |m: &RxJsonRpcMessage<RoleServer>| match m {
                JsonRpcMessage::Request(JsonRpcRequest {
                    request: ClientRequest::CallToolRequest(r),
                    ..
                }) => r
                    .extensions
                    .get::<rmcp::model::RequestMetaObject>()
                    .cloned(),
                _ => None,
            };
            assert_eq!(meta(&direct), meta(&rmcp), "{message}");
            assert_eq!(
                meta(&direct).is_some(),
                message["params"].get("_meta").is_some(),
                "{message}"
            );
        }
    }

    /// What rmcp refuses or reads as something else is left to rmcp.
    #[test]
    fn a_call_that_is_not_a_plain_request_is_left_to_rmcp() {
        let with_result = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "a"}, "result": {}});
        assert!(call_request(&with_result).is_none());
        assert!(
            serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(with_result).is_err(),
            "rmcp refuses it"
        );
        let without_name = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}});
        assert!(call_request(&without_name).is_none());
        assert!(
            call_request(
                &json!({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "a"}})
            )
            .is_none(),
            "no id"
        );
    }
}
