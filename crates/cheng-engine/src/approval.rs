//! The approver the engine hands to nodes: the caller's approver, plus events and cancellation.
//!
//! Both the engine's own approval (for inputs the spec gates) and a node's further approvals
//! (`ctx.require_approval`) pass through here, so every decision is visible as events. A run that
//! is cancelled while waiting for a person counts as denied: nothing runs without a decision.
//!
//! A run asks at most once before it starts: [`approval_card`] puts the node's own card (when its
//! effects gate the input), every capability left on "ask" that the input requests and the host
//! paths a sandboxed node asks to read on one card; once it is approved, [`Covered`] answers the
//! node's own per-path requests for those paths without asking again, as long as each path still
//! names the file the card was made from.

use crate::events::{now, Event, EventSink};
use cheng_node::{
    async_trait, ApprovalRequest, Approver, CancellationToken, CapabilityRequest, Decision,
    Effects, Node, NodeError, PathIdentity, PortSpec, RunContext, Values,
};
use std::sync::Arc;
use std::time::Instant;

pub(crate) struct RunApprover {
    pub inner: Arc<dyn Approver>,
    pub events: Arc<dyn EventSink>,
    pub cancel: CancellationToken,
}

#[async_trait]
impl Approver for RunApprover {
    async fn decide(&self, request: &ApprovalRequest) -> Decision {
        if self.events.enabled() {
            self.events.emit(Event::ApprovalRequested {
                ts: now(),
                node: request.node_id.clone(),
                node_type: request.node_type.clone(),
                request: Box::new(request.clone()),
            });
        }
        let asked = Instant::now();
        let decision = if self.cancel.is_cancelled() {
            Decision::Denied
        } else {
            tokio::select! {
                decision = self.inner.decide(request) => decision,
                () = self.cancel.cancelled() => Decision::Denied,
            }
        };
        if self.events.enabled() {
            self.events.emit(Event::ApprovalDecided {
                ts: now(),
                node: request.node_id.clone(),
                node_type: request.node_type.clone(),
                decision,
                duration_ms: u64::try_from(asked.elapsed().as_millis()).unwrap_or(u64::MAX),
            });
        }
        decision
    }
}

/// What approving a capability port opens, as its capability declares it.
pub(crate) fn opens(port: &PortSpec) -> &'static str {
    port.capability
        .map_or("a capability beyond the node's defaults", |c| c.opens)
}

/// The one card a run of `node` with `input` asks a person about before it starts, if any.
/// `asked`: the capability ports the input requests that are left on "ask"; each shows on the
/// card as its port name and what its capability opens.
pub(crate) fn approval_card(
    node: &dyn Node,
    ctx: &RunContext,
    input: &Values,
    asked: &[&'static PortSpec],
) -> Result<Option<ApprovalRequest>, NodeError> {
    let spec = node.spec();
    let gated = spec.effects.requires_approval(input);
    // Sandboxed nodes name the host paths they would read on their card.
    if !gated && asked.is_empty() && spec.effects != Effects::Sandboxed {
        return Ok(None);
    }
    let mut card = node.approval_request(ctx, input)?;
    card.capabilities = asked
        .iter()
        .map(|port| CapabilityRequest {
            name: port.name.to_string(),
            opens: opens(port).to_string(),
        })
        .collect();
    if !gated
        && card.capabilities.is_empty()
        && card.requested_paths.is_empty()
        && card.requested_hosts.is_empty()
    {
        return Ok(None);
    }
    Ok(Some(card))
}

/// The approver a node runs with after its card was approved: a request only about paths and
/// hosts that card listed, each path still naming the file it named on the card (where both
/// sides know it), is already decided; anything else is asked as usual.
pub(crate) struct Covered {
    pub inner: Arc<dyn Approver>,
    pub paths: Vec<String>,
    pub hosts: Vec<String>,
    /// What each path named when the card was made.
    pub identities: Vec<PathIdentity>,
}

impl Covered {
    /// Whether `path`, naming `now` (when the request says), is the file the card showed.
    fn same_file(&self, path: &str, request: &ApprovalRequest) -> bool {
        let now = request.path_identities.iter().find(|i| i.path == path);
        let then = self.identities.iter().find(|i| i.path == path);
        match (now, then) {
            (Some(now), Some(then)) => now == then,
            _ => true,
        }
    }
}

#[async_trait]
impl Approver for Covered {
    async fn decide(&self, request: &ApprovalRequest) -> Decision {
        let covered = !(request.requested_paths.is_empty() && request.requested_hosts.is_empty())
            && request.capabilities.is_empty()
            && request
                .requested_paths
                .iter()
                .all(|p| self.paths.contains(p) && self.same_file(p, request))
            && request
                .requested_hosts
                .iter()
                .all(|h| self.hosts.contains(h));
        if covered {
            return Decision::Approved;
        }
        self.inner.decide(request).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cheng_node::FixedApprover;

    fn request(path: &str, ino: Option<u64>) -> ApprovalRequest {
        let ctx = RunContext::for_workspace("tools/code_shell", "/ws".into(), Decision::Denied);
        let mut r = ApprovalRequest::new(&ctx, format!("may read {path}"));
        r.requested_paths = vec![path.to_string()];
        r.path_identities = ino
            .map(|ino| PathIdentity {
                path: path.to_string(),
                dev: 7,
                ino,
            })
            .into_iter()
            .collect();
        r
    }

    /// An approved card covers a later request for its path only while the path names the
    /// same file: another directory renamed into its place is asked about again (and here
    /// denied by the approver behind). Without identities on either side the path decides.
    #[tokio::test]
    async fn a_card_covers_its_paths_only_while_they_name_the_same_file() {
        let covered = Covered {
            inner: Arc::new(FixedApprover(Decision::Denied)),
            paths: vec!["/data/a".into()],
            hosts: Vec::new(),
            identities: vec![PathIdentity {
                path: "/data/a".into(),
                dev: 7,
                ino: 42,
            }],
        };
        let decide = |r: ApprovalRequest| {
            let covered = &covered;
            async move { covered.decide(&r).await }
        };
        assert_eq!(
            decide(request("/data/a", Some(42))).await,
            Decision::Approved
        );
        assert_eq!(decide(request("/data/a", None)).await, Decision::Approved);
        assert_eq!(decide(request("/data/a", Some(43))).await, Decision::Denied);
        assert_eq!(decide(request("/data/b", Some(42))).await, Decision::Denied);
    }

    /// A card's hosts cover a later request for exactly those hosts; another host is asked.
    #[tokio::test]
    async fn a_card_covers_its_hosts_and_no_other() {
        let covered = Covered {
            inner: Arc::new(FixedApprover(Decision::Denied)),
            paths: Vec::new(),
            hosts: vec!["files.pythonhosted.org:443".into()],
            identities: Vec::new(),
        };
        let ctx = RunContext::for_workspace("tools/code_shell", "/ws".into(), Decision::Denied);
        let asking = |host: &str| {
            let mut r = ApprovalRequest::new(&ctx, format!("may reach {host}"));
            r.requested_hosts = vec![host.to_string()];
            r
        };
        assert_eq!(
            covered.decide(&asking("files.pythonhosted.org:443")).await,
            Decision::Approved
        );
        assert_eq!(
            covered.decide(&asking("evil.example:443")).await,
            Decision::Denied
        );
    }
}
