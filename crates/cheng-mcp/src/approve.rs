//! Approvals through the client.
//!
//! - Handshake era: [`ElicitingApprover`] turns each approval card into a server-initiated
//!   `elicitation/create` when the client declared the elicitation capability, else answers with
//!   the server's `--approve` / `--deny` decision (default deny).
//! - Stateless era (2026-07-28): nothing can be asked mid-call, so a call that needs approval
//!   returns `input_required` with one elicitation for the run and one for each host read path
//!   and each capability it asks for ([`approval_items`]), all in one round, and a sealed
//!   `requestState`
//!   ([`Sealer`]); the retry runs with [`SealedApprover`], which approves exactly the sealed cards.
//!   A sealed state is single-use: [`Sealer::open`] spends its nonce ([`crate::nonces`]), so every
//!   transport that opens one gets the same guarantee.

use crate::nonces::{SpentNonces, Unspendable};
use cheng_node::display::{Shown, ShownRequest, CONTINUATION};
use cheng_node::{async_trait, ApprovalRequest, Approver, Decision, Values};
use rmcp::model::{
    ElicitRequestParams, ElicitationAction, RequestStateCodec, RequestStateError, SealOptions,
};
use rmcp::service::{Peer, RoleServer};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long a sealed `requestState` stays valid.
pub const STATE_TTL: Duration = Duration::from_secs(10 * 60);

/// Where a value's continuation lines start in a message (behind
/// [`cheng_node::display::CONTINUATION`]): indented, so none of them can pose as a line of the
/// message.
const VALUE_INDENT: &str = "  ";

/// The elicitation message a person reads: node, command, cwd, purpose, requested paths. Built
/// from the card's shown form: every value went through the display escaper.
pub fn card_text(card: &ApprovalRequest) -> String {
    let card = ShownRequest::from(card);
    let mut text = format!(
        "Approve running {} (tool `{}`)?\nCommand: {}\nWorkspace: {}\nIn: {} (in the workspace)",
        card.node_type,
        card.node_id,
        card.command.indented(VALUE_INDENT),
        card.workspace,
        card.cwd
    );
    if let Some(purpose) = card.purpose.as_ref().filter(|p| !p.is_blank()) {
        text.push_str(&format!("\nPurpose: {}", purpose.indented(VALUE_INDENT)));
    }
    if !card.requested_paths.is_empty() {
        let paths: Vec<&str> = card.requested_paths.iter().map(Shown::as_str).collect();
        text.push_str(&format!("\nRequested read paths: {}", paths.join(", ")));
    }
    if !card.requested_hosts.is_empty() {
        let hosts: Vec<&str> = card.requested_hosts.iter().map(Shown::as_str).collect();
        text.push_str(&format!("\nRequested hosts: {}", hosts.join(", ")));
    }
    for capability in &card.capabilities {
        text.push_str(&format!(
            "\nRequested capability: {} (opens {})",
            capability.name, capability.opens
        ));
    }
    if let Some(details) = &card.details {
        for line in details.lines() {
            text.push_str(&format!("\n{VALUE_INDENT}{CONTINUATION}{line}"));
        }
    }
    text.push_str("\nAccept to run it once; decline or cancel and nothing runs.");
    text
}

/// `elicitation/create` params for `card`: a form with no fields (the answer is the action).
pub fn elicitation_params(card: &ApprovalRequest) -> Result<ElicitRequestParams, String> {
    form(card_text(card))
}

/// An `elicitation/create` form with no fields asking `message`.
fn form(message: String) -> Result<ElicitRequestParams, String> {
    serde_json::from_value(json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {"type": "object", "properties": {}},
    }))
    .map_err(|e| format!("cannot build the approval request: {e}"))
}

/// The stateless era's questions for one card, each asked as its own input request in the same
/// round: the run itself (`""`), then each host read path (`-read-N`), each requested host
/// (`-host-N`) and each capability (`-capability-NAME`). All must be accepted for anything to run. Returns (key suffix, what is
/// asked in a few words, the elicitation).
pub fn approval_items(
    card: &ApprovalRequest,
) -> Result<Vec<(String, String, ElicitRequestParams)>, String> {
    let mut run = card.clone();
    run.requested_paths.clear();
    run.requested_hosts.clear();
    run.capabilities.clear();
    let mut message = card_text(&run);
    let (paths, hosts, capabilities) = (
        card.requested_paths.len(),
        card.requested_hosts.len(),
        card.capabilities.len(),
    );
    let separate: Vec<String> = [
        (paths > 0).then(|| {
            format!(
                "{paths} host read path{}",
                if paths == 1 { "" } else { "s" }
            )
        }),
        (hosts > 0).then(|| format!("{hosts} host{} to reach", if hosts == 1 { "" } else { "s" })),
        (capabilities > 0).then(|| {
            format!(
                "{capabilities} {}",
                if capabilities == 1 {
                    "capability"
                } else {
                    "capabilities"
                }
            )
        }),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !separate.is_empty() {
        // Before the closing "Accept to run it once" line.
        let at = message.rfind('\n').unwrap_or(message.len());
        message.insert_str(
            at,
            &format!("\nAsked separately in the same round: {}; every one must be accepted for the call to run.", separate.join(" and ")),
        );
    }
    // What the items say, escaped; the keys stay raw (they are matched, not read).
    let shown = ShownRequest::from(card);
    let command = shown.command.indented(VALUE_INDENT);
    let mut items = vec![(
        String::new(),
        format!("running {}", shown.command.joined()),
        form(message)?,
    )];
    for (n, path) in shown.requested_paths.iter().enumerate() {
        let message = format!(
            "Allow tool `{}` ({}) to read {path} on the host, read-only, inside its sandbox, for this call?\nCommand: {command}\nAccept to allow it; decline or cancel and nothing runs.",
            shown.node_id, shown.node_type
        );
        items.push((
            format!("-read-{}", n + 1),
            format!("reading {path}"),
            form(message)?,
        ));
    }
    for (n, host) in shown.requested_hosts.iter().enumerate() {
        let message = format!(
            "Allow tool `{}` ({}) to reach {host} through its sandbox's filtering proxy, for this call? The operator's network rules still apply.\nCommand: {command}\nAccept to allow it; decline or cancel and nothing runs.",
            shown.node_id, shown.node_type
        );
        items.push((
            format!("-host-{}", n + 1),
            format!("reaching {host}"),
            form(message)?,
        ));
    }
    for (capability, raw) in shown.capabilities.iter().zip(&card.capabilities) {
        let message = format!(
            "Allow tool `{}` ({}) the capability {} for this call? It opens {}.\nCommand: {command}\nAccept to allow it; decline or cancel and nothing runs.",
            shown.node_id, shown.node_type, capability.name, capability.opens
        );
        items.push((
            format!("-capability-{}", raw.name),
            format!("the capability {}", capability.name),
            form(message)?,
        ));
    }
    Ok(items)
}

/// Shared record of why approvals went the way they did, for the tool result's text.
#[derive(Default, Clone)]
pub struct Notes(Arc<Mutex<Vec<String>>>);

impl Notes {
    pub fn push(&self, note: String) {
        if let Ok(mut notes) = self.0.lock() {
            notes.push(note);
        }
    }

    pub fn take(&self) -> Vec<String> {
        self.0
            .lock()
            .map(|mut n| std::mem::take(&mut *n))
            .unwrap_or_default()
    }
}

/// Handshake era: ask the person through the client, or apply the server's fixed decision.
pub struct ElicitingApprover {
    pub peer: Peer<RoleServer>,
    /// Whether the client declared the elicitation capability.
    pub can_elicit: bool,
    /// `--approve` / `--deny` for clients that cannot ask.
    pub fallback: Decision,
    pub notes: Notes,
}

#[async_trait]
impl Approver for ElicitingApprover {
    async fn decide(&self, card: &ApprovalRequest) -> Decision {
        if !self.can_elicit {
            return match self.fallback {
                Decision::Approved => Decision::Approved,
                Decision::Denied => {
                    self.notes.push(NO_ELICITATION.to_string());
                    Decision::Denied
                }
            };
        }
        let params = match elicitation_params(card) {
            Ok(params) => params,
            Err(e) => {
                self.notes.push(e);
                return Decision::Denied;
            }
        };
        match self.peer.create_elicitation(params).await {
            Ok(result) => match result.action {
                ElicitationAction::Accept => Decision::Approved,
                ElicitationAction::Decline => {
                    self.notes.push(format!(
                        "A person declined: {}; nothing ran.",
                        cheng_node::display::line(&card.command_display)
                    ));
                    Decision::Denied
                }
                _ => {
                    self.notes.push(format!(
                        "A person cancelled the approval of {}; nothing ran.",
                        cheng_node::display::line(&card.command_display)
                    ));
                    Decision::Denied
                }
            },
            Err(e) => {
                self.notes.push(format!(
                    "The approval request could not be shown ({e}); nothing ran."
                ));
                Decision::Denied
            }
        }
    }
}

/// Why a call was denied for a client that cannot ask a person.
pub const NO_ELICITATION: &str = "Denied: this call needs a person's approval, but the client did not declare the \
elicitation capability, so nobody could be asked, and the server runs with --deny (the default). A person has \
to allow it: use a client that supports elicitation, or start the server with --approve.";

/// The stateless era's retry: approves exactly the cards that were sealed (and accepted);
/// records any other card the node asks for, and denies it.
pub struct SealedApprover {
    pub approved: Vec<ApprovalRequest>,
    pub unasked: Mutex<Vec<ApprovalRequest>>,
}

#[async_trait]
impl Approver for SealedApprover {
    async fn decide(&self, card: &ApprovalRequest) -> Decision {
        let wanted = json!(card);
        if self.approved.iter().any(|a| json!(a) == wanted) {
            return Decision::Approved;
        }
        if let Ok(mut unasked) = self.unasked.lock() {
            if !unasked.iter().any(|a| json!(a) == wanted) {
                unasked.push(card.clone());
            }
        }
        Decision::Denied
    }
}

/// What a sealed `requestState` holds: the cards a person is asked to approve, and what makes it
/// single-use (a nonce this sealer never issues twice, and when it stops opening).
#[derive(Serialize, Deserialize)]
pub struct State {
    pub tool: String,
    pub items: Vec<Card>,
    pub nonce: u64,
    /// Unix milliseconds; the spent nonce is remembered until then.
    pub expires_ms: i64,
}

/// An [`ApprovalRequest`] in a form that round-trips through the sealed state.
#[derive(Serialize, Deserialize, Clone, PartialEq)]
pub struct Card {
    pub node_id: String,
    pub node_type: String,
    pub command_display: String,
    pub cwd: String,
    #[serde(default)]
    pub workspace: String,
    pub purpose: Option<String>,
    #[serde(default)]
    pub requested_paths: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requested_hosts: Vec<String>,
    #[serde(default)]
    pub capabilities: Vec<cheng_node::CapabilityRequest>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub basis: Option<String>,
}

impl From<&ApprovalRequest> for Card {
    fn from(r: &ApprovalRequest) -> Self {
        Card {
            node_id: r.node_id.clone(),
            node_type: r.node_type.clone(),
            command_display: r.command_display.clone(),
            cwd: r.cwd.clone(),
            workspace: r.workspace.clone(),
            purpose: r.purpose.clone(),
            requested_paths: r.requested_paths.clone(),
            requested_hosts: r.requested_hosts.clone(),
            capabilities: r.capabilities.clone(),
            details: r.details.clone(),
            basis: r.basis.clone(),
        }
    }
}

impl From<&Card> for ApprovalRequest {
    fn from(c: &Card) -> Self {
        ApprovalRequest {
            node_id: c.node_id.clone(),
            node_type: c.node_type.clone(),
            command_display: c.command_display.clone(),
            cwd: c.cwd.clone(),
            workspace: c.workspace.clone(),
            purpose: c.purpose.clone(),
            requested_paths: c.requested_paths.clone(),
            path_identities: Vec::new(),
            requested_hosts: c.requested_hosts.clone(),
            capabilities: c.capabilities.clone(),
            details: c.details.clone(),
            basis: c.basis.clone(),
        }
    }
}

/// Seals and opens `requestState`: HMAC-SHA256 under a random per-process key, over the state
/// (tool name, approval items, nonce, expiry) with the tool name and the canonical arguments as
/// associated data, and an expiry. Opening spends the nonce: a state opens once. The key and the
/// spent nonces live and die together, so a state from before a restart does not open at all.
pub struct Sealer {
    codec: RequestStateCodec,
    next_nonce: AtomicU64,
    spent: Mutex<SpentNonces>,
}

/// Why an echoed `requestState` was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    Expired,
    Mismatch,
    /// The state opened before: its approval was already used.
    AlreadyUsed,
    /// Too many approvals were used within one state lifetime to remember another.
    TooManyInUse,
}

impl Sealer {
    /// A sealer with a fresh random key.
    pub fn new() -> Result<Sealer, String> {
        let key = random_key()?;
        let codec = RequestStateCodec::try_new(key.to_vec())
            .map_err(|e| format!("cannot set up request-state sealing: {e}"))?;
        Ok(Sealer {
            codec,
            next_nonce: AtomicU64::new(0),
            spent: Mutex::new(SpentNonces::default()),
        })
    }

    pub fn seal(
        &self,
        tool: &str,
        arguments: &Values,
        items: &[Card],
        ttl: Duration,
    ) -> Result<String, String> {
        let ttl_ms = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
        let state = State {
            tool: tool.to_string(),
            items: items.to_vec(),
            nonce: self.next_nonce.fetch_add(1, Ordering::Relaxed),
            expires_ms: now_ms().saturating_add(ttl_ms),
        };
        let bound = associated_data(tool, arguments);
        self.codec
            .seal_json_with(&state, &SealOptions::new().associated_data(&bound).ttl(ttl))
            .map_err(|e| format!("cannot seal the request state: {e}"))
    }

    /// Opens a state sealed by this sealer for `tool` and `arguments`, and spends it: the same
    /// state never opens again.
    pub fn open(&self, sealed: &str, tool: &str, arguments: &Values) -> Result<State, Refusal> {
        let bound = associated_data(tool, arguments);
        let state = match self.codec.open_json_with::<State>(sealed, &bound) {
            Ok(state) if state.tool == tool => state,
            Ok(_) => return Err(Refusal::Mismatch),
            Err(RequestStateError::Expired) => return Err(Refusal::Expired),
            Err(_) => return Err(Refusal::Mismatch),
        };
        // The nonce is remembered exactly as long as this check lets the state open.
        let now = now_ms();
        if now > state.expires_ms {
            return Err(Refusal::Expired);
        }
        // A panic elsewhere cannot leave the memory half-updated (spend changes it last).
        let mut spent = self.spent.lock().unwrap_or_else(|p| p.into_inner());
        match spent.spend(state.nonce, state.expires_ms, now) {
            Ok(()) => Ok(state),
            Err(Unspendable::AlreadySpent) => Err(Refusal::AlreadyUsed),
            Err(Unspendable::Full) => Err(Refusal::TooManyInUse),
        }
    }
}

/// `tool NUL sha256(canonical arguments)`.
fn associated_data(tool: &str, arguments: &Values) -> Vec<u8> {
    let mut bound = tool.as_bytes().to_vec();
    bound.push(0);
    bound.extend_from_slice(&Sha256::digest(
        canonical(&Value::Object(arguments.clone())).as_bytes(),
    ));
    bound
}

/// JSON with object keys sorted at every level: equal values, equal text.
pub fn canonical(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                Value::Object(
                    keys.into_iter()
                        .map(|k| (k.clone(), sorted(&map[k])))
                        .collect(),
                )
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(value).to_string()
}

/// The wall clock in unix milliseconds (the clock the sealed expiry is written in).
fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// 32 bytes from the kernel's random source.
pub fn random_key() -> Result<[u8; 32], String> {
    use std::io::Read;
    let mut key = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut key))
        .map_err(|e| format!("cannot read a signing key from /dev/urandom: {e}"))?;
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: Value) -> Values {
        v.as_object().cloned().unwrap_or_default()
    }

    fn card() -> Card {
        Card {
            node_id: "shell".into(),
            node_type: "tools/workspace_shell".into(),
            command_display: "rm -rf build".into(),
            cwd: ".".into(),
            workspace: "/w".into(),
            purpose: None,
            requested_paths: vec![],
            requested_hosts: vec![],
            capabilities: vec![],
            details: None,
            basis: None,
        }
    }

    #[test]
    fn a_sealed_state_opens_only_for_the_same_tool_and_arguments() {
        let sealer = Sealer::new().unwrap();
        let a = args(json!({"command": "rm", "args": ["-rf", "build"]}));
        let sealed = sealer.seal("shell", &a, &[card()], STATE_TTL).unwrap();
        // Key order does not matter: the arguments are compared canonically.
        let reordered = args(json!({"args": ["-rf", "build"], "command": "rm"}));
        assert!(sealer.open(&sealed, "shell", &reordered).is_ok());
        let other = args(json!({"command": "rm", "args": ["-rf", "/"]}));
        assert_eq!(
            sealer.open(&sealed, "shell", &other).err(),
            Some(Refusal::Mismatch)
        );
        assert_eq!(
            sealer.open(&sealed, "git", &a).err(),
            Some(Refusal::Mismatch)
        );
    }

    #[test]
    fn an_altered_state_is_refused() {
        let sealer = Sealer::new().unwrap();
        let a = args(json!({"command": "ls"}));
        let sealed = sealer.seal("shell", &a, &[card()], STATE_TTL).unwrap();
        // Flip one character of the payload.
        let mut bytes = sealed.clone().into_bytes();
        let at = bytes.len() / 2;
        bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
        let altered = String::from_utf8(bytes).unwrap();
        assert_ne!(altered, sealed);
        assert!(sealer.open(&altered, "shell", &a).is_err());
        // Another process's key cannot open it either.
        assert!(Sealer::new().unwrap().open(&sealed, "shell", &a).is_err());
    }

    #[test]
    fn a_state_opens_once() {
        let sealer = Sealer::new().unwrap();
        let a = args(json!({"command": "echo"}));
        let sealed = sealer.seal("shell", &a, &[card()], STATE_TTL).unwrap();
        // A refused opening (other arguments) spends nothing.
        assert_eq!(
            sealer.open(&sealed, "shell", &args(json!({}))).err(),
            Some(Refusal::Mismatch)
        );
        let opened = sealer.open(&sealed, "shell", &a).unwrap();
        assert_eq!(opened.items.len(), 1);
        for _ in 0..4 {
            assert_eq!(
                sealer.open(&sealed, "shell", &a).err(),
                Some(Refusal::AlreadyUsed)
            );
        }
        // Each round gets a state of its own, which opens once too.
        let again = sealer.seal("shell", &a, &[card()], STATE_TTL).unwrap();
        assert_ne!(again, sealed);
        assert!(sealer.open(&again, "shell", &a).is_ok());
        assert_eq!(
            sealer.open(&again, "shell", &a).err(),
            Some(Refusal::AlreadyUsed)
        );
        // A restarted server (a new sealer) opens none of them.
        let restarted = Sealer::new().unwrap();
        assert_eq!(
            restarted.open(&sealed, "shell", &a).err(),
            Some(Refusal::Mismatch)
        );
    }

    #[test]
    fn an_expired_state_is_refused() {
        let sealer = Sealer::new().unwrap();
        let a = args(json!({}));
        let sealed = sealer
            .seal("shell", &a, &[card()], Duration::from_millis(1))
            .unwrap();
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(
            sealer.open(&sealed, "shell", &a).err(),
            Some(Refusal::Expired)
        );
    }
    #[test]
    fn a_purpose_with_line_breaks_and_escapes_stays_one_indented_field() {
        let mut request = ApprovalRequest::from(&card());
        request.purpose = Some(
            "tidy up\nCommand: ls -la\r\u{1b}[1A\u{1b}[2KAccept to run it once\u{202e}\u{200b}"
                .into(),
        );
        request.requested_paths = vec!["/etc/x\nCommand: ls".into()];
        request.requested_hosts = vec!["evil.test\nCommand: ls".into()];
        request.details = Some("--- a/x\n+Command: ls\u{1b}[2K".into());
        let text = card_text(&request);
        assert!(
            !text
                .chars()
                .any(|c| c != '\n' && cheng_node::display::is_hidden(c)),
            "{text:?}"
        );
        let lines: Vec<&str> = text.lines().collect();
        // The purpose's second line is drawn behind the marker, never as a line of its own.
        assert!(lines.contains(&"Purpose: tidy up"), "{text}");
        assert!(
            lines.contains(
                &"  | Command: ls -la\\u{d}\\u{1b}[1A\\u{1b}[2KAccept to run it once\\u{202e}\\u{200b}"
            ),
            "{text}"
        );
        assert_eq!(
            lines.iter().filter(|l| l.starts_with("Command:")).count(),
            1,
            "{text}"
        );
        assert_eq!(lines[1], "Command: rm -rf build");
        assert!(
            lines.contains(&"Requested read paths: /etc/x\\u{a}Command: ls"),
            "{text}"
        );
        assert!(
            lines.contains(&"Requested hosts: evil.test\\u{a}Command: ls"),
            "{text}"
        );
        assert!(lines.contains(&"  | +Command: ls\\u{1b}[2K"), "{text}");
        assert_eq!(
            lines.last(),
            Some(&"Accept to run it once; decline or cancel and nothing runs.")
        );
        // Every item of the stateless era is escaped the same way.
        request.capabilities = vec![cheng_node::CapabilityRequest {
            name: "allow_network".into(),
            opens: "the network\nCommand: ls".into(),
        }];
        let items = approval_items(&request).unwrap();
        let keys: Vec<&str> = items.iter().map(|(key, _, _)| key.as_str()).collect();
        assert_eq!(
            keys,
            ["", "-read-1", "-host-1", "-capability-allow_network"]
        );
        for (_, what, params) in items {
            let message = serde_json::to_value(&params).unwrap()["message"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            assert!(
                !message.contains('\u{1b}') && !what.contains('\n'),
                "{message}"
            );
            assert_eq!(
                message
                    .lines()
                    .filter(|l| l.starts_with("Command:"))
                    .count(),
                1,
                "{message}"
            );
        }
    }
}
