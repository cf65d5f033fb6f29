//! `cheng serve --http` for the tests that drive it: the real binary on a free loopback port,
//! and a small HTTP/1.1 client over a plain socket (so tests can send what a browser or an
//! attacker would, a forged `Host` included).
#![allow(dead_code)]

use super::support::cheng;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::channel;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The token the tests start the server with.
pub const TOKEN: &str = "test-token-0123456789";

/// How long the server may take to print its URL.
const START_LIMIT: Duration = Duration::from_secs(30);

/// A running `cheng serve --http`; killed when dropped.
pub struct Served {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    log: Arc<Mutex<String>>,
}

impl Served {
    /// `cheng serve --http 127.0.0.1:0 --token TOKEN --workspace WS` plus `extra` arguments.
    pub fn start(workspace: &std::path::Path, extra: &[&str]) -> Served {
        Served::start_with(cheng(), workspace, extra)
    }

    /// [`Served::start`] from a command prepared by the caller (its environment, say).
    pub fn start_with(mut cmd: Command, workspace: &std::path::Path, extra: &[&str]) -> Served {
        let mut child = cmd
            .args(["serve", "--http", "127.0.0.1:0", "--token", TOKEN])
            .arg("--workspace")
            .arg(workspace)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("cheng serve --http starts");
        let stderr = BufReader::new(child.stderr.take().expect("stderr"));
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = channel();
        let kept = Arc::clone(&log);
        // Reads stderr to its end (a full pipe would stall the server), handing on the URL line
        // `cheng serve: http://127.0.0.1:PORT/?token=T  (workspace …)`.
        std::thread::spawn(move || {
            for line in stderr.lines() {
                let Ok(line) = line else { break };
                if let Some(url) = line.strip_prefix("cheng serve: http://") {
                    let _ = tx.send(url.split('/').next().unwrap_or_default().to_string());
                }
                if let Ok(mut log) = kept.lock() {
                    log.push_str(&line);
                    log.push('\n');
                }
            }
        });
        let mut served = Served {
            child,
            addr: String::new(),
            log,
        };
        served.addr = rx.recv_timeout(START_LIMIT).unwrap_or_else(|_| {
            panic!(
                "cheng serve --http printed no URL within {START_LIMIT:?}; stderr:\n{}",
                served.stderr()
            )
        });
        served
    }

    pub fn stderr(&self) -> String {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's exit status, if it exits within `limit`.
    pub fn exited_within(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let deadline = std::time::Instant::now() + limit;
        while std::time::Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// A request with the right `Host` and the token as a bearer header.
    pub fn call(&self, method: &str, path: &str, body: Option<&str>) -> Response {
        let auth = format!("Bearer {TOKEN}");
        self.raw(
            method,
            path,
            &[("Host", &self.addr), ("Authorization", &auth)],
            body,
        )
    }

    /// `call`'s body as JSON, asserting the status.
    pub fn json(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
        status: u16,
    ) -> serde_json::Value {
        let response = self.call(method, path, body);
        assert_eq!(
            response.status,
            status,
            "{method} {path}: {}\nserver stderr:\n{}",
            response.body,
            self.stderr()
        );
        serde_json::from_str(&response.body)
            .unwrap_or_else(|e| panic!("{method} {path}: not JSON ({e}): {}", response.body))
    }

    /// A request with exactly `headers` (nothing added but `Content-Length` and
    /// `Connection: close`).
    pub fn raw(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> Response {
        let mut stream = self.connect();
        send(&mut stream, method, path, headers, body);
        let mut reader = BufReader::new(stream);
        let (status, headers) = read_head(&mut reader);
        let mut raw = Vec::new();
        reader.read_to_end(&mut raw).expect("response body");
        let body = if header(&headers, "transfer-encoding").is_some_and(|t| t.contains("chunked")) {
            dechunk(&raw)
        } else {
            raw
        };
        Response {
            status,
            headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        }
    }

    fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect(&self.addr).expect("connect to cheng serve");
        stream.set_nodelay(true).expect("TCP_NODELAY");
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .expect("timeout");
        stream
    }

    /// Opens a run's event stream (with `Last-Event-ID` when `after` is given).
    pub fn events(&self, run_id: &str, after: Option<u64>) -> EventStream {
        let mut stream = self.connect();
        let auth = format!("Bearer {TOKEN}");
        let last = after.map(|n| n.to_string());
        let mut headers = vec![
            ("Host", self.addr.as_str()),
            ("Authorization", auth.as_str()),
        ];
        if let Some(last) = &last {
            headers.push(("Last-Event-ID", last));
        }
        send(
            &mut stream,
            "GET",
            &format!("/api/runs/{run_id}/events"),
            &headers,
            None,
        );
        let mut reader = BufReader::new(stream);
        let (status, headers) = read_head(&mut reader);
        assert_eq!(status, 200, "events of {run_id}");
        assert!(
            header(&headers, "content-type").is_some_and(|c| c.starts_with("text/event-stream"))
        );
        EventStream {
            reader,
            pending: String::new(),
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

fn send(
    stream: &mut TcpStream,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) {
    send_on(stream, method, path, headers, body, true);
}

fn send_on(
    stream: &mut TcpStream,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
    close: bool,
) {
    let mut request = format!("{method} {path} HTTP/1.1\r\n");
    if close {
        request.push_str("Connection: close\r\n");
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Some(body) = body {
        request.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    request.push_str("\r\n");
    // One write, as clients send a request.
    request.push_str(body.unwrap_or_default());
    stream.write_all(request.as_bytes()).expect("send request");
}

fn read_head(reader: &mut BufReader<TcpStream>) -> (u16, Vec<(String, String)>) {
    let mut line = String::new();
    reader.read_line(&mut line).expect("status line");
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP status line: {line:?}"));
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).expect("header line");
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            break;
        }
        if let Some((name, value)) = trimmed.split_once(':') {
            headers.push((name.trim().to_string(), value.trim().to_string()));
        }
    }
    (status, headers)
}

fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    while let Some(end) = raw.windows(2).position(|w| w == b"\r\n") {
        let size =
            usize::from_str_radix(String::from_utf8_lossy(&raw[..end]).trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        let start = end + 2;
        body.extend_from_slice(&raw[start..(start + size).min(raw.len())]);
        raw = &raw[(start + size + 2).min(raw.len())..];
    }
    body
}

/// A connection kept open between requests, as browsers and MCP clients keep theirs.
pub struct KeepAlive {
    reader: BufReader<TcpStream>,
}

impl Served {
    pub fn keep_alive(&self) -> KeepAlive {
        KeepAlive {
            reader: BufReader::new(self.connect()),
        }
    }
}

impl KeepAlive {
    /// A request with exactly `headers` (and `Content-Length`); its whole response, read by
    /// length or by chunks, so the connection can carry the next one.
    pub fn request(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> Response {
        send_on(self.reader.get_mut(), method, path, headers, body, false);
        let (status, headers) = read_head(&mut self.reader);
        let mut body = Vec::new();
        if header(&headers, "transfer-encoding").is_some_and(|t| t.contains("chunked")) {
            loop {
                let mut size = String::new();
                self.reader.read_line(&mut size).expect("chunk size");
                let size = usize::from_str_radix(size.trim(), 16).expect("a chunk size");
                let mut chunk = vec![0; size + 2];
                self.reader.read_exact(&mut chunk).expect("chunk");
                if size == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..size]);
            }
        } else {
            let length = header(&headers, "content-length")
                .and_then(|l| l.parse().ok())
                .unwrap_or(0);
            body.resize(length, 0);
            self.reader.read_exact(&mut body).expect("body");
        }
        Response {
            status,
            headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        }
    }
}

/// One Server-Sent Event.
#[derive(Debug, Clone, PartialEq)]
pub struct Sse {
    pub id: Option<u64>,
    pub event: String,
    pub data: serde_json::Value,
}

/// A run's event stream, read event by event.
pub struct EventStream {
    reader: BufReader<TcpStream>,
    /// Text received but not yet parsed into events.
    pending: String,
}

impl EventStream {
    /// The next event (keep-alive comments skipped); `None` once the stream ends.
    pub fn next(&mut self) -> Option<Sse> {
        loop {
            if let Some(end) = self.pending.find("\n\n") {
                let block: String = self.pending.drain(..end + 2).collect();
                let mut sse = Sse {
                    id: None,
                    event: String::new(),
                    data: serde_json::Value::Null,
                };
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(id) = line.strip_prefix("id:") {
                        sse.id = id.trim().parse().ok();
                    } else if let Some(event) = line.strip_prefix("event:") {
                        sse.event = event.trim().to_string();
                    } else if let Some(d) = line.strip_prefix("data:") {
                        data.push_str(d.strip_prefix(' ').unwrap_or(d));
                    }
                }
                if sse.event.is_empty() && data.is_empty() {
                    continue;
                }
                sse.data = serde_json::from_str(&data)
                    .unwrap_or_else(|e| panic!("event data is not JSON ({e}): {data}"));
                return Some(sse);
            }
            // Chunked transfer: a size line, the chunk, CRLF.
            let mut size = String::new();
            if self.reader.read_line(&mut size).ok()? == 0 {
                return None;
            }
            let size = usize::from_str_radix(size.trim(), 16).ok()?;
            if size == 0 {
                return None;
            }
            let mut chunk = vec![0; size + 2];
            self.reader.read_exact(&mut chunk).ok()?;
            chunk.truncate(size);
            self.pending.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    /// Every event up to the end of the stream.
    pub fn rest(&mut self) -> Vec<Sse> {
        std::iter::from_fn(|| self.next()).collect()
    }

    /// Events up to and including the first named `name`.
    pub fn until(&mut self, name: &str) -> Vec<Sse> {
        let mut seen = Vec::new();
        while let Some(event) = self.next() {
            let done = event.event == name;
            seen.push(event);
            if done {
                return seen;
            }
        }
        panic!("the stream ended before `{name}`: {seen:#?}");
    }
}
