//! `tools/write_stdin`: write to a session's stdin (or poll it) and collect what it printed.

use super::table::Sessions;
use super::{clamp_yield, Report, BYTES_PER_TOKEN, MAX_OUTPUT_TOKENS_PORT, OUTPUTS};
use cheng_node::{
    input, ApprovalRequest, ApprovalRule, Effects, Node, NodeError, NodeSpec, PortSpec, PortType,
    RunContext, Values,
};
use std::time::{Duration, Instant};

pub struct WriteStdin;

/// Longest `chars` accepted in one write.
pub const MAX_CHARS_BYTES: usize = 1 << 20;

const SESSION_ID: PortSpec = PortSpec::input(
    "session_id",
    PortType::Integer,
    "[Required] The session_id exec_command returned while the process was running.",
)
.default("null")
.required();

const YIELD_TIME_MS: PortSpec = PortSpec::input(
    "yield_time_ms",
    PortType::Integer,
    "How long to wait for output after writing, in ms (default 250; clamped to 250-30000). An empty write is a poll and waits at least 5000 ms, returning as soon as output arrives.",
)
.default("250");

pub static SPEC: NodeSpec = NodeSpec {
    id: "tools/write_stdin",
    title: "Write Stdin (session)",
    description: "Write characters to a running exec_command session's stdin (\"\\u0003\" sends an interrupt, SIGINT) or poll it with an empty write, and return the output since the previous call. Approval-gated like the start.",
    category: "workspace",
    inputs: &[
        SESSION_ID,
        PortSpec::input("chars", PortType::String, "Characters to write to stdin (\"\" polls for output; \"\\u0003\" interrupts). Include \"\\n\" to end a line.").default("\"\""),
        YIELD_TIME_MS,
        MAX_OUTPUT_TOKENS_PORT,
        PortSpec::input("purpose", PortType::String, "One sentence explaining why; shown on the approval card.").default("null"),
    ],
    outputs: OUTPUTS,
    gate: None,
    effects: Effects::Approval(ApprovalRule::Always),
};

cheng_node::inventory::submit! { cheng_node::NodeRegistration::new(&WriteStdin) }

struct Plan {
    id: i64,
    chars: String,
    yield_ms: u64,
    max_bytes: usize,
}

impl Plan {
    fn from_input(input: &Values) -> Result<Plan, NodeError> {
        let id = input::opt_int(input, &SESSION_ID)?.ok_or_else(|| {
            NodeError::invalid_input(
                "session_id is required: pass the session_id exec_command returned",
            )
        })?;
        let chars = input::opt_str(input, "chars").unwrap_or("").to_string();
        if chars.len() > MAX_CHARS_BYTES {
            return Err(NodeError::invalid_input(format!(
                "chars is {} bytes; at most {MAX_CHARS_BYTES} are written at once (split the write)",
                chars.len()
            )));
        }
        let max_tokens = input::int(input, &MAX_OUTPUT_TOKENS_PORT)?;
        Ok(Plan {
            id,
            yield_ms: clamp_yield(input::int(input, &YIELD_TIME_MS)?, chars.is_empty()),
            chars,
            max_bytes: usize::try_from(max_tokens)
                .unwrap_or(1)
                .max(1)
                .saturating_mul(BYTES_PER_TOKEN),
        })
    }
}

#[cheng_node::async_trait]
impl Node for WriteStdin {
    fn spec(&self) -> &'static NodeSpec {
        &SPEC
    }

    fn approval_request(
        &self,
        ctx: &RunContext,
        input: &Values,
    ) -> Result<ApprovalRequest, NodeError> {
        let plan = Plan::from_input(input)?;
        // A write to a session that is not live could only fail: refused before anyone is asked.
        let session = sessions_here(ctx, plan.id)?.peek(plan.id)?;
        let what = format!("session {} ({})", plan.id, session.display);
        let line = if plan.chars.is_empty() {
            format!("poll {what} for output")
        } else {
            format!(
                "write {} to {what}",
                cheng_node::text::shell_quote(&plan.chars)
            )
        };
        let mut request = ApprovalRequest::new(ctx, line);
        request.cwd = session.cwd.clone();
        request.purpose = input::non_empty_str(input, "purpose").map(str::to_string);
        Ok(request)
    }

    async fn run(&self, ctx: &RunContext, input: Values) -> Result<Values, NodeError> {
        let plan = Plan::from_input(&input)?;
        let call_started = Instant::now();
        let sessions = sessions_here(ctx, plan.id)?;
        let session = sessions.get(plan.id)?;
        let deadline = call_started + Duration::from_millis(plan.yield_ms);
        let mut note = None;
        // Each "\u0003" is an interrupt at its place in the write.
        let mut parts = plan.chars.split('\u{3}').peekable();
        while let Some(part) = parts.next() {
            if !part.is_empty() {
                match session.process.write(part.as_bytes(), deadline).await {
                    Ok(n) if n == part.len() => {}
                    Ok(n) => {
                        note = Some(format!(
                            "Note: the process did not read its stdin within yield_time_ms; {n} of {} bytes were written, the rest was dropped.",
                            part.len()
                        ));
                        break;
                    }
                    Err(e) => {
                        note = Some(format!("Note: nothing more could be written: stdin is closed ({e}); the process may have ended."));
                        break;
                    }
                }
            }
            if parts.peek().is_some() {
                session.process.interrupt();
            }
        }
        let collected = session
            .process
            .collect(deadline, plan.chars.is_empty())
            .await;
        if let Some(ended) = &collected.ended {
            sessions.finish(session.id, super::ended_phrase(ended));
        }
        Ok(Report {
            session_id: Some(session.id),
            display: &session.display,
            cwd: &session.cwd,
            sandboxed: session.sandboxed,
            collected,
            wall: call_started.elapsed(),
            yield_ms: plan.yield_ms,
            max_bytes: plan.max_bytes,
            note,
        }
        .outputs())
    }
}

/// The sessions of this server connection or graph run; a single `cheng run` keeps none.
fn sessions_here(ctx: &RunContext, id: i64) -> Result<std::sync::Arc<Sessions>, NodeError> {
    ctx.scope.get::<Sessions>().ok_or_else(|| {
        let where_ = if matches!(
            ctx.scope.kind(),
            cheng_node::ScopeKind::Server | cheng_node::ScopeKind::Graph
        ) {
            "no exec_command has started a session here yet"
        } else {
            "a single `cheng run` keeps no sessions (use `cheng serve` or a graph)"
        };
        NodeError::new(
            cheng_node::ErrorKind::NotFound,
            format!("session_id {id} is unknown: {where_}"),
        )
    })
}
