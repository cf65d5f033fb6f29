//! The bundled web canvas: static files compiled into the binary (no build step, nothing read
//! from disk at run time), served behind the guard like every other route.
//!
//! `GET /?token=T` trades the token in the URL for a cookie and redirects to `/`, so the token
//! leaves the address bar (and the history) at once.

use crate::guard::{query_token, COOKIE};
use axum::extract::RawQuery;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

/// Scripts and styles from this server only; no framing (clickjacking an approval button).
const CSP: &str = "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

const FILES: [(&str, &str, &str); 5] = [
    (
        "/canvas.js",
        "text/javascript; charset=utf-8",
        include_str!("../canvas/canvas.js"),
    ),
    (
        "/canvas.css",
        "text/css; charset=utf-8",
        include_str!("../canvas/canvas.css"),
    ),
    (
        "/vendor/drawflow.min.js",
        "text/javascript; charset=utf-8",
        include_str!("../canvas/vendor/drawflow.min.js"),
    ),
    (
        "/vendor/drawflow.min.css",
        "text/css; charset=utf-8",
        include_str!("../canvas/vendor/drawflow.min.css"),
    ),
    (
        "/vendor/LICENSE-drawflow",
        "text/plain; charset=utf-8",
        include_str!("../canvas/vendor/LICENSE-drawflow"),
    ),
];

const INDEX: &str = include_str!("../canvas/index.html");

pub fn routes() -> Router {
    let mut router = Router::new().route("/", get(index));
    for (path, content_type, body) in FILES {
        router = router.route(path, get(move || async move { file(content_type, body) }));
    }
    router
}

async fn index(RawQuery(query): RawQuery) -> Response {
    match query.as_deref().and_then(query_token) {
        // The guard has checked the token already.
        Some(token) => {
            let cookie = format!("{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict");
            match HeaderValue::from_str(&cookie) {
                Ok(cookie) => (
                    StatusCode::SEE_OTHER,
                    [
                        (header::SET_COOKIE, cookie),
                        (header::LOCATION, HeaderValue::from_static("/")),
                        (
                            header::REFERRER_POLICY,
                            HeaderValue::from_static("no-referrer"),
                        ),
                    ],
                )
                    .into_response(),
                Err(_) => StatusCode::BAD_REQUEST.into_response(),
            }
        }
        None => file("text/html; charset=utf-8", INDEX),
    }
}

fn file(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CONTENT_SECURITY_POLICY, CSP),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}
