//! `execute`: one tool call run through the engine exactly as `cheng run` would run the node.
//!
//! The call becomes a one-node graph (id = function name, type and config from the entry,
//! inputs = the call's arguments). The engine validates it — an author or engine port in the
//! arguments, or a capped port above the entry's config, is refused and nothing runs — then
//! runs it with the runtime's own workspace, approver and cancellation token, so a person
//! approves gated calls exactly as if the node had been run directly.

use crate::call;
use crate::outcome::{Failure, Outcome, Status};
use crate::toolkit::{Entry, Tool, Toolkit};
use cheng_engine::{
    Engine, Graph, GraphNode, RunOptions, ValidatedGraph, ValidationError, ValidationErrorKind,
};
use cheng_node::{Audience, Decision, ErrorKind, FixedApprover, RunContext, Values};
use serde_json::{json, Value};
use std::sync::Arc;

pub(crate) async fn execute(
    engine: &Engine,
    toolkit: &Toolkit,
    ctx: &RunContext,
    tool_call: Option<&Value>,
    dry_run: bool,
) -> Outcome {
    let call = match call::parse(tool_call) {
        Ok(call) => call,
        Err(message) => {
            return Outcome::refused(
                Status::Invalid,
                ErrorKind::InvalidInput,
                false,
                vec![message],
            )
        }
    };
    let Some(entry) = toolkit.find(&call.name) else {
        return Outcome::refused(
            Status::Invalid,
            ErrorKind::NotFound,
            false,
            vec![unknown_tool(toolkit, &call.name)],
        );
    };
    let Some(tool) = &entry.tool else {
        return misconfigured(entry, &call.name);
    };
    let arguments = match tool.with_presets(call.arguments.clone()) {
        Ok(arguments) => arguments,
        Err(message) => {
            let mut outcome = Outcome::refused(
                Status::Invalid,
                ErrorKind::PolicyDenied,
                true,
                vec![message],
            );
            outcome.warnings = entry.warnings.clone();
            return outcome;
        }
    };
    let graph = Graph {
        nodes: vec![GraphNode {
            id: tool.name.clone(),
            node_type: tool.spec.id.to_string(),
            config: tool.config.clone(),
            inputs: arguments,
            after: Vec::new(),
        }],
        edges: Vec::new(),
    };
    let validated = match engine.validate(&graph) {
        Ok(validated) => validated,
        Err(problems) => return refused_call(entry, tool, &problems),
    };
    let mut outcome = if dry_run {
        plan(&validated, tool, ctx)
    } else {
        run(engine, &validated, tool, ctx).await
    };
    outcome.warnings = entry.warnings.clone();
    outcome
}

/// `unknown tool `x`; this toolkit offers: a, b`.
fn unknown_tool(toolkit: &Toolkit, name: &str) -> String {
    let offered: Vec<&str> = toolkit.tools().map(|t| t.name.as_str()).collect();
    if offered.is_empty() {
        format!("unknown tool `{name}`: this toolkit offers no functions")
    } else {
        format!(
            "unknown tool `{name}`; this toolkit offers: {} (action=list_tools describes them)",
            offered.join(", ")
        )
    }
}

/// The call names an entry the author got wrong: its errors, and nothing runs.
fn misconfigured(entry: &Entry, name: &str) -> Outcome {
    let mut errors = vec![format!(
        "tool `{name}` is misconfigured in exposed_tools[{}] and cannot run; the node's author must fix the entry",
        entry.index
    )];
    errors.extend(entry.errors.iter().cloned());
    let mut outcome = Outcome::refused(Status::Error, ErrorKind::InvalidInput, true, errors);
    outcome.warnings = entry.warnings.clone();
    outcome
}

/// The engine refused the call: every problem, phrased for the caller, and nothing runs.
fn refused_call(entry: &Entry, tool: &Tool, problems: &[ValidationError]) -> Outcome {
    let name = &tool.name;
    let mut policy = false;
    let errors = problems
        .iter()
        .map(|p| {
            let port = p.port.as_deref().unwrap_or("");
            match p.kind {
                ValidationErrorKind::AuthorOnly => {
                    policy = true;
                    format!(
                        "tool `{name}`: `{port}` is author-only: the toolkit's author sets it in exposed_tools[{}].config; a tool call cannot",
                        entry.index
                    )
                }
                ValidationErrorKind::EngineOnly => {
                    policy = true;
                    format!("tool `{name}`: `{port}` is set by the engine (the workspace root); a tool call cannot")
                }
                ValidationErrorKind::AboveCap => {
                    policy = true;
                    format!("tool `{name}`, argument `{port}`: {}", p.message)
                }
                _ if p.port.is_some() => format!("tool `{name}`, argument `{port}`: {}", p.message),
                _ => format!("tool `{name}`: {}", p.message),
            }
        })
        .collect();
    let kind = if policy {
        ErrorKind::PolicyDenied
    } else {
        ErrorKind::InvalidInput
    };
    let mut outcome = Outcome::refused(Status::Invalid, kind, kind.terminal(), errors);
    outcome.warnings = entry.warnings.clone();
    outcome
}

/// dry_run: what would run, and whether a person would be asked; nothing is dispatched.
///
/// The run's one approval card is built as the engine would ask it (gated input, capabilities
/// left on "ask", host read paths), which runs the node's policy checks (a shell command outside
/// the whitelist is refused here too). Checks a node makes only while running are not covered.
fn plan(validated: &ValidatedGraph, tool: &Tool, ctx: &RunContext) -> Outcome {
    let Some((node, input)) = validated.planned_input(&tool.name, &ctx.workspace) else {
        return internal(format!(
            "the validated call for `{}` has no node; this is a bug in cheng",
            tool.name
        ));
    };
    let spec = node.spec();
    // Nobody is asked: a dry run only shows the card a person would see.
    let card_ctx = RunContext {
        node_id: tool.name.clone(),
        node_type: spec.id,
        workspace: ctx.workspace.clone(),
        cancel: ctx.cancel.clone(),
        approver: Arc::new(FixedApprover(Decision::Denied)),
        scope: ctx.scope.clone(),
        output: cheng_node::Output::off(),
        approved_card: None,
        policy: Arc::clone(&ctx.policy),
    };
    let approval = match validated.planned_card(&tool.name, &card_ctx) {
        Ok(card) => card,
        Err(error) => {
            // The node refused the input before anything could run (policy, paths, ...).
            let mut outcome = Outcome::new(Status::Invalid);
            outcome.errors = vec![format!("tool `{}`: {}", tool.name, error.message)];
            outcome.failure = Some(Failure::from_error(&error));
            return outcome;
        }
    };
    let requires_approval = approval.is_some();
    let approval = approval.map_or(Value::Null, |card| json!(card));
    // What the caller may see of the input: engine-injected ports stay out.
    let shown: Values = input
        .into_iter()
        .filter(|(name, _)| {
            spec.input(name)
                .is_none_or(|p| p.audience != Audience::Engine)
        })
        .collect();
    let mut outcome = Outcome::new(Status::Validated);
    outcome.result = json!({
        "dry_run": true,
        "tool": tool.name,
        "type": spec.id,
        "input": shown,
        "requires_approval": requires_approval,
        "approval": approval,
    });
    outcome
}

/// Passes the inner run's `output_chunk` events on to the runtime node's live output (the outer
/// run coalesces and bounds them again, counting its own offsets).
struct ForwardOutput(cheng_node::Output);

impl cheng_engine::EventSink for ForwardOutput {
    fn emit(&self, event: cheng_engine::Event) {
        if let cheng_engine::Event::OutputChunk {
            stream,
            offset,
            text,
            ..
        } = event
        {
            self.0.chunk(stream, text.as_bytes(), offset);
        }
    }
}

/// Runs the validated call with the runtime's workspace, approver and cancellation.
async fn run(
    engine: &Engine,
    validated: &ValidatedGraph,
    tool: &Tool,
    ctx: &RunContext,
) -> Outcome {
    let options = match RunOptions::new(&ctx.workspace) {
        Ok(options) => options
            .jobs(1)
            .approver(Arc::clone(&ctx.approver))
            .cancel(ctx.cancel.clone())
            .scope(ctx.scope.clone()),
        Err(e) => return internal(format!("cannot run tool `{}`: {e}", tool.name)),
    };
    // The tool's live output becomes the runtime node's own (when somebody listens to it).
    let options = if ctx.output.is_on() {
        options.events(Arc::new(ForwardOutput(ctx.output.clone())))
    } else {
        options
    };
    let result = engine.run(validated, options).await;
    let Some(node) = result.nodes.into_iter().next() else {
        return internal(format!(
            "the run of tool `{}` produced no result; this is a bug in cheng",
            tool.name
        ));
    };
    let outputs = node.outputs;
    let mut outcome = Outcome::new(Status::Ok);
    if outputs.get("success") == Some(&Value::Bool(false)) {
        let code = outputs
            .get("error_kind")
            .and_then(Value::as_str)
            .unwrap_or(ErrorKind::Internal.code());
        outcome.status = if code == ErrorKind::ApprovalDenied.code() {
            Status::Denied
        } else if code == ErrorKind::Cancelled.code() {
            Status::Cancelled
        } else {
            Status::Failed
        };
        let message = outputs
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or("the tool reported success: false");
        outcome.failure = Some(Failure {
            code: code.to_string(),
            terminal: outputs
                .get("terminal")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            message: format!("tool `{}`: {message}", tool.name),
        });
    }
    outcome.result = Value::Object(outputs);
    outcome
}

fn internal(message: String) -> Outcome {
    Outcome::refused(Status::Failed, ErrorKind::Internal, true, vec![message])
}
