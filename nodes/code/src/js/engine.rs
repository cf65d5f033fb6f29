//! One script run: a fresh QuickJS runtime and context with limits, `input`, `console`, the
//! script, its promise (if any) and the conversion of its result — all on the calling thread,
//! inside a JavaScript worker process (`super::worker`).
//!
//! Creating the runtime and its context (every built-in object) is most of a small script's
//! cost, so the worker prepares the next run's pair ahead, when it has sent a run's answer
//! ([`prepare_spare`]): a call then only sets its limits and evaluates. The spare is taken out of
//! the thread's slot by the run that uses it and freed with that run; a runtime that ran a script
//! is never used again. The spare is made on the thread that will run it (QuickJS measures its
//! stack limit from the thread that created the runtime). Freeing a used runtime (a garbage
//! collection of everything the script made) also waits until the answer has gone out: the run
//! leaves it in the thread's slot for [`between_runs`].

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cheng_node::text::{head_tail, human_bytes, Bounded};
use cheng_node::ErrorKind;
use rquickjs::context::EvalOptions;
use rquickjs::promise::PromiseState;
use rquickjs::{Context, Ctx, Runtime, Value};
use serde_json::json;

use super::console::{self, Streams};
use super::convert;

/// Native stack QuickJS may use: about 6,000 nested JavaScript calls in an optimised build.
pub const MAX_STACK_BYTES: usize = 4 * 1024 * 1024;
/// The worker's stack: QuickJS's share plus headroom for the Rust frames around it.
pub const THREAD_STACK_BYTES: usize = MAX_STACK_BYTES + 2 * 1024 * 1024;

/// The file name errors and stack traces report.
const FILE_NAME: &str = "script.js";

/// The limits one run enforces.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub timeout: Duration,
    pub memory_bytes: usize,
    pub max_stack_bytes: usize,
}

/// Everything one run needs (QuickJS objects are created on the running thread).
pub struct Job {
    pub script: Arc<String>,
    pub input_json: String,
    pub limits: Limits,
    /// Live output: console lines as they are printed.
    pub output: cheng_node::Output,
}

/// Why a script failed.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub kind: ErrorKind,
    pub message: String,
}

impl Failure {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Failure {
            kind,
            message: message.into(),
        }
    }

    fn script(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::ScriptError, message)
    }
}

/// What a run produced, successful or not.
#[derive(Debug)]
pub struct Outcome {
    pub result: Result<serde_json::Value, Failure>,
    pub stdout: Bounded,
    pub stderr: Bounded,
    pub limits: Limits,
    pub duration: Duration,
    /// Bytes QuickJS had allocated when the script finished (what the memory limit counts).
    pub memory_used_bytes: Option<u64>,
    /// Warnings found while running (truncated output).
    pub warnings: Vec<String>,
}

impl Outcome {
    /// An outcome without anything from the script (it never ran or was abandoned).
    pub fn failed(failure: Failure, limits: Limits, started: Instant) -> Self {
        Outcome {
            result: Err(failure),
            stdout: head_tail(b"", 1),
            stderr: head_tail(b"", 1),
            limits,
            duration: started.elapsed(),
            memory_used_bytes: None,
            warnings: Vec::new(),
        }
    }

    pub fn metrics_json(&self) -> serde_json::Value {
        json!({
            "duration_ms": self.duration.as_millis() as u64,
            "duration_us": self.duration.as_micros() as u64,
            "memory_used_bytes": self.memory_used_bytes,
            "memory_limit_bytes": self.limits.memory_bytes,
            "timeout_ms": self.limits.timeout.as_millis() as u64,
            "max_stack_bytes": self.limits.max_stack_bytes,
            "stdout_bytes": self.stdout.total_bytes,
            "stderr_bytes": self.stderr.total_bytes,
            "limits_enforced": [
                "timeout: QuickJS interrupt handler; past it by one second the worker process is killed (a built-in that never reaches the handler); RLIMIT_CPU on the worker",
                "memory: QuickJS allocator limit; RLIMIT_AS on the worker",
                "stack: QuickJS native stack limit",
                "cancellation: the worker process is killed",
            ],
        })
    }
}

/// Why the interrupt handler stopped the script (cancellation kills the worker instead).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Timeout,
}

/// A runtime and its context that no script has run in yet, with `console` installed (writing
/// to `streams`).
struct Pristine {
    // Declared first: the context goes before its runtime.
    context: Context,
    runtime: Runtime,
    streams: Streams,
}

/// What a pristine runtime and context take (QuickJS's own count, which the memory limit
/// counts), measured once per process: every pristine pair is made the same way, and the count
/// walks every object, so it is not measured again on each run's path.
static PRISTINE_BYTES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();

fn pristine_bytes(runtime: &Runtime) -> usize {
    *PRISTINE_BYTES
        .get_or_init(|| usize::try_from(runtime.memory_usage().malloc_size).unwrap_or(usize::MAX))
}

thread_local! {
    /// This thread's spare for its next run.
    static SPARE: RefCell<Option<Pristine>> = const { RefCell::new(None) };
    /// The runtime of this thread's last run, not freed yet.
    static USED: RefCell<Option<Runtime>> = const { RefCell::new(None) };
}

/// Frees the last run's runtime.
fn free_used() {
    let used = USED.with(|used| used.try_borrow_mut().ok().and_then(|mut slot| slot.take()));
    drop(used);
}

/// What the worker does once its answer has gone out: frees the last run's runtime and
/// prepares the next run's.
pub fn between_runs() {
    free_used();
    prepare_spare();
}

fn pristine() -> Result<Pristine, Failure> {
    let runtime = Runtime::new().map_err(|e| {
        Failure::new(
            ErrorKind::SandboxUnavailable,
            format!("the QuickJS runtime could not be created: {e}"),
        )
    })?;
    let context = Context::full(&runtime).map_err(|e| {
        Failure::new(
            ErrorKind::MemoryLimit,
            format!("the QuickJS context could not be created within memory_mb: {e}"),
        )
    })?;
    // The console's native functions belong to the context; the run gives them its output.
    let streams = Streams::new(cheng_node::Output::off());
    context
        .with(|ctx| console::install(&ctx, &streams))
        .map_err(|e| {
            Failure::new(
                ErrorKind::Internal,
                format!(
                    "the sandbox's console could not be installed: {e}; this is a bug in cheng"
                ),
            )
        })?;
    Ok(Pristine {
        context,
        runtime,
        streams,
    })
}

/// Makes this thread's spare for its next run, unless it has one.
pub fn prepare_spare() {
    SPARE.with(|spare| {
        let Ok(mut slot) = spare.try_borrow_mut() else {
            return;
        };
        if slot.is_none() {
            *slot = pristine().ok();
        }
    });
}

/// This thread's spare, taken out of its slot (or a new pair when there is none).
fn take_pristine() -> Result<Pristine, Failure> {
    match SPARE.with(|spare| spare.try_borrow_mut().ok().and_then(|mut slot| slot.take())) {
        Some(spare) => Ok(spare),
        None => pristine(),
    }
}

/// Runs one job to completion on the current thread.
pub fn run(job: Job) -> Outcome {
    let started = Instant::now();
    let deadline = started + job.limits.timeout;
    let stop: Rc<Cell<Option<Stop>>> = Rc::new(Cell::new(None));
    // Left by a caller that does not call `between_runs`.
    free_used();

    let Pristine {
        context,
        runtime,
        streams,
    } = match take_pristine() {
        Ok(pair) => pair,
        Err(failure) => return Outcome::failed(failure, job.limits, started),
    };
    streams.set_output(job.output.clone());
    runtime.set_memory_limit(job.limits.memory_bytes);
    // The context was made before the limit was set: it must fit within it, as when it is made
    // under the limit.
    let made = pristine_bytes(&runtime);
    if made > job.limits.memory_bytes {
        return Outcome::failed(
            Failure::new(
                ErrorKind::MemoryLimit,
                format!(
                    "the QuickJS context could not be created within memory_mb: it takes {} alone",
                    human_bytes(made as u64)
                ),
            ),
            job.limits,
            started,
        );
    }
    runtime.set_max_stack_size(job.limits.max_stack_bytes);
    {
        let stop = stop.clone();
        runtime.set_interrupt_handler(Some(Box::new(move || {
            if stop.get().is_some() {
                return true;
            }
            let reason = (Instant::now() >= deadline).then_some(Stop::Timeout);
            stop.set(reason);
            reason.is_some()
        })));
    }

    let result = context.with(|ctx| evaluate(&ctx, &job, &stop, deadline));
    drop(context);
    // The one count of what QuickJS holds (it walks every object): for the metric, and for the
    // diagnosis of an exception without a value (near the limit, that is running out of memory).
    let used = u64::try_from(runtime.memory_usage().malloc_size).ok();
    let near_limit = used.is_some_and(|u| u as f64 >= job.limits.memory_bytes as f64 * 0.9);
    let result = result.map_err(|raw| finalize(raw, stop.get(), near_limit, &job.limits));
    let (stdout, stderr) = streams.finish();
    // Freed after the answer has gone out (`between_runs`), or by the thread's next run.
    USED.with(|used| match used.try_borrow_mut() {
        Ok(mut slot) => *slot = Some(runtime),
        Err(_) => drop(runtime),
    });
    let mut warnings = Vec::new();
    for (name, stream) in [("stdout", &stdout), ("stderr", &stderr)] {
        if stream.truncated {
            warnings.push(format!(
                "{name} was {} in all; only its first and last {} were kept",
                human_bytes(stream.total_bytes),
                human_bytes(console::STREAM_CAP as u64 / 2)
            ));
        }
    }
    Outcome {
        result,
        stdout,
        stderr,
        limits: job.limits,
        duration: started.elapsed(),
        memory_used_bytes: used,
        warnings,
    }
}

/// A failure as seen inside the context, before the stop reason and memory state are known.
enum Raw {
    Failure(Failure),
    /// A JavaScript exception, already described; `oom` when QuickJS reported "out of memory",
    /// `empty` when the thrown value was missing (QuickJS could not even allocate the error).
    Exception {
        description: String,
        oom: bool,
        empty: bool,
    },
}

fn finalize(raw: Raw, stop: Option<Stop>, near_limit: bool, limits: &Limits) -> Failure {
    match stop {
        Some(Stop::Timeout) => {
            return Failure::new(
                ErrorKind::TimedOut,
                format!(
                    "the script ran longer than timeout_ms={} and was stopped; raise timeout_ms (at most 300000) or do less work",
                    limits.timeout.as_millis()
                ),
            )
        }
        None => {}
    }
    match raw {
        Raw::Failure(f) => f,
        Raw::Exception { oom, empty, .. } if oom || (empty && near_limit) => Failure::new(
            ErrorKind::MemoryLimit,
            format!(
                "the script exceeded memory_mb={} (QuickJS ran out of memory); raise memory_mb (at most 2048) or hold less data",
                limits.memory_bytes / (1024 * 1024)
            ),
        ),
        Raw::Exception { description, .. } => Failure::script(description),
    }
}

fn evaluate<'js>(
    ctx: &Ctx<'js>,
    job: &Job,
    stop: &Rc<Cell<Option<Stop>>>,
    deadline: Instant,
) -> Result<serde_json::Value, Raw> {
    let input = if job.input_json == "null" {
        Value::new_null(ctx.clone())
    } else {
        ctx.json_parse(job.input_json.as_str())
            .map_err(|e| exception(ctx, e, "reading input"))?
    };
    ctx.globals()
        .set("input", input)
        .map_err(|e| exception(ctx, e, "setting input"))?;

    let mut options = EvalOptions::default();
    options.global = true;
    options.strict = false;
    options.backtrace_barrier = true;
    options.filename = Some(FILE_NAME.to_string());
    let value: Value = ctx
        .eval_with_options(job.script.as_str(), options)
        .map_err(|e| exception(ctx, e, ""))?;

    // Run the job queue: promise reactions (and their console output) happen before the result
    // is read, as in any JavaScript host; a promise result is awaited here.
    let promise = value.as_promise().cloned();
    loop {
        if stop.get().is_some() || Instant::now() >= deadline {
            stop.set(stop.get().or(Some(Stop::Timeout)));
            return Err(Raw::Failure(Failure::script("stopped")));
        }
        if ctx.execute_pending_job() {
            continue;
        }
        break;
    }
    if stop.get().is_some() {
        return Err(Raw::Failure(Failure::script("stopped")));
    }
    let value =
        match promise {
            None => value,
            Some(promise) => match promise.state() {
                PromiseState::Resolved => {
                    promise.result::<Value>().unwrap_or(Ok(value)).map_err(|e| exception(ctx, e, ""))?
                }
                PromiseState::Rejected => {
                    let reason = match promise.result::<Value>() {
                        Some(Err(rquickjs::Error::Exception)) => ctx.catch(),
                        _ => Value::new_undefined(ctx.clone()),
                    };
                    let d = describe(ctx, &reason);
                    return Err(Raw::Exception {
                        description: format!("the promise was rejected: {}", d.text),
                        oom: d.oom,
                        empty: d.empty,
                    });
                }
                PromiseState::Pending => return Err(Raw::Failure(Failure::script(
                    "the script's promise never settled: nothing was left to run (this sandbox has no timers or I/O)",
                ))),
            },
        };
    let converted =
        convert::to_json(ctx, value, job.limits.memory_bytes, deadline).and_then(|json| {
            // The walk bounded the size from below; this is the exact length of the JSON text.
            match convert::json_len_within(&json, crate::result::RESULT_LIMIT_BYTES) {
                Some(_) => Ok(json),
                None => Err(convert::too_large_for_the_limit(&format!(
                    "its JSON text is more than {} bytes",
                    crate::result::RESULT_LIMIT_BYTES
                ))),
            }
        });
    converted.map_err(|e| match e {
        convert::Error::Shape(message) => Raw::Failure(Failure::script(message)),
        convert::Error::TooLarge(message) => {
            Raw::Failure(Failure::new(ErrorKind::OutputLimit, message))
        }
        convert::Error::Deadline => {
            stop.set(Some(Stop::Timeout));
            Raw::Failure(Failure::script("stopped"))
        }
        convert::Error::Js(e) => exception(ctx, e, "converting result"),
    })
}

/// Turns an rquickjs error (usually a pending JavaScript exception) into a raw failure.
fn exception(ctx: &Ctx<'_>, error: rquickjs::Error, during: &str) -> Raw {
    match error {
        rquickjs::Error::Exception => {
            let thrown = ctx.catch();
            let mut d = describe(ctx, &thrown);
            if !during.is_empty() {
                d.text = format!("{} (while {during})", d.text);
            }
            Raw::Exception {
                description: d.text,
                oom: d.oom,
                empty: d.empty,
            }
        }
        rquickjs::Error::Allocation => Raw::Exception {
            description: "out of memory".into(),
            oom: true,
            empty: true,
        },
        other => Raw::Failure(Failure::script(if during.is_empty() {
            other.to_string()
        } else {
            format!("{other} (while {during})")
        })),
    }
}

struct Description {
    text: String,
    oom: bool,
    empty: bool,
}

/// `TypeError: x is not a function (script.js line 3, column 5)` followed by the stack.
fn describe<'js>(ctx: &Ctx<'js>, thrown: &Value<'js>) -> Description {
    if thrown.type_of().is_void() {
        return Description {
            text: "the script threw undefined".into(),
            oom: false,
            empty: true,
        };
    }
    let Some(object) = thrown.as_object().filter(|_| thrown.is_error()) else {
        return Description {
            text: format!("uncaught exception: {}", console::display(ctx, thrown)),
            oom: false,
            empty: false,
        };
    };
    let get = |key: &str| {
        object
            .get::<_, Option<rquickjs::Coerced<String>>>(key)
            .ok()
            .flatten()
            .map(|s| s.0)
    };
    let name = get("name").unwrap_or_else(|| "Error".into());
    let message = get("message").unwrap_or_default();
    let stack = get("stack").unwrap_or_default();
    let oom = message == "out of memory";
    let mut text = format!("{name}: {message}");
    if message.contains("stack size exceeded") || message == "stack overflow" {
        text.push_str(" (the script recursed too deeply; the native stack is limited to 4 MiB)");
    }
    if name == "SyntaxError" {
        if message.contains("await") {
            text.push_str(" (top-level await is not supported: wrap the code in (async () => { ... })() and the promise's value becomes result)");
        } else if message.contains("return") {
            text.push_str(
                " (the value of the final expression is the result: write `value` instead of `return value`)",
            );
        } else if message.contains("import") {
            text.push_str(" (modules are not available in this sandbox)");
        }
    }
    if let Some((line, column)) = location(&stack) {
        text.push_str(&format!(" at {FILE_NAME} line {line}, column {column}"));
    }
    let stack = stack.trim_end();
    if !stack.is_empty() {
        text.push('\n');
        text.push_str(stack);
    }
    Description {
        text,
        oom,
        empty: false,
    }
}

/// The first `script.js:LINE:COL` in a QuickJS stack trace.
fn location(stack: &str) -> Option<(u32, u32)> {
    let needle = format!("{FILE_NAME}:");
    let start = stack.find(&needle)? + needle.len();
    let mut parts = stack[start..].split(|c: char| !c.is_ascii_digit());
    let line = parts.next()?.parse().ok()?;
    let column = parts.next().and_then(|c| c.parse().ok()).unwrap_or(0);
    Some((line, column))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(script: &str, memory_bytes: usize, timeout: Duration) -> Job {
        Job {
            script: Arc::new(script.to_string()),
            input_json: "null".into(),
            limits: Limits {
                timeout,
                memory_bytes,
                max_stack_bytes: MAX_STACK_BYTES,
            },
            output: cheng_node::Output::off(),
        }
    }

    fn has_spare() -> bool {
        SPARE.with(|spare| spare.borrow().is_some())
    }

    /// Runs `script` on a prepared spare (checking it was the one used), on a thread with a
    /// worker's stack (the QuickJS limit must fit in it) that ran a script before, as a
    /// worker has.
    fn run_on_spare(script: &str, memory_bytes: usize, timeout: Duration) -> Outcome {
        let script = script.to_string();
        let thread = std::thread::Builder::new()
            .stack_size(THREAD_STACK_BYTES)
            .spawn(move || {
                let warm = run(job(
                    "globalThis.before = 1; 1",
                    64 * MB,
                    Duration::from_secs(5),
                ));
                assert!(warm.result.is_ok(), "{:?}", warm.result);
                prepare_spare();
                assert!(has_spare(), "a spare was prepared");
                let outcome = run(job(&script, memory_bytes, timeout));
                assert!(!has_spare(), "the run took the spare");
                outcome
            });
        thread
            .expect("the thread starts")
            .join()
            .expect("no assertion failed")
    }

    const MB: usize = 1024 * 1024;

    /// The attack: leave state behind (a global, a poisoned prototype, a replaced built-in) for
    /// the next script run on the same thread, which runs on the runtime prepared after this one.
    #[test]
    fn a_script_leaves_nothing_for_the_next_one() {
        let thread = std::thread::Builder::new().stack_size(THREAD_STACK_BYTES).spawn(|| {
            let plant = "globalThis.leak = 42; Object.prototype.polluted = 1; JSON.stringify = () => 'hijacked'; \
                         Array.prototype.map = function () { return ['hijacked']; }; 'planted'";
            let first = run(job(plant, 64 * MB, Duration::from_secs(5)));
            assert_eq!(first.result, Ok(serde_json::json!("planted")));
            prepare_spare();
            assert!(has_spare(), "a spare was prepared");
            let check = "[typeof leak, ({}).polluted === undefined, JSON.stringify({a: 1}), [1, 2].map((x) => x * 2)]";
            let second = run(job(check, 64 * MB, Duration::from_secs(5)));
            assert_eq!(second.result, Ok(serde_json::json!(["undefined", true, "{\"a\":1}", [2, 4]])));
            assert!(!has_spare(), "the run took the spare");
        });
        thread
            .expect("the thread starts")
            .join()
            .expect("no assertion failed");
    }

    /// The console is installed with the spare: each run's console writes to that run's streams
    /// only, whatever the run before it did with its own console.
    #[test]
    fn each_run_prints_to_its_own_streams() {
        let thread = std::thread::Builder::new().stack_size(THREAD_STACK_BYTES).spawn(|| {
            let first = run(job(
                "console.log('first'); globalThis.keep = console.log; console.log = () => {}; console.error('first err'); 1",
                64 * MB,
                Duration::from_secs(5),
            ));
            assert_eq!((first.stdout.text.as_str(), first.stderr.text.as_str()), ("first\n", "first err\n"));
            prepare_spare();
            assert!(has_spare(), "a spare was prepared");
            let second = run(job("console.log('second', typeof keep); 2", 64 * MB, Duration::from_secs(5)));
            assert_eq!((second.stdout.text.as_str(), second.stderr.text.as_str()), ("second undefined\n", ""));
            assert_eq!(second.result, Ok(serde_json::json!(2)));
        });
        thread
            .expect("the thread starts")
            .join()
            .expect("no assertion failed");
    }

    /// Why the pristine pair's size is measured once per process: every pair takes the same.
    #[test]
    fn every_pristine_pair_takes_the_same_bytes() {
        let thread = std::thread::Builder::new()
            .stack_size(THREAD_STACK_BYTES)
            .spawn(|| {
                let sizes: Vec<u64> = (0..3)
                    .map(|_| {
                        pristine()
                            .map(|pair| pair.runtime.memory_usage().malloc_size as u64)
                            .unwrap_or(0)
                    })
                    .collect();
                assert!(sizes[0] > 0, "{sizes:?}");
                assert!(sizes.iter().all(|&s| s == sizes[0]), "{sizes:?}");
                let pair = pristine().map_err(|f| f.message).expect("a pair is made");
                assert_eq!(pristine_bytes(&pair.runtime) as u64, sizes[0]);
            });
        thread
            .expect("the thread starts")
            .join()
            .expect("no assertion failed");
    }

    #[test]
    fn a_prepared_runtime_keeps_the_memory_limit() {
        let hog = "const parts = []; for (let i = 0; i < 32; i++) parts.push('x'.repeat(MB - 64) + i); parts.length"
            .replace("MB", &MB.to_string());
        let small = run_on_spare(&hog, 8 * MB, Duration::from_secs(30));
        assert_eq!(
            small.result.as_ref().map_err(|f| f.kind),
            Err(ErrorKind::MemoryLimit),
            "{:?}",
            small.result
        );
        let large = run_on_spare(&hog, 64 * MB, Duration::from_secs(30));
        assert_eq!(large.result, Ok(serde_json::json!(32)));
    }

    /// A limit below what the context itself takes fails as making the context under it did.
    #[test]
    fn a_prepared_context_larger_than_the_limit_is_refused() {
        let tiny = run_on_spare("1", 64 * 1024, Duration::from_secs(5));
        let failure = tiny.result.expect_err("the context does not fit in 64 KiB");
        assert_eq!(failure.kind, ErrorKind::MemoryLimit);
        assert!(failure.message.contains("memory_mb"), "{}", failure.message);
    }

    #[test]
    fn a_prepared_runtime_keeps_the_timeout_and_stack_limit() {
        let spin = run_on_spare("for (;;) {}", 64 * MB, Duration::from_millis(50));
        assert_eq!(spin.result.map_err(|f| f.kind), Err(ErrorKind::TimedOut));
        let deep = run_on_spare(
            "function f(n) { return f(n + 1) + 1; } f(0)",
            64 * MB,
            Duration::from_secs(30),
        );
        let failure = deep.result.expect_err("unbounded recursion fails");
        assert!(
            failure.message.contains("recursed too deeply"),
            "{}",
            failure.message
        );
    }

    #[test]
    fn locations_come_from_the_first_frame() {
        assert_eq!(
            location("    at f (script.js:3:5)\n    at <eval> (script.js:7:1)\n"),
            Some((3, 5))
        );
        assert_eq!(location("    at <eval> (other.js:1:1)"), None);
    }
}
