//! The MCP request handler (rmcp's `ServerHandler`): tools/list from the catalog, tools/call
//! through the engine with the connection's approver and the request's cancellation.

use crate::approve::{
    self, Card, ElicitingApprover, Notes, Refusal, SealedApprover, Sealer, STATE_TTL,
};
use crate::catalog::{Catalog, Offered};
use cheng_engine::{Engine, Graph, GraphNode, RunOptions, ValidatedGraph};
use cheng_node::{Approver, CancellationToken, Decision, ErrorKind, RunContext, Values};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, InputRequest,
    InputRequests, InputRequiredResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ResultType, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::Semaphore;

/// The protocol revisions this server speaks: the four handshake-era ones and 2026-07-28.
pub const VERSIONS: &[ProtocolVersion] = &[
    ProtocolVersion::V_2024_11_05,
    ProtocolVersion::V_2025_03_26,
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2026_07_28,
];

/// Everything one connection shares between its requests.
#[derive(Clone)]
pub struct Server {
    engine: Engine,
    catalog: Arc<Catalog>,
    /// The `tools/list` result, built once.
    listing: Arc<ListToolsResult>,
    workspace: PathBuf,
    /// `--approve` / `--deny` for clients that cannot ask a person.
    fallback: Decision,
    /// At most `--jobs` tool calls run at once; the rest wait (tools/list and ping never do).
    jobs: Arc<Semaphore>,
    sealer: Arc<Sealer>,
    /// Cancelled when the connection ends: every running call is cancelled (children killed).
    pub shutdown: CancellationToken,
    /// Tool calls still running.
    pub active: Arc<AtomicUsize>,
    /// State the connection's calls share (freshness table, process sessions); dropped with the
    /// server, which ends with the connection.
    scope: cheng_node::Scope,
    /// `logging/setLevel` (handshake era; see [`crate::live`]).
    log_level: crate::live::LogLevel,
    /// What every call's run starts from (the workspace canonicalised and checked once, one job,
    /// the connection's scope); each call sets its approver and cancellation.
    options: RunOptions,
    /// The conformance suite's fixture tools, when asked for (test builds only).
    #[cfg(feature = "conformance-fixtures")]
    fixtures: Option<Arc<crate::fixtures::Fixtures>>,
}

impl Server {
    pub fn new(
        engine: Engine,
        catalog: Catalog,
        workspace: PathBuf,
        fallback: Decision,
        jobs: usize,
    ) -> Result<Server, String> {
        let listing: ListToolsResult = serde_json::from_value(listing(&catalog))
            .map_err(|e| format!("cannot list the tools: {e}"))?;
        let scope = cheng_node::Scope::new(cheng_node::ScopeKind::Server);
        let options = RunOptions::new(&workspace)
            .map_err(|e| {
                format!(
                    "--workspace {}: {e}; pass an existing directory",
                    workspace.display()
                )
            })?
            .jobs(1)
            .scope(scope.clone());
        Ok(Server {
            engine,
            catalog: Arc::new(catalog),
            listing: Arc::new(listing),
            workspace,
            fallback,
            jobs: Arc::new(Semaphore::new(jobs.max(1))),
            sealer: Arc::new(Sealer::new()?),
            shutdown: CancellationToken::new(),
            active: Arc::new(AtomicUsize::new(0)),
            scope,
            log_level: crate::live::LogLevel::default(),
            options,
            #[cfg(feature = "conformance-fixtures")]
            fixtures: None,
        })
    }

    /// This server with the MCP conformance suite's fixture tools offered after the catalog's
    /// (see [`crate::fixtures`]); an error in a build without the `conformance-fixtures` feature.
    #[cfg(feature = "conformance-fixtures")]
    pub fn with_conformance_fixtures(mut self) -> Result<Server, String> {
        let mut listing = self.listing.as_ref().clone();
        let fixtures = crate::fixtures::Fixtures::tools()?;
        // Fixtures are looked up first: none may take a name the catalog offers.
        if let Some(clash) = fixtures
            .iter()
            .find(|f| self.catalog.find(&f.name).is_some())
        {
            return Err(format!(
                "--conformance-fixtures: the fixture tool `{}` has the name of a tool this server offers; rename that tool in --tools",
                clash.name
            ));
        }
        listing.tools.extend(fixtures);
        self.listing = Arc::new(listing);
        self.fixtures = Some(Arc::new(crate::fixtures::Fixtures::new()?));
        Ok(self)
    }

    /// This server with the MCP conformance suite's fixture tools offered after the catalog's
    /// (see [`crate::fixtures`]); an error in a build without the `conformance-fixtures` feature.
    #[cfg(not(feature = "conformance-fixtures"))]
    pub fn with_conformance_fixtures(self) -> Result<Server, String> {
        Err("--conformance-fixtures: this build of cheng has no conformance fixtures; they exist for cheng's own conformance test (cargo feature cheng-mcp/conformance-fixtures)".to_string())
    }

    /// The engine every call runs through (the operator's policy, the registry).
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The handler for one more session of a long-lived server (MCP over HTTP): everything is
    /// shared with `self` but the session's `logging/setLevel`.
    pub fn for_session(&self) -> Server {
        Server {
            log_level: crate::live::LogLevel::default(),
            ..self.clone()
        }
    }

    async fn call(
        &self,
        mut params: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let Some(offered) = self.catalog.find(&params.name) else {
            return Err(McpError::invalid_params(
                format!(
                    "params.name: unknown tool `{}`; this server offers: {}",
                    params.name,
                    self.catalog.names().join(", ")
                ),
                None,
            ));
        };
        let tool = &offered.tool;
        let arguments = params.arguments.take().unwrap_or_default();
        let stateless = ctx
            .protocol_version()
            .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
        let can_elicit = ctx
            .client_capabilities()
            .is_some_and(|c| c.elicitation.is_some());
        // The arguments as the client sent them are kept only where an approval seals them.
        let (arguments, sealed) = if stateless && can_elicit {
            (arguments.clone(), Some(arguments))
        } else {
            (arguments, None)
        };
        // The author's presets, as tools/runtime applies them.
        let inputs = match tool.with_presets(arguments) {
            Ok(inputs) => inputs,
            Err(message) => return Ok(refusal(ErrorKind::PolicyDenied, message).into()),
        };
        let graph = Graph {
            nodes: vec![GraphNode {
                id: tool.name.clone(),
                node_type: tool.spec.id.to_string(),
                config: tool.config.clone(),
                inputs,
                after: Vec::new(),
            }],
            edges: Vec::new(),
        };
        let validated = match self.engine.validate(&graph) {
            Ok(validated) => validated,
            Err(problems) => {
                // The same lines `cheng run` prints.
                let noun = if problems.len() == 1 {
                    "error"
                } else {
                    "errors"
                };
                let mut text = format!("cannot run {} ({} {noun}):", tool.spec.id, problems.len());
                for p in &problems {
                    text.push_str(&format!("\n  - {}: {p}", p.kind.error_kind().code()));
                }
                let kind = problems
                    .first()
                    .map(|p| p.kind.error_kind())
                    .unwrap_or(ErrorKind::InvalidInput);
                return Ok(refusal(kind, text).into());
            }
        };
        if let Some(arguments) = sealed {
            self.call_stateless(offered, &params, arguments, &validated, ctx)
                .await
        } else {
            // The handshake era asks mid-call; a client that cannot ask gets --approve/--deny.
            let notes = Notes::default();
            let approver = ElicitingApprover {
                peer: ctx.peer.clone(),
                can_elicit,
                fallback: self.fallback,
                notes: notes.clone(),
            };
            let outputs = self
                .run(offered, &validated, Arc::new(approver), &ctx)
                .await?;
            let notes = notes.take();
            let logger = crate::live::Logger::for_request(&ctx, &self.log_level);
            for note in &notes {
                logger.log(rmcp_logging_warning(), note.clone()).await;
            }
            Ok(complete(offered, outputs, notes).into())
        }
    }

    /// The stateless era: approvals as `input_required` rounds with a sealed `requestState`.
    async fn call_stateless(
        &self,
        offered: &Offered,
        params: &CallToolRequestParams,
        arguments: Values,
        validated: &ValidatedGraph,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let tool = &offered.tool;
        let mut approved: Vec<Card> = Vec::new();
        if let Some(state) = params.request_state.as_deref() {
            let opened = match self.sealer.open(state, &tool.name, &arguments) {
                Ok(opened) => opened,
                Err(Refusal::Expired) => {
                    return Ok(refusal(
                        ErrorKind::ApprovalDenied,
                        format!("tool `{}`: the approval has expired; nothing ran. Call the tool again (without requestState) to be asked anew.", tool.name),
                    )
                    .into())
                }
                Err(Refusal::AlreadyUsed) => {
                    return Ok(refusal(
                        ErrorKind::ApprovalDenied,
                        format!("tool `{}`: this approval was already used; ask again. An approval runs a call once; nothing ran. Call the tool again without requestState to be asked anew.", tool.name),
                    )
                    .into())
                }
                Err(Refusal::TooManyInUse) => {
                    return Ok(refusal(
                        ErrorKind::ApprovalDenied,
                        format!("tool `{}`: more than {} approvals were used in the last {} minutes, more than this server keeps track of; nothing ran. Wait a few minutes and call the tool again without requestState.", tool.name, crate::nonces::MAX_SPENT, approve::STATE_TTL.as_secs() / 60),
                    )
                    .into())
                }
                Err(Refusal::Mismatch) => {
                    return Ok(refusal(
                        ErrorKind::ApprovalDenied,
                        format!(
                            "tool `{}`: requestState does not match this call (it was altered, comes from another server process, or the arguments differ from the ones approved); nothing ran. Call the tool again without requestState to be asked anew.",
                            tool.name
                        ),
                    )
                    .into())
                }
            };
            let responses = params.input_responses.clone().unwrap_or_default();
            for (i, card) in opened.items.iter().enumerate() {
                let items = approve::approval_items(&card.into())
                    .map_err(|e| McpError::internal_error(e, None))?;
                for (suffix, what, _) in items {
                    let key = format!("{}{suffix}", item_key(i));
                    let action = responses
                        .get(&key)
                        .and_then(|r| r.get("action"))
                        .and_then(Value::as_str);
                    match action {
                        Some("accept") => {}
                        Some(other) => {
                            let verb = if other == "cancel" {
                                "cancelled"
                            } else {
                                "declined"
                            };
                            return Ok(refusal(
                                ErrorKind::ApprovalDenied,
                                format!("tool `{}`: a person {verb} the approval of {what} ({}); nothing ran.", tool.name, cheng_node::display::line(&card.command_display)),
                            )
                            .into());
                        }
                        None => {
                            return Ok(refusal(
                                ErrorKind::ApprovalDenied,
                                format!("tool `{}`: inputResponses.{key} is missing: every approval must be answered; nothing ran.", tool.name),
                            )
                            .into());
                        }
                    }
                }
            }
            approved = opened.items;
        } else {
            match self.planned_card(offered, validated, &ctx)? {
                Ok(Some(card)) => return self.input_required(offered, &arguments, vec![card]),
                Ok(None) => {}
                // The node refused the input before anything could run (policy, paths, a file
                // the model has not read): a tool result, as the handshake era gives.
                Err(e) => return Ok(complete(offered, e.to_outputs(), Vec::new()).into()),
            }
        }
        let approver = Arc::new(SealedApprover {
            approved: approved.iter().map(Into::into).collect(),
            unasked: Mutex::new(Vec::new()),
        });
        let outputs = self.run(offered, validated, approver.clone(), &ctx).await?;
        let unasked: Vec<Card> = approver
            .unasked
            .lock()
            .map(|u| u.iter().map(Card::from).collect())
            .unwrap_or_default();
        let denied = outputs.get("error_kind").and_then(Value::as_str)
            == Some(ErrorKind::ApprovalDenied.code());
        if denied && !unasked.is_empty() {
            // The node asked for more than was approved (e.g. a read path): ask for it too.
            let mut items = approved;
            items.extend(unasked);
            return self.input_required(offered, &arguments, items);
        }
        Ok(complete(offered, outputs, Vec::new()).into())
    }

    /// The one card the engine would ask about for this call (gated input, capabilities left on
    /// "ask", host read paths), asked ahead in one round; the inner `Err` is the node refusing
    /// the input before anything could run.
    fn planned_card(
        &self,
        offered: &Offered,
        validated: &ValidatedGraph,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<Result<Option<Card>, cheng_node::NodeError>, McpError> {
        let tool = &offered.tool;
        let Some((node, _)) = validated.planned_input(&tool.name, &self.workspace) else {
            return Err(McpError::internal_error(
                format!(
                    "the validated call for `{}` has no node; this is a bug in cheng",
                    tool.name
                ),
                None,
            ));
        };
        let card_ctx = RunContext {
            node_id: tool.name.clone(),
            node_type: node.spec().id,
            workspace: self.workspace.clone(),
            cancel: ctx.ct.clone(),
            approver: Arc::new(cheng_node::FixedApprover(Decision::Denied)),
            // The connection's scope, so a card can name what it refers to (write_stdin's session)
            // and is the card the run itself draws.
            scope: self.scope.clone(),
            output: cheng_node::Output::off(),
            approved_card: None,
            policy: self.engine.policy_arc(),
        };
        Ok(validated
            .planned_card(&tool.name, &card_ctx)
            .map(|card| card.as_ref().map(Card::from)))
    }

    fn input_required(
        &self,
        offered: &Offered,
        arguments: &Values,
        items: Vec<Card>,
    ) -> Result<CallToolResponse, McpError> {
        let sealed = self
            .sealer
            .seal(&offered.tool.name, arguments, &items, STATE_TTL)
            .map_err(|e| McpError::internal_error(e, None))?;
        let mut requests = InputRequests::new();
        for (i, card) in items.iter().enumerate() {
            for (suffix, _, params) in approve::approval_items(&card.into())
                .map_err(|e| McpError::internal_error(e, None))?
            {
                let request: InputRequest = serde_json::from_value(
                    json!({"method": "elicitation/create", "params": params}),
                )
                .map_err(|e| {
                    McpError::internal_error(
                        format!("cannot build the approval request: {e}"),
                        None,
                    )
                })?;
                requests.insert(format!("{}{suffix}", item_key(i)), request);
            }
        }
        Ok(InputRequiredResult::new(Some(requests), Some(sealed)).into())
    }

    /// Runs the validated call: a `--jobs` slot, the request's cancellation, the given approver.
    async fn run(
        &self,
        offered: &Offered,
        validated: &ValidatedGraph,
        approver: Arc<dyn Approver>,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<Values, McpError> {
        let cancel = self.shutdown.child_token();
        let _permit = tokio::select! {
            permit = self.jobs.clone().acquire_owned() => permit.map_err(|e| McpError::internal_error(format!("the job limiter closed: {e}"), None))?,
            () = ctx.ct.cancelled() => return Err(McpError::internal_error("cancelled before it started; nothing ran", None)),
            () = cancel.cancelled() => return Err(McpError::internal_error("the server is shutting down; nothing ran", None)),
        };
        let options = self
            .options
            .clone()
            .approver(approver)
            .cancel(cancel.clone());
        // Live output as progress notifications when the client gave a progress token.
        let progress = crate::live::Progress::for_request(
            ctx,
            crate::live::Logger::for_request(ctx, &self.log_level),
        );
        let options = match &progress {
            Some(progress) => options.events(progress.clone()),
            None => options,
        };
        self.active.fetch_add(1, Ordering::SeqCst);
        let _active = Active(self.active.clone());
        let request_ct = ctx.ct.clone();
        let run = self.engine.run(validated, options);
        tokio::pin!(run);
        let result = tokio::select! {
            result = &mut run => result,
            () = request_ct.cancelled() => {
                // notifications/cancelled: cancel the run (its process groups are killed) and
                // wait for it to wind down, so nothing is left behind.
                cancel.cancel();
                run.await
            }
        };
        // Every progress notification goes out before the answer.
        if let Some(progress) = progress {
            progress.close().await;
        }
        let Some(node) = result.nodes.into_iter().next() else {
            return Err(McpError::internal_error(
                format!(
                    "the run of tool `{}` produced no result; this is a bug in cheng",
                    offered.tool.name
                ),
                None,
            ));
        };
        Ok(node.outputs)
    }
}

#[allow(deprecated)] // MCP deprecates logging (SEP-2577); clients still offer it.
fn rmcp_logging_warning() -> rmcp::model::LoggingLevel {
    rmcp::model::LoggingLevel::Warning
}

struct Active(Arc<AtomicUsize>);

impl Drop for Active {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

fn item_key(i: usize) -> String {
    format!("approval-{}", i + 1)
}

/// A call refused before anything ran: `isError`, the message, and a failure object.
fn refusal(kind: ErrorKind, message: String) -> CallToolResult {
    let mut result = CallToolResult::error(vec![ContentBlock::text(message.clone())]);
    result.result_type = Some(ResultType::COMPLETE);
    result.structured_content = Some(json!({
        "success": false,
        "error_kind": kind.code(),
        "terminal": kind.terminal(),
        "error": message,
    }));
    result
}

/// The node ran: `structuredContent` is its output object; the text is the summary, then
/// stdout and stderr where present, then why an approval went the way it did.
fn complete(offered: &Offered, outputs: Values, notes: Vec<String>) -> CallToolResult {
    let success = outputs.get("success") != Some(&Value::Bool(false));
    let text = crate::content::text(&offered.tool.name, offered.tool.spec.id, &outputs, &notes);
    let content = vec![ContentBlock::text(text)];
    let mut result = if success {
        CallToolResult::success(content)
    } else {
        CallToolResult::error(content)
    };
    result.result_type = Some(ResultType::COMPLETE);
    result.structured_content = Some(Value::Object(outputs));
    result
}

impl ServerHandler for Server {
    #[allow(deprecated)] // `enable_logging`: MCP deprecates logging (SEP-2577); clients still offer it.
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_logging()
                .build(),
        );
        info.protocol_version = ProtocolVersion::V_2025_11_25;
        info.server_info = rmcp::model::Implementation::new("cheng", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(format!(
            "cheng tool nodes on the workspace {}. Tools that change things ask a person first.",
            self.workspace.display()
        ));
        info
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(VERSIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(self.listing.as_ref().clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        #[cfg(feature = "conformance-fixtures")]
        if let Some(fixtures) = &self.fixtures {
            if let Some(answer) = fixtures.call(&request, &ctx, &self.log_level).await {
                return answer;
            }
        }
        self.call(request, ctx).await
    }

    #[allow(deprecated)] // MCP deprecates logging (SEP-2577); clients still offer it.
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.log_level.set(request.level);
        Ok(())
    }
}

/// How long a client may cache tools/list (the stateless era's `ttlMs`).
pub const LIST_TTL_MS: u64 = 5 * 60 * 1000;

/// Lets tests build a listing without a connection.
pub fn listing(catalog: &Catalog) -> Value {
    // The caching hints of the stateless era (rmcp strips them for older peers): the list is
    // fixed for the life of the process.
    json!({
        "resultType": "complete",
        "ttlMs": LIST_TTL_MS,
        "cacheScope": "private",
        "tools": catalog.tools.iter().map(|t| t.definition.clone()).collect::<Vec<_>>(),
    })
}
