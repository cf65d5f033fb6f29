//! `cheng serve --http`: one long-lived process serving the canvas API (`/api`, with live run
//! events as Server-Sent Events), MCP over Streamable HTTP (`/mcp`, the same tools as `--stdio`)
//! and the bundled web canvas (`/`). The contract is docs/guides/http.md.
//!
//! Every request passes one guard first ([`guard`]): `Host` and `Origin` checks against DNS
//! rebinding, then the bearer token. Runs go through the same engine, policy, gates and
//! approval cards as `cheng graph run`; only who answers the card differs (the page).

pub mod api;
pub mod canvas;
pub mod error;
pub mod events;
pub mod guard;
pub mod openapi;
pub mod palette;
pub mod runs;

use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderValue, Method};
use axum::serve::ListenerExt;
use axum::Router;
use cheng_engine::RunOptions;
use cheng_mcp::ServeOptions;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tower_http::cors::CorsLayer;

/// The address `cheng serve --http` binds when given none.
pub const DEFAULT_ADDR: &str = "127.0.0.1:8765";
/// The largest request body accepted, in bytes (`413` beyond).
pub const MAX_BODY: usize = 4 * 1024 * 1024;
/// How long runs and connections get to wind down once the server is told to stop.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// What `cheng serve --http` was asked for.
pub struct HttpOptions {
    /// What `--stdio` takes too: workspace, tools, jobs, approvals for MCP clients, policy.
    pub serve: ServeOptions,
    pub addr: SocketAddr,
    /// `--public`: binding an address that is not loopback was asked for explicitly.
    pub public: bool,
    /// `--token` / `$CHENG_TOKEN`; `None` draws a random one.
    pub token: Option<String>,
    /// `--allow-origin`: browser origins besides the server's own.
    pub allow_origins: Vec<String>,
    /// `--allow-host`: `Host` names besides the bound address (a reverse proxy's).
    pub allow_hosts: Vec<String>,
}

/// Serves until Ctrl-C or SIGTERM; then cancels every run and MCP call (their process groups
/// are killed) and returns.
pub fn serve_http(options: HttpOptions) -> Result<(), String> {
    if !options.addr.ip().is_loopback() && !options.public {
        return Err(format!(
            "{}: not a loopback address. The server speaks plain HTTP (no TLS): to serve beyond this machine, put a reverse proxy that terminates TLS in front and pass --public",
            options.addr
        ));
    }
    let token = match options.token.clone() {
        Some(token) => {
            guard::check_token(&token)?;
            token
        }
        None => cheng_mcp::approve::random_key()?
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
    };
    for origin in &options.allow_origins {
        HeaderValue::from_str(origin).map_err(|_| {
            format!("--allow-origin {origin:?}: not a valid origin (e.g. https://canvas.example)")
        })?;
    }
    let mcp = cheng_mcp::server(&options.serve)?;
    // Canvas runs go through the same engine (registry and policy) as MCP calls.
    let engine = mcp.engine().clone();
    let run_options = RunOptions::new(&options.serve.workspace).map_err(|e| {
        format!(
            "--workspace {}: {e}; pass an existing directory",
            options.serve.workspace.display()
        )
    })?;
    let workspace = run_options.workspace.clone();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(options.addr)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", options.addr))?;
        let addr = listener
            .local_addr()
            .map_err(|e| format!("cannot read the bound address: {e}"))?;
        let guard = guard::Guard::new(&token, addr, &options.allow_hosts, &options.allow_origins);
        let api = Arc::new(api::Api {
            palette: palette::palette(&engine),
            runs: Arc::new(runs::Runs::new(engine, run_options, options.serve.jobs)),
        });
        let runs = api.runs.clone();
        let mcp_shutdown = mcp.shutdown.clone();
        let app = app(api, mcp, guard, &options.allow_origins);
        eprintln!(
            "cheng serve: http://{addr}/?token={token}  (workspace {})",
            workspace.display()
        );
        if !addr.ip().is_loopback() {
            eprintln!("cheng serve: warning: {addr} is reachable from other machines over plain HTTP (no TLS); put a reverse proxy that terminates TLS in front");
        }
        let stop = CancellationToken::new();
        let stopping = stop.clone();
        tokio::spawn(async move {
            stop_signal().await;
            runs.cancel_all();
            mcp_shutdown.cancel();
            stopping.cancel();
        });
        // Events go out as small writes, each as it happens: without TCP_NODELAY, Nagle's
        // algorithm would hold each behind the reader's (delayed) acknowledgement of the last.
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let serving = axum::serve(listener, app).with_graceful_shutdown(stop.clone().cancelled_owned());
        tokio::select! {
            result = serving => result.map_err(|e| format!("the server failed: {e}")),
            // Connections that outlive the grace period (an idle event stream) are dropped.
            () = async { stop.cancelled().await; tokio::time::sleep(SHUTDOWN_GRACE).await } => Ok(()),
        }
    })?;
    runtime.shutdown_timeout(Duration::from_millis(100));
    Ok(())
}

/// Every route, behind the guard; CORS only for the origins the operator named.
fn app(
    api: Arc<api::Api>,
    mcp: cheng_mcp::server::Server,
    guard: guard::Guard,
    origins: &[String],
) -> Router {
    let shutdown = mcp.shutdown.clone();
    let mut app = Router::new()
        .merge(api::routes(api))
        .merge(canvas::routes())
        .route_service("/mcp", cheng_mcp::http::service(mcp, MAX_BODY, shutdown))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(axum::middleware::from_fn_with_state(
            Arc::new(guard),
            guard::check,
        ));
    if !origins.is_empty() {
        // Outside the guard, so a browser's preflight (which carries no token) is answered.
        let allowed: Vec<HeaderValue> = origins
            .iter()
            .filter_map(|o| HeaderValue::from_str(o).ok())
            .collect();
        app = app.layer(
            CorsLayer::new()
                .allow_origin(allowed)
                .allow_methods([Method::GET, Method::POST, Method::DELETE])
                .allow_headers([
                    axum::http::header::AUTHORIZATION,
                    axum::http::header::CONTENT_TYPE,
                    axum::http::HeaderName::from_static("last-event-id"),
                    axum::http::HeaderName::from_static("mcp-session-id"),
                    axum::http::HeaderName::from_static("mcp-protocol-version"),
                ])
                .expose_headers([axum::http::HeaderName::from_static("mcp-session-id")]),
        );
    }
    app
}

/// Ctrl-C, or SIGTERM (how service managers stop a server).
async fn stop_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
}
