//! The tool schemas `cheng serve` lists are portable: the input schemas use only the subset every
//! function-calling dialect accepts (the rules in docs/guides/mcp.md, "Schemas"), the output
//! schemas depart from it only in the two documented ways, and a plain draft-07 validator
//! accepts every schema and the payloads it describes.

use super::mcp_pipe::McpPipe;
use super::support::{mcp_sdk_available, text};
use serde_json::{json, Value};
use std::io::Write;
use std::process::{Command, Stdio};

/// Every tool, the gated code executors and those needing an author's config included.
fn tools() -> Vec<Value> {
    let ws = tempfile::tempdir().expect("workspace");
    let dir = tempfile::tempdir().expect("tools file directory");
    let file = super::mcp_payloads::tools_file(dir.path(), ws.path());
    let file = file.to_str().expect("utf-8 path");
    let mut server = McpPipe::start_with_env(
        ws.path(),
        &["--tools", file],
        &[
            ("CHENG_ENABLE_CODE_PYTHON", "1"),
            ("CHENG_ENABLE_CODE_JS", "1"),
        ],
    );
    server.initialize();
    server.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
    let answer = server.answer(1);
    let tools = answer["result"]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    for expected in [
        "workspace_shell",
        "code_python",
        "code_js",
        "read_file",
        "skill",
        "notes_write",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} not listed: {names:?}"
        );
    }
    tools
}

/// Keywords outside the portable subset (combinators, references, conditionals, type lists).
const UNPORTABLE: &[&str] = &[
    "$schema",
    "$ref",
    "$defs",
    "oneOf",
    "anyOf",
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "const",
    "patternProperties",
    "prefixItems",
    "unevaluatedProperties",
];

/// Where `schema` (at `path`) breaks the input rules.
fn input_violations(schema: &Value, path: &str, out: &mut Vec<String>) {
    let Some(map) = schema.as_object() else {
        out.push(format!("{path}: not an object"));
        return;
    };
    for key in UNPORTABLE {
        if map.contains_key(*key) {
            out.push(format!("{path}: uses {key}"));
        }
    }
    let ty = match map.get("type") {
        Some(Value::String(ty)) => ty.as_str(),
        Some(other) => {
            out.push(format!("{path}: type is {other}, not one type"));
            return;
        }
        None => {
            out.push(format!("{path}: no type"));
            return;
        }
    };
    if let Some(values) = map.get("enum") {
        let same_type = values.as_array().is_some_and(|v| {
            v.iter().all(|x| match ty {
                "string" => x.is_string(),
                "integer" => x.is_i64() || x.is_u64(),
                "boolean" => x.is_boolean(),
                _ => false,
            })
        });
        if !same_type {
            out.push(format!("{path}: enum values are not all of type {ty}"));
        }
    }
    match ty {
        "array" => match map.get("items") {
            Some(items) => input_violations(items, &format!("{path}[]"), out),
            None => out.push(format!("{path}: an array without items")),
        },
        "object" => {
            for (name, property) in map
                .get("properties")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                input_violations(property, &format!("{path}.{name}"), out);
            }
        }
        "string" | "integer" | "number" | "boolean" => {}
        other => out.push(format!("{path}: unknown type {other}")),
    }
}

#[test]
fn input_schemas_use_only_the_portable_subset() {
    let mut violations = Vec::new();
    for tool in tools() {
        let name = tool["name"].as_str().unwrap_or("?");
        let schema = &tool["inputSchema"];
        assert_eq!(schema["type"], "object", "{name}");
        input_violations(schema, name, &mut violations);
    }
    assert!(
        violations.is_empty(),
        "input schema warnings:\n{}",
        violations.join("\n")
    );

    // Positive control: the checker finds what the rules forbid.
    let mut found = Vec::new();
    let bad = json!({"$schema": "x", "type": "object", "properties": {
        "a": {"type": ["string", "null"]}, "b": {}, "c": {"type": "array"},
        "d": {"type": "string", "enum": ["x", 1]}, "e": {"type": "object", "anyOf": []}}});
    input_violations(&bad, "bad", &mut found);
    assert_eq!(found.len(), 6, "{found:#?}");
}

/// The two documented departures in output schemas: a typed port also admits null (ports that do
/// not apply are null), and an `any` port has no type (the reference tables type it `any`).
#[test]
fn output_schemas_depart_only_in_the_documented_ways() {
    let mut violations = Vec::new();
    for tool in tools() {
        let name = tool["name"].as_str().unwrap_or("?");
        let schema = &tool["outputSchema"];
        if schema.get("$schema").is_some() {
            violations.push(format!("{name}: declares $schema"));
        }
        for (port, property) in schema["properties"].as_object().into_iter().flatten() {
            let mut property = property.clone();
            match property.get("type").cloned() {
                Some(Value::Array(types)) => {
                    let [ty, null] = types.as_slice() else {
                        violations.push(format!("{name}.{port}: type list {types:?}"));
                        continue;
                    };
                    if null != "null" {
                        violations.push(format!("{name}.{port}: type list {types:?}"));
                        continue;
                    }
                    property["type"] = ty.clone();
                    if let Some(Value::Array(values)) = property.get_mut("enum") {
                        values.retain(|v| !v.is_null());
                    }
                    input_violations(&property, &format!("{name}.{port}"), &mut violations);
                }
                Some(_) => input_violations(&property, &format!("{name}.{port}"), &mut violations),
                None => {
                    let keys: Vec<&String> = property
                        .as_object()
                        .into_iter()
                        .flatten()
                        .map(|(k, _)| k)
                        .collect();
                    if keys.iter().any(|k| *k != "description") {
                        violations.push(format!("{name}.{port}: untyped with {keys:?}"));
                    }
                }
            }
        }
    }
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}

/// A draft-07 validator (python-jsonschema, which the MCP Python SDK depends on) accepts every
/// schema, and an argument object built from each input schema's defaults.
#[test]
fn a_draft_07_validator_accepts_every_schema() {
    if !mcp_sdk_available() {
        return;
    }
    let tools = tools();
    let script = r#"
import json, sys
from jsonschema import Draft7Validator
tools = json.load(sys.stdin)
bad = []
for tool in tools:
    for side in ("inputSchema", "outputSchema"):
        try:
            Draft7Validator.check_schema(tool[side])
        except Exception as e:
            bad.append(f"{tool['name']} {side}: {e}")
    ok = {"success": True, "summary": "s", "error": None, "error_kind": None}
    errors = [e.message for e in Draft7Validator(tool["outputSchema"]).iter_errors(ok)]
    if errors:
        bad.append(f"{tool['name']} outputSchema rejects a success payload: {errors}")
print(len(tools))
for line in bad:
    print(line)
sys.exit(1 if bad else 0)
"#;
    let mut child = Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let input = serde_json::to_vec(&tools).expect("JSON");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&input)
        .expect("write");
    let out = child.wait_with_output().expect("python3 ends");
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(text(&out.stdout).trim(), tools.len().to_string());
}
