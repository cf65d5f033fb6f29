//! The hops of one fetch. Each hop, the first and every redirect alike:
//!
//! 1. the URL is checked (http or https, a host, no credentials);
//! 2. every layer of host rules (the operator's, then the author's) admits the host by name,
//!    before anything is looked up, so a refused name never reaches a resolver;
//! 3. the name is looked up once and every layer checks every address (steps 2 and 3 are
//!    [`cheng_net::Gate::addresses`], the sandbox's proxy's check too);
//! 4. the request goes to exactly those addresses (the client's own resolver is bypassed for
//!    the host), with the client's redirects off, and its proxies off unless the operator's
//!    `env_proxy` turns on the environment's (`Limits::env_proxy`).
//!
//! A redirect's Location is the next hop, at most `max_redirects` of them. The body is counted
//! as it arrives and reading stops at `max_body` bytes, whatever Content-Length claims.

use cheng_net::{Gate, GateError, Target};
use reqwest::{StatusCode, Url};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// The bounds of one fetch.
#[derive(Debug, Clone)]
pub struct Limits {
    pub max_body: usize,
    pub max_redirects: usize,
    pub user_agent: String,
    /// Per connection attempt; the caller bounds the whole fetch.
    pub connect_timeout: Duration,
    /// Go through the proxy the environment names (the operator's `env_proxy`). The checks are
    /// the same; the proxy then looks the name up itself, so the addresses checked are cheng's
    /// lookup's, not necessarily the ones the proxy connects to.
    pub env_proxy: bool,
}

/// What a fetch brought back.
#[derive(Debug)]
pub struct Fetched {
    /// The URL the body came from (after redirects).
    pub url: Url,
    pub status: StatusCode,
    pub content_type: Option<String>,
    /// At most `max_body` bytes.
    pub body: Vec<u8>,
    /// The body went on past `max_body`; reading stopped there.
    pub body_truncated: bool,
    /// Each redirect followed, in order: the URL it led to.
    pub redirects: Vec<String>,
}

/// Why a fetch stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchError {
    /// The URL (the input's or a redirect's) cannot be fetched as written.
    BadUrl(String),
    /// Host rules refused a hop.
    Refused(String),
    /// The name could not be looked up, or the connection failed or broke.
    Network(String),
    /// More redirects than allowed.
    TooManyRedirects(String),
}

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FetchError::BadUrl(m)
            | FetchError::Refused(m)
            | FetchError::Network(m)
            | FetchError::TooManyRedirects(m) => f.write_str(m),
        }
    }
}

/// The URL as a fetch can take it: http or https, with a host, without credentials.
pub fn parse_url(text: &str) -> Result<Url, FetchError> {
    let url = Url::parse(text.trim())
        .map_err(|e| FetchError::BadUrl(format!("url {text:?} is not a URL: {e}")))?;
    check_url(url)
}

fn check_url(url: Url) -> Result<Url, FetchError> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(FetchError::BadUrl(format!(
            "{url}: web_fetch fetches http and https URLs only, not {}:",
            url.scheme()
        )));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(FetchError::BadUrl(format!("{url} names no host")));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(FetchError::BadUrl(format!(
            "{}: web_fetch sends no credentials; remove the user name and password from the URL",
            without_credentials(&url)
        )));
    }
    Ok(url)
}

fn without_credentials(url: &Url) -> String {
    let mut shown = url.clone();
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.to_string()
}

/// The host and port a URL connects to.
pub fn target(url: &Url) -> Result<Target, FetchError> {
    let host = url.host_str().unwrap_or("");
    let port = url.port_or_known_default().unwrap_or(80);
    Target::new(host, port).map_err(|e| FetchError::BadUrl(format!("{url}: {e}")))
}

/// Step 2 alone: every layer admits the URL's host by name (what the approval card is checked
/// against before anybody is asked).
pub fn admit_by_name(url: &Url, gate: &Gate) -> Result<(), FetchError> {
    gate.admit_by_name(&target(url)?)
        .map_err(|e| gate_error(url, e))
}

/// Steps 2–3: the addresses this hop may connect to.
async fn checked_addresses(url: &Url, gate: &Gate) -> Result<Vec<IpAddr>, FetchError> {
    gate.addresses(&target(url)?)
        .await
        .map_err(|e| gate_error(url, e))
}

fn gate_error(url: &Url, error: GateError) -> FetchError {
    match error {
        GateError::Refused { .. } => FetchError::Refused(format!("{url}: {error}")),
        GateError::Lookup(_) => FetchError::Network(format!("{url}: {error}")),
    }
}

/// Fetches `url` with GET, following redirects by hand, every hop through `layers`.
pub async fn fetch(url: Url, gate: &Gate, limits: &Limits) -> Result<Fetched, FetchError> {
    let mut url = url;
    let mut redirects = Vec::new();
    loop {
        let addresses = checked_addresses(&url, gate).await?;
        let response = request(&url, &addresses, limits).await?;
        let status = response.status();
        if status.is_redirection() {
            if let Some(location) = response.headers().get(reqwest::header::LOCATION) {
                let next = next_hop(&url, location)?;
                if redirects.len() >= limits.max_redirects {
                    return Err(FetchError::TooManyRedirects(format!(
                        "{url} redirects to {next}: more than {} redirects; fetch the last URL yourself if it is the page you meant",
                        limits.max_redirects
                    )));
                }
                redirects.push(next.to_string());
                url = next;
                continue;
            }
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let (body, body_truncated) = read_body(&url, response, limits.max_body).await?;
        return Ok(Fetched {
            url,
            status,
            content_type,
            body,
            body_truncated,
            redirects,
        });
    }
}

fn next_hop(url: &Url, location: &reqwest::header::HeaderValue) -> Result<Url, FetchError> {
    let location = location.to_str().map_err(|_| {
        FetchError::BadUrl(format!("{url} redirects to a Location that is not text"))
    })?;
    let next = url.join(location).map_err(|e| {
        FetchError::BadUrl(format!(
            "{url} redirects to {location:?}, which is not a URL: {e}"
        ))
    })?;
    check_url(next)
}

/// One GET to the checked addresses.
async fn request(
    url: &Url,
    addresses: &[IpAddr],
    limits: &Limits,
) -> Result<reqwest::Response, FetchError> {
    let mut client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(&limits.user_agent)
        .connect_timeout(limits.connect_timeout);
    if !limits.env_proxy {
        client = client.no_proxy();
    }
    if let Some(host) = url.domain() {
        let port = url.port_or_known_default().unwrap_or(80);
        let pinned: Vec<SocketAddr> = addresses
            .iter()
            .map(|ip| SocketAddr::new(*ip, port))
            .collect();
        client = client.resolve_to_addrs(host, &pinned);
    }
    let client = client.build().map_err(|e| {
        FetchError::Network(format!("cannot set up the HTTP client: {}", chain(&e)))
    })?;
    client
        .get(url.clone())
        .send()
        .await
        .map_err(|e| FetchError::Network(format!("{url}: {}", chain(&e))))
}

/// Reads the body up to `max` bytes, counting what arrives (Content-Length is not trusted).
async fn read_body(
    url: &Url,
    mut response: reqwest::Response,
    max: usize,
) -> Result<(Vec<u8>, bool), FetchError> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| FetchError::Network(format!("{url}: the body broke off: {}", chain(&e))))?
    {
        let room = max - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

/// An error with its causes, which reqwest keeps apart ("error sending request: … : connection
/// refused").
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let shown = cause.to_string();
        if !text.contains(&shown) {
            text.push_str(": ");
            text.push_str(&shown);
        }
        source = cause.source();
    }
    text
}
