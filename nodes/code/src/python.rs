//! `tools/code_python`: a Python 3 script run by `python3 -I` inside the bubblewrap sandbox.
//! Registered only when CHENG_ENABLE_CODE_PYTHON is set.
//!
//! Decisions where the reference page is silent:
//!
//! - **Interpreter**: the host's `python3` (or `$CHENG_PYTHON`), looked up once per process on
//!   the absolute directories of PATH; version managers' shims are resolved by asking the
//!   interpreter for `sys.executable` and `sys.base_prefix`, and that prefix is mounted
//!   read-only. Not found → `LOCAL_EXECUTOR_SANDBOX_UNAVAILABLE`; never a host fallback.
//! - **Channel**: a small runner (in a private per-run directory mounted at `/run/cheng-io`)
//!   reads `input`, compiles the script as `<script>`, runs it with `input` bound, and writes
//!   `result` (or the error) as JSON to a channel it opened before the script started. The
//!   script's own stdout and stderr stay its own. The channel is a FIFO
//!   (`cheng_sandbox::channel`): nothing the script writes to it is stored on the host,
//!   and cheng keeps at most the result limit of it.
//! - **Result limit**: the result's JSON text may be at most 16 MiB
//!   (`crate::result::RESULT_LIMIT_BYTES`, a documented constant, not a port); a larger one, or
//!   more than that written to the channel by the script itself, is `LOCAL_EXECUTOR_OUTPUT_LIMIT`
//!   naming the limit.
//! - **Errors**: a syntax error or an exception is `LOCAL_EXECUTOR_SCRIPT_ERROR` with the line
//!   number; a `result` that `json.dumps` refuses (including NaN/Infinity) names its type;
//!   `MemoryError` is `LOCAL_EXECUTOR_MEMORY_LIMIT`.
//! - **Network** is always off (no switch). **memory_mb**: cgroup v2 `memory.max` on a per-run
//!   group when this process sits in a writable, delegated cgroup v2 subtree (detected once per
//!   process), with `memory.swap.max` 0 and `pids.max`; otherwise RLIMIT_AS. (What the sandbox
//!   could not enforce is listed in `metrics.sandbox_notes`, not `warnings`, which holds only the
//!   reference page's validation warnings produced before execution.) The warnings and
//!   `metrics.limits.memory` say which one was enforced; an OOM kill counted in the group's
//!   `memory.events` is `LOCAL_EXECUTOR_MEMORY_LIMIT`. No cgroup v1 hierarchy is ever touched.

use crate::ports;
use crate::result::{self, RESULT_LIMIT_BYTES};
use crate::sandboxed::{self, SandboxPorts};
use cheng_node::{
    async_trait, capability, failure, Audience, Effects, ErrorKind, Node, NodeError, NodeSpec,
    PortSpec, PortType, RunContext, Values,
};
use cheng_sandbox::channel::Channel;
use cheng_sandbox::CgroupV2;
use cheng_sandbox::IO_DIR;
use serde_json::Value;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Environment variable naming the interpreter to use instead of `python3` on PATH.
pub const PYTHON_ENV: &str = "CHENG_PYTHON";

/// The reference page's `tools/code_python`.
pub struct CodePython;

/// What the channel may carry beyond the result's JSON text: `{"ok": true, "result": ` and `}`.
const ENVELOPE_BYTES: usize = 64;

/// What a script with too large a result can do instead.
const REMEDY: &str = "return less, or write the data to a file in the workspace (allow_filesystem) and return its path";

const INPUTS: &[PortSpec] = &[
    ports::input("JSON input exposed to the script as the input variable"),
    ports::script("[Required] Python 3 script. Example: result = sum(input['values'])"),
    ports::WORKING_SUBDIR,
    ports::switch(
        "allow_filesystem",
        "Whether the script may write files to the workspace",
        &capability::FILESYSTEM,
    ),
    ports::switch(
        "allow_full_disk_readonly",
        "Whether the script may read the whole disk (for disk-wide search and file lookup). Writing is still forbidden.",
        &capability::FULL_DISK_READONLY,
    ),
    ports::REQUEST_READ_PATHS,
    PortSpec::input(
        cheng_node::policy::HOST_RULES_PORT,
        PortType::Array(&PortType::String),
        "Hosts the script may reach, through cheng's filtering proxy and within the operator's network_allow: pypi.org, *.example.com, example.com:8443, 203.0.113.7. Not set or empty: no network (urllib and requests use the proxy on their own)",
    )
    .audience(Audience::Author),
    ports::limit(
        "timeout_ms",
        "Timeout in milliseconds. Default: 5000 ms. Max: 300000 ms.",
        "5000",
        (sandboxed::MIN_TIMEOUT_MS, sandboxed::MAX_TIMEOUT_MS),
    ),
    ports::limit(
        "memory_mb",
        "Memory limit (MB). Enforced hard through cgroup v2 when available, otherwise falls back to prlimit. Default: 128 MB.",
        "128",
        (sandboxed::MEMORY_MIN, sandboxed::MEMORY_MAX),
    ),
];

const OUTPUTS: &[PortSpec] = &[
    ports::SCRIPT_OUTPUTS[0],
    ports::SCRIPT_OUTPUTS[1],
    ports::SCRIPT_OUTPUTS[2],
    ports::SCRIPT_OUTPUTS[3],
    ports::SCRIPT_OUTPUTS[4],
    ports::SCRIPT_OUTPUTS[5],
    sandboxed::SUCCESS_OUTPUT,
    failure::ERROR_KIND,
    failure::TERMINAL,
    failure::ERROR,
];

static SPEC: NodeSpec = NodeSpec {
    id: "tools/code_python",
    title: "Python executor",
    description: "Runs a Python 3 script in a bubblewrap sandbox (sharing the Shell node's OS namespace isolation). \
                  Fail-closed: when the secure launcher or python3 is unavailable it reports an error and never degrades \
                  to native execution on the host. Suited to algorithms, text processing, data transformation and \
                  scientific computing. Not suited to network requests (use Shell) or simple JSON/string transformation \
                  (use JavaScript). Network access is disabled by design. The JSON input is available as the input variable.",
    category: "code",
    inputs: INPUTS,
    outputs: OUTPUTS,
    gate: Some("CHENG_ENABLE_CODE_PYTHON"),
    effects: Effects::Sandboxed,
};

cheng_node::inventory::submit! { cheng_node::NodeRegistration::new(&CodePython) }

/// The runner executed inside the sandbox (see the module docs).
const RUNNER: &str = r#"import sys

def _cheng_codec():
    # json.loads/json.dumps through the C scanner and encoder they use themselves, without
    # importing the json package (its decoder and encoder import `re`: several milliseconds of
    # a short run). A self-check guards against this interpreter's private _json differing;
    # then the json package is used as is.
    try:
        import _json
        class Context:
            strict = True
            object_hook = None
            object_pairs_hook = None
            parse_float = float
            parse_int = int
            parse_constant = float
            memo = None
        scan = _json.make_scanner(Context())
        def default(o):
            raise TypeError("Object of type %s is not JSON serializable" % type(o).__name__)
        encode = _json.make_encoder({}, default, _json.encode_basestring_ascii, None, ": ", ", ", False, False, False)
        def loads(text):
            value, end = scan(text, 0)
            if end != len(text):
                raise ValueError("extra data")
            return value
        def dumps(value):
            return "".join(encode(value, 0))
        sample = '{"a": [1, 2.5, "\u00e9\\n", null, true, false, {}]}'
        if dumps(loads(sample)) != '{"a": [1, 2.5, "\\u00e9\\n", null, true, false, {}]}':
            raise ValueError("unexpected _json behaviour")
        return loads, dumps
    except Exception:
        import json
        return json.loads, lambda value: json.dumps(value, allow_nan=False)

def _cheng_main():
    io = "/run/cheng-io"
    limit = int(sys.argv[1])
    channel = open(io + "/result.json", "w", encoding="utf-8")
    loads, dumps = _cheng_codec()
    def report(obj):
        channel.write(dumps(obj))
        channel.close()
    with open(io + "/input.json", encoding="utf-8") as f:
        data = loads(f.read())
    with open(io + "/script.py", encoding="utf-8") as f:
        source = f.read()
    try:
        code = compile(source, "<script>", "exec")
    except SyntaxError as e:
        report({"error": "syntax", "type": type(e).__name__, "message": e.msg, "line": e.lineno, "column": e.offset,
                "text": (e.text or "").rstrip("\n")})
        return 1
    namespace = {"__name__": "__main__", "__builtins__": __builtins__, "input": data}
    try:
        exec(code, namespace)
    except MemoryError:
        report({"error": "memory", "type": "MemoryError", "message": "MemoryError"})
        sys.stderr.write("MemoryError\n")
        return 1
    except SystemExit as e:
        if e.code not in (None, 0):
            report({"error": "exit", "type": "SystemExit", "message": "the script called exit(%r)" % (e.code,), "code": e.code if isinstance(e.code, int) else 1})
            return e.code if isinstance(e.code, int) else 1
    except BaseException as e:
        # Imported only here: traceback costs milliseconds at start-up.
        import traceback
        line = None
        for frame in traceback.extract_tb(e.__traceback__):
            if frame.filename == "<script>":
                line = frame.lineno
        sys.stderr.write(traceback.format_exc())
        report({"error": "exception", "type": type(e).__name__, "message": str(e), "line": line})
        return 1
    result = namespace.get("result")
    try:
        text = dumps(result)
    except (TypeError, ValueError) as e:
        report({"error": "result", "type": type(result).__name__, "message": str(e)})
        return 1
    # The encoder escapes everything outside ASCII: characters are bytes.
    if len(text) > limit:
        report({"error": "too_large", "type": type(result).__name__, "message": "", "bytes": len(text)})
        return 1
    channel.write('{"ok": true, "result": ' + text + '}')
    channel.close()
    return 0

sys.exit(_cheng_main())
"#;

/// The interpreter and the directories it needs.
#[derive(Debug, Clone)]
struct Interpreter {
    executable: PathBuf,
    prefixes: Vec<PathBuf>,
}

/// Finds python3 once per process (asking it for its real executable and prefixes).
fn interpreter() -> Result<Interpreter, NodeError> {
    static FOUND: OnceLock<Result<Interpreter, NodeError>> = OnceLock::new();
    FOUND.get_or_init(find_interpreter).clone()
}

fn find_interpreter() -> Result<Interpreter, NodeError> {
    let unavailable = |m: String| NodeError::new(ErrorKind::SandboxUnavailable, m);
    let candidate = match std::env::var_os(PYTHON_ENV) {
        Some(p) => PathBuf::from(p),
        None => {
            let path = std::env::var_os("PATH").unwrap_or_default();
            std::env::split_paths(&path)
                .chain(["/usr/local/bin".into(), "/usr/bin".into()])
                .filter(|d| d.is_absolute())
                .map(|d| d.join("python3"))
                .find(|p| p.is_file())
                .ok_or_else(|| {
                    unavailable(
                        "python3 is not installed (not found on PATH, /usr/local/bin or /usr/bin); nothing ran and code_python \
                         never runs on the host instead. Install python3 or set CHENG_PYTHON=/path/to/python3"
                            .into(),
                    )
                })?
        }
    };
    let mut cmd = std::process::Command::new(&candidate);
    // Only stdin, stdout and stderr reach the interpreter, as for every process cheng runs.
    cheng_exec::fds::close_inherited_on_exec(&mut cmd);
    let out = cmd
        .args([
            "-I",
            "-c",
            "import sys; print(sys.executable); print(sys.base_prefix); print(sys.prefix)",
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| {
            unavailable(format!(
                "python3 at {} cannot be started: {e}; nothing ran",
                candidate.display()
            ))
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    if !out.status.success() || lines.len() < 3 {
        return Err(unavailable(format!(
            "python3 at {} did not report its installation ({}); nothing ran",
            candidate.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let executable = Path::new(lines[0]).canonicalize().map_err(|e| {
        unavailable(format!(
            "python3's executable {} cannot be resolved: {e}",
            lines[0]
        ))
    })?;
    let mut prefixes = Vec::new();
    for p in &lines[1..3] {
        if let Ok(c) = Path::new(p).canonicalize() {
            if !c.starts_with("/usr") && !prefixes.contains(&c) {
                prefixes.push(c);
            }
        }
    }
    if !executable.starts_with("/usr") && !prefixes.iter().any(|p| executable.starts_with(p)) {
        if let Some(dir) = executable.parent() {
            prefixes.push(dir.to_path_buf());
        }
    }
    Ok(Interpreter {
        executable,
        prefixes,
    })
}

#[async_trait]
impl Node for CodePython {
    fn spec(&self) -> &'static NodeSpec {
        &SPEC
    }

    fn approval_request(
        &self,
        ctx: &RunContext,
        input: &Values,
    ) -> Result<cheng_node::ApprovalRequest, NodeError> {
        Ok(sandboxed::script_card(ctx, input, "python"))
    }

    async fn run(&self, ctx: &RunContext, input: Values) -> Result<Values, NodeError> {
        let ports = SandboxPorts::read(ctx, &SPEC, &input)?;
        let mut warnings = Vec::new();
        if ports.script.trim().is_empty() {
            warnings.push("script is empty: result will be null".to_string());
        }
        ports.approve_read_paths(ctx, "code_python").await?;
        let python = interpreter()?;

        let (_io_guard, io) = sandboxed::io_dir()?;
        let write = |name: &str, text: &str| {
            std::fs::write(io.join(name), text).map_err(|e| {
                NodeError::internal(format!("cannot write {name} for the sandbox: {e}"))
            })
        };
        let json = serde_json::to_string(&ports.input)
            .map_err(|e| NodeError::internal(format!("input cannot be serialised: {e}")))?;
        write("input.json", &json)?;
        write("script.py", &ports.script)?;
        write("runner.py", RUNNER)?;

        let command: Vec<OsString> = vec![
            python.executable.clone().into(),
            "-I".into(),
            format!("{IO_DIR}/runner.py").into(),
            RESULT_LIMIT_BYTES.to_string().into(),
        ];
        let mut request = ports.request(ctx, command);
        let channel = Channel::create(&io, "result.json", RESULT_LIMIT_BYTES + ENVELOPE_BYTES)
            .map_err(|e| {
                NodeError::internal(format!(
                    "cannot create the result channel for the sandbox: {e}"
                ))
            })?;
        request.io_dir = Some(io.clone());
        request.io_outputs = vec!["result.json".into()];
        request.extra_ro = python.prefixes.clone();
        request.memory_cgroup = Some(CgroupV2::detect_once());

        let (run, received) = channel.collect(sandboxed::run(ctx, request)).await;
        let run = run?;
        // The reference page's `warnings` are validation warnings produced before execution; what the
        // sandbox could not enforce here is a post-run note and goes into `metrics.sandbox_notes`.
        let notes = sandboxed::enforcement_warnings(&run);

        let overflow = received.exceeded().then_some(received.total_bytes);
        let (result, failure) = match sandboxed::oom_failure(&run) {
            Some(oom) => (Value::Null, Some(oom)),
            None => interpret(
                std::str::from_utf8(&received.bytes).ok(),
                overflow,
                &run.output,
                ports.timeout_ms,
            ),
        };
        let mut out = sandboxed::outputs(&run, result, warnings, failure);
        if let Some(Value::Object(metrics)) = out.get_mut("metrics") {
            metrics.insert("sandbox_notes".into(), Value::from(notes));
        }
        Ok(out)
    }
}

/// The result and failure from the channel (its text, and its size when it carried more than
/// the channel keeps) and the process outcome.
fn interpret(
    channel: Option<&str>,
    overflow: Option<u64>,
    out: &cheng_exec::ProcessOutput,
    timeout_ms: u64,
) -> (Value, Option<(ErrorKind, String)>) {
    let process_failure = sandboxed::classify(out, timeout_ms);
    if let Some((kind @ (ErrorKind::TimedOut | ErrorKind::Cancelled), message)) = process_failure {
        return (Value::Null, Some((kind, message)));
    }
    if let Some(total) = overflow {
        let size = format!("{total} bytes were written to the result channel");
        return (
            Value::Null,
            Some((ErrorKind::OutputLimit, result::too_large(&size, REMEDY))),
        );
    }
    let report: Option<Value> = channel.and_then(|t| serde_json::from_str(t).ok());
    match report {
        Some(r) if r.get("ok") == Some(&Value::Bool(true)) && process_failure.is_none() => {
            (r.get("result").cloned().unwrap_or(Value::Null), None)
        }
        Some(r) if r.get("error").is_some() => {
            let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            let line = r.get("line").and_then(Value::as_i64);
            let at = line.map(|l| format!(" at line {l}")).unwrap_or_default();
            let failure = match s("error").as_str() {
                "syntax" => (
                    ErrorKind::ScriptError,
                    format!("{}: {}{at}{}", s("type"), s("message"), r.get("column").and_then(Value::as_i64).map(|c| format!(", column {c}")).unwrap_or_default()),
                ),
                "memory" => (ErrorKind::MemoryLimit, "the script raised MemoryError: it exceeded memory_mb".into()),
                "result" => (
                    ErrorKind::ScriptError,
                    format!("result of type {} is not JSON-serialisable ({}); convert it to lists, dicts, strings, numbers, booleans or None", s("type"), s("message")),
                ),
                "exit" => (ErrorKind::NonZeroExit, s("message")),
                "too_large" => {
                    let bytes = r.get("bytes").and_then(Value::as_u64).unwrap_or_default();
                    (ErrorKind::OutputLimit, result::too_large(&format!("its JSON is {bytes} bytes"), REMEDY))
                }
                _ => (ErrorKind::ScriptError, format!("{}: {}{at}", s("type"), s("message"))),
            };
            (Value::Null, Some(failure))
        }
        _ => {
            let failure = process_failure.unwrap_or((
                ErrorKind::ScriptError,
                "the script ended without reporting a result (it may have closed or replaced the result channel)".into(),
            ));
            (Value::Null, Some(failure))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cheng_exec::{ProcessOutput, Termination};
    use std::time::Duration;

    fn exited(code: i32, stderr: &str) -> ProcessOutput {
        ProcessOutput {
            exit_code: Some(code),
            termination: Termination::Exited,
            signal: None,
            duration: Duration::from_millis(5),
            stdout: cheng_node::text::head_tail(b"", 10),
            stderr: cheng_node::text::head_tail(stderr.as_bytes(), 1024),
            spawn_error: None,
            usage: None,
        }
    }

    /// The runner's codec with and without the C fast path, in the host's python3.
    #[test]
    fn the_runner_codec_matches_json_with_and_without_the_fast_path() {
        let Ok(python) = find_interpreter() else {
            eprintln!("skipped: no python3 here");
            return;
        };
        let codec = RUNNER.split("def _cheng_main").next().unwrap_or_default();
        for (block, json_expected) in [("", "False"), ("sys.modules['_json'] = None\n", "True")] {
            let check = format!(
                "import sys\n{block}{codec}\nloads, dumps = _cheng_codec()\n\
                 v = loads('{{\"a\": [1, 2.5, \"\\u00e9\", null, true]}}')\n\
                 try:\n    dumps(float('nan'))\n    nan = 'accepted'\nexcept ValueError:\n    nan = 'refused'\n\
                 print(dumps(v), nan, 'json' in sys.modules)"
            );
            let out = std::process::Command::new(&python.executable)
                .args(["-I", "-c", &check])
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert_eq!(
                stdout.trim(),
                format!("{{\"a\": [1, 2.5, \"\\u00e9\", null, true]}} refused {json_expected}"),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }

    #[test]
    fn results_and_errors_come_from_the_channel() {
        let (v, f) = interpret(
            Some(r#"{"ok": true, "result": [1, 2]}"#),
            None,
            &exited(0, ""),
            5000,
        );
        assert_eq!((v, f), (serde_json::json!([1, 2]), None));
        let (_, f) = interpret(
            Some(
                r#"{"error":"syntax","type":"SyntaxError","message":"invalid syntax","line":3,"column":5}"#,
            ),
            None,
            &exited(1, ""),
            5000,
        );
        let (kind, msg) = f.unwrap();
        assert_eq!(kind, ErrorKind::ScriptError);
        assert!(msg.contains("line 3"), "{msg}");
        let (_, f) = interpret(
            Some(r#"{"error":"result","type":"set","message":"x"}"#),
            None,
            &exited(1, ""),
            5000,
        );
        assert!(f.unwrap().1.contains("type set"));
        let (_, f) = interpret(None, None, &exited(1, "MemoryError\n"), 5000);
        assert_eq!(f.unwrap().0, ErrorKind::MemoryLimit);
        // The runner's own refusal and a channel flooded by the script both name the limit.
        let (_, f) = interpret(
            Some(r#"{"error":"too_large","type":"str","message":"","bytes":20000000}"#),
            None,
            &exited(1, ""),
            5000,
        );
        let (kind, msg) = f.unwrap();
        assert_eq!(kind, ErrorKind::OutputLimit);
        assert!(
            msg.contains("16 MiB result limit") && msg.contains("20000000 bytes"),
            "{msg}"
        );
        let (v, f) = interpret(
            Some(r#"{"ok": true, "result": 1}"#),
            Some(419_430_426),
            &exited(0, ""),
            5000,
        );
        let (kind, msg) = f.unwrap();
        assert_eq!((v, kind), (Value::Null, ErrorKind::OutputLimit));
        assert!(
            msg.contains("16 MiB result limit") && msg.contains("419430426 bytes"),
            "{msg}"
        );
    }
}
