//! The `tools/web_fetch` node. ChengOS's agent-tools reference describes web_fetch in prose; its
//! ports come from these sentences:
//!
//! | port | from |
//! |---|---|
//! | `url` | "fetch → recognise Content-Type → HTML simplified to text, in one step" |
//! | `max_chars` (default 40 000, at most 200 000) | `:default-max-chars (40000)`, `:max-chars (200000)` |
//! | `timeout_ms` (default 30 000) | `:timeout-ms (30000)` |
//! | `sensitive` (author, default true) | "sensitive by default (it changes no file, but it goes out: the URL itself is an exit); the host can turn that off with `{:web-fetch {:sensitive false}}`" |
//! | `allowed_hosts` (author) | `:allow-url`, "every hop goes through `:allow-url` (the host's network policy hook)", as host rules within the operator's `network_allow` |
//! | `user_agent` (author) | `:user-agent` |
//!
//! Fixed, as the reference gives them: the body is capped at 5 MiB counted on the bytes actually
//! read (`:max-body-bytes`, "never trust Content-Length"), at most 5 redirects followed by hand
//! (`:max-redirects`, "the client must not follow redirects itself"). The reference's `:proxy`
//! (https_proxy from the environment) is the operator's `env_proxy`: off by default, a fetch
//! connects to the addresses its host rules checked; on, it goes through the proxy the
//! environment names (`https_proxy`, `http_proxy`, `all_proxy`, minus `no_proxy`), after the
//! same checks by name and of cheng's own lookup; the proxy then looks the name up itself, and
//! what that lookup gives (a rebinding name, a non-public address) is the proxy's to refuse.

use crate::content::{self, Kind};
use crate::fetch::{self, FetchError, Limits};
use cheng_net::Gate;
use cheng_node::input::{self, opt_str};
use cheng_node::{
    failure, ApprovalRequest, ApprovalRule, Audience, Effects, ErrorKind, Node, NodeError,
    NodeSpec, PortSpec, PortType, RunContext, Values,
};
use serde_json::json;
use std::time::Duration;

/// The largest `max_chars` (the reference's `:max-chars`).
pub const MAX_CHARS_CEILING: i64 = 200_000;
/// The body cap, counted on the bytes read (the reference's `:max-body-bytes`).
pub const MAX_BODY_BYTES: usize = 5 * 1024 * 1024;
/// Redirects followed at most (the reference's `:max-redirects`).
pub const MAX_REDIRECTS: usize = 5;
/// The author's switch that puts every fetch before a person.
pub const SENSITIVE: &str = "sensitive";

const MAX_CHARS: PortSpec = PortSpec::input(
    "max_chars",
    PortType::Integer,
    "Most characters of text returned; the rest is cut with a note saying how much there was",
)
.default("40000")
.min(1)
.max(MAX_CHARS_CEILING);

const TIMEOUT: PortSpec = PortSpec::input(
    "timeout_ms",
    PortType::Integer,
    "Wall-clock budget for the whole fetch, redirects and body included, in milliseconds",
)
.default("30000")
.min(100)
.max(120_000);

const USER_AGENT: PortSpec = PortSpec::input(
    "user_agent",
    PortType::String,
    "The User-Agent header sent with every request",
)
.default("\"cheng-web-fetch/0.1\"")
.audience(Audience::Author);

pub static SPEC: NodeSpec = NodeSpec {
    id: "tools/web_fetch",
    title: "Fetch a web page",
    description: "Fetch one http(s) URL with GET and return it as text: HTML reduced to readable text (title, headings, links, body text; scripts and styles dropped), text, JSON and XML as they are, other types described. Redirects are followed (at most 5), every hop checked against the allowed hosts; private, loopback and link-local addresses are never reached unless a rule names them. The body is read up to 5 MiB. Use it to read documentation or an API's answer; do not put secrets in the URL: the URL itself leaves the machine.",
    category: "web",
    inputs: &[
        PortSpec::input(
            "url",
            PortType::String,
            "The http or https URL to fetch with GET (the whole URL is sent to its host)",
        )
        .required(),
        MAX_CHARS,
        TIMEOUT,
        PortSpec::input(
            SENSITIVE,
            PortType::Boolean,
            "Ask a person to approve every fetch (the card shows the URL: the URL itself carries data out); false fetches without asking",
        )
        .default("true")
        .audience(Audience::Author),
        PortSpec::input(
            cheng_node::policy::HOST_RULES_PORT,
            PortType::Array(&PortType::String),
            "Hosts this node may fetch from, within the operator's network_allow: example.com, *.example.com, example.com:8443, 203.0.113.7, 10.0.0.0/8. Not set: every host the operator allows; an empty list: none",
        )
        .audience(Audience::Author),
        USER_AGENT,
    ],
    outputs: &[
        PortSpec::output("url", PortType::String, "The URL the body came from, after redirects"),
        PortSpec::output("status", PortType::Integer, "The HTTP status code of the last response"),
        PortSpec::output(
            "content_type",
            PortType::String,
            "The response's Content-Type, as sent (empty when none was sent)",
        ),
        PortSpec::output(
            "content",
            PortType::String,
            "The page as text, cut to max_chars with a note at the end when longer",
        ),
        PortSpec::output("truncated", PortType::Boolean, "Whether content was cut to max_chars"),
        PortSpec::output("chars_total", PortType::Integer, "Characters of the whole text before the cut"),
        PortSpec::output("bytes", PortType::Integer, "Bytes of the body read (at most 5 MiB)"),
        PortSpec::output(
            "body_truncated",
            PortType::Boolean,
            "Whether the body went on past 5 MiB and reading stopped there",
        ),
        PortSpec::output(
            "redirects",
            PortType::Array(&PortType::String),
            "Each redirect followed, in order: the URL it led to",
        ),
        PortSpec::output("summary", PortType::String, "Human-readable summary"),
        failure::success("Whether a response was received (an HTTP error status such as 404 is still a response: see status)"),
        failure::ERROR_KIND,
        failure::TERMINAL,
        failure::ERROR,
    ],
    gate: None,
    effects: Effects::Approval(ApprovalRule::Switch(SENSITIVE)),
};

pub struct WebFetch;

cheng_node::inventory::submit! { cheng_node::NodeRegistration::new(&WebFetch) }

#[cheng_node::async_trait]
impl Node for WebFetch {
    fn spec(&self) -> &'static NodeSpec {
        &SPEC
    }

    /// Everything knowable without the network is checked before anybody is asked: the URL,
    /// the author's rules and both layers' rules for the first host by name.
    fn approval_request(
        &self,
        ctx: &RunContext,
        input: &Values,
    ) -> Result<ApprovalRequest, NodeError> {
        let request = Request::read(ctx, input)?;
        request.admit_first_hop()?;
        let mut card = ApprovalRequest::new(ctx, format!("web_fetch {}", request.url));
        card.details = Some(format!(
            "GET {} (the URL goes to {}; redirects are followed only to hosts the rules allow)",
            request.url,
            request.url.host_str().unwrap_or("")
        ));
        Ok(card)
    }

    async fn run(&self, ctx: &RunContext, input: Values) -> Result<Values, NodeError> {
        // Every hop, the first included, is checked inside fetch (with or without a card).
        let request = Request::read(ctx, &input)?;
        let gate = &request.gate;
        let limits = Limits {
            max_body: MAX_BODY_BYTES,
            max_redirects: MAX_REDIRECTS,
            user_agent: request.user_agent.clone(),
            connect_timeout: request.timeout,
            env_proxy: ctx.policy().env_proxy(ctx.node_type).0,
        };
        let whole = fetch::fetch(request.url.clone(), gate, &limits);
        let outcome = tokio::select! {
            outcome = tokio::time::timeout(request.timeout, whole) => outcome,
            () = ctx.cancel.cancelled() => {
                let message = format!("the fetch of {} was cancelled", request.url);
                return Err(NodeError::new(ErrorKind::Cancelled, message));
            }
        };
        let fetched = outcome
            .map_err(|_| {
                let message = format!(
                    "{}: no whole answer within timeout_ms {} ms",
                    request.url,
                    request.timeout.as_millis()
                );
                NodeError::new(ErrorKind::TimedOut, message)
            })?
            .map_err(|e| fetch_error(&e))?;
        Ok(outputs(&fetched, request.max_chars))
    }
}

/// One run's input, read and checked.
struct Request {
    url: reqwest::Url,
    max_chars: usize,
    timeout: Duration,
    user_agent: String,
    /// The operator's host rules, then the author's `allowed_hosts` when set.
    gate: Gate,
}

impl Request {
    fn read(ctx: &RunContext, input: &Values) -> Result<Request, NodeError> {
        let url = fetch::parse_url(opt_str(input, "url").unwrap_or(""))
            .map_err(|e| NodeError::invalid_input(e.to_string()))?;
        let max_chars = input::int(input, &MAX_CHARS)?;
        let timeout = input::int(input, &TIMEOUT)?;
        let user_agent = opt_str(input, USER_AGENT.name).unwrap_or("cheng-web-fetch/0.1");
        Ok(Request {
            url,
            max_chars: usize::try_from(max_chars).unwrap_or(0),
            timeout: Duration::from_millis(u64::try_from(timeout).unwrap_or(0)),
            user_agent: user_agent.to_string(),
            gate: ctx.policy().network_gate(ctx.node_type, input, &[])?,
        })
    }

    fn admit_first_hop(&self) -> Result<(), NodeError> {
        fetch::admit_by_name(&self.url, &self.gate).map_err(|e| fetch_error(&e))
    }
}

fn fetch_error(error: &FetchError) -> NodeError {
    let kind = match error {
        FetchError::BadUrl(_) => ErrorKind::InvalidInput,
        FetchError::Refused(_) => ErrorKind::PolicyDenied,
        FetchError::Network(_) | FetchError::TooManyRedirects(_) => ErrorKind::NetworkFailed,
    };
    NodeError::new(kind, error.to_string())
}

fn outputs(fetched: &fetch::Fetched, max_chars: usize) -> Values {
    let shown = content::show(fetched.content_type.as_deref(), &fetched.body, max_chars);
    let status = fetched.status;
    let what = match shown.kind {
        Kind::Html => "HTML as text",
        Kind::Text => "text",
        Kind::Other => "not shown",
    };
    let mut summary = format!(
        "HTTP {} {} from {}: {} bytes, {} characters ({what})",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        fetched.url,
        fetched.body.len(),
        shown.chars_total
    );
    if !fetched.redirects.is_empty() {
        summary.push_str(&format!(", after {} redirect(s)", fetched.redirects.len()));
    }
    if fetched.body_truncated {
        summary.push_str(&format!(", body cut at {MAX_BODY_BYTES} bytes"));
    }
    if shown.truncated {
        summary.push_str(&format!(", text cut to {max_chars} characters"));
    }
    let mut out = Values::new();
    out.insert("url".into(), json!(fetched.url.as_str()));
    out.insert("status".into(), json!(status.as_u16()));
    out.insert(
        "content_type".into(),
        json!(fetched.content_type.as_deref().unwrap_or("")),
    );
    out.insert("content".into(), json!(shown.text));
    out.insert("truncated".into(), json!(shown.truncated));
    out.insert("chars_total".into(), json!(shown.chars_total));
    out.insert("bytes".into(), json!(fetched.body.len()));
    out.insert("body_truncated".into(), json!(fetched.body_truncated));
    out.insert("redirects".into(), json!(fetched.redirects));
    out.insert("summary".into(), json!(summary));
    failure::fill::<()>(&mut out, &Ok(()));
    out
}
