//! The `Node` trait and what a node receives when it runs.

use crate::capability::Capability;
use crate::policy::Policy;
use crate::{NodeError, NodeSpec};
use async_trait::async_trait;
use serde::Serialize;
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// A node's (validated, defaulted) input, or its output object.
pub type Values = Map<String, Value>;

/// A node type. Implementations are stateless; everything per-run comes through `RunContext`.
#[async_trait]
pub trait Node: Send + Sync + 'static {
    fn spec(&self) -> &'static NodeSpec;

    /// The description a model reads for this node under the author's `config` (tools/list, a
    /// toolkit's functions, `cheng nodes --json`). Computed once when a toolkit is built, so it
    /// stays stable for the toolkit's life; most nodes have one fixed description.
    fn description_for(&self, config: &Values) -> String {
        let _ = config;
        self.spec().description.to_string()
    }

    /// What a person must approve before `run`, for inputs the spec's `effects` gate.
    ///
    /// The engine calls this only when `spec().effects.requires_approval(input)`, asks the
    /// approver, and calls `run` only after an approval. Validation errors found here are
    /// reported without asking anybody.
    fn approval_request(
        &self,
        ctx: &RunContext,
        input: &Values,
    ) -> Result<ApprovalRequest, NodeError> {
        let _ = input;
        Ok(ApprovalRequest::new(ctx, self.spec().title.to_string()))
    }

    async fn run(&self, ctx: &RunContext, input: Values) -> Result<Values, NodeError>;
}

/// What a person sees on the approval card.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ApprovalRequest {
    pub node_id: String,
    pub node_type: String,
    pub command_display: String,
    /// The working directory relative to the workspace (`.` for its root), on every card.
    pub cwd: String,
    /// The workspace root, named once (absolute host path).
    pub workspace: String,
    pub purpose: Option<String>,
    /// Host paths the run asks to read outside the sandbox.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub requested_paths: Vec<String>,
    /// Which file each of `requested_paths` named when the card was made, where that could be
    /// read. Not shown: an approval of the card covers a later request for the same path only
    /// while the path still names that file (a directory renamed into its place does not).
    #[serde(skip)]
    pub path_identities: Vec<PathIdentity>,
    /// Hosts the run asks to reach beyond what its author allowed (host rules, as written).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub requested_hosts: Vec<String>,
    /// Capability switches the run requests that the author left on "ask" (one card for all).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub capabilities: Vec<CapabilityRequest>,
    /// What exactly would change, for nodes that change files: a bounded unified diff, paths and
    /// byte counts (shown below the card's other lines).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<String>,
    /// What the card was computed from, for nodes that change files: one line per file it read
    /// (path and content tag). The engine takes the workspace lock only after the card is
    /// decided and hands the approved card to `run` ([`RunContext::approved_card`]), which
    /// checks under the lock that the files are still what the card showed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub basis: Option<String>,
}

/// The file a requested path named (device and inode) when a card or request was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathIdentity {
    pub path: String,
    pub dev: u64,
    pub ino: u64,
}

/// One capability on an approval card: the switch and what approving it opens.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct CapabilityRequest {
    pub name: String,
    pub opens: String,
}

impl ApprovalRequest {
    pub fn new(ctx: &RunContext, command_display: String) -> Self {
        ApprovalRequest {
            node_id: ctx.node_id.clone(),
            node_type: ctx.node_type.to_string(),
            command_display,
            cwd: ".".to_string(),
            workspace: ctx.workspace.display().to_string(),
            purpose: None,
            requested_paths: Vec::new(),
            path_identities: Vec::new(),
            requested_hosts: Vec::new(),
            capabilities: Vec::new(),
            details: None,
            basis: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Approved,
    Denied,
}

/// Decides approval requests: an interactive prompt, a fixed answer, or a remote client.
#[async_trait]
pub trait Approver: Send + Sync {
    async fn decide(&self, request: &ApprovalRequest) -> Decision;
}

/// An approver with a fixed answer (`--approve` / `--deny`, tests).
pub struct FixedApprover(pub Decision);

#[async_trait]
impl Approver for FixedApprover {
    async fn decide(&self, _request: &ApprovalRequest) -> Decision {
        self.0
    }
}

/// Everything a node gets besides its input.
#[derive(Clone)]
pub struct RunContext {
    /// The node's id in the graph (the node type for `cheng run`).
    pub node_id: String,
    pub node_type: &'static str,
    /// The canonical workspace root; the same value the engine injects as `sandbox_root`.
    pub workspace: PathBuf,
    /// Cancelled on Ctrl-C or a client cancel; nodes kill their children when it fires.
    pub cancel: CancellationToken,
    /// For approvals a node needs beyond the engine's one (e.g. each requested read path).
    pub approver: Arc<dyn Approver>,
    /// State shared with the other calls of this graph run, server connection or named session.
    pub scope: crate::Scope,
    /// Live output: where a node's processes pass their output chunks while they run (off
    /// unless somebody listens; see [`crate::output`]).
    pub output: crate::Output,
    /// The card a person approved for this run (`None` when none was asked): what `run` must
    /// stay true to ([`ApprovalRequest::basis`]).
    pub approved_card: Option<Arc<ApprovalRequest>>,
    /// The operator's effective policy this run is under: the one its engine was built with
    /// (what the CLI or server loaded). Nodes read it here, never from anywhere global.
    pub policy: Arc<Policy>,
}

impl RunContext {
    /// A context for tests and embedding: fixed approver, fresh cancellation token.
    pub fn for_workspace(node_type: &'static str, workspace: PathBuf, decision: Decision) -> Self {
        RunContext {
            node_id: node_type.to_string(),
            node_type,
            workspace,
            cancel: CancellationToken::new(),
            approver: Arc::new(FixedApprover(decision)),
            scope: crate::Scope::new(crate::ScopeKind::Call),
            output: crate::Output::off(),
            approved_card: None,
            policy: Arc::new(Policy::builtin()),
        }
    }

    /// The same context under another operator policy (tests and embedding).
    pub fn under(mut self, policy: Arc<Policy>) -> Self {
        self.policy = policy;
        self
    }

    /// The operator's effective policy for this run (`ctx.policy().read_paths(ctx.node_type)`).
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// `Ok` when the operator's policy allows `capability` for this node type outright, else
    /// `LOCAL_EXECUTOR_POLICY_DENIED` naming the capability and the policy key that would allow
    /// it. For a node that checks a capability itself; a port declaring one is checked by the
    /// engine before `run`.
    pub fn require_capability(&self, capability: &Capability) -> Result<(), NodeError> {
        let what = format!("{} uses {}", self.node_type, capability.name);
        crate::check::check_capability(&self.policy, self.node_type, &what, capability)
            .map_err(NodeError::policy_denied)
    }

    /// Asks the approver; `Err(APPROVAL_DENIED)` naming `what` unless approved.
    pub async fn require_approval(
        &self,
        request: &ApprovalRequest,
        what: &str,
    ) -> Result<(), NodeError> {
        match self.approver.decide(request).await {
            Decision::Approved => Ok(()),
            Decision::Denied => Err(NodeError::new(
                crate::ErrorKind::ApprovalDenied,
                format!("{what} was not approved; nothing ran"),
            )),
        }
    }
}
