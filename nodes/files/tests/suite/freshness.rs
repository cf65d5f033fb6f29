//! The freshness gate through the nodes and the engine: two edits racing on one file, an edit
//! after an outside change, an edit of a file never read, and the gate's off switches.

use super::support::*;
use cheng_engine::{Engine, Graph, RunOptions};
use cheng_node::{Decision, FixedApprover, Registry, Scope, ScopeKind};
use cheng_nodes_files::{EditFile, ReadFile};
use serde_json::json;
use std::sync::Arc;

#[test]
fn an_edit_after_an_outside_change_is_refused_before_matching() {
    let (_d, ws) = temp_workspace();
    std::fs::write(ws.join("a.txt"), "alpha\nbeta\n").unwrap();
    let c = ctx(&ReadFile, &ws, ScopeKind::Graph);
    ok(&ReadFile, &c, json!({"file_path": "a.txt"}));
    // Same length, same lines the edit names: it would still match.
    std::fs::write(ws.join("a.txt"), "alpha\nBETA\n").unwrap();
    let err = fails(
        &EditFile,
        &c,
        json!({"file_path": "a.txt", "old": "alpha", "new": "gamma"}),
        "LOCAL_EXECUTOR_FILE_CHANGED",
    );
    assert!(
        err.contains("changed since the model last read it"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        "alpha\nBETA\n"
    );
    ok(&ReadFile, &c, json!({"file_path": "a.txt"}));
    ok(
        &EditFile,
        &c,
        json!({"file_path": "a.txt", "old": "alpha", "new": "gamma"}),
    );
}

#[test]
fn a_file_never_read_is_refused_and_the_off_switches_say_so() {
    let (_d, ws) = temp_workspace();
    std::fs::write(ws.join("a.txt"), "alpha\n").unwrap();
    let graph = ctx(&EditFile, &ws, ScopeKind::Graph);
    let err = fails(
        &EditFile,
        &graph,
        json!({"file_path": "a.txt", "old": "alpha", "new": "b"}),
        "LOCAL_EXECUTOR_FILE_CHANGED",
    );
    assert!(err.contains("never read in this graph run"), "{err}");
    // The author's switch.
    let out = ok(
        &EditFile,
        &graph,
        json!({"file_path": "a.txt", "old": "alpha", "new": "b", "read_tracking": false}),
    );
    assert!(
        out["warnings"][0]
            .as_str()
            .unwrap()
            .contains("read_tracking"),
        "{out:#?}"
    );
    // A single call keeps no table: the gate is off and the output says so.
    let single = ctx(&EditFile, &ws, ScopeKind::Call);
    let out = ok(
        &EditFile,
        &single,
        json!({"file_path": "a.txt", "old": "b", "new": "c"}),
    );
    assert!(
        out["warnings"][0]
            .as_str()
            .unwrap()
            .contains("freshness gate is off"),
        "{out:#?}"
    );
}

#[test]
fn two_agents_editing_one_file_at_once_one_wins_the_other_is_refused() {
    let (_d, ws) = temp_workspace();
    std::fs::write(ws.join("a.txt"), "count = 1\nname = x\n").unwrap();
    // Two agents (two graph runs or server connections: two scopes) read the same content.
    let agents = [Scope::new(ScopeKind::Graph), Scope::new(ScopeKind::Graph)];
    for scope in &agents {
        let mut c = ctx(&ReadFile, &ws, ScopeKind::Graph);
        c.scope = scope.clone();
        ok(&ReadFile, &c, json!({"file_path": "a.txt"}));
    }
    // Then both edit at once, each from what it read.
    let engine = Engine::new(
        Registry::new().with(ReadFile).with(EditFile),
        cheng_node::policy::Policy::builtin(),
    );
    let edit = |old: &str, new: &str| -> Graph {
        Graph::from_value(&json!({"version": 1, "nodes": [
            {"id": "edit", "type": "tools/edit_file", "inputs": {"file_path": "a.txt", "old": old, "new": new}}
        ]}))
        .unwrap()
    };
    let first = engine.validate(&edit("count = 1", "count = 2")).unwrap();
    let second = engine.validate(&edit("name = x", "name = y")).unwrap();
    let options = |scope: &Scope| {
        RunOptions::new(&ws)
            .unwrap()
            .approver(Arc::new(FixedApprover(Decision::Approved)))
            .scope(scope.clone())
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (a, b) = rt.block_on(async {
        tokio::join!(
            engine.run(&first, options(&agents[0])),
            engine.run(&second, options(&agents[1]))
        )
    });
    let outcomes = [a.nodes[0].outputs.clone(), b.nodes[0].outputs.clone()];
    let won = outcomes.iter().filter(|o| o["success"] == true).count();
    let refused = outcomes
        .iter()
        .filter(|o| o["error_kind"] == "LOCAL_EXECUTOR_FILE_CHANGED")
        .count();
    assert_eq!((won, refused), (1, 1), "{outcomes:#?}");
    let text = std::fs::read_to_string(ws.join("a.txt")).unwrap();
    assert!(
        text == "count = 2\nname = x\n" || text == "count = 1\nname = y\n",
        "exactly one edit landed: {text}"
    );
}

#[test]
fn one_agent_may_edit_twice_after_one_read() {
    // Its own write registered the new tag: the model knows what it wrote.
    let (_d, ws) = temp_workspace();
    std::fs::write(ws.join("a.txt"), "count = 1\nname = x\n").unwrap();
    let c = ctx(&ReadFile, &ws, ScopeKind::Graph);
    ok(&ReadFile, &c, json!({"file_path": "a.txt"}));
    ok(
        &EditFile,
        &c,
        json!({"file_path": "a.txt", "old": "count = 1", "new": "count = 2"}),
    );
    ok(
        &EditFile,
        &c,
        json!({"file_path": "a.txt", "old": "name = x", "new": "name = y"}),
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        "count = 2\nname = y\n"
    );
}
