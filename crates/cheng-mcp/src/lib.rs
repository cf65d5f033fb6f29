//! `cheng serve --stdio`: every node as an MCP tool, over stdio, for both protocol generations.
//!
//! - **Protocol**: rmcp (the official Rust SDK) — message types, `initialize` negotiation
//!   (2024-11-05 … 2025-11-25), `server/discover` and per-request `_meta` (2026-07-28),
//!   `input_required` results, `requestState` sealing ([`rmcp::model::RequestStateCodec`]),
//!   elicitation, cancellation. The line framing is this crate's ([`transport`]): it answers
//!   malformed and oversized messages instead of dropping them.
//! - **Tools**: a `tools/runtime` toolkit ([`catalog`]): every registered node, or the author's
//!   `exposed_tools` file; the same parsing, names, descriptions and input schemas as the node.
//! - **Calls**: one-node graphs through `cheng-engine`, exactly as `cheng run` runs a node; at
//!   most `jobs` at once; approvals through the client ([`approve`]), each approval usable once
//!   ([`nonces`]).
//!
//! stdout carries protocol messages only; diagnostics go to stderr.

pub mod approve;
pub mod catalog;
pub mod content;
#[cfg(feature = "conformance-fixtures")]
pub mod fixtures;
#[doc(hidden)]
pub mod fuzzing;
pub mod http;
pub mod live;
pub mod nonces;
pub mod server;
pub mod transport;

use catalog::Catalog;
use cheng_engine::Engine;
use cheng_node::policy::Policy;
use cheng_node::{Decision, Registry};
use rmcp::ServiceExt;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What `cheng serve --stdio` was asked for.
pub struct ServeOptions {
    pub workspace: PathBuf,
    /// An `exposed_tools` JSON file; `None` offers every registered node.
    pub tools: Option<PathBuf>,
    /// How many tool calls may run at once.
    pub jobs: usize,
    /// The answer for approvals when the client cannot ask a person.
    pub fallback: Decision,
    /// The largest message accepted, in bytes.
    pub max_message: usize,
    /// The operator's effective policy (loaded by the CLI): the engine every call runs through
    /// is built with it.
    pub policy: Arc<Policy>,
    /// `--conformance-fixtures`: also offer the MCP conformance suite's fixture tools (builds
    /// with the `conformance-fixtures` feature only; see [`server::Server::with_conformance_fixtures`]).
    pub conformance_fixtures: bool,
}

/// How long running calls get to wind down after stdin closes.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(800);

/// The catalog the options ask for.
pub fn load_catalog(engine: &Engine, tools: Option<&Path>) -> Result<Catalog, String> {
    let catalog = match tools {
        None => Catalog::every_node(engine),
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("--tools {}: cannot read the file: {e}", path.display()))?;
            let entries = match serde_json::from_str::<Value>(&text) {
                Ok(Value::Array(entries)) => entries,
                Ok(Value::Object(mut fields)) if fields.get("exposed_tools").is_some_and(Value::is_array) => {
                    match fields.remove("exposed_tools") {
                        Some(Value::Array(entries)) => entries,
                        _ => Vec::new(),
                    }
                }
                Ok(_) => {
                    return Err(format!(
                        "--tools {}: expected the exposed_tools JSON array, e.g. [{{\"type\": \"tools/workspace_git\"}}]",
                        path.display()
                    ))
                }
                Err(e) => return Err(format!("--tools {}: not valid JSON: {e}", path.display())),
            };
            Catalog::from_entries(engine, &entries)
        }
    };
    catalog.map_err(|errors| {
        let mut message = String::from("the toolkit has errors; fix them and start again:");
        for e in errors {
            message.push_str("\n  - ");
            message.push_str(&e);
        }
        message
    })
}

/// The handler both transports serve: the engine under the operator's policy, the catalog the
/// options ask for (its warnings printed on stderr) and the checked workspace.
pub fn server(options: &ServeOptions) -> Result<server::Server, String> {
    let workspace = options.workspace.canonicalize().map_err(|e| {
        format!(
            "--workspace {}: {e}; pass an existing directory",
            options.workspace.display()
        )
    })?;
    if !workspace.is_dir() {
        return Err(format!(
            "--workspace {}: not a directory; pass an existing directory",
            options.workspace.display()
        ));
    }
    let engine = Engine::new(Registry::from_inventory(), options.policy.clone());
    let catalog = load_catalog(&engine, options.tools.as_deref())?;
    for warning in &catalog.warnings {
        eprintln!("cheng serve: warning: {warning}");
    }
    let server = server::Server::new(engine, catalog, workspace, options.fallback, options.jobs)?;
    if options.conformance_fixtures {
        server.with_conformance_fixtures()
    } else {
        Ok(server)
    }
}

/// Serves MCP on stdin/stdout until stdin closes; then cancels every running call (their
/// process groups are killed) and returns.
pub fn serve_stdio(options: ServeOptions) -> Result<(), String> {
    let server = server(&options)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let result = runtime.block_on(async move {
        // Pipes (how clients launch stdio servers) are driven by the I/O reactor, without a
        // blocking-thread hand-off per message; anything else falls back to blocking stdio.
        let (stdin, stdout) = rmcp::transport::io::stdio_pipes();
        let reader = tokio::io::BufReader::with_capacity(64 * 1024, stdin);
        // Answers are written to a pipe straight from the serve loop (see `transport`).
        let stdout = match transport::stdout_pipe() {
            Some(pipe) => transport::Stdout::Pipe(pipe),
            None => transport::Stdout::Stream(stdout),
        };
        let (transport, writer) = transport::LineTransport::new(reader, stdout, options.max_message);
        let shutdown = server.shutdown.clone();
        let active = server.active.clone();
        let eof = transport.eof.clone();
        let outcome = match server.serve(transport).await {
            // The session ends when stdin does, without waiting for calls still running
            // (they are cancelled below).
            Ok(running) => tokio::select! {
                result = running.waiting() => result.map(|_| ()).map_err(|e| format!("the MCP session failed: {e}")),
                () = eof.cancelled() => Ok(()),
            },
            // The client went away before the session started: nothing to do.
            Err(e) => {
                eprintln!("cheng serve: the session ended before it started: {e}");
                Ok(())
            }
        };
        // stdin closed: cancel every running call and give them a moment to kill their children.
        shutdown.cancel();
        let started = Instant::now();
        while active.load(Ordering::SeqCst) > 0 && started.elapsed() < SHUTDOWN_GRACE {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let _ = tokio::time::timeout(Duration::from_millis(100), writer).await;
        outcome
    });
    // A blocking stdin read may still be parked on the runtime's pool; do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(50));
    result
}
