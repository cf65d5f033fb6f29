//! Every validation error: each names its node and port, and all are reported at once.

use super::nodes::*;
use cheng_engine::{Engine, Graph, ValidationErrorKind as K};
use cheng_node::Registry;
use serde_json::json;

fn one_node(node: serde_json::Value) -> serde_json::Value {
    json!({ "version": 1, "nodes": [node] })
}

#[test]
fn other_versions_and_unknown_top_level_keys_are_rejected() {
    let errs = Graph::from_json(r#"{"version": 2, "nodes": []}"#).unwrap_err();
    assert_eq!(errs[0].kind, K::UnsupportedVersion);
    assert!(errs[0].to_string().contains("version 1"), "{}", errs[0]);
    let errs = Graph::from_json(r#"{"nodes": []}"#).unwrap_err();
    assert_eq!(errs[0].kind, K::UnsupportedVersion);
    let errs = Graph::from_json(r#"{"version": 1, "nodes": [], "layout": {}}"#).unwrap_err();
    assert!(only(&errs, K::UnknownKey).to_string().contains("`layout`"));
    let errs = Graph::from_json(
        r#"{"version": 1, "nodes": [{"id": "a", "type": "test/echo", "input": {}}]}"#,
    )
    .unwrap_err();
    let e = only(&errs, K::UnknownKey);
    assert_eq!(e.node.as_deref(), Some("a"));
    assert!(e.message.contains("`input`"));
}

#[test]
fn unknown_type_suggests_close_ids() {
    let errs = errors_of(&engine(), one_node(json!({"id": "x", "type": "test/ecko"})));
    let e = only(&errs, K::UnknownType);
    assert_eq!(e.node.as_deref(), Some("x"));
    assert!(
        e.message.contains("`test/ecko`") && e.message.contains("Did you mean `test/echo`?"),
        "{e}"
    );
}

#[test]
fn gated_type_names_the_variable() {
    let registry = Registry::from_inventory_with(|_| false);
    let errs = errors_of(
        &Engine::new(registry, cheng_node::policy::Policy::builtin()),
        one_node(json!({"id": "g", "type": "test/gate_var"})),
    );
    let e = only(&errs, K::GatedType);
    assert_eq!(
        e.to_string(),
        "node `g`: test/gate_var is disabled; set CHENG_ENABLE_TEST_GATE=1 to enable it"
    );
    // With the variable "set" the same graph validates.
    let registry = Registry::from_inventory_with(|var| var == "CHENG_ENABLE_TEST_GATE");
    assert!(Engine::new(registry, cheng_node::policy::Policy::builtin())
        .validate(&graph(one_node(
            json!({"id": "g", "type": "test/gate_var"})
        )))
        .is_ok());
}

#[test]
fn unknown_port_names_node_and_port_and_suggests() {
    let errs = errors_of(
        &engine(),
        one_node(json!({"id": "e", "type": "test/echo", "inputs": {"txt": "hi"}})),
    );
    let e = only(&errs, K::UnknownPort);
    assert_eq!(
        (e.node.as_deref(), e.port.as_deref()),
        (Some("e"), Some("txt"))
    );
    assert!(e.message.contains("Did you mean `text`?"), "{e}");
    let errs = errors_of(
        &engine(),
        one_node(json!({"id": "e", "type": "test/echo", "config": {"nope": 1}})),
    );
    assert!(only(&errs, K::UnknownPort).message.contains("config"));
}

#[test]
fn wrong_json_types_are_rejected() {
    let errs = errors_of(
        &engine(),
        one_node(
            json!({"id": "e", "type": "test/echo", "inputs": {"text": 5, "tags": ["a", 1], "count": 1.5}}),
        ),
    );
    assert_eq!(
        errs.iter().filter(|e| e.kind == K::WrongType).count(),
        3,
        "{errs:#?}"
    );
    let text = errs
        .iter()
        .find(|e| e.port.as_deref() == Some("text"))
        .unwrap();
    assert!(
        text.message.contains("expected string, got an integer"),
        "{text}"
    );
    let tags = errs
        .iter()
        .find(|e| e.port.as_deref() == Some("tags"))
        .unwrap();
    assert!(tags.message.contains("element 1"), "{tags}");
}

#[test]
fn integers_out_of_range_cite_the_limit_and_are_never_clamped() {
    let errs = errors_of(
        &engine(),
        one_node(json!({"id": "e", "type": "test/echo", "inputs": {"count": 700}})),
    );
    let e = only(&errs, K::OutOfRange);
    assert_eq!(e.port.as_deref(), Some("count"));
    assert!(e.message.contains("700 is above the maximum 100"), "{e}");
    let errs = errors_of(
        &engine(),
        one_node(json!({"id": "e", "type": "test/echo", "inputs": {"count": 0}})),
    );
    assert!(only(&errs, K::OutOfRange).message.contains("minimum 1"));
    let errs = errors_of(
        &engine(),
        one_node(json!({"id": "e", "type": "test/echo", "inputs": {"mode": "c"}})),
    );
    assert!(only(&errs, K::OutOfRange)
        .message
        .contains("not one of: a, b"));
}

#[test]
fn missing_required_port() {
    let errs = errors_of(
        &engine(),
        one_node(json!({"id": "n", "type": "test/needs"})),
    );
    let e = only(&errs, K::MissingRequired);
    assert_eq!(
        (e.node.as_deref(), e.port.as_deref()),
        (Some("n"), Some("name"))
    );
    // null means unset, so it does not satisfy a required port either.
    let errs = errors_of(
        &engine(),
        one_node(json!({"id": "n", "type": "test/needs", "inputs": {"name": null}})),
    );
    only(&errs, K::MissingRequired);
    // An edge satisfies it.
    let ok = json!({"version": 1, "nodes": [
        {"id": "a", "type": "test/echo"}, {"id": "n", "type": "test/needs"}],
        "edges": [{"from": "a.text", "to": "n.name"}]});
    assert!(engine().validate(&graph(ok)).is_ok());
}

#[test]
fn duplicate_node_id() {
    let errs = errors_of(
        &engine(),
        json!({"version": 1, "nodes": [{"id": "a", "type": "test/echo"}, {"id": "a", "type": "test/echo"}]}),
    );
    assert_eq!(only(&errs, K::DuplicateNode).node.as_deref(), Some("a"));
}

#[test]
fn dangling_edges_on_either_side() {
    let errs = errors_of(
        &engine(),
        json!({"version": 1, "nodes": [{"id": "a", "type": "test/echo"}, {"id": "b", "type": "test/echo"}],
               "edges": [{"from": "zz.text", "to": "b.text"}, {"from": "a.text", "to": "yy.text"},
                         {"from": "a.nope", "to": "b.text"}, {"from": "a.text", "to": "b.nope"}]}),
    );
    let dangling: Vec<String> = errs
        .iter()
        .filter(|e| e.kind == K::DanglingEdge)
        .map(|e| e.to_string())
        .collect();
    assert_eq!(dangling.len(), 4, "{errs:#?}");
    assert!(dangling[0].contains("no node `zz`"));
    assert!(dangling[1].contains("no node `yy`"));
    assert!(
        dangling[2].starts_with("node `a`, port `nope`")
            && dangling[2].contains("no output `nope`"),
        "{}",
        dangling[2]
    );
    assert!(
        dangling[3].starts_with("node `b`, port `nope`") && dangling[3].contains("no input `nope`")
    );
}

#[test]
fn edge_type_mismatch() {
    let errs = errors_of(
        &engine(),
        json!({"version": 1, "nodes": [{"id": "a", "type": "test/echo"}, {"id": "b", "type": "test/echo"}],
               "edges": [{"from": "a.number", "to": "b.text"}]}),
    );
    let e = only(&errs, K::EdgeTypeMismatch);
    assert_eq!(
        (e.node.as_deref(), e.port.as_deref()),
        (Some("b"), Some("text"))
    );
    assert!(
        e.message.contains("integer") && e.message.contains("string"),
        "{e}"
    );
}

#[test]
fn cycles_are_named() {
    let errs = errors_of(
        &engine(),
        json!({"version": 1, "nodes": [{"id": "a", "type": "test/echo"}, {"id": "b", "type": "test/echo"},
                                       {"id": "c", "type": "test/echo"}, {"id": "d", "type": "test/echo"}],
               "edges": [{"from": "a.text", "to": "b.text"}, {"from": "b.text", "to": "a.text"},
                         {"from": "b.text", "to": "c.text"}, {"from": "d.text", "to": "d.text"}]}),
    );
    let cycles: Vec<&str> = errs
        .iter()
        .filter(|e| e.kind == K::Cycle)
        .map(|e| e.message.as_str())
        .collect();
    assert_eq!(cycles.len(), 2, "{errs:#?}");
    assert!(
        cycles
            .iter()
            .any(|m| m.contains("a → b → a") || m.contains("b → a → b")),
        "{cycles:?}"
    );
    assert!(cycles.iter().any(|m| m.contains("d → d")), "{cycles:?}");
}

#[test]
fn author_ports_from_inputs_are_rejected() {
    let errs = errors_of(
        &engine(),
        one_node(json!({"id": "e", "type": "test/echo", "inputs": {"allow_shell_string": true}})),
    );
    let e = only(&errs, K::AuthorOnly);
    assert_eq!(e.port.as_deref(), Some("allow_shell_string"));
    assert!(
        e.message
            .contains("allow_shell_string is author-only; set it in the node's config"),
        "{e}"
    );
    // ... also through an edge.
    let errs = errors_of(
        &engine(),
        json!({"version": 1, "nodes": [{"id": "a", "type": "test/echo"}, {"id": "b", "type": "test/echo"}],
               "edges": [{"from": "a.success", "to": "b.allow_shell_string"}]}),
    );
    only(&errs, K::AuthorOnly);
    // In config it is fine, when the operator's policy allows raw shell syntax ...
    let ok =
        one_node(json!({"id": "e", "type": "test/echo", "config": {"allow_shell_string": true}}));
    assert!(shell_engine().validate(&graph(ok.clone())).is_ok());
    // ... which the built-in policy does not: the message names the line to add.
    let errs = errors_of(&engine(), ok);
    let e = only(&errs, K::AboveCap);
    assert!(
        e.message
            .contains("`shell_syntax = true` under [nodes.\"test/echo\"]"),
        "{e}"
    );
}

#[test]
fn engine_ports_are_rejected_everywhere() {
    for place in ["inputs", "config"] {
        let errs = errors_of(
            &engine(),
            one_node(json!({"id": "e", "type": "test/echo", place: {"sandbox_root": "/"}})),
        );
        let e = only(&errs, K::EngineOnly);
        assert_eq!(e.port.as_deref(), Some("sandbox_root"));
        assert!(
            e.message.contains("engine-injected") && e.message.contains(place),
            "{e}"
        );
    }
    let errs = errors_of(
        &engine(),
        json!({"version": 1, "nodes": [{"id": "a", "type": "test/echo"}, {"id": "b", "type": "test/echo"}],
               "edges": [{"from": "a.text", "to": "b.sandbox_root"}]}),
    );
    only(&errs, K::EngineOnly);
}

#[test]
fn capped_ports_above_the_author_ceiling_are_rejected() {
    // A capability left on "ask" (the default) may be requested: a person decides at run time.
    let ask = one_node(json!({"id": "e", "type": "test/echo", "inputs": {"allow_network": true}}));
    assert!(engine().validate(&graph(ask)).is_ok());
    let errs = errors_of(
        &engine(),
        one_node(
            json!({"id": "e", "type": "test/echo", "config": {"allow_network": false}, "inputs": {"allow_network": true}}),
        ),
    );
    let e = only(&errs, K::AboveCap);
    assert!(
        e.message.contains("allow_network") && e.message.contains("sets allow_network to false"),
        "{e}"
    );
    let errs = errors_of(
        &engine(),
        one_node(
            json!({"id": "e", "type": "test/echo", "config": {"memory_mb": 512}, "inputs": {"memory_mb": 1024}}),
        ),
    );
    assert!(only(&errs, K::AboveCap)
        .message
        .contains("author's limit 512"));
    // The spec maximum still applies to the author.
    let errs = errors_of(
        &engine(),
        one_node(json!({"id": "e", "type": "test/echo", "config": {"memory_mb": 9999}})),
    );
    only(&errs, K::OutOfRange);
}

#[test]
fn edge_into_a_port_also_set_in_inputs_is_rejected() {
    let errs = errors_of(
        &engine(),
        json!({"version": 1, "nodes": [{"id": "a", "type": "test/echo"}, {"id": "b", "type": "test/echo", "inputs": {"text": "x"}}],
               "edges": [{"from": "a.text", "to": "b.text"}]}),
    );
    assert!(only(&errs, K::EdgeConflict).message.contains("remove one"));
    let errs = errors_of(
        &engine(),
        json!({"version": 1, "nodes": [{"id": "a", "type": "test/echo"}, {"id": "c", "type": "test/echo"}, {"id": "b", "type": "test/echo"}],
               "edges": [{"from": "a.text", "to": "b.text"}, {"from": "c.text", "to": "b.text"}]}),
    );
    assert!(only(&errs, K::EdgeConflict).message.contains("two edges"));
}

#[test]
fn every_error_is_reported_at_once() {
    let errs = errors_of(
        &engine(),
        json!({"version": 1, "nodes": [
            {"id": "a", "type": "test/echo", "inputs": {"count": 700, "sandbox_root": "/", "allow_shell_string": true}},
            {"id": "b", "type": "test/nope"},
            {"id": "c", "type": "test/needs"}],
            "edges": [{"from": "a.text", "to": "q.text"}]}),
    );
    let kinds: Vec<K> = errs.iter().map(|e| e.kind).collect();
    for kind in [
        K::OutOfRange,
        K::EngineOnly,
        K::AuthorOnly,
        K::UnknownType,
        K::MissingRequired,
        K::DanglingEdge,
    ] {
        assert!(kinds.contains(&kind), "{kind:?} missing from {errs:#?}");
    }
}

/// A graph (JSON text) that produces `kind`, and the node and port the error must name.
/// `Some("*")`: some node of the graph (a cycle is named from whichever node closes it).
/// The match is exhaustive: a new kind does not compile until it has a case here.
fn case_for(kind: K) -> (&'static str, Option<&'static str>, Option<&'static str>) {
    match kind {
        K::Malformed => (r#"{"version": 1, "nodes": {"a": {}}}"#, None, None),
        K::UnsupportedVersion => (r#"{"version": 3, "nodes": []}"#, None, None),
        K::UnknownKey => (
            r#"{"version": 1, "nodes": [{"id": "a", "type": "test/echo", "inputz": {}}]}"#,
            Some("a"),
            None,
        ),
        K::UnknownType => (
            r#"{"version": 1, "nodes": [{"id": "a", "type": "test/nope"}]}"#,
            Some("a"),
            None,
        ),
        K::GatedType => (
            r#"{"version": 1, "nodes": [{"id": "a", "type": "test/gate_var"}]}"#,
            Some("a"),
            None,
        ),
        K::DuplicateNode => (
            r#"{"version": 1, "nodes": [{"id": "a", "type": "test/echo"}, {"id": "a", "type": "test/echo"}]}"#,
            Some("a"),
            None,
        ),
        K::UnknownPort => (
            r#"{"version": 1, "nodes": [{"id": "a", "type": "test/echo", "inputs": {"txet": ""}}]}"#,
            Some("a"),
            Some("txet"),
        ),
        K::WrongType => (
            r#"{"version": 1, "nodes": [{"id": "a", "type": "test/echo", "inputs": {"text": 1}}]}"#,
            Some("a"),
            Some("text"),
        ),
        K::OutOfRange => (
            r#"{"version": 1, "nodes": [{"id": "a", "type": "test/echo", "inputs": {"count": 101}}]}"#,
            Some("a"),
            Some("count"),
        ),
        K::MissingRequired => (
            r#"{"version": 1, "nodes": [{"id": "a", "type": "test/needs"}]}"#,
            Some("a"),
            Some("name"),
        ),
        K::AuthorOnly => (
            r#"{"version": 1, "nodes": [{"id": "a", "type": "test/echo", "inputs": {"allow_shell_string": true}}]}"#,
            Some("a"),
            Some("allow_shell_string"),
        ),
        K::EngineOnly => (
            r#"{"version": 1, "nodes": [{"id": "a", "type": "test/echo", "config": {"sandbox_root": "/"}}]}"#,
            Some("a"),
            Some("sandbox_root"),
        ),
        K::AboveCap => (
            r#"{"version": 1, "nodes": [{"id": "a", "type": "test/echo", "config": {"allow_network": false}, "inputs": {"allow_network": true}}]}"#,
            Some("a"),
            Some("allow_network"),
        ),
        K::DanglingEdge => (
            r#"{"version": 1, "nodes": [{"id": "a", "type": "test/echo"}, {"id": "b", "type": "test/echo"}],
                "edges": [{"from": "a.text", "to": "b.nothing"}]}"#,
            Some("b"),
            Some("nothing"),
        ),
        K::EdgeTypeMismatch => (
            r#"{"version": 1, "nodes": [{"id": "a", "type": "test/echo"}, {"id": "b", "type": "test/echo"}],
                "edges": [{"from": "a.number", "to": "b.tags"}]}"#,
            Some("b"),
            Some("tags"),
        ),
        K::EdgeConflict => (
            r#"{"version": 1, "nodes": [{"id": "a", "type": "test/echo"}, {"id": "b", "type": "test/echo", "inputs": {"text": "x"}}],
                "edges": [{"from": "a.text", "to": "b.text"}]}"#,
            Some("b"),
            Some("text"),
        ),
        K::Cycle => (
            r#"{"version": 1, "nodes": [{"id": "a", "type": "test/echo"}, {"id": "b", "type": "test/echo"}],
                "edges": [{"from": "a.text", "to": "b.text"}, {"from": "b.text", "to": "a.text"}]}"#,
            Some("*"),
            None,
        ),
    }
}

#[test]
fn every_validation_error_kind_is_produced_and_names_its_node_and_port() {
    // Linked test nodes with every gate unset (test/gate_var is then gated), plus the others.
    let engine = Engine::new(
        Registry::from_inventory_with(|_| false)
            .with(Echo)
            .with(Needs)
            .with(Fail),
        cheng_node::policy::Policy::builtin(),
    );
    for &kind in K::ALL {
        let (text, node, port) = case_for(kind);
        let errors = match Graph::from_json(text) {
            Err(errors) => errors,
            Ok(graph) => match engine.validate(&graph) {
                Ok(_) => panic!("{kind:?}: the graph validated: {text}"),
                Err(errors) => errors,
            },
        };
        let e = only(&errors, kind);
        let node = if node == Some("*") {
            assert!(
                e.node.as_deref().is_some_and(|n| ["a", "b"].contains(&n)),
                "{kind:?}: {e}"
            );
            e.node.as_deref()
        } else {
            node
        };
        assert_eq!(e.node.as_deref(), node, "{kind:?}: {e}");
        assert_eq!(e.port.as_deref(), port, "{kind:?}: {e}");
        let shown = e.to_string();
        if let Some(node) = node {
            assert!(
                shown.contains(&format!("node `{node}`")),
                "{kind:?}: {shown}"
            );
        }
        if let Some(port) = port {
            assert!(
                shown.contains(&format!("port `{port}`")),
                "{kind:?}: {shown}"
            );
        }
        // Every message says what to do or what was expected, not just that something is wrong.
        assert!(e.message.len() > 20, "{kind:?}: {shown}");
    }
}
