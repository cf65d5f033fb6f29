//! The one check every request passes before any route sees it: `Host` names this server (DNS
//! rebinding), `Origin`, when a browser sends one, is this server's own or one the operator
//! allowed, and the bearer token is right. `/api`, `/mcp` and the canvas all sit behind it.

use crate::error::ApiError;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use std::net::SocketAddr;
use std::sync::Arc;

/// The cookie `GET /?token=…` sets, so a browser need not carry the token in every URL.
pub const COOKIE: &str = "cheng_token";

pub struct Guard {
    /// SHA-256 of the token: what requests are compared against (in constant time).
    token: [u8; 32],
    /// `Host` values this server answers to, lower-case.
    hosts: Vec<String>,
    /// Browser origins allowed besides the server's own (`--allow-origin`).
    origins: Vec<String>,
}

impl Guard {
    /// A guard for a server bound at `addr`: on loopback it answers to `127.0.0.1`,
    /// `localhost` and `[::1]` at the bound port, elsewhere to the bound address itself; and to
    /// every `extra_hosts` (`--allow-host`, e.g. the name a reverse proxy forwards).
    pub fn new(token: &str, addr: SocketAddr, extra_hosts: &[String], origins: &[String]) -> Guard {
        let port = addr.port();
        let mut hosts = vec![addr.to_string()];
        if addr.ip().is_loopback() {
            hosts.extend([
                format!("127.0.0.1:{port}"),
                format!("localhost:{port}"),
                format!("[::1]:{port}"),
            ]);
        }
        hosts.extend(extra_hosts.iter().cloned());
        for host in &mut hosts {
            host.make_ascii_lowercase();
        }
        Guard {
            token: digest(token),
            hosts,
            origins: origins.to_vec(),
        }
    }

    /// Why `headers` (and the request's query) may not reach this server, if they may not.
    pub fn refuse(&self, headers: &HeaderMap, query: Option<&str>) -> Option<ApiError> {
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .map(str::to_ascii_lowercase);
        let Some(host) = host.filter(|h| self.hosts.contains(h)) else {
            return Some(ApiError::new(
                StatusCode::FORBIDDEN,
                "FORBIDDEN_HOST",
                format!(
                    "the Host header must name this server ({}); a page that reached this server under another name is refused. A reverse proxy in front needs `--allow-host NAME`",
                    self.hosts.join(", ")
                ),
            ));
        };
        if let Some(origin) = headers.get(header::ORIGIN) {
            let own = format!("http://{host}");
            let allowed = origin
                .to_str()
                .is_ok_and(|o| o == own || self.origins.iter().any(|a| a == o));
            if !allowed {
                return Some(ApiError::new(
                    StatusCode::FORBIDDEN,
                    "FORBIDDEN_ORIGIN",
                    "this origin may not call the server; start it with `--allow-origin ORIGIN` to allow a canvas served elsewhere",
                ));
            }
        }
        let offered = bearer(headers)
            .or_else(|| cookie(headers))
            .or_else(|| query.and_then(query_token));
        match offered {
            Some(token) if same(&digest(token), &self.token) => None,
            Some(_) => Some(unauthorized("the token is wrong")),
            None => Some(unauthorized("a token is needed")),
        }
    }
}

fn unauthorized(why: &str) -> ApiError {
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "UNAUTHORIZED",
        format!(
            "{why}: send `Authorization: Bearer TOKEN`, or open the URL `cheng serve --http` printed (it sets a cookie)"
        ),
    )
}

/// The middleware: refuses what [`Guard::refuse`] refuses, with its status.
pub async fn check(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    match guard.refuse(request.headers(), request.uri().query()) {
        None => next.run(request).await,
        Some(error) => {
            let unauthorized = error.status == StatusCode::UNAUTHORIZED;
            let mut response = error.into_response();
            if unauthorized {
                response.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    header::HeaderValue::from_static("Bearer"),
                );
            }
            response
        }
    }
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
        .map(str::trim)
}

fn cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| pair.trim().strip_prefix(COOKIE)?.strip_prefix('='))
}

/// `token=…` from a query string (tokens are URL-safe: no decoding needed).
pub fn query_token(query: &str) -> Option<&str> {
    query
        .split('&')
        .find_map(|pair| pair.strip_prefix("token="))
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// Equal digests, compared without stopping at the first difference.
fn same(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A token an operator may choose: URL-safe characters only (it goes into a URL and a cookie
/// unescaped), and long enough not to be guessed.
pub fn check_token(token: &str) -> Result<(), String> {
    if token.len() < 16 {
        return Err(format!(
            "--token / CHENG_TOKEN: at least 16 characters are needed (got {}); leave it unset for a random one",
            token.len()
        ));
    }
    if let Some(c) = token
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '~')))
    {
        return Err(format!(
            "--token / CHENG_TOKEN: {c:?} is not allowed; use letters, digits, '-', '_', '.' and '~'"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard() -> Guard {
        Guard::new(
            "0123456789abcdef",
            "127.0.0.1:8765".parse().unwrap(),
            &[],
            &["https://canvas.example".to_string()],
        )
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                value.parse().unwrap(),
            );
        }
        map
    }

    fn code(refusal: Option<ApiError>) -> Option<&'static str> {
        refusal.map(|e| e.code)
    }

    #[test]
    fn the_token_is_taken_from_header_cookie_or_query() {
        let g = guard();
        let host = ("host", "127.0.0.1:8765");
        let ok = [
            g.refuse(
                &headers(&[host, ("authorization", "Bearer 0123456789abcdef")]),
                None,
            ),
            g.refuse(
                &headers(&[host, ("cookie", "a=b; cheng_token=0123456789abcdef")]),
                None,
            ),
            g.refuse(&headers(&[host]), Some("x=1&token=0123456789abcdef")),
        ];
        assert!(ok.iter().all(Option::is_none));
        assert_eq!(
            code(g.refuse(&headers(&[host]), None)),
            Some("UNAUTHORIZED")
        );
        assert_eq!(
            code(g.refuse(
                &headers(&[host, ("authorization", "Bearer 0123456789abcdeX")]),
                None
            )),
            Some("UNAUTHORIZED")
        );
    }

    #[test]
    fn host_and_origin_are_checked_before_the_token() {
        let g = guard();
        let token = ("authorization", "Bearer 0123456789abcdef");
        assert_eq!(
            code(g.refuse(&headers(&[("host", "evil.example:8765"), token]), None)),
            Some("FORBIDDEN_HOST")
        );
        assert_eq!(
            code(g.refuse(&headers(&[token]), None)),
            Some("FORBIDDEN_HOST")
        );
        for host in ["localhost:8765", "[::1]:8765", "LOCALHOST:8765"] {
            assert_eq!(g.refuse(&headers(&[("host", host), token]), None), None);
        }
        let host = ("host", "localhost:8765");
        assert_eq!(
            code(g.refuse(
                &headers(&[host, token, ("origin", "http://evil.example")]),
                None
            )),
            Some("FORBIDDEN_ORIGIN")
        );
        assert_eq!(
            code(g.refuse(&headers(&[host, token, ("origin", "null")]), None)),
            Some("FORBIDDEN_ORIGIN")
        );
        for origin in ["http://localhost:8765", "https://canvas.example"] {
            assert_eq!(
                g.refuse(&headers(&[host, token, ("origin", origin)]), None),
                None
            );
        }
    }

    #[test]
    fn chosen_tokens_must_be_long_and_url_safe() {
        assert!(check_token("short").is_err());
        assert!(check_token("0123456789abcdef; Path=/").is_err());
        assert!(check_token("0123456789abcdef-_.~").is_ok());
    }
}
