//! Every published schema is a valid JSON Schema 2020-12 document, and every default it states
//! validates against its own property schema — checked with a maintained validator, for every
//! node type (gated ones included), under the built-in policy and under a restrictive one.

use cheng_node::policy::Policy;
use cheng_node::{schema, Registry};
use serde_json::Value;

// Linked so that their inventory registrations are present in this test binary.
use cheng_nodes_code as _;
use cheng_nodes_documents as _;
use cheng_nodes_runtime as _;
use cheng_nodes_workspace as _;

fn check(id: &str, part: &str, schema: &Value, problems: &mut Vec<String>) {
    if let Err(e) = jsonschema::meta::validate(schema) {
        problems.push(format!("{id} {part}: not a valid JSON Schema: {e}"));
        return;
    }
    let Some(properties) = schema["properties"].as_object() else {
        return;
    };
    for (name, property) in properties {
        let Some(default) = property.get("default") else {
            continue;
        };
        match jsonschema::validator_for(property) {
            Ok(validator) => {
                if let Err(e) = validator.validate(default) {
                    problems.push(format!(
                        "{id} {part}.{name}: default {default} fails its own schema: {e}"
                    ));
                }
            }
            Err(e) => problems.push(format!("{id} {part}.{name}: schema does not compile: {e}")),
        }
    }
}

#[test]
fn every_schema_is_valid_2020_12_and_every_default_fits_it() {
    let restrictive = Policy::from_toml_str(
        "[all]\nmax = { timeout_ms = 1000 }\nallow_network = false\nallow_filesystem = \"ask\"\n",
        "/test/policy.toml",
    )
    .expect("policy");
    let registry = Registry::from_inventory_with(|_| true);
    let specs: Vec<_> = registry.specs().collect();
    assert!(
        specs.iter().any(|s| s.id == "tools/code_python")
            && specs.iter().any(|s| s.id == "tools/code_js")
    );
    let mut problems = Vec::new();
    for spec in &specs {
        for policy in [Policy::builtin(), restrictive.clone()] {
            let all = schema::node_schemas_with(spec, &policy);
            for part in ["input", "config", "output"] {
                check(spec.id, part, &all[part], &mut problems);
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_meta_validator_refuses_a_broken_schema() {
    // The check above can fail: a schema with a wrongly typed keyword is refused.
    let broken = serde_json::json!({"$schema": schema::DRAFT, "type": "object", "properties": {"x": {"type": 5}}});
    assert!(jsonschema::meta::validate(&broken).is_err());
    let bad_default = serde_json::json!({"type": "string", "enum": ["a", "b"]});
    assert!(!jsonschema::validator_for(&bad_default)
        .expect("compiles")
        .is_valid(&serde_json::json!("")));
}
