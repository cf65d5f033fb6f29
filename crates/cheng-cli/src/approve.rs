//! Deciding approvals from the terminal: `--approve`, `--deny`, an interactive prompt on a TTY,
//! and denial (with a hint) when there is nobody to ask.

use crate::args::ApprovalArgs;
use cheng_node::{async_trait, ApprovalRequest, Approver, Decision};
use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;

/// The approver for these flags and this terminal.
pub fn approver(args: &ApprovalArgs) -> Arc<dyn Approver> {
    if args.approve {
        Arc::new(Flag(Decision::Approved))
    } else if args.deny {
        Arc::new(Flag(Decision::Denied))
    } else if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
        Arc::new(Prompt { one_at_a_time: tokio::sync::Mutex::new(()) })
    } else {
        Arc::new(NoTerminal)
    }
}

/// The card a person reads before deciding.
fn card(request: &ApprovalRequest) -> String {
    let mut text = format!(
        "approval needed\n  node:     {} ({})\n  command:  {}\n  workspace: {}\n  cwd:      {} (in the workspace)\n",
        request.node_id, request.node_type, request.command_display, request.workspace, request.cwd
    );
    if let Some(purpose) = &request.purpose {
        text.push_str(&format!("  purpose:  {purpose}\n"));
    }
    for path in &request.requested_paths {
        text.push_str(&format!("  path:     {path}\n"));
    }
    for capability in &request.capabilities {
        text.push_str(&format!("  allows:   {}: {}\n", capability.name, capability.opens));
    }
    text
}

/// `--approve` / `--deny`: a fixed answer, logged on stderr so a transcript shows what ran.
struct Flag(Decision);

#[async_trait]
impl Approver for Flag {
    async fn decide(&self, request: &ApprovalRequest) -> Decision {
        let verb = if self.0 == Decision::Approved { "approved (--approve)" } else { "denied (--deny)" };
        eprintln!("cheng: {verb}: {} ({}): {}", request.node_id, request.node_type, request.command_display);
        self.0
    }
}

/// Without a TTY and without a flag nobody can be asked: deny, and say how to approve.
struct NoTerminal;

#[async_trait]
impl Approver for NoTerminal {
    async fn decide(&self, request: &ApprovalRequest) -> Decision {
        let asks: Vec<&str> = request.capabilities.iter().map(|c| c.name.as_str()).collect();
        let with = if asks.is_empty() { String::new() } else { format!(" with {}", asks.join(", ")) };
        eprintln!(
            "cheng: denied: {} ({}) needs approval to run `{}`{with}, but there is no terminal to ask on; \
             pass --approve to approve it (or --deny to deny without this message)",
            request.node_id, request.node_type, request.command_display
        );
        Decision::Denied
    }
}

/// Shows the card on stderr and reads y/N from stdin; one prompt at a time.
struct Prompt {
    one_at_a_time: tokio::sync::Mutex<()>,
}

#[async_trait]
impl Approver for Prompt {
    async fn decide(&self, request: &ApprovalRequest) -> Decision {
        let _turn = self.one_at_a_time.lock().await;
        let text = card(request);
        let answer = tokio::task::spawn_blocking(move || {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\n{text}Approve? [y/N] ");
            let _ = err.flush();
            let mut line = String::new();
            std::io::stdin().lock().read_line(&mut line).map(|_| line)
        })
        .await;
        match answer {
            Ok(Ok(line)) if matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes") => Decision::Approved,
            _ => Decision::Denied,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn card_shows_everything_a_person_decides_on() {
        let request = ApprovalRequest {
            node_id: "build".into(),
            node_type: "tools/workspace_shell".into(),
            command_display: "cargo test".into(),
            cwd: "sub".into(),
            workspace: "/ws".into(),
            purpose: Some("run the tests".into()),
            requested_paths: vec!["/etc/hosts".into()],
            capabilities: vec![cheng_node::CapabilityRequest { name: "allow_network".into(), opens: "the network".into() }],
        };
        let text = card(&request);
        for part in ["build", "tools/workspace_shell", "cargo test", "/ws", "sub (in the workspace)", "run the tests", "/etc/hosts", "allow_network: the network"] {
            assert!(text.contains(part), "{part} missing from {text}");
        }
    }
}
