//! `cheng run`, `cheng graph run` and `cheng graph check`.

use crate::args::{GraphRunArgs, RunArgs};
use crate::listing::print_json;
use crate::out::{errln, outln};
use crate::{approve, complain, plural, render, set, Exit};
use cheng_engine::{
    Engine, EventSink, Graph, GraphStatus, JsonlSink, NodeStatus, NullSink, RunOptions,
    ValidationError, ValidationErrorKind,
};
use cheng_node::policy::Policy;
use cheng_node::{CancellationToken, Registry, Scope, ScopeKind, Values};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub fn run(args: RunArgs, policy: Arc<Policy>) -> Exit {
    let (mut config, mut inputs) = match run_values(&args) {
        Ok(values) => values,
        Err(e) => {
            complain(e);
            return Exit::Usage;
        }
    };
    let registry = Registry::from_inventory();
    let node_type = set::node_type(&registry, &args.node_type);
    let spec = registry.get(&node_type).map(|node| node.spec());
    if let Some(spec) = spec {
        set::typed_text(spec, &args.set, &mut inputs);
        set::typed_text(spec, &args.config_set, &mut config);
        if let Err(e) = set::command_line(spec, &args.command_line, &mut inputs) {
            complain(e);
            return Exit::Usage;
        }
    }
    if args.fail_on.is_some()
        && registry
            .get(&node_type)
            .is_some_and(|n| !n.spec().outputs.iter().any(|p| p.name == "diagnostics"))
    {
        complain(format!("--fail-on: {node_type} reports no diagnostics; it applies to nodes that do, such as tools/workspace_markdown"));
        return Exit::Usage;
    }
    if args.output.format == render::Format::Diff && node_type != "tools/workspace_markdown" {
        complain(format!("--format diff: {node_type} suggests no edits; it applies to tools/workspace_markdown with operation format_suggestions"));
        return Exit::Usage;
    }
    let workspace = set::workspace(args.workspace.as_deref());
    let Some((options, events)) = options(workspace, args.events.as_deref()) else {
        return Exit::Usage;
    };
    let workspace_root = options.workspace.clone();
    // On a terminal, a process's output is shown as it arrives rather than after it exits.
    let echo =
        live_echo(&args, spec, &inputs).then(|| crate::live::Echo::new(options.events.clone()));
    let options = match &echo {
        Some(echo) => options.events(echo.clone()),
        None => options,
    };
    let scope = match &args.session {
        // One node, one call: nothing it leaves in its scope is seen again (sessions, freshness).
        None => ScopeKind::Call,
        Some(name) => {
            if let Err(e) = cheng_node::scope::check_session_name(name) {
                complain(format!("--session: {e}"));
                return Exit::Usage;
            }
            if cheng_node::scope::sessions_dir().is_none() {
                complain("--session needs a state directory: set XDG_STATE_HOME (an absolute path) or HOME");
                return Exit::Usage;
            }
            ScopeKind::Session(name.clone())
        }
    };
    let approver = approve::approver(
        &args.approval,
        options.cancel.clone(),
        vec![node_type.clone()],
    );
    let options = options.approver(approver).scope(Scope::new(scope));
    let engine = Engine::new(registry, policy);
    let requested = inputs.clone();
    let outcome = {
        let node_type = node_type.clone();
        with_runtime(options, |options| async move {
            engine.run_node(&node_type, config, inputs, options).await
        })
    };
    report_event_errors(events.as_deref());
    match outcome {
        Err(e) => {
            complain(e);
            Exit::Usage
        }
        Ok(Err(errors)) => {
            print_errors(&format!("cannot run {node_type}"), &errors);
            for hint in config_hints(&errors, &requested) {
                errln!("{hint}");
            }
            if let Some(spec) = spec {
                for hint in array_hints(spec, &errors, &requested) {
                    errln!("{hint}");
                }
            }
            Exit::Usage
        }
        Ok(Ok(result)) => {
            let mut exit = match result.status {
                NodeStatus::Succeeded => Exit::Ok,
                NodeStatus::Cancelled => Exit::Cancelled,
                NodeStatus::Failed | NodeStatus::Skipped => Exit::Failed,
            };
            let failing = args.fail_on.map(|threshold| {
                (
                    threshold,
                    render::failing_diagnostics(&result.outputs, threshold),
                )
            });
            let printed = match args.output.text_style() {
                _ if args.output.format == render::Format::Diff && !args.output.json => {
                    print_diff(&workspace_root, &result.outputs)
                }
                Some(style) => {
                    let shown = echo.as_ref().map(|e| e.shown()).unwrap_or_default();
                    render::node(&node_type, &result.outputs, style, shown).print()
                }
                None => print_json(&Value::Object(result.outputs)),
            };
            match failing {
                Some((threshold, Some(n))) if n > 0 && exit == Exit::Ok => {
                    let what = if threshold == render::Severity::Error {
                        "error"
                    } else {
                        "finding"
                    };
                    complain(format!(
                        "--fail-on {}: {n} {}",
                        format!("{threshold:?}").to_lowercase(),
                        plural(n, what, &format!("{what}s"))
                    ));
                    exit = Exit::Failed;
                }
                Some((_, None)) if result.status == NodeStatus::Succeeded => {
                    complain("--fail-on: this operation reports no diagnostics (diagnostics and link_check_local do), so it checked nothing");
                }
                _ => {}
            }
            match printed {
                Exit::Ok => exit,
                failed => failed,
            }
        }
    }
}

pub fn graph_run(args: GraphRunArgs, policy: Arc<Policy>) -> Exit {
    let engine = Engine::new(Registry::from_inventory(), policy);
    let Some(graph) = load(&args.file) else {
        return Exit::Usage;
    };
    let validated = match engine.validate(&graph) {
        Ok(v) => v,
        Err(errors) => {
            print_errors(&format!("{}: invalid graph", args.file.display()), &errors);
            return Exit::Usage;
        }
    };
    let workspace = set::workspace(args.workspace.as_deref());
    let Some((options, events)) = options(workspace, args.events.as_deref()) else {
        return Exit::Usage;
    };
    let order = validated.ids().map(str::to_string).collect();
    let approver = approve::approver(&args.approval, options.cancel.clone(), order);
    let mut options = options.approver(approver);
    if let Some(jobs) = args.jobs {
        options = options.jobs(usize::from(jobs));
    }
    let outcome = with_runtime(options, |options| async move {
        engine.run(&validated, options).await
    });
    report_event_errors(events.as_deref());
    match outcome {
        Err(e) => {
            complain(e);
            Exit::Usage
        }
        Ok(result) => {
            let exit = match result.status {
                GraphStatus::Succeeded => Exit::Ok,
                GraphStatus::Failed => Exit::Failed,
                GraphStatus::Cancelled => Exit::Cancelled,
            };
            let json = result.to_json();
            if args.output.format == render::Format::Diff {
                complain("--format diff applies to `cheng run` of tools/workspace_markdown with operation format_suggestions; printing text");
            }
            let printed = match args.output.text_style() {
                Some(style) => render::graph(&json, style).print(),
                None => print_json(&json),
            };
            match printed {
                Exit::Ok => exit,
                failed => failed,
            }
        }
    }
}

pub fn graph_check(file: &Path, policy: Arc<Policy>) -> Exit {
    let engine = Engine::new(Registry::from_inventory(), policy);
    let Some(graph) = load(file) else {
        return Exit::Usage;
    };
    match engine.validate(&graph) {
        Ok(validated) => {
            for warning in cheng_engine::lint::edge_warnings(engine.registry(), &graph) {
                errln!("cheng: warning: {warning}");
            }
            let (nodes, edges) = (validated.len(), validated.edge_count());
            let after: usize = graph.nodes.iter().map(|n| n.after.len()).sum();
            let ordering = if after == 0 {
                String::new()
            } else {
                format!(
                    ", {after} `after` {}",
                    plural(after, "dependency", "dependencies")
                )
            };
            outln!(
                "ok: {}: {nodes} {}, {edges} {}{ordering}",
                file.display(),
                plural(nodes, "node", "nodes"),
                plural(edges, "edge", "edges")
            )
        }
        Err(errors) => {
            print_errors(&format!("{}: invalid graph", file.display()), &errors);
            Exit::Usage
        }
    }
}

fn load(file: &Path) -> Option<Graph> {
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(e) => {
            complain(format!("cannot read graph {}: {e}", file.display()));
            return None;
        }
    };
    match Graph::from_json(&text) {
        Ok(graph) => Some(graph),
        Err(errors) => {
            print_errors(&format!("{}: invalid graph", file.display()), &errors);
            None
        }
    }
}

fn print_errors(what: &str, errors: &[ValidationError]) {
    let noun = if errors.len() == 1 { "error" } else { "errors" };
    complain(format!("{what} ({} {noun}):", errors.len()));
    // Each line leads with its stable code, like a node's own errors (`CODE: message`).
    for e in errors {
        errln!("  - {}: {e}", e.kind.error_kind().code());
    }
}

/// For a port refused because only the node's author may set it (or set it that high): the
/// exact `--config` that sets it as the author, for a person who is the author at the terminal.
fn config_hints(errors: &[ValidationError], requested: &Values) -> Vec<String> {
    errors
        .iter()
        .filter(|e| matches!(e.kind, ValidationErrorKind::AuthorOnly | ValidationErrorKind::AboveCap))
        .filter_map(|e| {
            let port = e.port.as_deref()?;
            let value = requested.get(port)?;
            let config = serde_json::json!({ port: value }).to_string();
            let config = cheng_node::text::shell_quote(&config);
            let config_set = cheng_node::text::shell_quote(&format!("{port}:={value}"));
            Some(if e.kind == ValidationErrorKind::AuthorOnly {
                format!("  hint: {port} is the author's to set: pass --config {config} (or --config-set {config_set}) instead of setting it in the inputs")
            } else {
                format!("  hint: as the node's author, raise the cap with --config {config} (or --config-set {config_set})")
            })
        })
        .collect()
}

/// Whether `cheng run` shows the node's process output live: text on a terminal, for a node
/// whose view is that output (shell, tests run, code nodes).
fn live_echo(args: &RunArgs, spec: Option<&cheng_node::NodeSpec>, inputs: &Values) -> bool {
    use std::io::IsTerminal;
    let Some(spec) = spec else {
        return false;
    };
    if args.output.text_style().is_none()
        || args.output.format == render::Format::Diff
        || !std::io::stdout().is_terminal()
    {
        return false;
    }
    let default = spec
        .input("operation")
        .and_then(|p| p.default)
        .and_then(|d| serde_json::from_str::<Value>(d).ok());
    let operation = inputs
        .get("operation")
        .or(default.as_ref())
        .and_then(Value::as_str)
        .unwrap_or("");
    cheng_node::view::is_process_output(spec.id, operation)
}

/// For a string given where an array of strings is expected: how to give the array.
fn array_hints(
    spec: &cheng_node::NodeSpec,
    errors: &[ValidationError],
    requested: &Values,
) -> Vec<String> {
    errors
        .iter()
        .filter(|e| e.kind == ValidationErrorKind::WrongType)
        .filter_map(|e| {
            let port = e.port.as_deref()?;
            set::array_hint(spec, port, requested.get(port)?)
        })
        .collect()
}

/// The config and inputs of `cheng run`: `--config`/`--input` (JSON, @FILE or @-), then
/// `--config-set`/`--set` on top.
fn run_values(args: &RunArgs) -> Result<(Values, Values), String> {
    if args.input.as_deref() == Some("@-") && args.config.as_deref() == Some("@-") {
        return Err(
            "--input @- and --config @- both ask for standard input; read one of them from a file"
                .into(),
        );
    }
    let mut stdin = set::read_stdin;
    let mut config = set::json_object("--config", args.config.as_deref(), &mut stdin)?;
    let mut inputs = set::json_object("--input", args.input.as_deref(), &mut stdin)?;
    set::apply("--config-set", &args.config_set, &mut config)?;
    set::apply("--set", &args.set, &mut inputs)?;
    Ok((config, inputs))
}

/// `--format diff`: the summary line on stderr, the suggested edits as a unified diff on stdout.
fn print_diff(workspace: &Path, outputs: &Values) -> Exit {
    if let Some(summary) = outputs.get("summary").and_then(Value::as_str) {
        errln!("{summary}");
    }
    if outputs.get("success") == Some(&Value::Bool(false)) {
        // The run's own exit status says it failed; the summary said why.
        return Exit::Ok;
    }
    match crate::suggested_diff::render(workspace, outputs) {
        Ok(diff) => crate::out::print(&diff),
        Err(e) => {
            complain(e);
            Exit::Failed
        }
    }
}

/// The `--events` sink, kept to report write errors after the run.
type EventFile = JsonlSink<Box<dyn std::io::Write + Send>>;

/// Run options for a checked workspace, with the event sink the flags ask for.
fn options(
    (workspace, source): (PathBuf, &str),
    events: Option<&Path>,
) -> Option<(RunOptions, Option<Arc<EventFile>>)> {
    let workspace = workspace.as_path();
    let problem = match std::fs::metadata(workspace) {
        Ok(meta) if meta.is_dir() => None,
        Ok(_) => Some("not a directory".to_string()),
        Err(e) => Some(e.to_string()),
    };
    if let Some(problem) = problem {
        complain(format!(
            "{source} {}: {problem}; pass an existing directory with --workspace DIR",
            workspace.display()
        ));
        return None;
    }
    let options = match RunOptions::new(workspace) {
        Ok(options) => options,
        Err(e) => {
            complain(format!("{source} {}: {e}", workspace.display()));
            return None;
        }
    };
    let Some(path) = events else {
        return Some((options.events(Arc::new(NullSink)), None));
    };
    // `--events jsonl` names the format (the only one): the lines go to stderr, next to the
    // `cheng:` messages, which never start with `{`.
    let writer: Box<dyn std::io::Write + Send> =
        if path == Path::new("-") || path == Path::new("jsonl") {
            Box::new(std::io::stderr())
        } else {
            match std::fs::File::create(path) {
                Ok(file) => Box::new(file),
                Err(e) => {
                    complain(format!(
                        "--events {}: cannot create the file: {e}",
                        path.display()
                    ));
                    return None;
                }
            }
        };
    let sink = Arc::new(JsonlSink::new(writer));
    let shared: Arc<dyn EventSink> = sink.clone();
    Some((options.events(shared), Some(sink)))
}

fn report_event_errors(sink: Option<&EventFile>) {
    // A closed stderr (or FILE pipe) is a reader that went away, not an error to report.
    if let Some(e) = sink
        .and_then(|s| s.take_error())
        .filter(|e| e.kind() != std::io::ErrorKind::BrokenPipe)
    {
        complain(format!("--events: writing events failed: {e}"));
    }
}

/// Runs `work` on a tokio runtime with Ctrl-C wired to the run's cancellation token: the first
/// Ctrl-C cancels (nodes kill their process groups and report), a second one exits at once.
fn with_runtime<F, Fut, T>(options: RunOptions, work: F) -> Result<T, String>
where
    F: FnOnce(RunOptions) -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let cancel: CancellationToken = options.cancel.clone();
    let result = runtime.block_on(async move {
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                // Cancel first: the message must not wait for anything (nor may anything hold
                // stderr while it waits for a person).
                cancel.cancel();
                errln!("\ncheng: cancelling (Ctrl-C again to exit at once)");
                if tokio::signal::ctrl_c().await.is_ok() {
                    std::process::exit(Exit::Cancelled as i32);
                }
            }
        });
        work(options).await
    });
    // A prompt may still be blocked reading stdin; do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(100));
    Ok(result)
}
