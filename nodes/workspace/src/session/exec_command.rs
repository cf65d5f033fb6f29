//! `tools/exec_command`: start a command as a session (see the module above for the rules).

use super::table::{Session, Sessions};
use super::{
    clamp_yield, Report, BYTES_PER_TOKEN, FIXED_ENV, MAX_OUTPUT_TOKENS_PORT, MAX_SESSION_MS,
    OUTPUTS, RETAINED_CAP,
};
use crate::shell::{argv::argv_from_input, check_env_allowed, ALLOW_SHELL_STRING};
use cheng_exec::live::LiveProcess;
use cheng_exec::ProcessSpec;
use cheng_node::text::human_duration_ms;
use cheng_node::{
    input, paths, ApprovalRequest, ApprovalRule, Audience, Control, Effects, ErrorKind, Node,
    NodeError, NodeSpec, PortSpec, PortType, RunContext, ScopeKind, Values,
};
use serde_json::Value;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub struct ExecCommand;

static STRING: PortType = PortType::String;

const YIELD_TIME_MS: PortSpec = PortSpec::input(
    "yield_time_ms",
    PortType::Integer,
    "How long to wait for output before returning, in ms (default 10000; clamped to 250-30000). Returns earlier when the process exits.",
)
.default("10000");

pub(crate) const MAX_SESSION_MS_PORT: PortSpec = PortSpec::input(
    "max_session_ms",
    PortType::Integer,
    "Longest the session may live, in ms (default 3600000 = 1 h, max 86400000); then its process group is killed (exit code 124). In a single `cheng run` it bounds the wait for the exit.",
)
.default("3600000")
.min(1)
.max(MAX_SESSION_MS)
.audience(Audience::Capped)
.control(Control::Number);

const SANDBOX: PortSpec = PortSpec::input(
    "sandbox",
    PortType::Boolean,
    "Run the command inside the bubblewrap sandbox of code_shell (read-only workspace, no network unless allowed_hosts lists hosts; author-only; default off). Fails closed when the sandbox is unavailable.",
)
.default("false")
.audience(Audience::Author)
.control(Control::Switch);

const ALLOWED_HOSTS: PortSpec = PortSpec::input(
    cheng_node::policy::HOST_RULES_PORT,
    PortType::Array(&STRING),
    "Hosts a sandboxed session (sandbox: true) may reach, through cheng's filtering proxy and within the operator's network_allow: pypi.org, *.example.com, example.com:8443. Not set or empty: no network",
)
.audience(Audience::Author);

pub static SPEC: NodeSpec = NodeSpec {
    id: "tools/exec_command",
    title: "Exec Command (session)",
    description: "Start a command as a process session that can outlive this call (a dev server, a REPL, a watch build): returns its output so far and, while it runs, a session_id for write_stdin. Same command policy as workspace_shell; every start is approval-gated.",
    category: "workspace",
    inputs: &[
        PortSpec::input("cmd", PortType::String, "Shell command line to run, e.g. \"python3 -m http.server 8000\" (the shell-string rules of workspace_shell apply: simple commands are split without a shell unless allow_shell_string is on).").default("null"),
        PortSpec::input("command", PortType::String, "Executable program to run instead of cmd, e.g. \"python3\". This is NOT the tool name.").default("\"\""),
        PortSpec::input("args", PortType::Array(&STRING), "Literal arguments for command, e.g. command=\"python3\", args=[\"-i\"]. No shell syntax.").default("[]"),
        PortSpec::input("workdir", PortType::String, "Working directory relative to the workspace root. Omit for the root itself.").default("null"),
        PortSpec::input("env", PortType::Object, "Extra environment variables (subject to allowlist).").default("{}"),
        YIELD_TIME_MS,
        MAX_OUTPUT_TOKENS_PORT,
        MAX_SESSION_MS_PORT,
        PortSpec::input("purpose", PortType::String, "One sentence explaining why this command is needed; shown on the approval card.").default("null"),
        PortSpec::sandbox_root(),
        SANDBOX,
        ALLOWED_HOSTS,
        ALLOW_SHELL_STRING,
        PortSpec::input("command_whitelist", PortType::String, "User-configured command whitelist. One program name per line. When non-empty, only listed programs are allowed and shell strings (cmd) are denied.")
            .default("\"\"")
            .audience(Audience::Author)
            .control(Control::Textarea),
    ],
    outputs: OUTPUTS,
    gate: None,
    effects: Effects::Approval(ApprovalRule::Always),
};

cheng_node::inventory::submit! { cheng_node::NodeRegistration::new(&ExecCommand) }

#[cheng_node::async_trait]
impl Node for ExecCommand {
    fn spec(&self) -> &'static NodeSpec {
        &SPEC
    }

    fn approval_request(
        &self,
        ctx: &RunContext,
        input: &Values,
    ) -> Result<ApprovalRequest, NodeError> {
        let plan = Plan::from_input(ctx, input)?;
        let mut request = ApprovalRequest::new(ctx, plan.card());
        request.cwd = plan.cwd_display.clone();
        request.purpose = plan.purpose.clone();
        Ok(request)
    }

    async fn run(&self, ctx: &RunContext, input: Values) -> Result<Values, NodeError> {
        let plan = Plan::from_input(ctx, &input)?;
        let keeps = keeps_sessions(ctx.scope.kind());
        let call_started = Instant::now();
        // A single run waits for the command: its output is passed on live as it arrives (the
        // terminal shows it); a kept session's output is taken by the calls that ask for it.
        let live = if keeps {
            cheng_node::Output::off()
        } else {
            ctx.output.clone()
        };
        let (process, hold) = plan.start(ctx, live)?;
        if !keeps {
            // Nowhere to keep it: no writer will ever come, so stdin is closed; wait for the exit.
            process.close_stdin().await;
            let deadline =
                call_started + Duration::from_millis(plan.max_session_ms) + Duration::from_secs(5);
            let collected = process.collect(deadline, false).await;
            drop(hold);
            let note = format!(
                "Note: a single `cheng run` keeps no sessions, so exec_command closed stdin and waited for the command to exit (bounded by max_session_ms, {}). Run it in `cheng serve` or a graph to keep it running.",
                human_duration_ms(plan.max_session_ms)
            );
            return Ok(Report {
                session_id: None,
                display: &plan.display,
                cwd: &plan.cwd_display,
                sandboxed: plan.sandbox,
                collected,
                wall: call_started.elapsed(),
                yield_ms: plan.yield_ms,
                max_bytes: plan.max_bytes,
                note: Some(note),
            }
            .outputs());
        }
        let sessions = ctx.scope.get_or_init(Sessions::default);
        let (session, evicted) = sessions.insert(|id| Session {
            id,
            process,
            display: plan.display.clone(),
            cwd: plan.cwd_display.clone(),
            sandboxed: plan.sandbox,
            hold,
        });
        let deadline = call_started + Duration::from_millis(plan.yield_ms);
        let collected = session.process.collect(deadline, false).await;
        if let Some(ended) = &collected.ended {
            sessions.finish(session.id, super::ended_phrase(ended));
        }
        let note = evicted.map(|old| format!("Note: session {old} was evicted to make room (at most {} sessions are kept); its process group was killed.", super::table::MAX_SESSIONS));
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

/// Whether calls in this scope can reach a session later (a server connection or a graph run).
fn keeps_sessions(kind: &ScopeKind) -> bool {
    matches!(kind, ScopeKind::Server | ScopeKind::Graph)
}

/// A validated start: what to run, where, with what, for how long.
#[derive(Debug)]
struct Plan {
    argv: Vec<String>,
    display: String,
    cwd: PathBuf,
    cwd_display: String,
    /// The allowed `env` entries (on top of the base and the fixed session environment).
    user_env: Vec<(String, String)>,
    yield_ms: u64,
    max_bytes: usize,
    max_session_ms: u64,
    sandbox: bool,
    /// A sandboxed session's way out: the operator's rules and the author's hosts.
    network: Option<cheng_net::Gate>,
    purpose: Option<String>,
}

impl Plan {
    fn from_input(ctx: &RunContext, input: &Values) -> Result<Plan, NodeError> {
        // workspace_shell's rules, with this node's names: `cmd` is the shell string, `workdir`
        // the working directory.
        let mut mapped = input.clone();
        mapped.remove("shell_string");
        if let Some(cmd) = input::opt_str(input, "cmd") {
            mapped.insert("shell_string".into(), Value::String(cmd.to_string()));
        }
        mapped.remove("cwd");
        if let Some(dir) = input.get("workdir") {
            mapped.insert("cwd".into(), dir.clone());
        }
        let rename = |mut e: NodeError| {
            e.message = e
                .message
                .replace("shell_string", "cmd")
                .replace("cwd", "workdir");
            e
        };
        let argv = argv_from_input(&mapped).map_err(rename)?;
        let display = cheng_node::text::command_display(argv.iter().map(AsRef::<str>::as_ref));
        let root = &ctx.workspace;
        let cwd = crate::program::resolve_cwd(root, &mapped).map_err(rename)?;
        let cwd_display = paths::display_relative(root, &cwd);
        let user_env = match input.get("env") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Object(vars)) => {
                let env = cheng_exec::env::validate(vars)?;
                check_env_allowed(ctx, vars.keys())?;
                env
            }
            Some(_) => {
                return Err(NodeError::invalid_input(
                    "env must be an object of NAME: \"value\" strings",
                ))
            }
        };
        let max_tokens = input::int(input, &MAX_OUTPUT_TOKENS_PORT)?;
        let sandbox = input::boolean(input, &SANDBOX)?;
        let hosts = cheng_node::policy::author_hosts(input)?.unwrap_or_default();
        let network = match (sandbox, hosts.is_empty()) {
            (_, true) => None,
            (true, false) => Some(ctx.policy().network_gate(ctx.node_type, input, &[])?),
            (false, false) => {
                return Err(NodeError::invalid_input(
                    "allowed_hosts applies to a sandboxed session (sandbox: true); a session without the sandbox runs on the host's own network",
                ))
            }
        };
        Ok(Plan {
            argv,
            display,
            cwd,
            cwd_display,
            user_env,
            yield_ms: clamp_yield(input::int(input, &YIELD_TIME_MS)?, false),
            max_bytes: usize::try_from(max_tokens)
                .unwrap_or(1)
                .max(1)
                .saturating_mul(BYTES_PER_TOKEN),
            max_session_ms: input::int(input, &MAX_SESSION_MS_PORT)?
                .max(1)
                .unsigned_abs(),
            sandbox,
            network,
            purpose: input::non_empty_str(input, "purpose").map(str::to_string),
        })
    }

    /// The approval card's line.
    fn card(&self) -> String {
        let place = if self.sandbox {
            "a sandboxed session"
        } else {
            "a session"
        };
        format!(
            "{} (as {place} that may keep running up to {})",
            self.display,
            human_duration_ms(self.max_session_ms)
        )
    }

    /// The child's environment: `base`, then the fixed session environment, then the user's.
    fn env(&self, base: Vec<(OsString, OsString)>) -> Vec<(OsString, OsString)> {
        let mut env = base;
        let fixed = FIXED_ENV
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()));
        for (name, value) in fixed.chain(self.user_env.iter().cloned()) {
            env.retain(|(k, _)| k.as_os_str() != name.as_str());
            env.push((name.into(), value.into()));
        }
        env
    }

    /// Starts the process (in the sandbox when asked), owned by the call's cancellation.
    fn start(
        &self,
        ctx: &RunContext,
        live: cheng_node::Output,
    ) -> Result<(LiveProcess, Option<Box<dyn std::any::Any + Send + Sync>>), NodeError> {
        let lifetime = Duration::from_millis(self.max_session_ms);
        if self.sandbox {
            let mut request = cheng_sandbox::SandboxRequest::new(
                ctx.workspace.clone(),
                self.argv.iter().map(OsString::from).collect(),
            );
            request.cwd = self.cwd.clone();
            request.env = self.env(std::mem::take(&mut request.env));
            request.timeout = lifetime;
            request.stdout_cap = RETAINED_CAP;
            request.stderr_cap = RETAINED_CAP;
            request.output = live;
            request.network = self.network.clone();
            let sandbox = cheng_sandbox::Sandbox::prepare(request)?;
            let (process, hold) = sandbox.start_live(ctx.cancel.clone())?;
            return Ok((process, Some(hold)));
        }
        let spec = ProcessSpec::new(&self.argv[0], &self.argv[1..], self.cwd.clone())
            .env(self.env(cheng_exec::env::base()))
            .timeout(lifetime)
            .caps(RETAINED_CAP, RETAINED_CAP)
            .output(live);
        let process = LiveProcess::start(spec, ctx.cancel.clone())
            .map_err(|message| NodeError::new(ErrorKind::SpawnFailed, message))?;
        Ok((process, None))
    }
}
