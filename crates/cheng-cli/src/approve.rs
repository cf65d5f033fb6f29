//! Deciding approvals from the terminal: `--approve`, `--deny`, an interactive prompt on the
//! terminal (stdin/stderr, or `/dev/tty` when stdin is a pipe, as sudo and git do), and denial
//! (with a hint) when there is nobody to ask.
//!
//! The prompt answers: y (approve), n (deny), a (approve this and every remaining request of the
//! run), q (cancel the run). Ctrl-C at the prompt cancels the run at once. In a graph, requests
//! are asked in the graph's order.

use crate::args::ApprovalArgs;
use crate::out::errln;
use cheng_node::display::{self, card, ShownRequest, VALUE_INDENT};
use cheng_node::{async_trait, ApprovalRequest, Approver, CancellationToken, Decision};
use std::collections::{BTreeSet, HashMap};
use std::fs::File;
use std::io::{IsTerminal, Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The approver for these flags and this terminal. `cancel` is the run's token (`q` and Ctrl-C
/// cancel it); `order` lists the node ids in graph order (requests are asked in that order).
pub fn approver(
    args: &ApprovalArgs,
    cancel: CancellationToken,
    order: Vec<String>,
) -> Arc<dyn Approver> {
    if args.approve {
        return Arc::new(Flag {
            decision: Decision::Approved,
            quiet: args.quiet,
        });
    }
    if args.deny {
        return Arc::new(Flag {
            decision: Decision::Denied,
            quiet: args.quiet,
        });
    }
    match Terminal::find() {
        Some(terminal) => Arc::new(Prompt {
            terminal,
            cancel,
            order: order
                .into_iter()
                .enumerate()
                .map(|(i, id)| (id, i))
                .collect(),
            all: AtomicBool::new(false),
            turns: Mutex::new(Turns::default()),
            changed: tokio::sync::Notify::new(),
            seq: AtomicU64::new(0),
        }),
        None => Arc::new(NoTerminal),
    }
}

/// Where a person can be asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Terminal {
    /// stdin and stderr are both terminals.
    Std,
    /// stdin is not a terminal (a pipe, a file) but the process has a controlling terminal.
    DevTty,
}

impl Terminal {
    fn find() -> Option<Terminal> {
        if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
            return Some(Terminal::Std);
        }
        // Opening /dev/tty fails (ENXIO) without a controlling terminal: CI, cron, setsid.
        let tty = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/tty")
            .ok()?;
        tty.is_terminal().then_some(Terminal::DevTty)
    }

    /// Shows `text` to the person.
    fn show(self, text: &str) {
        match self {
            Terminal::Std => crate::out::eprint(text),
            Terminal::DevTty => {
                if let Ok(mut tty) = std::fs::OpenOptions::new().write(true).open("/dev/tty") {
                    let _ = tty.write_all(text.as_bytes()).and_then(|()| tty.flush());
                }
            }
        }
    }

    /// The screen's width in columns (80 when the terminal does not say).
    fn width(self) -> usize {
        let size = match self {
            Terminal::Std => rustix::termios::tcgetwinsize(std::io::stderr()).ok(),
            Terminal::DevTty => File::open("/dev/tty")
                .ok()
                .and_then(|tty| rustix::termios::tcgetwinsize(tty).ok()),
        };
        match size {
            Some(size) if size.ws_col > 0 => usize::from(size.ws_col),
            _ => 80,
        }
    }

    /// Reads one line on a thread of its own (a blocked read must never hold up cancellation);
    /// `None` at end of input or on a read error.
    fn read_line(self) -> tokio::sync::oneshot::Receiver<Option<String>> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let spawned = std::thread::Builder::new()
            .name("cheng-prompt".into())
            .spawn(move || {
                let line = match self {
                    Terminal::Std => read_line_from(std::io::stdin()),
                    Terminal::DevTty => File::open("/dev/tty").ok().and_then(read_line_from),
                };
                let _ = tx.send(line);
            });
        // Without a thread nobody can answer: the dropped sender reads as end of input.
        drop(spawned);
        rx
    }
}

/// Bytes up to a newline (byte by byte: nothing after the answer is consumed from a shared
/// stdin); `None` at end of input before any byte.
fn read_line_from(mut source: impl Read) -> Option<String> {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        match source.read(&mut byte) {
            Ok(0) => {
                return (!line.is_empty()).then(|| String::from_utf8_lossy(&line).into_owned())
            }
            Ok(_) if byte[0] == b'\n' => return Some(String::from_utf8_lossy(&line).into_owned()),
            Ok(_) => line.push(byte[0]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
}

const QUESTION: &str =
    "Approve? [y]es / [n]o / [a]ll remaining in this run / [q]uit the run (Ctrl-C cancels): ";

/// What a typed line means.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    Yes,
    No,
    All,
    Quit,
    Unclear,
}

fn parse_answer(line: &str) -> Answer {
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Answer::Yes,
        "" | "n" | "no" => Answer::No,
        "a" | "all" => Answer::All,
        "q" | "quit" => Answer::Quit,
        _ => Answer::Unclear,
    }
}

/// `--approve` / `--deny`: a fixed answer, logged on stderr (unless `--quiet`) so a transcript
/// shows what ran.
struct Flag {
    decision: Decision,
    quiet: bool,
}

#[async_trait]
impl Approver for Flag {
    async fn decide(&self, request: &ApprovalRequest) -> Decision {
        if !self.quiet {
            let verb = if self.decision == Decision::Approved {
                "approved (--approve)"
            } else {
                "denied (--deny)"
            };
            let shown = ShownRequest::from(request);
            errln!(
                "cheng: {verb}: {}: {}",
                shown.node_label(),
                shown.command.joined()
            );
        }
        self.decision
    }
}

/// Without a terminal and without a flag nobody can be asked: deny, and say how to approve.
struct NoTerminal;

#[async_trait]
impl Approver for NoTerminal {
    async fn decide(&self, request: &ApprovalRequest) -> Decision {
        let shown = ShownRequest::from(request);
        let asks: Vec<&str> = shown.capabilities.iter().map(|c| c.name.as_str()).collect();
        let with = if asks.is_empty() {
            String::new()
        } else {
            format!(" with {}", asks.join(", "))
        };
        errln!(
            "cheng: denied: {} needs approval to run `{}`{with}, but there is no terminal to ask on; \
             pass --approve to approve it (or --deny to deny without this message)",
            shown.node_label(),
            shown.command.joined()
        );
        Decision::Denied
    }
}

/// Who asks next: requests waiting (graph index, arrival), and whether a card is on screen.
#[derive(Default)]
struct Turns {
    waiting: BTreeSet<(usize, u64)>,
    asking: bool,
}

/// Shows the card and reads the answer on the terminal; one prompt at a time, in graph order.
struct Prompt {
    terminal: Terminal,
    cancel: CancellationToken,
    order: HashMap<String, usize>,
    /// `a` was answered: approve every remaining request.
    all: AtomicBool,
    turns: Mutex<Turns>,
    changed: tokio::sync::Notify,
    seq: AtomicU64,
}

/// Nodes that become ready together reach their approval within a moment of each other; the
/// prompt waits this long before asking so that it can ask them in the graph's order.
const GATHER: Duration = Duration::from_millis(50);

impl Prompt {
    fn with_turns<T>(&self, f: impl FnOnce(&mut Turns) -> T) -> T {
        let mut turns = match self.turns.lock() {
            Ok(turns) => turns,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut turns)
    }

    /// Waits until `key` is the first waiting request and no card is on screen.
    async fn take_turn(&self, key: (usize, u64)) {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let mine = self.with_turns(|t| {
                let first = !t.asking && t.waiting.first() == Some(&key);
                if first {
                    t.asking = true;
                    t.waiting.remove(&key);
                }
                first
            });
            if mine {
                return;
            }
            tokio::select! {
                () = notified => {}
                () = self.cancel.cancelled() => return,
            }
        }
    }

    fn end_turn(&self) {
        self.with_turns(|t| t.asking = false);
        self.changed.notify_waiters();
    }

    async fn ask(&self, request: &ApprovalRequest) -> Decision {
        let card = display::fit(&card(&request.into()), self.terminal.width(), VALUE_INDENT);
        self.terminal.show(&format!("\n{card}{QUESTION}"));
        loop {
            let line = tokio::select! {
                line = self.terminal.read_line() => line.ok().flatten(),
                () = self.cancel.cancelled() => {
                    self.terminal.show("\n");
                    return Decision::Denied;
                }
            };
            let Some(line) = line else {
                self.terminal.show("\n(end of input: denied)\n");
                return Decision::Denied;
            };
            match parse_answer(&line) {
                Answer::Yes => return Decision::Approved,
                Answer::No => return Decision::Denied,
                Answer::All => {
                    self.all.store(true, Ordering::SeqCst);
                    return Decision::Approved;
                }
                Answer::Quit => {
                    self.cancel.cancel();
                    return Decision::Denied;
                }
                Answer::Unclear => self.terminal.show("Please answer y, n, a or q: "),
            }
        }
    }
}

#[async_trait]
impl Approver for Prompt {
    async fn decide(&self, request: &ApprovalRequest) -> Decision {
        if self.cancel.is_cancelled() {
            return Decision::Denied;
        }
        let index = self
            .order
            .get(&request.node_id)
            .copied()
            .unwrap_or(usize::MAX);
        let key = (index, self.seq.fetch_add(1, Ordering::SeqCst));
        self.with_turns(|t| t.waiting.insert(key));
        tokio::select! {
            () = tokio::time::sleep(GATHER) => {}
            () = self.cancel.cancelled() => {}
        }
        self.take_turn(key).await;
        if self.cancel.is_cancelled() {
            self.with_turns(|t| t.waiting.remove(&key));
            self.changed.notify_waiters();
            return Decision::Denied;
        }
        let decision = if self.all.load(Ordering::SeqCst) {
            let shown = ShownRequest::from(request);
            self.terminal.show(&format!(
                "cheng: approved (all remaining): {}: {}\n",
                shown.node_label(),
                shown.command.joined()
            ));
            Decision::Approved
        } else {
            self.ask(request).await
        };
        self.end_turn();
        decision
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(node_id: &str) -> ApprovalRequest {
        ApprovalRequest {
            node_id: node_id.into(),
            node_type: "tools/workspace_shell".into(),
            command_display: "cargo test".into(),
            cwd: "sub".into(),
            workspace: "/ws".into(),
            purpose: Some("run the tests".into()),
            requested_paths: vec!["/etc/hosts".into()],
            path_identities: Vec::new(),
            requested_hosts: vec!["pypi.org:443".into()],
            capabilities: vec![cheng_node::CapabilityRequest {
                name: "allow_network".into(),
                opens: "the network".into(),
            }],
            details: None,
            basis: None,
        }
    }

    #[test]
    fn card_shows_everything_a_person_decides_on() {
        let text = card(&(&request("build")).into());
        for part in [
            "build (tools/workspace_shell)",
            "cargo test",
            "/ws",
            "sub (in the workspace)",
            "run the tests",
            "/etc/hosts",
            "reach:    pypi.org:443",
            "allow_network: the network",
        ] {
            assert!(text.contains(part), "{part} missing from {text}");
        }
    }

    #[test]
    fn no_value_can_move_the_cursor_or_pose_as_a_field() {
        let forged = "\u{1b}[3A\r\u{1b}[2K  command:  ls -la\n  command:  ls\u{202e}\u{200b}";
        let mut evil = request(forged);
        evil.command_display = format!("sh -c {forged}");
        evil.cwd = forged.into();
        evil.workspace = forged.into();
        evil.purpose = Some(forged.into());
        evil.requested_paths = vec![forged.into()];
        evil.requested_hosts = vec![forged.into()];
        evil.capabilities[0].opens = forged.into();
        evil.details = Some(format!("+{forged}\n-{forged}"));
        let text = card(&(&evil).into());
        assert!(
            !text
                .chars()
                .any(|c| c != '\n' && cheng_node::display::is_hidden(c)),
            "{text:?}"
        );
        // Every line is one of the card's own: a label, a continuation or a details line.
        let labels = [
            "approval needed",
            "  node:     ",
            "  command:  ",
            "  workspace: ",
            "  cwd:      ",
            "  purpose:  ",
            "  path:     ",
            "  reach:    ",
            "  allows:   ",
            "  | ",
        ];
        let continuation = format!("{VALUE_INDENT}| ");
        for line in text.lines() {
            assert!(
                labels.iter().any(|l| line.starts_with(l)) || line.starts_with(&continuation),
                "{line:?} in\n{text}"
            );
        }
        assert_eq!(text.matches("\n  command:  ").count(), 1, "{text}");
        assert!(text.contains("  purpose:  \\u{1b}[3A\\u{d}\\u{1b}[2K  command:  ls -la\n"));
        assert!(text.contains(&format!(
            "\n{continuation}  command:  ls\\u{{202e}}\\u{{200b}}\n"
        )));
    }

    #[test]
    fn a_node_named_after_its_type_is_named_once() {
        let text = card(&(&request("tools/workspace_shell")).into());
        assert_eq!(text.matches("tools/workspace_shell").count(), 1, "{text}");
    }

    #[test]
    fn answers() {
        assert_eq!(parse_answer("y\n"), Answer::Yes);
        assert_eq!(parse_answer(" YES "), Answer::Yes);
        assert_eq!(parse_answer(""), Answer::No);
        assert_eq!(parse_answer("n"), Answer::No);
        assert_eq!(parse_answer("a"), Answer::All);
        assert_eq!(parse_answer("q"), Answer::Quit);
        assert_eq!(parse_answer("\u{3}"), Answer::Unclear);
    }

    #[test]
    fn lines_are_read_up_to_the_newline_only() {
        let mut source: &[u8] = b"y\nrest";
        assert_eq!(read_line_from(&mut source).as_deref(), Some("y"));
        assert_eq!(source, b"rest");
        assert_eq!(read_line_from(&b""[..]), None);
    }
}
