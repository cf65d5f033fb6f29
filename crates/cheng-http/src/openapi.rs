//! The canvas API as an OpenAPI 3.1 document: `cheng schemas --write` writes it as
//! `schemas/http-api.openapi.json` beside the graph schema its bodies refer to, and a test
//! fails when it is stale. docs/guides/http.md is the prose for the same contract.

use crate::runs::{EVENTS_KEPT, HISTORY, QUEUE};
use crate::MAX_BODY;
use serde_json::{json, Value};

/// The file name under `schemas/`.
pub const FILE: &str = "http-api.openapi.json";

fn error(description: &str) -> Value {
    json!({
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    })
}

fn ok(description: &str, schema: Value) -> Value {
    json!({"description": description, "content": {"application/json": {"schema": schema}}})
}

fn schema(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

fn run_id() -> Value {
    json!({"name": "id", "in": "path", "required": true, "schema": {"type": "string"}, "description": "A run id (`r1`, `r2`, …)"})
}

/// The document.
pub fn document() -> Value {
    let graph = json!({
        "required": true,
        "description": format!("A graph as `cheng graph run` takes it (schemas/graph.json); at most {MAX_BODY} bytes"),
        "content": {"application/json": {"schema": {"$ref": "graph.json"}}}
    });
    let unauthorized = error("No token, or a wrong one (`WWW-Authenticate: Bearer`)");
    let forbidden = error("`Host` does not name this server, or `Origin` is not allowed");
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "cheng serve --http: the canvas API",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Nodes, graph checks, runs with live events and approval cards. Every request needs the token the server printed; `Host` and `Origin` are checked first. See docs/guides/http.md."
        },
        "security": [{"bearer": []}, {"cookie": []}, {"query": []}],
        "paths": {
            "/api/nodes": {"get": {
                "summary": "The palette: every node type with a widget per input, object fields, and availability",
                "responses": {
                    "200": ok("The nodes, sorted by id", json!({"type": "array", "items": schema("PaletteNode")})),
                    "401": unauthorized, "403": forbidden
                }
            }},
            "/api/graphs/check": {"post": {
                "summary": "Check a graph as `cheng graph check` does",
                "requestBody": graph,
                "responses": {
                    "200": ok("The verdict", json!({"oneOf": [schema("CheckOk"), schema("CheckRefused")]})),
                    "400": error("The body is not JSON"),
                    "413": error("The body is too large")
                }
            }},
            "/api/runs": {
                "post": {
                    "summary": "Start a run of a graph",
                    "requestBody": graph,
                    "responses": {
                        "202": ok("Started (or queued until a job is free)", json!({"type": "object", "required": ["run_id"], "properties": {"run_id": {"type": "string"}}})),
                        "400": ok("The graph is invalid (nothing started)", schema("CheckRefused")),
                        "413": error("The body is too large"),
                        "429": error(&format!("{QUEUE} runs are already waiting for a job"))
                    }
                },
                "get": {
                    "summary": format!("Recent runs, newest first (running and queued ones, and the last {HISTORY} finished)"),
                    "responses": {"200": ok("The runs", json!({
                        "type": "object", "required": ["runs"],
                        "properties": {"runs": {"type": "array", "items": schema("RunSummary")}}
                    }))}
                }
            },
            "/api/runs/{id}": {
                "parameters": [run_id()],
                "get": {
                    "summary": "A run: status, graph, open approval cards and, once finished, its result",
                    "responses": {"200": ok("The run", schema("RunDetail")), "404": error("No such run")}
                },
                "delete": {
                    "summary": "Cancel a run: its running nodes' process groups are killed",
                    "responses": {"202": ok("Cancelling", json!({"type": "object"})), "404": error("No such run")}
                }
            },
            "/api/runs/{id}/events": {
                "parameters": [run_id(), {
                    "name": "Last-Event-ID", "in": "header", "required": false,
                    "schema": {"type": "integer", "minimum": 0},
                    "description": "Resume after this event"
                }],
                "get": {
                    "summary": "The run's events as Server-Sent Events",
                    "description": format!("Each event: `id:` its number, `event:` its name, `data:` one JSON object as `cheng graph run --events jsonl` writes it (`approval_requested` adds `approval_id` and `card_text`; `approval_decided` adds the same `approval_id`). The run keeps its last {EVENTS_KEPT} events; a reader asking for dropped ones first gets `events_dropped` `{{\"missed\": N}}`. The stream ends after `graph_finished`."),
                    "responses": {
                        "200": {"description": "The stream", "content": {"text/event-stream": {"schema": {"type": "string"}}}},
                        "400": error("Last-Event-ID is not a number"),
                        "404": error("No such run")
                    }
                }
            },
            "/api/runs/{id}/approvals/{approval_id}": {
                "parameters": [run_id(), {"name": "approval_id", "in": "path", "required": true, "schema": {"type": "string"}}],
                "post": {
                    "summary": "Answer an approval card (once)",
                    "requestBody": {"required": true, "content": {"application/json": {"schema": {
                        "type": "object", "required": ["decision"],
                        "properties": {"decision": {"enum": ["approve", "deny"]}}
                    }}}},
                    "responses": {
                        "200": ok("Answered", json!({"type": "object"})),
                        "400": error("decision is neither approve nor deny"),
                        "404": error("No such run or card"),
                        "409": error("The card was answered already, or its run was cancelled")
                    }
                }
            }
        },
        "components": {
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "cookie": {"type": "apiKey", "in": "cookie", "name": crate::guard::COOKIE, "description": "Set by opening `/?token=TOKEN`"},
                "query": {"type": "apiKey", "in": "query", "name": "token"}
            },
            "schemas": {
                "Error": {
                    "type": "object", "required": ["error"],
                    "properties": {"error": {"type": "object", "required": ["code", "message"], "properties": {
                        "code": {"type": "string"}, "message": {"type": "string"}
                    }}}
                },
                "PaletteNode": {
                    "type": "object",
                    "description": "An entry of `cheng nodes --json`, plus availability; each input also has `widget` and, for object ports, `fields`",
                    "required": ["id", "inputs", "outputs", "available"],
                    "properties": {
                        "id": {"type": "string"},
                        "available": {"type": "boolean"},
                        "unavailable_reason": {"type": "string"},
                        "inputs": {"type": "array", "items": {"type": "object", "required": ["name", "type", "audience", "widget"], "properties": {
                            "widget": {"enum": ["checkbox", "textarea", "code", "number", "select", "text", "list", "json"]},
                            "fields": {"type": "array", "items": {"type": "object", "required": ["name", "type", "widget"]}}
                        }}},
                        "outputs": {"type": "array"}
                    }
                },
                "CheckOk": {
                    "type": "object", "required": ["ok", "warnings"],
                    "properties": {"ok": {"const": true}, "warnings": {"type": "array", "items": {"type": "string"}}}
                },
                "ValidationError": {
                    "type": "object", "required": ["code", "kind", "message"],
                    "properties": {
                        "code": {"type": "string", "description": "LOCAL_EXECUTOR_INVALID_INPUT or LOCAL_EXECUTOR_POLICY_DENIED"},
                        "kind": {"type": "string"},
                        "node": {"type": ["string", "null"]},
                        "port": {"type": ["string", "null"]},
                        "message": {"type": "string"}
                    }
                },
                "CheckRefused": {
                    "type": "object", "required": ["ok", "errors", "node_errors"],
                    "properties": {
                        "ok": {"const": false},
                        "errors": {"type": "array", "items": schema("ValidationError")},
                        "node_errors": {"type": "object", "additionalProperties": {
                            "type": "object", "required": ["errors"],
                            "properties": {"errors": {"type": "array", "items": schema("ValidationError")}}
                        }}
                    }
                },
                "RunStatus": {"enum": ["queued", "running", "succeeded", "failed", "cancelled"]},
                "RunSummary": {
                    "type": "object", "required": ["run_id", "status", "created", "nodes"],
                    "properties": {"run_id": {"type": "string"}, "status": schema("RunStatus"), "created": {"type": "string"}, "nodes": {"type": "integer"}}
                },
                "RunDetail": {
                    "type": "object", "required": ["run_id", "status", "created", "graph", "pending_approvals"],
                    "properties": {
                        "run_id": {"type": "string"},
                        "status": schema("RunStatus"),
                        "created": {"type": "string"},
                        "graph": {"$ref": "graph.json"},
                        "pending_approvals": {"type": "array", "items": {"type": "object", "required": ["approval_id", "node", "card_text", "request"]}},
                        "result": {"type": "object", "description": "What `cheng graph run --json` prints, once finished"}
                    }
                }
            }
        }
    })
}
