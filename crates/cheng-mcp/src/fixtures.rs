//! The MCP conformance suite's fixture tools (`test_simple_text`, `test_tool_with_progress`,
//! `test_input_required_result_*`, …), for cheng's own conformance test only.
//!
//! The suite's tools, logging, progress, elicitation, sampling and `input_required` scenarios
//! call tools of fixed names and check their scripted answers, which every SDK's conformance
//! server provides. These are those tools. They are served by the same handler, transport and
//! guard as cheng's nodes and log through the same per-request levels
//! ([`crate::live::Logger`]); their `requestState` is sealed under a per-process random key (for
//! integrity only: unlike an approval's, it is neither single-use nor timed). They touch
//! nothing: no node, no file, no process. They are compiled in only with the
//! `conformance-fixtures` feature, which cheng-cli's dev-dependency turns on, so `cargo test`,
//! `cargo bench` and `--all-targets` builds of `cheng` have them and `cargo build` / `cargo
//! install` builds do not; and they are offered only with the hidden flag
//! `cheng serve --conformance-fixtures` (which a build without them refuses).
#![allow(deprecated)] // Sampling and logging are deprecated by SEP-2577; the suite still checks them.

use crate::live::{LogLevel, Logger};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ContentBlock,
    CreateMessageRequestParams, ElicitRequestParams, InputRequest, InputRequests,
    InputRequiredResult, LoggingLevel, ProgressNotificationParam, RequestStateCodec,
    ResourceContents, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::ErrorData as McpError;
use serde_json::{json, Map, Value};
use std::time::Duration;

/// A 1×1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
/// Eight samples of silence, 8 kHz mono WAV.
const WAV: &str = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";

/// (name, description, input properties) of every fixture tool.
const TOOLS: &[(&str, &str, &str)] = &[
    ("test_simple_text", "Answers one text block.", "{}"),
    ("test_image_content", "Answers one PNG image block.", "{}"),
    ("test_audio_content", "Answers one WAV audio block.", "{}"),
    (
        "test_embedded_resource",
        "Answers one embedded text resource.",
        "{}",
    ),
    (
        "test_multiple_content_types",
        "Answers text, an image and an embedded resource.",
        "{}",
    ),
    (
        "test_tool_with_logging",
        "Logs three info messages while it runs.",
        "{}",
    ),
    (
        "test_tool_with_progress",
        "Reports progress 0, 50 and 100 of 100.",
        "{}",
    ),
    ("test_error_handling", "Always fails (isError).", "{}"),
    (
        "test_sampling",
        "Asks the client's model for a completion.",
        r#"{"prompt": {"type": "string"}}"#,
    ),
    (
        "test_elicitation",
        "Asks the person one question.",
        r#"{"message": {"type": "string"}}"#,
    ),
    (
        "test_elicitation_sep1034_defaults",
        "Asks with a form whose fields have defaults.",
        "{}",
    ),
    (
        "test_elicitation_sep1330_enums",
        "Asks with a form of every enum shape.",
        "{}",
    ),
    (
        "test_missing_capability",
        "Needs the client's sampling capability.",
        "{}",
    ),
    (
        "test_streaming_elicitation",
        "Answers once, with no request of its own.",
        "{}",
    ),
    (
        "test_logging_tool",
        "Logs one info message when the request asks for logs.",
        "{}",
    ),
    (
        "test_input_required_result_elicitation",
        "One input_required round: a name.",
        "{}",
    ),
    (
        "test_input_required_result_sampling",
        "One input_required round: a sampling request.",
        "{}",
    ),
    (
        "test_input_required_result_list_roots",
        "One input_required round: the client's roots.",
        "{}",
    ),
    (
        "test_input_required_result_request_state",
        "One round with a sealed requestState.",
        "{}",
    ),
    (
        "test_input_required_result_multiple_inputs",
        "One round asking for three inputs.",
        "{}",
    ),
    (
        "test_input_required_result_multi_round",
        "Two rounds, the state carried between them.",
        "{}",
    ),
    (
        "test_input_required_result_tampered_state",
        "Refuses a requestState it did not seal.",
        "{}",
    ),
    (
        "test_input_required_result_capabilities",
        "Asks only what the client declared.",
        "{}",
    ),
];

/// `json_schema_2020_12_tool`'s input schema: the JSON Schema 2020-12 keywords a listing must
/// pass on untouched (`$schema`, `$defs` with an `$anchor`, `$ref`, composition, conditionals,
/// `additionalProperties`).
const SCHEMA_2020_12: &str = r##"{
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"$anchor": "addressDef", "type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"}
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": false
}"##;

/// The fixture tools and the key their request states are sealed with.
pub struct Fixtures {
    codec: RequestStateCodec,
}

impl Fixtures {
    pub fn new() -> Result<Fixtures, String> {
        let codec = RequestStateCodec::try_new(crate::approve::random_key()?.to_vec())
            .map_err(|e| format!("cannot set up request-state sealing: {e}"))?;
        Ok(Fixtures { codec })
    }

    /// Their `tools/list` entries.
    pub fn tools() -> Result<Vec<Tool>, String> {
        let mut tools = Vec::with_capacity(TOOLS.len() + 1);
        for (name, description, properties) in TOOLS {
            let properties = parse(name, properties)?;
            tools.push(tool(
                name,
                description,
                json!({"type": "object", "properties": properties}),
            )?);
        }
        let name = "json_schema_2020_12_tool";
        tools.push(tool(
            name,
            "Takes an input schema written in JSON Schema 2020-12.",
            parse(name, SCHEMA_2020_12)?,
        )?);
        Ok(tools)
    }

    /// The answer to a call of a fixture tool; `None` when `params` names another tool.
    pub async fn call(
        &self,
        params: &CallToolRequestParams,
        ctx: &RequestContext<RoleServer>,
        log_level: &LogLevel,
    ) -> Option<Result<CallToolResponse, McpError>> {
        let answer = match params.name.as_ref() {
            "test_simple_text" => text("This is a simple text response for testing."),
            "test_image_content" => content(vec![ContentBlock::image(PNG, "image/png")]),
            "test_audio_content" => content(vec![ContentBlock::audio(WAV, "audio/wav")]),
            "test_embedded_resource" => content(vec![ContentBlock::resource(
                ResourceContents::text(
                    "This is an embedded resource content.",
                    "test://embedded-resource",
                ),
            )]),
            "test_multiple_content_types" => content(vec![
                ContentBlock::text("Multiple content types test:"),
                ContentBlock::image(PNG, "image/png"),
                ContentBlock::resource(ResourceContents::TextResourceContents {
                    uri: "test://mixed-content-resource".to_string(),
                    mime_type: Some("application/json".to_string()),
                    text: json!({"test": "data", "value": 123}).to_string(),
                    meta: None,
                }),
            ]),
            "test_error_handling" => Ok(CallToolResult::error(vec![ContentBlock::text(
                "This tool intentionally returns an error for testing",
            )])
            .into()),
            "test_tool_with_logging" => {
                let logger = Logger::for_request(ctx, log_level);
                for (i, message) in [
                    "Tool execution started",
                    "Tool processing data",
                    "Tool execution completed",
                ]
                .into_iter()
                .enumerate()
                {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    logger.log(LoggingLevel::Info, message.to_string()).await;
                }
                text("Tool with logging executed successfully")
            }
            "test_logging_tool" => {
                Logger::for_request(ctx, log_level)
                    .log(
                        LoggingLevel::Info,
                        "Diagnostic trace logging activated".to_string(),
                    )
                    .await;
                text("Logging evaluated")
            }
            "test_tool_with_progress" => progress(ctx).await,
            "test_sampling" => sampling(params, ctx).await,
            "test_elicitation" => {
                let message = argument(params, "message").unwrap_or("Please answer");
                elicit(
                    ctx,
                    message,
                    json!({
                        "type": "object",
                        "properties": {"response": {"type": "string", "description": "User's response"}},
                        "required": ["response"],
                    }),
                    "User response",
                )
                .await
            }
            "test_elicitation_sep1034_defaults" => {
                elicit(
                    ctx,
                    "Please review and update the form fields with defaults",
                    json!({
                        "type": "object",
                        "properties": {
                            "name": {"type": "string", "description": "User name", "default": "John Doe"},
                            "age": {"type": "integer", "description": "User age", "default": 30},
                            "score": {"type": "number", "description": "User score", "default": 95.5},
                            "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active"},
                            "verified": {"type": "boolean", "description": "Verification status", "default": true},
                        },
                        "required": [],
                    }),
                    "Elicitation completed",
                )
                .await
            }
            "test_elicitation_sep1330_enums" => {
                elicit(
                    ctx,
                    "Please select options from the enum fields",
                    json!({
                        "type": "object",
                        "properties": {
                            "untitledSingle": {"type": "string", "description": "Select one option", "enum": ["option1", "option2", "option3"]},
                            "titledSingle": {"type": "string", "description": "Select one option with titles", "oneOf": [
                                {"const": "value1", "title": "First Option"},
                                {"const": "value2", "title": "Second Option"},
                                {"const": "value3", "title": "Third Option"},
                            ]},
                            "legacyEnum": {"type": "string", "description": "Select one option (legacy)", "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"]},
                            "untitledMulti": {"type": "array", "description": "Select multiple options", "minItems": 1, "maxItems": 3, "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                            "titledMulti": {"type": "array", "description": "Select multiple options with titles", "minItems": 1, "maxItems": 3, "items": {"anyOf": [
                                {"const": "value1", "title": "First Choice"},
                                {"const": "value2", "title": "Second Choice"},
                                {"const": "value3", "title": "Third Choice"},
                            ]}},
                        },
                        "required": [],
                    }),
                    "Elicitation completed",
                )
                .await
            }
            "test_missing_capability" => {
                if declared(ctx).sampling.is_some() {
                    text("Success")
                } else {
                    let required: ClientCapabilities =
                        match serde_json::from_value(json!({"sampling": {}})) {
                            Ok(required) => required,
                            Err(e) => return Some(Err(McpError::internal_error(e.to_string(), None))),
                        };
                    Err(McpError::missing_required_client_capability(required))
                }
            }
            "test_streaming_elicitation" => text("Streaming complete"),
            "json_schema_2020_12_tool" => text(&format!(
                "received {}",
                Value::Object(params.arguments.clone().unwrap_or_default())
            )),
            // The input_required fixtures, each a name of the table.
            name if name.starts_with("test_input_required_result_")
                && TOOLS.iter().any(|(tool, _, _)| *tool == name) =>
            {
                self.rounds(name, params, ctx)
            }
            _ => return None,
        };
        Some(answer)
    }

    /// The `input_required` fixtures (2026-07-28): each asks until its inputs are answered.
    fn rounds(
        &self,
        name: &str,
        params: &CallToolRequestParams,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let responses = params.input_responses.clone().unwrap_or_default();
        let answered = |key: &str| responses.get(key).and_then(Value::as_object);
        let field = |key: &str, field: &str| {
            answered(key)
                .and_then(|r| r.get("content"))
                .and_then(|c| c.get(field))
                .and_then(Value::as_str)
                .unwrap_or("unknown")
                .to_string()
        };
        // An echoed state is untrusted input: it must open under this server's key.
        let state = match params.request_state.as_deref() {
            None => None,
            Some(sealed) => match self.codec.open_json::<Value>(sealed) {
                Ok(state) => Some(state),
                Err(_) => {
                    return Err(McpError::invalid_params(
                        "requestState failed its integrity check: it was not sealed by this server, or was altered",
                        None,
                    ))
                }
            },
        };
        let kind = state.as_ref().and_then(|s| s["kind"].as_str());
        match name {
            "test_input_required_result_elicitation" => match answered("user_name") {
                Some(_) => text(&format!("Hello, {}!", field("user_name", "name"))),
                None => self.ask(&[("user_name", ask_name("What is your name?"))], None),
            },
            "test_input_required_result_sampling" => match answered("sample_request") {
                Some(r) => text(&format!(
                    "Sampling result: {}",
                    r.get("content")
                        .and_then(|c| c.get("text"))
                        .and_then(Value::as_str)
                        .unwrap_or("no response")
                )),
                None => self.ask(
                    &[(
                        "sample_request",
                        sample("What is the capital of France?", 100),
                    )],
                    None,
                ),
            },
            "test_input_required_result_list_roots" => match answered("roots_request") {
                Some(r) => text(&format!("Found {} root(s)", roots(r))),
                None => self.ask(&[("roots_request", list_roots())], None),
            },
            "test_input_required_result_request_state"
            | "test_input_required_result_tampered_state" => {
                let expected = if name.ends_with("request_state") {
                    "request-state"
                } else {
                    "tamper-test"
                };
                let ok = answered("confirm").is_some();
                if kind == Some(expected) && ok {
                    text(if expected == "request-state" {
                        "state-ok: requestState validated"
                    } else {
                        "integrity-ok: state verified"
                    })
                } else {
                    self.ask(&[("confirm", confirm())], Some(json!({"kind": expected})))
                }
            }
            "test_input_required_result_multiple_inputs" => {
                match (
                    answered("user_name"),
                    answered("greeting"),
                    answered("client_roots"),
                ) {
                    (Some(_), Some(greeting), Some(client_roots))
                        if kind == Some("multiple-inputs") =>
                    {
                        let greeting = greeting
                            .get("content")
                            .and_then(|c| c.get("text"))
                            .and_then(Value::as_str)
                            .unwrap_or("Hello there!");
                        text(&format!(
                            "Name: {}; Greeting: {greeting}; Roots: {}",
                            field("user_name", "name"),
                            roots(client_roots)
                        ))
                    }
                    _ => self.ask(
                        &[
                            ("user_name", ask_name("What is your name?")),
                            ("greeting", sample("Generate a greeting", 50)),
                            ("client_roots", list_roots()),
                        ],
                        Some(json!({"kind": "multiple-inputs"})),
                    ),
                }
            }
            "test_input_required_result_multi_round" => {
                let round = state.as_ref().and_then(|s| s["round"].as_u64());
                match round {
                    Some(1) if answered("step1").is_some() => self.ask(
                        &[(
                            "step2",
                            elicitation(
                                "Step 2: What is your favorite color?",
                                json!({"color": {"type": "string"}}),
                                json!(["color"]),
                            ),
                        )],
                        Some(json!({"round": 2, "name": field("step1", "name")})),
                    ),
                    Some(2) if answered("step2").is_some() => {
                        let name = state
                            .as_ref()
                            .and_then(|s| s["name"].as_str())
                            .unwrap_or("friend");
                        text(&format!(
                            "Multi-round complete for {name} who likes {}",
                            field("step2", "color")
                        ))
                    }
                    _ => self.ask(
                        &[("step1", ask_name("Step 1: What is your name?"))],
                        Some(json!({"round": 1})),
                    ),
                }
            }
            "test_input_required_result_capabilities" => {
                if !responses.is_empty() {
                    let keys: Vec<&str> = responses.keys().map(String::as_str).collect();
                    return text(&format!("capabilities-ok: received {}", keys.join(",")));
                }
                let caps = declared(ctx);
                let mut asked = Vec::new();
                if caps.elicitation.is_some() {
                    asked.push((
                        "elicit_input",
                        elicitation(
                            "Elicitation input",
                            json!({"value": {"type": "string"}}),
                            json!(["value"]),
                        ),
                    ));
                }
                if caps.sampling.is_some() {
                    asked.push(("sample_input", sample("Sample request", 50)));
                }
                if asked.is_empty() {
                    text("No supported capabilities declared")
                } else {
                    self.ask(&asked, Some(json!({"kind": "capabilities-test"})))
                }
            }
            _ => Err(McpError::invalid_params(
                format!("params.name: unknown fixture tool `{name}`"),
                None,
            )),
        }
    }

    /// An `input_required` result asking `requests`, with `state` sealed when given.
    fn ask(
        &self,
        requests: &[(&str, Result<InputRequest, McpError>)],
        state: Option<Value>,
    ) -> Result<CallToolResponse, McpError> {
        let mut asked = InputRequests::new();
        for (key, request) in requests {
            asked.insert((*key).to_string(), request.clone()?);
        }
        let sealed = match state {
            None => None,
            Some(state) => Some(
                self.codec
                    .seal_json(&state)
                    .map_err(|e| McpError::internal_error(e.to_string(), None))?,
            ),
        };
        Ok(InputRequiredResult::new(Some(asked), sealed).into())
    }
}

/// Fixture `name`'s JSON text `json`, parsed.
fn parse(name: &str, json: &str) -> Result<Value, String> {
    serde_json::from_str(json).map_err(|e| format!("fixture tool {name}: {e}"))
}

/// The `tools/list` entry of fixture `name`.
fn tool(name: &str, description: &str, input_schema: Value) -> Result<Tool, String> {
    serde_json::from_value(json!({
        "name": name,
        "description": description,
        "inputSchema": input_schema,
    }))
    .map_err(|e| format!("fixture tool {name}: {e}"))
}

/// The capabilities the client declared (per request in 2026-07-28, at `initialize` before).
fn declared(ctx: &RequestContext<RoleServer>) -> ClientCapabilities {
    ctx.client_capabilities().unwrap_or_default()
}

fn argument<'a>(params: &'a CallToolRequestParams, name: &str) -> Option<&'a str> {
    params.arguments.as_ref()?.get(name)?.as_str()
}

fn text(text: &str) -> Result<CallToolResponse, McpError> {
    content(vec![ContentBlock::text(text)])
}

fn content(blocks: Vec<ContentBlock>) -> Result<CallToolResponse, McpError> {
    Ok(CallToolResult::success(blocks).into())
}

fn roots(response: &Map<String, Value>) -> usize {
    response
        .get("roots")
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}

fn input_request(method: &str, params: Value) -> Result<InputRequest, McpError> {
    serde_json::from_value(json!({"method": method, "params": params}))
        .map_err(|e| McpError::internal_error(format!("{method}: {e}"), None))
}

fn elicitation(
    message: &str,
    properties: Value,
    required: Value,
) -> Result<InputRequest, McpError> {
    input_request(
        "elicitation/create",
        json!({
            "mode": "form",
            "message": message,
            "requestedSchema": {"type": "object", "properties": properties, "required": required},
        }),
    )
}

fn ask_name(message: &str) -> Result<InputRequest, McpError> {
    elicitation(
        message,
        json!({"name": {"type": "string"}}),
        json!(["name"]),
    )
}

fn confirm() -> Result<InputRequest, McpError> {
    elicitation(
        "Please confirm",
        json!({"ok": {"type": "boolean"}}),
        json!(["ok"]),
    )
}

fn sample(prompt: &str, max_tokens: u32) -> Result<InputRequest, McpError> {
    input_request(
        "sampling/createMessage",
        json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
            "maxTokens": max_tokens,
        }),
    )
}

fn list_roots() -> Result<InputRequest, McpError> {
    input_request("roots/list", json!({}))
}

/// Progress 0, 50 and 100 of 100 on the request's token, then the token as text; without a
/// token (nothing to report progress on), just the text.
async fn progress(ctx: &RequestContext<RoleServer>) -> Result<CallToolResponse, McpError> {
    let Some(token) = ctx.meta.get_progress_token() else {
        return text("no progress token was given");
    };
    for step in [0u32, 50, 100] {
        if step > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let mut param = ProgressNotificationParam::new(token.clone(), f64::from(step));
        param.total = Some(100.0);
        param.message = Some(format!("Completed step {step} of 100"));
        if let Err(e) = ctx.peer.notify_progress(param).await {
            return Err(McpError::internal_error(
                format!("cannot send progress: {e}"),
                None,
            ));
        }
    }
    text(&token.0.to_string())
}

/// Asks the client's model (handshake era: a request on the call's stream).
async fn sampling(
    params: &CallToolRequestParams,
    ctx: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, McpError> {
    let prompt = argument(params, "prompt").unwrap_or("Say hello");
    let request: CreateMessageRequestParams = serde_json::from_value(json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
        "maxTokens": 100,
    }))
    .map_err(|e| McpError::internal_error(e.to_string(), None))?;
    match ctx.peer.create_message(request).await {
        Ok(result) => {
            let answer = serde_json::to_value(&result.message.content)
                .ok()
                .and_then(|c| c.get("text").and_then(Value::as_str).map(str::to_string))
                .unwrap_or_else(|| "No response".to_string());
            text(&format!("LLM response: {answer}"))
        }
        Err(e) => text(&format!("Sampling not supported or error: {e}")),
    }
}

/// Asks the person through the client with `schema`, then reports the answer after `label`.
async fn elicit(
    ctx: &RequestContext<RoleServer>,
    message: &str,
    schema: Value,
    label: &str,
) -> Result<CallToolResponse, McpError> {
    let params: ElicitRequestParams = serde_json::from_value(json!({
        "mode": "form",
        "message": message,
        "requestedSchema": schema,
    }))
    .map_err(|e| McpError::internal_error(format!("the fixture's form: {e}"), None))?;
    match ctx.peer.create_elicitation(params).await {
        Ok(result) => {
            let action = serde_json::to_value(&result.action).unwrap_or(Value::Null);
            let content = result.content.clone().unwrap_or_else(|| json!({}));
            text(&format!(
                "{label}: action={}, content={content}",
                action.as_str().unwrap_or("?")
            ))
        }
        Err(e) => text(&format!("Elicitation not supported or error: {e}")),
    }
}
