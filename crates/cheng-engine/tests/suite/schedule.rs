//! Scheduling: dependency order, bounded concurrency, skipped dependents, events.

use super::nodes::*;
use cheng_engine::{Engine, GraphStatus, JsonlSink, NodeStatus};
use cheng_node::Registry;
use serde_json::{json, Value};
use std::sync::atomic::Ordering;
use std::sync::Arc;

#[test]
fn failed_nodes_skip_their_dependents_transitively_with_a_reason() {
    let (_dir, options) = workspace();
    let result = run(
        &engine(),
        json!({"version": 1, "nodes": [
            {"id": "bad", "type": "test/fail"},
            {"id": "broken", "type": "test/fail", "inputs": {"err": true}},
            {"id": "child", "type": "test/echo"},
            {"id": "grandchild", "type": "test/echo"},
            {"id": "other", "type": "test/echo"},
            {"id": "child2", "type": "test/echo"}],
            "edges": [{"from": "bad.summary", "to": "child.text"},
                      {"from": "child.text", "to": "grandchild.text"},
                      {"from": "broken.summary", "to": "child2.text"}]}),
        options,
    );
    assert_eq!(result.status, GraphStatus::Failed);
    assert_eq!(result.node("bad").unwrap().status, NodeStatus::Failed);
    let broken = result.node("broken").unwrap();
    assert_eq!(broken.status, NodeStatus::Failed);
    assert_eq!(broken.outputs["error_kind"], "LOCAL_EXECUTOR_NOT_FOUND");
    for (id, cause) in [
        ("child", "bad"),
        ("grandchild", "bad"),
        ("child2", "broken"),
    ] {
        let node = result.node(id).unwrap();
        assert_eq!(node.status, NodeStatus::Skipped, "{id}");
        assert_eq!(
            node.reason.as_deref(),
            Some(format!("skipped because node `{cause}` failed").as_str())
        );
        assert_eq!(node.outputs["text"], Value::Null);
    }
    assert_eq!(result.node("other").unwrap().status, NodeStatus::Succeeded);
    let json = result.to_json();
    assert_eq!(json["status"], "failed");
    assert_eq!(json["nodes"]["child"]["status"], "skipped");
}

#[test]
fn dependents_start_only_after_their_upstream_finished() {
    let sleep = Sleep::default();
    let engine = Engine::new(
        Registry::new().with(sleep.clone()).with(Echo),
        cheng_node::policy::Policy::builtin(),
    );
    let (_dir, options) = workspace();
    let result = run(
        &engine,
        json!({"version": 1, "nodes": [
            {"id": "b", "type": "test/echo"},
            {"id": "a", "type": "test/sleep", "inputs": {"ms": 50}}],
            "edges": [{"from": "a.termination", "to": "b.text"}]}),
        options,
    );
    // b read a's output, so it ran after a finished.
    assert_eq!(result.node("b").unwrap().outputs["text"], "exited");
    assert_eq!(result.nodes[0].id, "b", "results keep graph order");
}

#[test]
fn at_most_jobs_nodes_run_at_once() {
    for jobs in [1, 3] {
        let sleep = Sleep::default();
        let engine = Engine::new(
            Registry::new().with(sleep.clone()),
            cheng_node::policy::Policy::builtin(),
        );
        let nodes: Vec<Value> = (0..12)
            .map(|i| json!({"id": format!("s{i}"), "type": "test/sleep", "inputs": {"ms": 20}}))
            .collect();
        let (_dir, options) = workspace();
        let result = run(
            &engine,
            json!({"version": 1, "nodes": nodes}),
            options.jobs(jobs),
        );
        assert_eq!(result.status, GraphStatus::Succeeded);
        assert_eq!(sleep.started.load(Ordering::SeqCst), 12);
        let peak = sleep.peak.load(Ordering::SeqCst);
        assert!(peak <= jobs, "jobs={jobs} but {peak} ran at once");
        // Independent nodes do run concurrently when allowed.
        if jobs > 1 {
            assert!(peak > 1, "jobs={jobs} but never more than one at once");
        }
    }
}

#[test]
fn events_are_json_lines_with_timestamps_and_durations() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    let file_sink: Arc<dyn cheng_engine::EventSink> = Arc::new(JsonlSink::create(&path).unwrap());
    let (_ws, options) = workspace();
    run(
        &engine(),
        json!({"version": 1, "nodes": [{"id": "a", "type": "test/echo"}, {"id": "f", "type": "test/fail"}]}),
        options.events(file_sink),
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 5, "{text}");
    for line in &lines {
        assert!(
            humantime::parse_rfc3339(line["ts"].as_str().unwrap()).is_ok(),
            "{line}"
        );
    }
    let finished: Vec<&Value> = lines
        .iter()
        .filter(|l| l["event"] == "node_finished")
        .collect();
    assert_eq!(finished.len(), 2);
    for line in &finished {
        assert!(line["duration_ms"].is_u64());
        assert!(line["type"].is_string() && line["node"].is_string());
    }
    let failed = finished.iter().find(|l| l["node"] == "f").unwrap();
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["error_kind"], "LOCAL_EXECUTOR_NON_ZERO_EXIT");
    let last = lines.last().unwrap();
    assert_eq!(last["event"], "graph_finished");
    assert_eq!(last["status"], "failed");
    assert_eq!(
        (last["succeeded"].as_u64(), last["failed"].as_u64()),
        (Some(1), Some(1))
    );
}

#[test]
fn single_node_runs_through_the_same_path() {
    let (_dir, options) = workspace();
    let rt = runtime();
    let inputs = obj(json!({"text": "solo"}));
    let result = rt
        .block_on(engine().run_node("test/echo", Default::default(), inputs, options))
        .unwrap();
    assert_eq!(result.id, "test/echo");
    assert_eq!(result.outputs["text"], "solo");
    let (_dir, options) = workspace();
    let errs = rt
        .block_on(engine().run_node(
            "test/echo",
            Default::default(),
            obj(json!({"sandbox_root": "/"})),
            options,
        ))
        .unwrap_err();
    assert_eq!(errs[0].port.as_deref(), Some("sandbox_root"));
}

#[test]
fn a_jsonl_log_holds_all_five_event_kinds_each_with_timestamp_and_the_durations() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    let file_sink: Arc<dyn cheng_engine::EventSink> = Arc::new(JsonlSink::create(&path).unwrap());
    let (_ws, options) = workspace();
    let engine = Engine::new(
        registry().with(Gated::default()),
        cheng_node::policy::Policy::builtin(),
    );
    run(
        &engine,
        json!({"version": 1, "nodes": [{"id": "g", "type": "test/gated", "inputs": {"purpose": "log it"}},
                                       {"id": "e", "type": "test/echo"}],
               "edges": [{"from": "g.summary", "to": "e.text"}]}),
        options
            .events(file_sink)
            .approver(Recording::new(cheng_node::Decision::Approved)),
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let names: Vec<&str> = lines.iter().map(|l| l["event"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "node_started",
            "approval_requested",
            "approval_decided",
            "node_finished",
            "node_started",
            "node_finished",
            "graph_finished"
        ],
        "{text}"
    );
    let mut previous = None;
    for line in &lines {
        let ts = humantime::parse_rfc3339(line["ts"].as_str().unwrap())
            .unwrap_or_else(|e| panic!("{e}: {line}"));
        assert!(
            previous.is_none_or(|p| p <= ts),
            "timestamps go backwards: {text}"
        );
        previous = Some(ts);
        if line["event"] != "graph_finished" {
            assert!(
                line["node"].is_string() && line["type"].is_string(),
                "{line}"
            );
        }
        let timed = ["approval_decided", "node_finished", "graph_finished"]
            .contains(&line["event"].as_str().unwrap());
        assert_eq!(line["duration_ms"].is_u64(), timed, "{line}");
    }
    let requested = &lines[1];
    assert_eq!(requested["request"]["purpose"], "log it");
    assert_eq!(requested["request"]["node_id"], "g");
    assert_eq!(lines[2]["decision"], "approved");
}
