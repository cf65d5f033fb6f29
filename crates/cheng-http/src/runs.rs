//! Canvas runs: each graph posted to `/api/runs` runs through the engine as `cheng graph run`
//! runs it, with its events kept in a bounded log that any number of readers follow at their
//! own pace (a slow reader never holds the run back), and its approval cards answered over HTTP,
//! each once.

use crate::error::ApiError;
use axum::http::StatusCode;
use cheng_engine::{events::now, Engine, Event, EventSink, RunOptions, ValidatedGraph};
use cheng_node::{
    async_trait, display, ApprovalRequest, Approver, CancellationToken, Decision, Scope, ScopeKind,
};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::{oneshot, watch, Semaphore};

/// Events a run keeps for readers that join late or reconnect.
pub const EVENTS_KEPT: usize = 10_000;
/// Finished runs kept for `/api/runs` (running and queued ones are always kept).
pub const HISTORY: usize = 100;
/// Runs that may wait for a job; beyond it `POST /api/runs` answers `429`.
pub const QUEUE: usize = 1_000;

/// A poisoned lock still guards consistent data here (every update is a single push or
/// assignment): keep serving rather than fail every later request.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// Every run this server knows, newest last.
pub struct Runs {
    engine: Engine,
    /// What every run starts from: the checked workspace; each run sets the rest.
    options: RunOptions,
    runs: Mutex<VecDeque<Arc<Run>>>,
    next: AtomicU64,
    jobs: Arc<Semaphore>,
}

impl Runs {
    pub fn new(engine: Engine, options: RunOptions, jobs: usize) -> Runs {
        Runs {
            engine,
            options,
            runs: Mutex::default(),
            next: AtomicU64::new(1),
            jobs: Arc::new(Semaphore::new(jobs.max(1))),
        }
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Starts `validated` (its source `graph` kept for `GET /api/runs/{id}`) once a job is free.
    pub fn start(
        self: &Arc<Self>,
        graph: Value,
        validated: ValidatedGraph,
    ) -> Result<Arc<Run>, ApiError> {
        let run = {
            let mut runs = lock(&self.runs);
            let waiting = runs.iter().filter(|r| r.status() == "queued").count();
            if waiting >= QUEUE {
                return Err(ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "TOO_MANY_RUNS",
                    format!("{QUEUE} runs are already waiting for a job; try again when some have finished"),
                ));
            }
            let id = format!("r{}", self.next.fetch_add(1, Ordering::Relaxed));
            let run = Arc::new(Run::new(id, graph, validated.len()));
            runs.push_back(run.clone());
            forget_old(&mut runs);
            run
        };
        let runs = self.clone();
        let started = run.clone();
        tokio::spawn(async move { runs.execute(started, validated).await });
        Ok(run)
    }

    async fn execute(&self, run: Arc<Run>, validated: ValidatedGraph) {
        // A run cancelled while it waits still goes through the engine, which finishes it as
        // cancelled (with its events) without starting a node.
        let permit = tokio::select! {
            permit = self.jobs.clone().acquire_owned() => permit.ok(),
            () = run.cancel.cancelled() => None,
        };
        run.set_status("running");
        let options = self
            .options
            .clone()
            .approver(Arc::new(PageApprover { run: run.clone() }))
            .events(run.clone())
            .cancel(run.cancel.clone())
            .scope(Scope::new(ScopeKind::Graph));
        let result = self.engine.run(&validated, options).await;
        drop(permit);
        let status = result.to_json();
        run.finish(status);
    }

    pub fn get(&self, id: &str) -> Option<Arc<Run>> {
        lock(&self.runs).iter().find(|r| r.id == id).cloned()
    }

    /// Every run kept, newest first.
    pub fn list(&self) -> Vec<Arc<Run>> {
        lock(&self.runs).iter().rev().cloned().collect()
    }

    /// Cancels every run (the server is stopping).
    pub fn cancel_all(&self) {
        for run in lock(&self.runs).iter() {
            run.cancel.cancel();
        }
    }
}

/// Drops the oldest finished runs beyond [`HISTORY`].
fn forget_old(runs: &mut VecDeque<Arc<Run>>) {
    let mut finished = runs.iter().filter(|r| r.is_finished()).count();
    runs.retain(|r| {
        if finished > HISTORY && r.is_finished() {
            finished -= 1;
            false
        } else {
            true
        }
    });
}

/// One run.
pub struct Run {
    pub id: String,
    pub created: String,
    pub graph: Value,
    nodes: usize,
    pub cancel: CancellationToken,
    state: Mutex<RunState>,
    /// The number of the newest event, for readers waiting on more.
    newest: watch::Sender<u64>,
}

struct RunState {
    status: &'static str,
    /// `GraphResult::to_json`, once finished.
    result: Option<Value>,
    log: EventLog,
    approvals: Approvals,
    /// The engine's `graph_finished` line, logged by [`Run::finish`] together with the result,
    /// so whoever reads that event finds the run's result stored.
    graph_finished: Option<String>,
}

/// The run's last [`EVENTS_KEPT`] events, numbered from 1.
#[derive(Default)]
pub struct EventLog {
    events: VecDeque<Logged>,
    /// The number the next event gets, minus one.
    last: u64,
    pub finished: bool,
}

/// One event as readers receive it.
#[derive(Clone)]
pub struct Logged {
    pub id: u64,
    pub name: &'static str,
    pub data: Arc<str>,
}

impl EventLog {
    fn push(&mut self, name: &'static str, data: String) -> u64 {
        self.last += 1;
        self.events.push_back(Logged {
            id: self.last,
            name,
            data: data.into(),
        });
        if self.events.len() > EVENTS_KEPT {
            self.events.pop_front();
        }
        self.last
    }

    /// Up to `max` events after `after`, and how many after it were dropped before they could
    /// be read.
    pub fn after(&self, after: u64, max: usize) -> (u64, Vec<Logged>) {
        let first = self.events.front().map_or(self.last + 1, |e| e.id);
        let missed = first.saturating_sub(after + 1);
        let skip = usize::try_from(after.saturating_sub(first - 1)).unwrap_or(usize::MAX);
        (
            missed,
            self.events.iter().skip(skip).take(max).cloned().collect(),
        )
    }
}

/// Cards waiting for an answer. The engine emits `approval_requested` and then asks the
/// approver, in the same task: the sink opens the card (numbering it and keeping the sending
/// half of its answer), the approver takes the oldest open card of its node.
#[derive(Default)]
struct Approvals {
    next: u64,
    open: BTreeMap<String, OpenCard>,
    /// Per node, the answers its approver has not picked up yet.
    unclaimed: HashMap<String, VecDeque<oneshot::Receiver<Decision>>>,
    /// Per node, the card its approver is deciding (a node asks one card at a time), so its
    /// `approval_decided` event names the card too.
    deciding: HashMap<String, String>,
    answered: Vec<String>,
}

struct OpenCard {
    node: String,
    card_text: String,
    request: Value,
    answer: oneshot::Sender<Decision>,
}

impl Run {
    fn new(id: String, graph: Value, nodes: usize) -> Run {
        Run {
            id,
            created: now(),
            graph,
            nodes,
            cancel: CancellationToken::new(),
            state: Mutex::new(RunState {
                status: "queued",
                result: None,
                log: EventLog::default(),
                approvals: Approvals::default(),
                graph_finished: None,
            }),
            newest: watch::channel(0).0,
        }
    }

    pub fn status(&self) -> &'static str {
        lock(&self.state).status
    }

    pub fn is_finished(&self) -> bool {
        lock(&self.state).result.is_some()
    }

    fn set_status(&self, status: &'static str) {
        lock(&self.state).status = status;
    }

    fn finish(&self, result: Value) {
        let mut state = lock(&self.state);
        state.status = match result["status"].as_str() {
            Some("succeeded") => "succeeded",
            Some("cancelled") => "cancelled",
            _ => "failed",
        };
        state.result = Some(result);
        if let Some(line) = state.graph_finished.take() {
            state.log.push("graph_finished", line);
        }
        state.log.finished = true;
        state.approvals.open.clear();
        state.approvals.unclaimed.clear();
        state.approvals.deciding.clear();
        let newest = state.log.last;
        drop(state);
        self.newest.send_replace(newest);
    }

    /// Waits for events after the ones a reader has seen (see [`Run::read`]).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.newest.subscribe()
    }

    /// What [`EventLog::after`] gives, read under the run's lock.
    pub fn read(&self, after: u64, max: usize) -> (u64, Vec<Logged>, bool) {
        let state = lock(&self.state);
        let (missed, events) = state.log.after(after, max);
        (missed, events, state.log.finished)
    }

    /// `GET /api/runs` entry.
    pub fn summary(&self) -> Value {
        json!({"run_id": self.id, "status": self.status(), "created": self.created, "nodes": self.nodes})
    }

    /// `GET /api/runs/{id}`.
    pub fn detail(&self) -> Value {
        let state = lock(&self.state);
        let pending: Vec<Value> = state
            .approvals
            .open
            .iter()
            .filter(|(_, card)| !card.answer.is_closed())
            .map(|(id, card)| {
                json!({"approval_id": id, "node": card.node, "card_text": card.card_text, "request": card.request})
            })
            .collect();
        let mut detail = json!({
            "run_id": self.id,
            "status": state.status,
            "created": self.created,
            "graph": self.graph,
            "pending_approvals": pending,
        });
        if let Some(result) = &state.result {
            detail["result"] = result.clone();
        }
        detail
    }

    /// The person's answer to card `approval_id`: used once.
    pub fn answer(&self, approval_id: &str, decision: Decision) -> Result<(), ApiError> {
        let mut state = lock(&self.state);
        let approvals = &mut state.approvals;
        match approvals.open.remove(approval_id) {
            Some(card) => {
                approvals.answered.push(approval_id.to_string());
                // The approver is gone when the run was cancelled meanwhile: nothing runs then.
                card.answer.send(decision).map_err(|_| {
                    ApiError::new(
                        StatusCode::CONFLICT,
                        "APPROVAL_CLOSED",
                        format!("approval `{approval_id}` is no longer waiting (the run was cancelled); nothing ran"),
                    )
                })
            }
            None if approvals.answered.iter().any(|a| a == approval_id) => Err(ApiError::new(
                StatusCode::CONFLICT,
                "APPROVAL_ALREADY_ANSWERED",
                format!(
                    "approval `{approval_id}` was already answered; each card is answered once"
                ),
            )),
            None => Err(ApiError::not_found(format!(
                "run `{}` has no approval `{approval_id}` waiting",
                self.id
            ))),
        }
    }

    /// Opens a card for `request`: its number, and the answer's receiving half queued for
    /// the node's approver.
    fn open_card(
        &self,
        approvals: &mut Approvals,
        request: &ApprovalRequest,
        data: &Value,
    ) -> (String, String) {
        approvals.next += 1;
        let id = format!("a{}", approvals.next);
        let card_text = display::card(&request.into());
        let (answer, receiver) = oneshot::channel();
        approvals
            .unclaimed
            .entry(request.node_id.clone())
            .or_default()
            .push_back(receiver);
        approvals
            .deciding
            .insert(request.node_id.clone(), id.clone());
        approvals.open.insert(
            id.clone(),
            OpenCard {
                node: request.node_id.clone(),
                card_text: card_text.clone(),
                request: data.get("request").cloned().unwrap_or(Value::Null),
                answer,
            },
        );
        (id, card_text)
    }
}

impl EventSink for Run {
    fn emit(&self, event: Event) {
        let name = event.name();
        let Ok(mut data) = serde_json::to_value(&event) else {
            return;
        };
        let mut state = lock(&self.state);
        if let Event::ApprovalRequested { request, .. } = &event {
            let (id, card_text) = self.open_card(&mut state.approvals, request, &data);
            data["approval_id"] = id.into();
            data["card_text"] = card_text.into();
        }
        if let Event::ApprovalDecided { node, .. } = &event {
            if let Some(id) = state.approvals.deciding.remove(node) {
                data["approval_id"] = id.into();
            }
        }
        // The same text `cheng graph run --events` writes: control, bidi and invisible
        // characters as JSON escapes.
        let line = display::json(&data.to_string());
        if let Event::GraphFinished { .. } = &event {
            state.graph_finished = Some(line);
            return;
        }
        let id = state.log.push(name, line);
        drop(state);
        self.newest.send_replace(id);
    }
}

/// Cards answered on the page (or over the API): waits for the person's answer.
struct PageApprover {
    run: Arc<Run>,
}

#[async_trait]
impl Approver for PageApprover {
    async fn decide(&self, request: &ApprovalRequest) -> Decision {
        let receiver = {
            let mut state = lock(&self.run.state);
            state
                .approvals
                .unclaimed
                .get_mut(&request.node_id)
                .and_then(VecDeque::pop_front)
        };
        // No card was opened (events off): nobody can answer, so nothing runs.
        match receiver {
            Some(receiver) => receiver.await.unwrap_or(Decision::Denied),
            None => Decision::Denied,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(n: u64) -> EventLog {
        let mut log = EventLog::default();
        for i in 0..n {
            log.push("node_started", format!("{{\"i\":{i}}}"));
        }
        log
    }

    #[test]
    fn readers_resume_after_the_last_event_they_saw() {
        let log = log(5);
        let (missed, events) = log.after(2, 100);
        assert_eq!(missed, 0);
        assert_eq!(events.iter().map(|e| e.id).collect::<Vec<_>>(), [3, 4, 5]);
        assert!(log.after(5, 100).1.is_empty());
        assert_eq!(log.after(0, 2).1.len(), 2);
    }

    #[test]
    fn a_reader_behind_the_kept_events_is_told_how_many_it_missed() {
        let log = log(EVENTS_KEPT as u64 + 30);
        let (missed, events) = log.after(10, 5);
        assert_eq!(missed, 20);
        assert_eq!(events.first().map(|e| e.id), Some(31));
        assert_eq!(log.after(0, 1).0, 30);
    }

    #[test]
    fn graph_finished_is_logged_only_with_the_result() {
        let run = Run::new("r1".to_string(), Value::Null, 0);
        run.emit(Event::GraphFinished {
            ts: now(),
            status: cheng_engine::GraphStatus::Succeeded,
            duration_ms: 1,
            succeeded: 0,
            failed: 0,
            skipped: 0,
            cancelled: 0,
        });
        let (_, events, finished) = run.read(0, 10);
        assert!(events.is_empty() && !finished, "logged before the result");
        run.finish(json!({"status": "succeeded"}));
        let (_, events, finished) = run.read(0, 10);
        assert_eq!(
            events.iter().map(|e| e.name).collect::<Vec<_>>(),
            ["graph_finished"]
        );
        assert!(finished);
        assert!(run.detail().get("result").is_some());
        assert_eq!(
            *run.subscribe().borrow(),
            1,
            "readers are woken with its number"
        );
    }
}
