//! MCP over Streamable HTTP (`cheng serve --http`'s `/mcp`): rmcp's server transport around the
//! same handler as stdio, so the tools, approvals and sealed state are those of `--stdio`.
//!
//! Host, Origin and the bearer token are checked in front of this service, by the HTTP server's
//! one guard (crates/cheng-http), for every route alike; rmcp's own Host and Origin checks are
//! turned off so that there is one rule, not two that could drift apart.

use crate::server::Server;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The `/mcp` service: a tower service answering MCP's Streamable HTTP transport.
pub type McpService = StreamableHttpService<Server, LocalSessionManager>;

/// A service serving `server` to every client: handshake-era clients get a session each
/// (`Mcp-Session-Id`), 2026-07-28 clients are served statelessly. All of them share the
/// server's jobs, sealer and scope; each session has its own `logging/setLevel`.
/// `max_body`: the largest request accepted, in bytes (`413` beyond); `shutdown` ends every
/// session.
pub fn service(server: Server, max_body: usize, shutdown: CancellationToken) -> McpService {
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .disable_allowed_origins()
        // A stateless call that sends nothing before its result is answered as plain JSON; one
        // that sends progress or asks first is answered as an event stream, as before.
        .with_json_response(true)
        .with_max_request_body_bytes(max_body)
        .with_cancellation_token(shutdown);
    StreamableHttpService::new(
        move || Ok(server.for_session()),
        Arc::new(LocalSessionManager::default()),
        config,
    )
}
