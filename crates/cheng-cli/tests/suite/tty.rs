//! A pseudo-terminal session (util-linux `script`) driven step by step: wait for text on the
//! screen, then type. Used by the approval prompt tests.
#![allow(dead_code)]

use super::support::require_or_skip;
use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a step may wait for the screen before the test fails (a bound on a hang, not a
/// speed measurement: every wait ends as soon as the text appears).
const PATIENCE: Duration = Duration::from_secs(30);

pub struct Session {
    child: Child,
    keys: Option<std::process::ChildStdin>,
    screen: Arc<Mutex<String>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

/// Shell-quotes `word` for `sh -c`.
pub fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// The `cheng` binary and `args`, quoted for a shell command line.
pub fn cheng_line(args: &[&str]) -> String {
    std::iter::once(env!("CARGO_BIN_EXE_cheng"))
        .chain(args.iter().copied())
        .map(quote)
        .collect::<Vec<_>>()
        .join(" ")
}

impl Session {
    /// Starts `sh -c line` on a fresh pseudo-terminal; `None` (a skip) without `script`.
    pub fn start(line: &str) -> Option<Session> {
        if !require_or_skip("script") {
            return None;
        }
        let mut child = Command::new("script")
            .args(["-qec", line, "/dev/null"])
            .env_remove("CHENG_ENABLE_CODE_PYTHON")
            .env_remove("CHENG_ENABLE_CODE_JS")
            .env("NO_COLOR", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("script runs");
        let mut out = child.stdout.take().expect("stdout");
        let screen = Arc::new(Mutex::new(String::new()));
        let sink = screen.clone();
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = out.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .expect("screen")
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let keys = child.stdin.take();
        Some(Session {
            child,
            keys,
            screen,
            reader: Some(reader),
        })
    }

    pub fn screen(&self) -> String {
        self.screen.lock().expect("screen").clone()
    }

    /// Waits until `text` appears on the screen `times` times in all.
    pub fn wait_for(&mut self, text: &str, times: usize) {
        let deadline = Instant::now() + PATIENCE;
        while self.screen().matches(text).count() < times {
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!(
                    "waited in vain for {text:?} (x{times}) on the screen:\n{}",
                    self.screen()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn type_keys(&mut self, keys: &str) {
        let stdin = self.keys.as_mut().expect("the terminal is open");
        stdin.write_all(keys.as_bytes()).expect("type");
        stdin.flush().expect("flush");
    }

    /// Waits for the command to exit while the terminal stays open (nothing more is typed, no
    /// end of input): a program still waiting for a line never exits, and the test fails.
    /// Returns the exit status and the whole screen.
    pub fn finish(mut self) -> (i32, String) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                // The screen is complete once script's output closes.
                drop(self.keys.take());
                if let Some(reader) = self.reader.take() {
                    let _ = reader.join();
                }
                return (status.code().unwrap_or(-1), self.screen());
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "the command did not exit on its own; screen:\n{}",
                    self.screen()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Session {
    /// A failed test leaves nothing waiting on the terminal.
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
