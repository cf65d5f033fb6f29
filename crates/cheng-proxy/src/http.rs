//! The HTTP side: CONNECT tunnels and plain `http://` requests in absolute form, parsed by hyper.
//! A refusal is a 403 whose body says which rule to add; a failed connection a 502.

use crate::connect::{self, Denied};
use crate::record::Via;
use crate::Shared;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, HOST};
use hyper::{Method, Request, Response, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::sync::Arc;

type Body = BoxBody<Bytes, hyper::Error>;

/// Headers meant for this proxy or for one hop only; never forwarded.
const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "proxy-connection",
    "proxy-authorization",
    "proxy-authenticate",
    "keep-alive",
    "te",
    "trailer",
    "upgrade",
];

pub async fn serve(stream: tokio::net::UnixStream, shared: Arc<Shared>) {
    let service = hyper::service::service_fn(move |request| {
        let shared = Arc::clone(&shared);
        async move { Ok::<_, Infallible>(handle(request, shared).await) }
    });
    // A client that breaks off mid-request, or sends no whole head in time, ends its own
    // connection; nothing to report.
    let _ = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(crate::HANDSHAKE_TIMEOUT)
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades()
        .await;
}

async fn handle(request: Request<Incoming>, shared: Arc<Shared>) -> Response<Body> {
    if request.method() == Method::CONNECT {
        return tunnel(request, shared).await;
    }
    forward(request, shared).await
}

/// CONNECT host:port: the tunnel is opened to the checked address, then bytes are copied both
/// ways until either side closes.
async fn tunnel(mut request: Request<Incoming>, shared: Arc<Shared>) -> Response<Body> {
    let Some((host, port)) = authority(request.uri(), None) else {
        return text(StatusCode::BAD_REQUEST, "CONNECT needs host:port\n".into());
    };
    // The tunnel outlives this request's connection task: it holds a slot of its own.
    let Ok(slot) = Arc::clone(&shared.slots).try_acquire_owned() else {
        return text(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "cheng: more than {} connections at once\n",
                crate::MAX_CONNECTIONS
            ),
        );
    };
    let mut upstream = match connect::open(&shared, Via::Connect, &host, port).await {
        Ok(stream) => stream,
        Err(denied) => return denial(denied),
    };
    let upgrade = hyper::upgrade::on(&mut request);
    tokio::spawn(async move {
        let _slot = slot;
        let stop = shared.stop.clone();
        let carried = async move {
            if let Ok(upgraded) = upgrade.await {
                let mut client = TokioIo::new(upgraded);
                crate::relay(&mut client, &mut upstream).await;
            }
        };
        // The whole tunnel, not only its opening, ends when the proxy stops.
        tokio::select! {
            () = stop.cancelled() => {}
            () = carried => {}
        }
    });
    Response::new(empty())
}

/// GET http://host/path (any method but CONNECT): sent on to the host in origin form, without
/// the hop-by-hop headers; the answer comes back as it is.
async fn forward(mut request: Request<Incoming>, shared: Arc<Shared>) -> Response<Body> {
    match request.uri().scheme_str() {
        Some("http") => {}
        Some(other) => {
            return text(
                StatusCode::BAD_REQUEST,
                format!("this proxy forwards http:// requests; {other}:// goes through CONNECT (set HTTPS_PROXY)\n"),
            )
        }
        None => {
            return text(
                StatusCode::BAD_REQUEST,
                "a request to a proxy names the whole URL (http://host/path)\n".into(),
            )
        }
    }
    let Some((host, port)) = authority(request.uri(), Some(80)) else {
        return text(StatusCode::BAD_REQUEST, "the URL names no host\n".into());
    };
    let upstream = match connect::open(&shared, Via::Http, &host, port).await {
        Ok(stream) => stream,
        Err(denied) => return denial(denied),
    };
    let origin = request
        .uri()
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/")
        .parse::<Uri>()
        .unwrap_or_else(|_| Uri::from_static("/"));
    // The authority without any user information (`user:pass@` is never sent on).
    let host_header = request
        .uri()
        .authority()
        .and_then(|a| a.as_str().rsplit('@').next())
        .and_then(|a| HeaderValue::from_str(a).ok());
    *request.uri_mut() = origin;
    let headers = request.headers_mut();
    // The headers `Connection` names are for this hop too.
    let named: Vec<String> = headers
        .get_all(hyper::header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|name| name.trim().to_ascii_lowercase())
        .filter(|name| !name.is_empty())
        .collect();
    for name in HOP_BY_HOP
        .iter()
        .copied()
        .chain(named.iter().map(String::as_str))
    {
        headers.remove(name);
    }
    // Host is the host the rules checked, whatever the client wrote (a shared server routes by
    // it, so another Host would reach a site the rules never saw).
    headers.remove(HOST);
    if let Some(value) = host_header {
        headers.insert(HOST, value);
    }
    let (mut sender, connection) =
        match hyper::client::conn::http1::handshake(TokioIo::new(upstream)).await {
            Ok(pair) => pair,
            Err(e) => {
                return text(
                    StatusCode::BAD_GATEWAY,
                    format!("cheng: {host}:{port}: {e}\n"),
                )
            }
        };
    let stop = shared.stop.clone();
    tokio::spawn(async move {
        tokio::select! {
            () = stop.cancelled() => {}
            _ = connection => {}
        }
    });
    match sender.send_request(request).await {
        Ok(response) => response.map(BodyExt::boxed),
        Err(e) => text(
            StatusCode::BAD_GATEWAY,
            format!("cheng: {host}:{port}: {e}\n"),
        ),
    }
}

/// The host (without brackets) and port of a URI's authority; `default_port` when it names none.
fn authority(uri: &Uri, default_port: Option<u16>) -> Option<(String, u16)> {
    let authority = uri.authority()?;
    let port = authority.port_u16().or(default_port)?;
    let host = authority.host();
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    (!host.is_empty()).then(|| (host.to_string(), port))
}

fn denial(denied: Denied) -> Response<Body> {
    match denied {
        Denied::Refused(why) => text(StatusCode::FORBIDDEN, format!("{why}\n")),
        Denied::Failed(why) => text(StatusCode::BAD_GATEWAY, format!("cheng: {why}\n")),
    }
}

fn text(status: StatusCode, body: String) -> Response<Body> {
    let mut response = Response::new(full(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

fn full(body: String) -> Body {
    Full::new(Bytes::from(body))
        .map_err(|never: Infallible| match never {})
        .boxed()
}

fn empty() -> Body {
    full(String::new())
}
