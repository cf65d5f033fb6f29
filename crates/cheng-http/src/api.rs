//! The canvas API's routes (`/api/…`; the contract is docs/guides/http.md). Graphs are read and
//! checked exactly as `cheng graph check` and `cheng graph run` read and check them.

use crate::error::ApiError;
use crate::events;
use crate::runs::Runs;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use cheng_engine::{lint, Graph, ValidatedGraph, ValidationError};
use cheng_node::Decision;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// What the routes share.
pub struct Api {
    pub runs: Arc<Runs>,
    /// `GET /api/nodes`, built once at start (the registry and policy do not change).
    pub palette: Value,
}

pub fn routes(api: Arc<Api>) -> Router {
    Router::new()
        .route("/api/nodes", get(nodes))
        .route("/api/graphs/check", post(check))
        .route("/api/runs", post(start).get(list))
        .route("/api/runs/{id}", get(detail).delete(cancel))
        .route("/api/runs/{id}/events", get(run_events))
        .route("/api/runs/{id}/approvals/{approval_id}", post(answer))
        .with_state(api)
}

async fn nodes(State(api): State<Arc<Api>>) -> Json<Value> {
    Json(api.palette.clone())
}

/// A request body that must be JSON: its own error otherwise, in the API's shape.
fn body(body: Result<Json<Value>, JsonRejection>) -> Result<Value, ApiError> {
    body.map(|Json(value)| value).map_err(|rejection| {
        ApiError::new(
            rejection.status(),
            "BAD_REQUEST",
            format!("the body must be JSON (Content-Type: application/json): {rejection}"),
        )
    })
}

/// The graph in `value`, parsed and validated; or the check's refusal (`{"ok": false, …}`).
fn validated(api: &Api, value: &Value) -> Result<(Graph, ValidatedGraph), Value> {
    let graph = Graph::from_value(value).map_err(|errors| refusal(&errors))?;
    let validated = api
        .runs
        .engine()
        .validate(&graph)
        .map_err(|e| refusal(&e))?;
    Ok((graph, validated))
}

/// `{"ok": false, "errors": [...], "node_errors": {NODE: {"errors": [...]}}}` (ComfyUI's
/// `node_errors` shape): every error in `errors`, those of a node also under its id.
fn refusal(errors: &[ValidationError]) -> Value {
    let mut node_errors = Map::new();
    let all: Vec<Value> = errors
        .iter()
        .map(|e| {
            let entry = json!({
                "code": e.kind.error_kind().code(),
                "kind": e.kind.as_str(),
                "node": e.node,
                "port": e.port,
                "message": e.to_string(),
            });
            if let Some(node) = &e.node {
                let errors = node_errors
                    .entry(node.clone())
                    .or_insert_with(|| json!({"errors": []}));
                if let Some(list) = errors["errors"].as_array_mut() {
                    list.push(entry.clone());
                }
            }
            entry
        })
        .collect();
    json!({"ok": false, "errors": all, "node_errors": node_errors})
}

async fn check(
    State(api): State<Arc<Api>>,
    graph: Result<Json<Value>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let value = body(graph)?;
    Ok(Json(match validated(&api, &value) {
        Ok((graph, _)) => {
            let warnings = lint::edge_warnings(api.runs.engine().registry(), &graph);
            json!({"ok": true, "warnings": warnings})
        }
        Err(refusal) => refusal,
    }))
}

async fn start(
    State(api): State<Arc<Api>>,
    graph: Result<Json<Value>, JsonRejection>,
) -> Result<Response, ApiError> {
    let value = body(graph)?;
    match validated(&api, &value) {
        Ok((_, validated)) => {
            let run = api.runs.start(value, validated)?;
            Ok((StatusCode::ACCEPTED, Json(json!({"run_id": run.id}))).into_response())
        }
        Err(refusal) => Ok((StatusCode::BAD_REQUEST, Json(refusal)).into_response()),
    }
}

async fn list(State(api): State<Arc<Api>>) -> Json<Value> {
    let runs: Vec<Value> = api.runs.list().iter().map(|r| r.summary()).collect();
    Json(json!({"runs": runs}))
}

fn run(api: &Api, id: &str) -> Result<Arc<crate::runs::Run>, ApiError> {
    api.runs.get(id).ok_or_else(|| {
        ApiError::not_found(format!(
            "no run `{id}` (runs are kept in memory; only the last {} finished ones)",
            crate::runs::HISTORY
        ))
    })
}

async fn detail(
    State(api): State<Arc<Api>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(run(&api, &id)?.detail()))
}

async fn cancel(State(api): State<Arc<Api>>, Path(id): Path<String>) -> Result<Response, ApiError> {
    let run = run(&api, &id)?;
    run.cancel.cancel();
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"run_id": run.id, "cancelled": true})),
    )
        .into_response())
}

async fn run_events(
    State(api): State<Arc<Api>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let run = run(&api, &id)?;
    let last = match headers.get("last-event-id") {
        None => 0,
        Some(value) => value
            .to_str()
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .ok_or_else(|| {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "BAD_REQUEST",
                    "Last-Event-ID must be the number of an event this stream sent",
                )
            })?,
    };
    Ok(events::stream(run, last).into_response())
}

async fn answer(
    State(api): State<Arc<Api>>,
    Path((id, approval_id)): Path<(String, String)>,
    decision: Result<Json<Value>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let value = body(decision)?;
    let decision = match value.get("decision").and_then(Value::as_str) {
        Some("approve") => Decision::Approved,
        Some("deny") => Decision::Denied,
        _ => {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "BAD_REQUEST",
                r#"decision: must be "approve" or "deny" (body {"decision": "approve"})"#,
            ))
        }
    };
    run(&api, &id)?.answer(&approval_id, decision)?;
    Ok(Json(
        json!({"approval_id": approval_id, "decision": value["decision"]}),
    ))
}
