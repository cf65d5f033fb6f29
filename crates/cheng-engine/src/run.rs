//! Running a validated graph: dependency order, bounded concurrency, approval, cancellation.
//!
//! One scheduling loop owns all state (no locks): it starts ready nodes as tokio tasks, at most
//! `jobs` at once, and reacts to each completion by releasing or skipping dependents. Each node
//! and edge is touched a constant number of times, so a run is linear in the graph's size.

use crate::approval::{approval_card, Covered, RunApprover};
use crate::events::{now, Event, EventSink, NullSink};
use crate::live::{Budget, NodeOutput};
use crate::ports::check_value;
use crate::validate::{Prepared, PreparedNode, ValidatedGraph};
use cheng_node::check::{asked_capabilities, resolve_request};
use cheng_node::policy::Policy;
use cheng_node::Output;
use cheng_node::{
    Approver, Audience, CancellationToken, Decision, ErrorKind, FixedApprover, Node, NodeError,
    NodeSpec, PortSpec, RunContext, Scope, ScopeKind, Values,
};
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinSet;

/// How long a node may take to wind down after cancellation before the engine gives up on it.
const CANCEL_GRACE: Duration = Duration::from_secs(10);

/// One lock per workspace for nodes whose effects are [`cheng_node::Effects::Serial`]: held for
/// `run`, so two of them never run at once on one workspace, whichever graph run or server call
/// started them. It is taken only once the approval card is decided, so a slow card or a
/// person's slow answer never holds other writers; `run` checks under it that its files are
/// still what the approved card was computed from (`ApprovalRequest::basis`).
fn serial_lock(workspace: &Path) -> Arc<tokio::sync::Mutex<()>> {
    static LOCKS: std::sync::OnceLock<
        std::sync::Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>,
    > = std::sync::OnceLock::new();
    let locks = LOCKS.get_or_init(Default::default);
    // A poisoned map is still a valid map.
    let mut locks = locks.lock().unwrap_or_else(|p| p.into_inner());
    Arc::clone(locks.entry(workspace.to_path_buf()).or_default())
}

/// Everything a run needs besides the graph.
#[derive(Clone)]
pub struct RunOptions {
    /// The canonical workspace root (injected as `sandbox_root`).
    pub workspace: PathBuf,
    /// How many nodes may run at once (at least 1).
    pub jobs: usize,
    pub approver: Arc<dyn Approver>,
    pub events: Arc<dyn EventSink>,
    pub cancel: CancellationToken,
    /// State the run's calls share (a fresh [`ScopeKind::Graph`] scope unless the caller gives
    /// one: a server connection's, or a named session's).
    pub scope: Scope,
}

impl RunOptions {
    /// Options for `workspace` (canonicalised; it must be an existing directory): one job per CPU,
    /// approvals denied, no events, a fresh cancellation token.
    pub fn new(workspace: impl AsRef<Path>) -> std::io::Result<Self> {
        let workspace = cheng_node::paths::canonical_root(workspace.as_ref()).map_err(|e| {
            let kind = if e.kind == ErrorKind::NotFound {
                std::io::ErrorKind::NotFound
            } else {
                std::io::ErrorKind::NotADirectory
            };
            std::io::Error::new(kind, e.message)
        })?;
        Ok(RunOptions {
            workspace,
            jobs: default_jobs(),
            approver: Arc::new(FixedApprover(Decision::Denied)),
            events: Arc::new(NullSink),
            cancel: CancellationToken::new(),
            scope: Scope::new(ScopeKind::Graph),
        })
    }

    pub fn jobs(mut self, jobs: usize) -> Self {
        self.jobs = jobs.max(1);
        self
    }

    pub fn approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = approver;
        self
    }

    pub fn events(mut self, events: Arc<dyn EventSink>) -> Self {
        self.events = events;
        self
    }

    pub fn cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    pub fn scope(mut self, scope: Scope) -> Self {
        self.scope = scope;
        self
    }
}

/// The number of CPUs (1 when unknown).
pub fn default_jobs() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

mod results;
pub use results::{GraphResult, GraphStatus, NodeResult, NodeStatus};

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// What a finished node task reports to the scheduling loop.
struct Finished {
    index: usize,
    outputs: Values,
    duration: Duration,
    cancelled: bool,
}

/// A future whose panic is caught and returned, so that a future run in place (not as a task of
/// its own) fails as cleanly as a panicking task does.
struct CatchUnwind<F>(std::pin::Pin<Box<F>>);

impl<F: std::future::Future> std::future::Future for CatchUnwind<F> {
    type Output = Result<F::Output, Box<dyn std::any::Any + Send>>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let future = self.0.as_mut();
        // A future that panicked is never polled again (it is dropped with this one).
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| future.poll(cx))) {
            Ok(std::task::Poll::Pending) => std::task::Poll::Pending,
            Ok(std::task::Poll::Ready(value)) => std::task::Poll::Ready(Ok(value)),
            Err(panic) => std::task::Poll::Ready(Err(panic)),
        }
    }
}

pub(crate) async fn run_graph(graph: &ValidatedGraph, options: RunOptions) -> GraphResult {
    let shared = Arc::clone(&graph.inner);
    let started = Instant::now();
    let events = Arc::clone(&options.events);
    // A graph of one node (every server call, `cheng run`) runs in the caller's task: no node
    // completion to route, and each task spawned would cost a hand-off to the scheduler (and the
    // wake-up of an idle worker thread) on the call's path. Larger graphs run their loop as a
    // task of its own: node completions then wake it on the same worker thread instead of
    // crossing to whichever thread awaits `run` (a large share of the per-node cost otherwise).
    let outcome = if graph.inner.nodes.len() == 1 {
        CatchUnwind(Box::pin(schedule(shared, options)))
            .await
            .map_err(|_| "it panicked".to_string())
    } else {
        tokio::spawn(schedule(shared, options))
            .await
            .map_err(|err| err.to_string())
    };
    match outcome {
        Ok(result) => result,
        Err(err) => {
            let error = NodeError::internal(format!(
                "the scheduler stopped unexpectedly ({err}); this is a bug in cheng"
            ));
            let nodes = graph
                .inner
                .nodes
                .iter()
                .map(|p| NodeResult {
                    id: p.id.clone(),
                    node_type: p.spec.id,
                    status: NodeStatus::Failed,
                    outputs: complete_outputs(p.spec, error.to_outputs()),
                    duration: Duration::ZERO,
                    reason: Some(error.message.clone()),
                })
                .collect();
            let result = GraphResult {
                status: GraphStatus::Failed,
                nodes,
                duration: started.elapsed(),
            };
            // The scheduler did not get to say it: readers of the events still get their last.
            graph_finished(&*events, &result);
            result
        }
    }
}

/// The `graph_finished` event for `result`.
fn graph_finished(events: &dyn EventSink, result: &GraphResult) {
    if events.enabled() {
        events.emit(Event::GraphFinished {
            ts: now(),
            status: result.status,
            duration_ms: millis(result.duration),
            succeeded: result.count(NodeStatus::Succeeded),
            failed: result.count(NodeStatus::Failed),
            skipped: result.count(NodeStatus::Skipped),
            cancelled: result.count(NodeStatus::Cancelled),
        });
    }
}

async fn schedule(graph: Arc<Prepared>, options: RunOptions) -> GraphResult {
    let graph = &*graph;
    let started = Instant::now();
    let n = graph.nodes.len();
    let jobs = options.jobs.max(1);
    let events = Arc::clone(&options.events);
    let cancel = options.cancel.clone();
    let approver: Arc<dyn Approver> = Arc::new(RunApprover {
        inner: Arc::clone(&options.approver),
        events: Arc::clone(&events),
        cancel: cancel.clone(),
    });

    let output_budget = Arc::new(std::sync::Mutex::new(Budget::default()));
    let mut results: Vec<Option<NodeResult>> = (0..n).map(|_| None).collect();
    let mut waiting = graph.upstream_count.clone();
    let mut ready: VecDeque<usize> = (0..n).filter(|&i| waiting[i] == 0).collect();
    let mut running: JoinSet<Finished> = JoinSet::new();
    let mut task_index: HashMap<tokio::task::Id, (usize, Instant)> = HashMap::new();
    // One node runs in place (see `run_graph`): its result, once it has run.
    let in_place = n == 1;
    let mut ran_in_place: Option<Finished> = None;

    loop {
        while running.len() < jobs && !cancel.is_cancelled() {
            let Some(i) = ready.pop_front() else { break };
            let prepared = &graph.nodes[i];
            let ctx = RunContext {
                node_id: prepared.id.clone(),
                node_type: prepared.spec.id,
                workspace: options.workspace.clone(),
                cancel: cancel.clone(),
                approver: Arc::clone(&approver),
                scope: options.scope.clone(),
                output: Output::off(),
                approved_card: None,
                policy: Arc::clone(&graph.policy),
            };
            // Live output only when somebody reads events.
            let live = events.enabled().then(|| {
                NodeOutput::new(
                    prepared.id.clone(),
                    prepared.spec.id,
                    Arc::clone(&events),
                    Arc::clone(&output_budget),
                )
            });
            let ctx = match &live {
                Some(live) => RunContext {
                    output: Output::new(Arc::clone(live) as Arc<dyn cheng_node::OutputSink>),
                    ..ctx
                },
                None => ctx,
            };
            let input = assemble_input(prepared, &graph.nodes, &results, &ctx, &graph.policy);
            let asked = match &input {
                Ok(input) => {
                    asked_capabilities(&graph.policy, prepared.spec, &prepared.config, input)
                }
                Err(_) => Vec::new(),
            };
            if events.enabled() {
                events.emit(Event::NodeStarted {
                    ts: now(),
                    node: prepared.id.clone(),
                    node_type: prepared.spec.id.to_string(),
                });
            }
            let node = Arc::clone(&prepared.node);
            if in_place {
                let start = Instant::now();
                let finished =
                    match CatchUnwind(Box::pin(execute(i, node, ctx, input, asked, live))).await {
                        Ok(finished) => finished,
                        Err(_) => panicked(graph, i, "panicked", start),
                    };
                ran_in_place = Some(finished);
                break;
            }
            let handle = running.spawn(execute(i, node, ctx, input, asked, live));
            task_index.insert(handle.id(), (i, Instant::now()));
        }
        let joined = match ran_in_place.take() {
            Some(finished) => Ok((None, finished)),
            None if running.is_empty() => break,
            None => match running.join_next_with_id().await {
                Some(joined) => joined.map(|(id, finished)| (Some(id), finished)),
                None => break,
            },
        };
        let finished = match joined {
            Ok((id, finished)) => {
                if let Some(id) = id {
                    task_index.remove(&id);
                }
                finished
            }
            Err(err) => {
                // A panicking node is a bug in that node; the run carries on and says so.
                let Some((index, start)) = task_index.remove(&err.id()) else {
                    continue;
                };
                let what = if err.is_panic() {
                    "panicked"
                } else {
                    "was aborted"
                };
                panicked(graph, index, what, start)
            }
        };
        let i = finished.index;
        let status = status_of(&finished.outputs, finished.cancelled);
        let outcome = Outcome {
            status,
            outputs: finished.outputs,
            duration: finished.duration,
            reason: None,
        };
        finish(&mut results, &events, i, &graph.nodes[i], outcome);
        if status == NodeStatus::Succeeded {
            for &d in &graph.dependents[i] {
                waiting[d] -= 1;
                if waiting[d] == 0 && results[d].is_none() {
                    ready.push_back(d);
                }
            }
        } else if !cancel.is_cancelled() {
            skip_dependents(graph, i, &mut results, &events);
        }
    }

    // Whatever never started was cancelled (or is behind a cancelled node).
    for i in 0..n {
        if results[i].is_none() {
            let prepared = &graph.nodes[i];
            let message = "the run was cancelled before this node started";
            let outputs = complete_outputs(
                prepared.spec,
                NodeError::new(ErrorKind::Cancelled, message).to_outputs(),
            );
            let outcome = Outcome {
                status: NodeStatus::Cancelled,
                outputs,
                duration: Duration::ZERO,
                reason: Some(message.to_string()),
            };
            finish(&mut results, &events, i, prepared, outcome);
        }
    }
    let nodes: Vec<NodeResult> = results.into_iter().flatten().collect();
    let status = if cancel.is_cancelled() || nodes.iter().any(|r| r.status == NodeStatus::Cancelled)
    {
        GraphStatus::Cancelled
    } else if nodes.iter().all(|r| r.status == NodeStatus::Succeeded) {
        GraphStatus::Succeeded
    } else {
        GraphStatus::Failed
    };
    let result = GraphResult {
        status,
        nodes,
        duration: started.elapsed(),
    };
    graph_finished(&*events, &result);
    result
}

/// The result of a node whose task panicked (`what`) or was aborted: a bug in that node.
fn panicked(graph: &Prepared, index: usize, what: &str, start: Instant) -> Finished {
    let spec = graph.nodes[index].spec;
    let error = NodeError::internal(format!(
        "node {} {what}; this is a bug in {}",
        graph.nodes[index].id, spec.id
    ));
    Finished {
        index,
        outputs: complete_outputs(spec, error.to_outputs()),
        duration: start.elapsed(),
        cancelled: false,
    }
}

/// The node's static input plus edge values (checked against the target port now that they are
/// known) plus the engine ports rendered from `ctx`. An edge carrying `null` leaves the port unset.
fn assemble_input(
    prepared: &PreparedNode,
    nodes: &[PreparedNode],
    results: &[Option<NodeResult>],
    ctx: &RunContext,
    policy: &Policy,
) -> Result<Values, NodeError> {
    let mut input = prepared.base.clone();
    for edge in &prepared.incoming {
        let value = results[edge.from]
            .as_ref()
            .and_then(|r| r.outputs.get(edge.from_port))
            .cloned()
            .unwrap_or(Value::Null);
        let source = format!("{}.{}", nodes[edge.from].id, edge.from_port);
        if value.is_null() {
            if edge.port.required && input.get(edge.port.name).is_none_or(Value::is_null) {
                return Err(NodeError::invalid_input(format!(
                    "required input `{}` is fed by {source}, which produced null",
                    edge.port.name
                )));
            }
            continue;
        }
        check_value(edge.port, &value).map_err(|message| {
            NodeError::invalid_input(format!(
                "input `{}` from {source}: {message}",
                edge.port.name
            ))
        })?;
        let value = if edge.port.audience == Audience::Capped {
            resolve_request(
                policy,
                prepared.spec.id,
                edge.port,
                prepared.config.get(edge.port.name),
                &value,
            )
            .map_err(|message| {
                NodeError::policy_denied(format!(
                    "input `{}` from {source}: {message}",
                    edge.port.name
                ))
            })?
        } else {
            value
        };
        input.insert(edge.port.name.to_string(), value);
    }
    // Injected last so nothing else can set them.
    ctx.inject_engine_ports(prepared.spec, &mut input)?;
    Ok(input)
}

/// One node: approval when the spec gates this input or it requests capabilities on "ask" (one
/// card for both), then `run`; always an output object.
async fn execute(
    index: usize,
    node: Arc<dyn Node>,
    ctx: RunContext,
    input: Result<Values, NodeError>,
    asked: Vec<&'static PortSpec>,
    live: Option<Arc<NodeOutput>>,
) -> Finished {
    let start = Instant::now();
    let spec = node.spec();
    let cancel = ctx.cancel.clone();
    let work = async {
        let input = input?;
        let mut ctx = ctx;
        if let Some(card) = approval_card(node.as_ref(), &ctx, &input, &asked)? {
            if ctx.approver.decide(&card).await != Decision::Approved {
                if ctx.cancel.is_cancelled() {
                    return Err(NodeError::new(
                        ErrorKind::Cancelled,
                        "the run was cancelled while waiting for approval; nothing ran",
                    ));
                }
                return Err(NodeError::new(
                    ErrorKind::ApprovalDenied,
                    denied_message(spec, &ctx.node_id, &asked),
                ));
            }
            if !card.requested_paths.is_empty() || !card.requested_hosts.is_empty() {
                ctx.approver = Arc::new(Covered {
                    inner: Arc::clone(&ctx.approver),
                    paths: card.requested_paths.clone(),
                    hosts: card.requested_hosts.clone(),
                    identities: card.path_identities.clone(),
                });
            }
            ctx.approved_card = Some(Arc::new(card));
        }
        let _serial = match spec.effects.serial() {
            true => Some(serial_lock(&ctx.workspace).lock_owned().await),
            false => None,
        };
        node.run(&ctx, input).await
    };
    tokio::pin!(work);
    let result = tokio::select! {
        result = &mut work => result,
        () = cancel.cancelled() => {
            // The node sees the same token and kills its children; give it time to report.
            match tokio::time::timeout(CANCEL_GRACE, &mut work).await {
                Ok(result) => result,
                Err(_) => Err(NodeError::new(ErrorKind::Cancelled, format!(
                    "the run was cancelled and the node did not stop within {} s", CANCEL_GRACE.as_secs()
                ))),
            }
        }
    };
    // What the node's processes wrote and is still held goes out before `node_finished`.
    if let Some(live) = live {
        live.finish();
    }
    let outputs = match result {
        Ok(outputs) => outputs,
        Err(error) => error.to_outputs(),
    };
    Finished {
        index,
        outputs: complete_outputs(spec, outputs),
        duration: start.elapsed(),
        cancelled: cancel.is_cancelled(),
    }
}

/// Why nothing ran, and for requested capabilities which setting would grant them.
fn denied_message(spec: &NodeSpec, node_id: &str, asked: &[&'static PortSpec]) -> String {
    // A single-node run's id is its type: name it once.
    let who = if node_id == spec.id {
        spec.id.to_string()
    } else {
        format!("{} `{node_id}`", spec.id)
    };
    if asked.is_empty() {
        return format!("{who} was not approved; nothing ran");
    }
    let what: Vec<String> = asked
        .iter()
        .map(|port| format!("{}=true ({})", port.name, crate::approval::opens(port)))
        .collect();
    let config: Vec<String> = asked
        .iter()
        .map(|port| format!("\"{}\": true", port.name))
        .collect();
    format!(
        "{who} requested {}, which a person must approve for this run, and it was not approved; nothing ran. \
         Approve the run when asked (the terminal prompt, or --approve where the operator honours it), or have the node's \
         author set {} in the node's config to grant it without asking",
        what.join(" and "),
        config.join(", ")
    )
}

/// Adds every declared output port missing from `outputs` as `null`, in spec order first.
fn complete_outputs(spec: &NodeSpec, mut outputs: Values) -> Values {
    if spec.outputs.iter().all(|p| outputs.contains_key(p.name)) {
        return outputs;
    }
    let mut ordered = Values::new();
    for port in spec.outputs {
        ordered.insert(
            port.name.to_string(),
            outputs.remove(port.name).unwrap_or(Value::Null),
        );
    }
    ordered.extend(outputs);
    ordered
}

fn status_of(outputs: &Values, cancelled: bool) -> NodeStatus {
    let failed = outputs.get("success") == Some(&Value::Bool(false));
    let kind = outputs.get("error_kind").and_then(Value::as_str);
    if failed && (cancelled || kind == Some(ErrorKind::Cancelled.code())) {
        NodeStatus::Cancelled
    } else if failed {
        NodeStatus::Failed
    } else {
        NodeStatus::Succeeded
    }
}

/// Marks everything downstream of a failed node skipped, naming the failed node.
fn skip_dependents(
    graph: &Prepared,
    failed: usize,
    results: &mut [Option<NodeResult>],
    events: &Arc<dyn EventSink>,
) {
    let reason = format!("skipped because node `{}` failed", graph.nodes[failed].id);
    let mut stack: Vec<usize> = graph.dependents[failed].clone();
    while let Some(d) = stack.pop() {
        if results[d].is_some() {
            continue;
        }
        let prepared = &graph.nodes[d];
        let outputs = complete_outputs(prepared.spec, Values::new());
        let outcome = Outcome {
            status: NodeStatus::Skipped,
            outputs,
            duration: Duration::ZERO,
            reason: Some(reason.clone()),
        };
        finish(results, events, d, prepared, outcome);
        stack.extend_from_slice(&graph.dependents[d]);
    }
}

/// How a node ended, before it is recorded.
struct Outcome {
    status: NodeStatus,
    outputs: Values,
    duration: Duration,
    reason: Option<String>,
}

/// Records a node's result (and emits `node_finished`).
fn finish(
    results: &mut [Option<NodeResult>],
    events: &Arc<dyn EventSink>,
    index: usize,
    prepared: &PreparedNode,
    outcome: Outcome,
) {
    let Outcome {
        status,
        outputs,
        duration,
        reason,
    } = outcome;
    emit_finished(events, prepared, status, &outputs, duration, &reason);
    results[index] = Some(NodeResult {
        id: prepared.id.clone(),
        node_type: prepared.spec.id,
        status,
        outputs,
        duration,
        reason,
    });
}

fn emit_finished(
    events: &Arc<dyn EventSink>,
    prepared: &PreparedNode,
    status: NodeStatus,
    outputs: &Values,
    duration: Duration,
    reason: &Option<String>,
) {
    if events.enabled() {
        events.emit(Event::NodeFinished {
            ts: now(),
            node: prepared.id.clone(),
            node_type: prepared.spec.id.to_string(),
            status,
            duration_ms: millis(duration),
            error_kind: outputs
                .get("error_kind")
                .and_then(Value::as_str)
                .map(str::to_string),
            reason: reason.clone(),
        });
    }
}
