//! `tools/code_js`: JavaScript in QuickJS, inside a jailed worker process.
//!
//! QuickJS is C; a memory-safety bug in it must not hand a script cheng's process (the
//! approver, the sessions, the server's pipes). So scripts run in worker processes
//! (`cheng-sandbox-init __js-worker`, [`worker`]) that jail themselves before their first job:
//! an empty root in new namespaces (or Landlock with no rights), no network, a system call
//! allowlist (`cheng_sandbox::jail`), with RLIMIT_AS and RLIMIT_CPU set from `memory_mb`
//! and `timeout_ms` for each job. cheng keeps a small pool of them started ([`workers`]), so a
//! call pays a pipe round trip, not a process start; a worker that crashes, overruns or is
//! killed is replaced and only its call fails. Each call still gets a fresh QuickJS runtime and
//! context, so one script can never see another's state. Inside, the sandbox is the language
//! itself: there is no `std`/`os` module, no module loader, no `require`, no `fetch`, no timers
//! — only ECMAScript built-ins and a `console` whose output is captured (head+tail, 1 MiB per
//! stream) and passed on live.
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
//! - Limits: `timeout_ms` via the QuickJS interrupt handler, `memory_mb` (1–2048) via the QuickJS
//!   allocator limit, and a 4 MiB native stack limit (about 6,000 nested JavaScript calls) so deep
//!   recursion is a clear error. A built-in operation that never reaches the interrupt check (a
//!   few array built-ins over huge sparse lengths) is bounded too: one second after the deadline
//!   the worker is killed and the node returns `LOCAL_EXECUTOR_TIMED_OUT`. A cancellation kills
//!   the worker at once.
//! - Result limit: at most 16 MiB of compact JSON text (`crate::result`), checked from below while
//!   converting (a string's length before its text is copied) and exactly afterwards; past it,
//!   `LOCAL_EXECUTOR_OUTPUT_LIMIT` naming the limit.

mod console;
mod convert;
mod engine;
mod lint;
mod wire;
pub mod worker;
mod workers;

use std::time::{Duration, Instant};

use cheng_node::{
    failure, input, Effects, ErrorKind, Node, NodeError, NodeSpec, PortSpec, RunContext, Values,
};
use serde_json::{json, Value};

use crate::ports;

pub use engine::{Failure, Limits, Outcome, MAX_STACK_BYTES};
pub use workers::use_executable;

/// The node's public id.
pub const ID: &str = "tools/code_js";
/// The environment variable that must be set for the node to be registered.
pub const GATE: &str = "CHENG_ENABLE_CODE_JS";

const MAX_TIMEOUT_MS: i64 = 300_000;
/// Each worker may hold this much besides itself: keep the ceiling well below a host's memory.
const MAX_MEMORY_MB: i64 = 2048;
/// How long after the deadline cheng waits for a script stuck in a native operation.
const ABANDON_GRACE: Duration = Duration::from_secs(1);

static INPUTS: &[PortSpec] = &[
    ports::input("JSON input exposed to the script as the input variable"),
    ports::script(
        "[Required] JavaScript script. The value of the final expression is returned as result.",
    ),
    ports::limit(
        "timeout_ms",
        "Timeout (milliseconds). Default: 5000 ms. Maximum: 300000 ms.",
        "5000",
        (1, MAX_TIMEOUT_MS),
    ),
    ports::limit(
        "memory_mb",
        "Memory limit (MB). QuickJS enforces this as an internal soft limit. Default: 128 MB.",
        "128",
        (1, MAX_MEMORY_MB),
    ),
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
        Ok(execute(script, input_json, limits, ctx).await)
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

/// Runs the script in a worker and waits for its answer, never longer than the deadline plus a
/// grace period (a native operation may not reach the interrupt check in time): then, or on
/// cancellation, the worker is killed.
async fn execute(script: String, input_json: String, limits: Limits, ctx: &RunContext) -> Values {
    let started = Instant::now();
    let job = wire::Job {
        script,
        input_json,
        timeout_ms: u64::try_from(limits.timeout.as_millis()).unwrap_or(u64::MAX),
        memory_bytes: limits.memory_bytes,
        max_stack_bytes: limits.max_stack_bytes,
        live: ctx.output.is_on(),
    };
    let payload = match serde_json::to_vec(&job) {
        Ok(payload) => payload,
        Err(e) => {
            let failure = Failure::new(
                ErrorKind::Internal,
                format!("the job could not be written: {e}"),
            );
            return failed(failure, limits, started, &Jail::default(), Vec::new());
        }
    };
    let mut worker = match workers::take().await {
        Ok(worker) => worker,
        Err(e) => {
            let failure = Failure::new(e.kind, e.message);
            return failed(
                failure,
                limits,
                started,
                &Jail::default(),
                lint::warnings(&job.script),
            );
        }
    };
    let layers = Jail {
        pid: Some(worker.pid_number),
        layers: worker.layers.clone(),
    };
    if let Err(e) = worker.limit(&limits) {
        let failure = Failure::new(e.kind, e.message);
        return failed(
            failure,
            limits,
            started,
            &layers,
            lint::warnings(&job.script),
        );
    }
    enum Ending {
        Answer(Result<Box<wire::Done>, workers::Broken>),
        Deadline,
        Cancelled,
    }
    let warnings = lint::warnings(&job.script);
    let ending = tokio::select! {
        answer = worker.exchange(&payload, &ctx.output) => Ending::Answer(answer.map(Box::new)),
        _ = tokio::time::sleep_until((started + limits.timeout + ABANDON_GRACE).into()) => Ending::Deadline,
        _ = ctx.cancel.cancelled() => Ending::Cancelled,
    };
    let failure = match ending {
        Ending::Answer(Ok(done)) => {
            workers::give_back(worker);
            return answered(*done, &layers, warnings);
        }
        Ending::Answer(Err(workers::Broken::Ended)) => workers::ended(worker.end().await, &limits),
        Ending::Answer(Err(workers::Broken::Malformed(why))) => {
            drop(worker);
            Failure::new(
                ErrorKind::Internal,
                format!("the JavaScript worker's answer was not understood ({why}); it was replaced, run the script again"),
            )
        }
        Ending::Deadline => {
            drop(worker);
            Failure::new(
                ErrorKind::TimedOut,
                format!(
                    "the script ran longer than timeout_ms={} inside a built-in operation that cannot be interrupted; \
                     its worker process was killed and replaced. Raise timeout_ms (at most 300000) or do less work",
                    limits.timeout.as_millis()
                ),
            )
        }
        Ending::Cancelled => {
            drop(worker);
            Failure::new(
                ErrorKind::Cancelled,
                "the run was cancelled; the script's worker process was killed",
            )
        }
    };
    failed(failure, limits, started, &layers, warnings)
}

/// The worker a call ran in, for `metrics.worker`.
#[derive(Default)]
struct Jail {
    pid: Option<i32>,
    layers: std::sync::Arc<Vec<String>>,
}

/// What `metrics.worker` says: how the script was isolated.
fn worker_metrics(jail: &Jail) -> Value {
    json!({
        "process": "a jailed worker process (cheng-sandbox-init __js-worker), replaced after a crash, a timeout, a cancellation or a memory kill",
        "pid": jail.pid,
        "layers": *jail.layers,
        "rlimits": ["RLIMIT_AS: its address space at the call + 2 × memory_mb + 256 MiB", "RLIMIT_CPU: its CPU time so far + timeout_ms + 3 s"],
    })
}

/// The outputs of a call that got the worker's answer.
fn answered(done: wire::Done, layers: &Jail, mut warnings: Vec<String>) -> Values {
    let mut metrics = done.metrics;
    if let Some(m) = metrics.as_object_mut() {
        m.insert("worker".into(), worker_metrics(layers));
    }
    warnings.extend(done.warnings);
    let result = done.result.map_err(|(code, message)| {
        NodeError::new(
            ErrorKind::from_code(&code).unwrap_or(ErrorKind::Internal),
            message,
        )
    });
    outputs(result, metrics, done.stdout, done.stderr, warnings)
}

/// The outputs of a call that ended without an answer.
fn failed(
    failure: Failure,
    limits: Limits,
    started: Instant,
    layers: &Jail,
    warnings: Vec<String>,
) -> Values {
    let mut metrics = Outcome::failed(failure.clone(), limits, started).metrics_json();
    if let Some(m) = metrics.as_object_mut() {
        m.insert("worker".into(), worker_metrics(layers));
    }
    let result = Err(NodeError::new(failure.kind, failure.message));
    outputs(result, metrics, String::new(), String::new(), warnings)
}

/// The output object: every port present, `null` where it does not apply.
fn outputs(
    result: Result<Value, NodeError>,
    metrics: Value,
    stdout: String,
    stderr: String,
    warnings: Vec<String>,
) -> Values {
    let (value, result) = match result {
        Ok(value) => (value, Ok(())),
        Err(e) => (Value::Null, Err(e)),
    };
    let mut out = Values::new();
    out.insert("result".into(), value);
    out.insert("isolation_level".into(), json!("quickjs"));
    out.insert("metrics".into(), metrics);
    out.insert("stdout".into(), Value::String(stdout));
    out.insert("stderr".into(), Value::String(stderr));
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
    use cheng_node::{Audience, Control};

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
