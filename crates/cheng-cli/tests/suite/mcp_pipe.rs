//! A raw JSON-RPC client for `cheng serve --stdio` on a pipe, for the protocol tests the
//! official SDK client cannot make (malformed lines, exact shapes). The SDK drives the rest.

use super::support::cheng;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::Duration;

/// How long a test waits for an answer before failing (a missing answer fails, never hangs).
pub const ANSWER_WAIT: Duration = Duration::from_secs(30);

/// A server on a pipe: send lines, read answers (read on a thread, so a missing one times out).
pub struct McpPipe {
    pub child: Child,
    pub stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl McpPipe {
    pub fn start(workspace: &Path, extra: &[&str]) -> McpPipe {
        McpPipe::start_with_env(workspace, extra, &[])
    }

    /// [`McpPipe::start`] with environment variables set for the server (e.g. a node's gate).
    pub fn start_with_env(workspace: &Path, extra: &[&str], env: &[(&str, &str)]) -> McpPipe {
        let mut cmd = cheng();
        cmd.args(["serve", "--stdio", "--workspace"])
            .arg(workspace)
            .args(extra)
            .envs(env.iter().copied());
        McpPipe::spawn(cmd)
    }

    /// `cheng serve --stdio` started in `dir`, with no `--workspace`.
    pub fn start_in(dir: &Path) -> McpPipe {
        let mut cmd = cheng();
        cmd.args(["serve", "--stdio"])
            .current_dir(dir)
            .env_remove("CHENG_WORKSPACE");
        McpPipe::spawn(cmd)
    }

    fn spawn(mut cmd: std::process::Command) -> McpPipe {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("cheng serve starts");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        McpPipe {
            child,
            stdin,
            lines,
        }
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write to the server");
        stdin.flush().expect("flush");
    }

    pub fn send(&mut self, message: &Value) {
        self.send_raw(format!("{message}\n").as_bytes());
    }

    pub fn read(&mut self) -> Value {
        let line = match self.lines.recv_timeout(ANSWER_WAIT) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => {
                panic!("no message from the server within {ANSWER_WAIT:?}")
            }
            Err(RecvTimeoutError::Disconnected) => panic!("the server closed stdout"),
        };
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carried a line that is not JSON ({e}): {line}"))
    }

    /// Reads until the answer to `id` (other messages are skipped).
    pub fn answer(&mut self, id: i64) -> Value {
        loop {
            let message = self.read();
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    /// Every message up to the answer to `id` (notifications, requests), and the answer.
    pub fn until_answer(&mut self, id: i64) -> (Vec<Value>, Value) {
        let mut before = Vec::new();
        loop {
            let message = self.read();
            if message["id"] == json!(id) && message.get("method").is_none() {
                return (before, message);
            }
            before.push(message);
        }
    }

    /// Calls tool `name`; returns its structured output.
    pub fn call(&mut self, id: i64, name: &str, arguments: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}}));
        self.answer(id)["result"]["structuredContent"].clone()
    }

    pub fn initialize(&mut self) {
        self.send(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}));
        let answer = self.answer(0);
        assert_eq!(
            answer["result"]["protocolVersion"], "2025-06-18",
            "{answer}"
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }
}

impl Drop for McpPipe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
