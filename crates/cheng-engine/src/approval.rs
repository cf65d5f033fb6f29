//! The approver the engine hands to nodes: the caller's approver, plus events and cancellation.
//!
//! Both the engine's own approval (for inputs the spec gates) and a node's further approvals
//! (`ctx.require_approval`) pass through here, so every decision is visible as events. A run that
//! is cancelled while waiting for a person counts as denied: nothing runs without a decision.

use crate::events::{now, Event, EventSink};
use cheng_node::{async_trait, ApprovalRequest, Approver, Decision, CancellationToken};
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
                request: request.clone(),
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
