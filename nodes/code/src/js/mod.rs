//! `tools/code_js`: JavaScript in an in-process QuickJS sandbox.
//!
//! Each call gets a fresh QuickJS runtime and context, so one script can never see another's
//! state, on a script thread of cheng's own (reused across calls), so the async engine never waits
//! on JavaScript — except for the first few hundred microseconds, which the caller waits out on
//! its processor (`wait_on_cpu`): a small script is done by then, and its answer then costs no
//! wake-up. A caller that announces the run ([`Node::prepare`]) gets the script thread awake for
//! it. The thread prepares the next call's runtime and context after a call
//! (`engine::prepare_spare`); a runtime that ran a script is never used again. The sandbox is
//! the language itself: there is no `std`/`os` module, no module loader, no `require`, no
//! `fetch`, no timers — only ECMAScript built-ins and a `console` whose output is captured
//! (head+tail, 1 MiB per stream).
//!
//! Decisions where the reference page is silent (documented in the node reference):
//! - `input` is a global holding the JSON input; the value of the script's final expression is
//!   `result`. A promise is awaited (its job queue driven) within `timeout_ms`; a rejection fails
//!   the node. Top-level `await` is not supported (scripts are not modules): wrap the code in
//!   `(async () => { ... })()`.
//! - Result conversion follows `JSON.stringify` where JSON can say it (`NaN`/`Infinity` → `null`,
//!   `toJSON` honoured so a `Date` becomes its ISO string, `undefined` in an array → `null`,
//!   `undefined` properties omitted, a top-level `undefined` → `null`), and is an error where JSON
//!   would silently lose data: functions, symbols, cycles, promises, `Map`/`Set` and nesting deeper
//!   than 128 levels (serde_json's own parse limit) fail with `LOCAL_EXECUTOR_SCRIPT_ERROR` naming
//!   the path (`result.a.b is a function`). A `BigInt` becomes its decimal string (`12345678901234567890n` →
//!   `"12345678901234567890"`): JSON numbers lose precision beyond 2^53 and `JSON.stringify` throws.
//! - Limits: `timeout_ms` via the QuickJS interrupt handler (which also stops the script on
//!   cancellation), `memory_mb` (1–2048) via the QuickJS allocator limit, and a 4 MiB native stack
//!   limit (about 6,000 nested JavaScript calls) so deep recursion is a clear error. A built-in
//!   operation that never reaches the interrupt check (a few array built-ins over huge sparse
//!   lengths) is bounded too: one second after the deadline the node returns
//!   `LOCAL_EXECUTOR_TIMED_OUT` and abandons the thread, which runs until that operation ends; while
//!   four such threads are still running, new runs fail with `LOCAL_EXECUTOR_SANDBOX_UNAVAILABLE`.
//! - Result limit: at most 16 MiB of compact JSON text (`crate::result`), checked from below while
//!   converting (a string's length before its text is copied) and exactly afterwards; past it,
//!   `LOCAL_EXECUTOR_OUTPUT_LIMIT` naming the limit.

mod console;
mod convert;
mod engine;
mod lint;
mod pool;

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cheng_node::{
    failure, input, Audience, Control, Effects, ErrorKind, Node, NodeError, NodeSpec, PortSpec,
    PortType, RunContext, Values,
};
use serde_json::{json, Value};

use crate::ports;

pub use engine::{Failure, Limits, Outcome, MAX_STACK_BYTES};

/// The node's public id.
pub const ID: &str = "tools/code_js";
/// The environment variable that must be set for the node to be registered.
pub const GATE: &str = "CHENG_ENABLE_CODE_JS";

const MAX_TIMEOUT_MS: i64 = 300_000;
/// QuickJS allocates inside cheng's own process: keep the ceiling well below a host's memory.
const MAX_MEMORY_MB: i64 = 2048;
/// How long after the deadline the engine waits for a script stuck in a native operation.
const ABANDON_GRACE: Duration = Duration::from_secs(1);

static INPUTS: &[PortSpec] = &[
    PortSpec::input(
        "input",
        PortType::Any,
        "JSON input exposed to the script as the input variable",
    )
    .default("null"),
    PortSpec::input(
        "script",
        PortType::String,
        "[Required] JavaScript script. The value of the final expression is returned as result.",
    )
    .default("null")
    .required()
    .control(Control::CodeEditor),
    PortSpec::input(
        "timeout_ms",
        PortType::Integer,
        "Timeout (milliseconds). Default: 5000 ms. Maximum: 300000 ms.",
    )
    .default("5000")
    .min(1)
    .max(MAX_TIMEOUT_MS)
    .audience(Audience::Capped)
    .control(Control::Number),
    PortSpec::input(
        "memory_mb",
        PortType::Integer,
        "Memory limit (MB). QuickJS enforces this as an internal soft limit. Default: 128 MB.",
    )
    .default("128")
    .min(1)
    .max(MAX_MEMORY_MB)
    .audience(Audience::Capped)
    .control(Control::Number),
];

static OUTPUTS: &[PortSpec] = &[
    ports::SCRIPT_OUTPUTS[0],
    ports::SCRIPT_OUTPUTS[1],
    ports::SCRIPT_OUTPUTS[2],
    ports::SCRIPT_OUTPUTS[3],
    ports::SCRIPT_OUTPUTS[4],
    ports::SCRIPT_OUTPUTS[5],
    failure::success("Whether the script ran and produced a result (added to the reference table: failures keep stdout, stderr and metrics)"),
    failure::ERROR_KIND,
    failure::TERMINAL,
    failure::ERROR,
];

pub static SPEC: NodeSpec = NodeSpec {
    id: ID,
    title: "JavaScript executor",
    description: "Runs JavaScript in a QuickJS sandbox with no system calls, network or filesystem access. \
Fails closed when QuickJS is unavailable. Suited to pure computation, JSON/object transformation, string \
manipulation and math. Not suited to network requests (use Shell) or data processing that depends on many \
libraries (use Python).",
    category: "code",
    inputs: INPUTS,
    outputs: OUTPUTS,
    gate: Some(GATE),
    effects: Effects::ReadOnly,
};

/// The `tools/code_js` node.
pub struct CodeJs;

cheng_node::inventory::submit! { cheng_node::NodeRegistration::new(&CodeJs) }

#[cheng_node::async_trait]
impl Node for CodeJs {
    fn spec(&self) -> &'static NodeSpec {
        &SPEC
    }

    /// The script thread that will take the run stops sleeping (see `pool`). On one processor
    /// its waiting could only hold up the thread that hands the run over: not done there.
    fn prepare(&self) {
        if several_processors() && STUCK_THREADS.load(Ordering::Acquire) < MAX_STUCK_THREADS {
            pool::wake();
        }
    }

    async fn run(&self, ctx: &RunContext, input: Values) -> Result<Values, NodeError> {
        let script = input::opt_str(&input, "script")
            .ok_or_else(|| {
                NodeError::invalid_input("script is required: give the JavaScript to run")
            })?
            .to_string();
        if let Some(at) = script.find('\0') {
            return Err(NodeError::invalid_input(format!(
                "script contains a NUL character at byte {at}; JavaScript source cannot contain one, remove it"
            )));
        }
        let limits = limits_from(&input)?;
        let input_json = serde_json::to_string(input.get("input").unwrap_or(&Value::Null))
            .map_err(|e| {
                NodeError::invalid_input(format!("input could not be serialised as JSON: {e}"))
            })?;
        let (outcome, warnings) = execute(Arc::new(script), input_json, limits, ctx).await;
        Ok(outputs(outcome, warnings))
    }
}

/// Reads the limits through the spec (its defaults and ranges: the engine's own check, for
/// direct callers that did not go through the engine).
fn limits_from(input: &Values) -> Result<Limits, NodeError> {
    let timeout_ms = input::int(input, input::port(&SPEC, "timeout_ms")?)?.unsigned_abs();
    let memory_mb = usize::try_from(input::int(input, input::port(&SPEC, "memory_mb")?)?)
        .map_err(|_| NodeError::internal("memory_mb passed its range check but is not a size"))?;
    Ok(Limits {
        timeout: Duration::from_millis(timeout_ms),
        memory_bytes: memory_mb * 1024 * 1024,
        max_stack_bytes: MAX_STACK_BYTES,
    })
}

/// Script threads abandoned inside a native operation that are still running, process-wide.
static STUCK_THREADS: AtomicUsize = AtomicUsize::new(0);
/// Beyond this many stuck threads new runs are refused rather than letting them eat every core.
const MAX_STUCK_THREADS: usize = 4;

const RUNNING: u8 = 0;
const FINISHED: u8 = 1;
const ABANDONED: u8 = 2;

/// Who lets go of a script thread first: the thread finishing, or its caller abandoning it. The
/// interrupt handler reads `ABANDONED` as "stop"; an abandoned thread is counted until it ends.
#[derive(Clone)]
pub(crate) struct Lifecycle(Arc<AtomicU8>);

impl Lifecycle {
    fn new() -> Self {
        Lifecycle(Arc::new(AtomicU8::new(RUNNING)))
    }

    pub(crate) fn is_abandoned(&self) -> bool {
        self.0.load(Ordering::Relaxed) == ABANDONED
    }

    /// The caller stops waiting (deadline, cancellation, or its future was dropped).
    fn abandon(&self) {
        if self
            .0
            .compare_exchange(RUNNING, ABANDONED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            STUCK_THREADS.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// The script thread is done.
    fn finish(&self) {
        if self
            .0
            .compare_exchange(RUNNING, FINISHED, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            STUCK_THREADS.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// Abandons the thread if the caller goes away before it finished.
struct AbandonOnDrop(Lifecycle);

impl Drop for AbandonOnDrop {
    fn drop(&mut self) {
        self.0.abandon();
    }
}

/// Runs the script on a script thread and waits for it, never longer than the deadline plus a
/// grace period (a native operation may not reach the interrupt check in time); also the lint's
/// warnings, found while the script thread wakes up and runs.
///
/// Script threads are cheng's own rather than tokio's blocking pool: their stack size is ours to
/// choose (the QuickJS stack limit must fit inside it whatever runtime embeds cheng), and a script
/// abandoned in a native loop does not hold up the runtime's shutdown, which waits for
/// blocking-pool tasks.
async fn execute(
    script: Arc<String>,
    input_json: String,
    limits: Limits,
    ctx: &RunContext,
) -> (Outcome, Vec<String>) {
    let started = Instant::now();
    let stuck = STUCK_THREADS.load(Ordering::Acquire);
    if stuck >= MAX_STUCK_THREADS {
        let outcome = Outcome::failed(
            Failure::new(
                ErrorKind::SandboxUnavailable,
                format!(
                    "{stuck} earlier scripts are stuck inside built-in operations that cannot be interrupted and \
still hold a thread each; new JavaScript runs are refused until they end or cheng restarts"
                ),
            ),
            limits,
            started,
        );
        return (outcome, lint::warnings(&script));
    }
    let lifecycle = Lifecycle::new();
    let _guard = AbandonOnDrop(lifecycle.clone());
    let job = engine::Job {
        script: Arc::clone(&script),
        input_json,
        limits,
        cancel: ctx.cancel.clone(),
        lifecycle: lifecycle.clone(),
        output: ctx.output.clone(),
    };
    let (send, mut receive) = tokio::sync::oneshot::channel();
    let task = Box::new(move || {
        let lifecycle = job.lifecycle.clone();
        let outcome = engine::run(job);
        lifecycle.finish();
        // The receiver is gone only when the caller stopped waiting; nothing to report then.
        let _ = send.send(outcome);
    });
    let spawned = pool::run(task, engine::THREAD_STACK_BYTES);
    // Looked over here, while the script thread wakes up, rather than before the hand-off.
    let warnings = lint::warnings(&script);
    if let Err(e) = spawned {
        let outcome = Outcome::failed(
            Failure::new(
                ErrorKind::SandboxUnavailable,
                format!("could not start the JavaScript thread: {e}"),
            ),
            limits,
            started,
        );
        return (outcome, warnings);
    }
    if let Some(outcome) = wait_on_cpu(&mut receive, limits, started) {
        return (outcome, warnings);
    }
    (wait(receive, limits, started, ctx).await, warnings)
}

/// How long the caller keeps its thread on the processor waiting for the outcome before it
/// parks: most scripts given to this node are done within it.
const WAIT_ON_CPU: Duration = Duration::from_micros(400);

/// The outcome when the script thread delivers it within [`WAIT_ON_CPU`], waited for without
/// leaving the processor; `None` to wait as usual.
///
/// A parked caller is woken through the async runtime's reactor, which on an idle machine costs
/// tens of microseconds (the waking thread's system call, then the sleeping processor's wake-up)
/// — as much as a small script takes to run. The thread yields on every turn, so a script thread
/// sharing its processor is not held up; with a single processor it does not wait at all.
fn wait_on_cpu(
    receive: &mut tokio::sync::oneshot::Receiver<Outcome>,
    limits: Limits,
    started: Instant,
) -> Option<Outcome> {
    use tokio::sync::oneshot::error::TryRecvError;
    if !several_processors() {
        return None;
    }
    let until = Instant::now() + WAIT_ON_CPU;
    loop {
        match receive.try_recv() {
            Ok(outcome) => return Some(outcome),
            Err(TryRecvError::Closed) => return Some(ended_without_result(limits, started)),
            Err(TryRecvError::Empty) if Instant::now() < until => std::thread::yield_now(),
            Err(TryRecvError::Empty) => return None,
        }
    }
}

/// Whether this process may run on more than one processor (looked up once).
fn several_processors() -> bool {
    static PROCESSORS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *PROCESSORS.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from)) > 1
}

fn ended_without_result(limits: Limits, started: Instant) -> Outcome {
    Outcome::failed(
        Failure::new(
            ErrorKind::Internal,
            "the JavaScript thread ended without a result",
        ),
        limits,
        started,
    )
}

/// Waits for the script thread's outcome (see [`execute`]).
async fn wait(
    mut receive: tokio::sync::oneshot::Receiver<Outcome>,
    limits: Limits,
    started: Instant,
    ctx: &RunContext,
) -> Outcome {
    let give_up = tokio::time::sleep(limits.timeout + ABANDON_GRACE);
    tokio::pin!(give_up);
    let cancel = ctx.cancel.clone();
    let mut cancel_deadline: Option<Instant> = None;
    loop {
        // After a cancellation, give the script the same grace to notice it.
        let grace_until = cancel_deadline;
        let cancel_grace = async move {
            match grace_until {
                Some(at) => tokio::time::sleep_until(at.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            finished = &mut receive => {
                return finished.unwrap_or_else(|_| ended_without_result(limits, started));
            }
            _ = &mut give_up => {
                return Outcome::failed(Failure::new(ErrorKind::TimedOut, format!(
                    "the script did not stop within timeout_ms={} (it is stuck inside a built-in operation \
        that cannot be interrupted); its thread was abandoned and stops at its next interrupt check",
                    limits.timeout.as_millis()
                )), limits, started);
            }
            _ = cancel.cancelled(), if cancel_deadline.is_none() => {
                cancel_deadline = Some(Instant::now() + ABANDON_GRACE);
            }
            _ = cancel_grace => {
                return Outcome::failed(Failure::new(ErrorKind::Cancelled,
                    "the run was cancelled; the script's thread was abandoned and stops at its next interrupt check"),
                    limits, started);
            }
        }
    }
}

/// The output object: every port present, `null` where it does not apply.
fn outputs(outcome: Outcome, mut warnings: Vec<String>) -> Values {
    let metrics = outcome.metrics_json();
    let Outcome {
        result,
        stdout,
        stderr,
        warnings: found_running,
        ..
    } = outcome;
    warnings.extend(found_running);
    let (value, result) = match result {
        Ok(value) => (value, Ok(())),
        Err(failed) => (
            Value::Null,
            Err(NodeError::new(failed.kind, failed.message)),
        ),
    };
    let mut out = Values::new();
    out.insert("result".into(), value);
    out.insert("isolation_level".into(), json!("quickjs"));
    out.insert("metrics".into(), metrics);
    out.insert("stdout".into(), Value::String(stdout.text));
    out.insert("stderr".into(), Value::String(stderr.text));
    out.insert(
        "warnings".into(),
        Value::Array(warnings.into_iter().map(Value::String).collect()),
    );
    failure::fill(&mut out, &result);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_is_verbatim_from_the_reference_page() {
        let names: Vec<_> = SPEC.inputs.iter().map(|p| p.name).collect();
        assert_eq!(names, ["input", "script", "timeout_ms", "memory_mb"]);
        let script = SPEC.input("script").unwrap();
        assert!(script.required);
        assert_eq!(script.control, Some(Control::CodeEditor));
        let timeout = SPEC.input("timeout_ms").unwrap();
        assert_eq!(
            (timeout.default, timeout.max),
            (Some("5000"), Some(300_000))
        );
        assert_eq!(timeout.audience, Audience::Capped);
        let memory = SPEC.input("memory_mb").unwrap();
        assert_eq!(memory.default, Some("128"));
        assert_eq!(memory.audience, Audience::Capped);
        let outputs: Vec<_> = SPEC.outputs.iter().map(|p| p.name).collect();
        assert_eq!(
            outputs,
            [
                "result",
                "isolation_level",
                "metrics",
                "stdout",
                "stderr",
                "warnings",
                "success",
                "error_kind",
                "terminal",
                "error"
            ]
        );
        assert_eq!(SPEC.gate, Some("CHENG_ENABLE_CODE_JS"));
        assert_eq!(SPEC.effects, Effects::ReadOnly);
    }

    #[test]
    fn out_of_range_limits_name_the_field() {
        let input = json!({"script": "1", "memory_mb": 0});
        let err = limits_from(input.as_object().unwrap()).unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidInput);
        assert!(err.message.contains("memory_mb"), "{}", err.message);
        let input = json!({"script": "1", "timeout_ms": 300_001});
        let err = limits_from(input.as_object().unwrap()).unwrap_err();
        assert!(
            err.message.contains("timeout_ms") && err.message.contains("300000"),
            "{}",
            err.message
        );
    }
}
