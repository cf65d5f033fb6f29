//! Live output: a node's output chunks become `output_chunk` events, coalesced, in order, before
//! its `node_finished`, bounded per run; nobody listening means the node's handle is off.

use super::nodes::{obj, run, workspace};
use cheng_engine::live::{RUN_OUTPUT_BYTES, RUN_OUTPUT_EVENTS};
use cheng_engine::{Engine, Event, MemorySink, NodeStatus};
use cheng_node::*;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Writes its `pieces` to stdout (and `err` to stderr) through `ctx.output`, as a process's
/// capture would; with `wait_for_flush`, waits (while still running) until the run's events show
/// every piece, so the held bytes must have gone out without the node returning.
struct Speaker {
    events: Arc<MemorySink>,
    saw_output_on: Arc<AtomicBool>,
}

static SPEAKER: NodeSpec = NodeSpec {
    id: "test/speaker",
    title: "Speaker",
    description: "Writes output chunks.",
    category: "test",
    inputs: &[
        PortSpec::input(
            "pieces",
            PortType::Array(&PortType::String),
            "stdout chunks",
        )
        .default("[]"),
        PortSpec::input("err", PortType::String, "one stderr chunk").default("\"\""),
        PortSpec::input("repeat", PortType::Integer, "times to write the pieces")
            .default("1")
            .min(1)
            .max(100_000),
        PortSpec::input(
            "wait_for_flush",
            PortType::Boolean,
            "wait until the events show everything",
        )
        .default("false"),
    ],
    outputs: &[PortSpec::output("success", PortType::Boolean, "ok")],
    gate: None,
    effects: Effects::ReadOnly,
};

fn stdout_text(events: &[Event], node: &str) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Event::OutputChunk {
                node: n,
                stream: OutputStream::Stdout,
                text,
                ..
            } if n == node => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[async_trait]
impl Node for Speaker {
    fn spec(&self) -> &'static NodeSpec {
        &SPEAKER
    }
    async fn run(&self, ctx: &RunContext, input: Values) -> Result<Values, NodeError> {
        self.saw_output_on
            .store(ctx.output.is_on(), Ordering::SeqCst);
        let pieces: Vec<String> = input["pieces"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect();
        let repeat = input["repeat"].as_u64().unwrap_or(1);
        let mut offset = 0u64;
        let mut written = String::new();
        for _ in 0..repeat {
            for piece in &pieces {
                ctx.output
                    .chunk(OutputStream::Stdout, piece.as_bytes(), offset);
                offset += piece.len() as u64;
                written.push_str(piece);
            }
        }
        if let Some(err) = input["err"].as_str() {
            ctx.output.chunk(OutputStream::Stderr, err.as_bytes(), 0);
        }
        if input["wait_for_flush"] == Value::Bool(true) {
            let deadline = Instant::now() + Duration::from_secs(10);
            while stdout_text(&self.events.events(), &ctx.node_id) != written {
                if Instant::now() > deadline {
                    return Err(NodeError::internal(
                        "the held output was not sent while the node ran",
                    ));
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        Ok(obj(json!({"success": true})))
    }
}

fn engine(events: &Arc<MemorySink>) -> (Engine, Arc<AtomicBool>) {
    let on = Arc::new(AtomicBool::new(false));
    let node = Speaker {
        events: events.clone(),
        saw_output_on: on.clone(),
    };
    (
        Engine::new(
            Registry::new().with(node),
            cheng_node::policy::Policy::builtin(),
        ),
        on,
    )
}

/// (stream, offset, bytes, text) of every output_chunk of `node`.
fn chunks(events: &[Event], node: &str) -> Vec<(OutputStream, u64, u64, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::OutputChunk {
                node: n,
                stream,
                offset,
                bytes,
                text,
                ..
            } if n == node => Some((*stream, *offset, *bytes, text.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn chunks_arrive_as_contiguous_events_before_node_finished() {
    let events = Arc::new(MemorySink::default());
    let (engine, on) = engine(&events);
    let (_dir, options) = workspace();
    let pieces = ["one\n", "two\n", "thr", "ee\n", "☃\n"];
    let result = run(
        &engine,
        json!({"version": 1, "nodes": [{"id": "s", "type": "test/speaker", "inputs": {"pieces": pieces, "err": "oops\n"}}]}),
        options.events(events.clone()),
    );
    assert_eq!(result.node("s").unwrap().status, NodeStatus::Succeeded);
    assert!(
        on.load(Ordering::SeqCst),
        "with an event sink the node's output handle is on"
    );
    let all = events.events();
    let names: Vec<&str> = all.iter().map(Event::name).collect();
    let finished = names.iter().position(|n| *n == "node_finished").unwrap();
    let last_chunk = names.iter().rposition(|n| *n == "output_chunk").unwrap();
    assert!(
        last_chunk < finished,
        "every chunk goes out before node_finished: {names:?}"
    );
    assert_eq!(names[0], "node_started");
    let got = chunks(&all, "s");
    let mut next = 0;
    let mut text = String::new();
    for (stream, offset, bytes, t) in got.iter().filter(|c| c.0 == OutputStream::Stdout) {
        assert_eq!(*stream, OutputStream::Stdout);
        assert_eq!(*offset, next, "contiguous offsets: {got:?}");
        next += bytes;
        text.push_str(t);
    }
    assert_eq!(text, pieces.concat());
    assert_eq!(next, pieces.concat().len() as u64);
    // The first chunk went out at once (the coalescing itself is unit-tested with a fake clock).
    assert_eq!(got[0].3, "one\n");
    let err: Vec<_> = got.iter().filter(|c| c.0 == OutputStream::Stderr).collect();
    assert_eq!(err.len(), 1);
    assert_eq!((err[0].1, err[0].2, err[0].3.as_str()), (0, 5, "oops\n"));
}

#[test]
fn held_output_goes_out_while_the_node_still_runs() {
    let events = Arc::new(MemorySink::default());
    let (engine, _) = engine(&events);
    let (_dir, options) = workspace();
    // "a" goes out at once, "b" is held for the interval: the node returns only once it went
    // out, which the flush timer must do.
    let result = run(
        &engine,
        json!({"version": 1, "nodes": [{"id": "s", "type": "test/speaker", "inputs": {"pieces": ["a", "b"], "wait_for_flush": true}}]}),
        options.events(events.clone()),
    );
    let node = result.node("s").unwrap();
    assert_eq!(node.status, NodeStatus::Succeeded, "{:?}", node.outputs);
    assert_eq!(stdout_text(&events.events(), "s"), "ab");
}

#[test]
fn without_an_event_sink_the_output_handle_is_off() {
    let events = Arc::new(MemorySink::default());
    let (engine, on) = engine(&events);
    on.store(true, Ordering::SeqCst);
    let (_dir, options) = workspace();
    let result = run(
        &engine,
        json!({"version": 1, "nodes": [{"id": "s", "type": "test/speaker", "inputs": {"pieces": ["x"]}}]}),
        options,
    );
    assert_eq!(result.node("s").unwrap().status, NodeStatus::Succeeded);
    assert!(
        !on.load(Ordering::SeqCst),
        "nobody reads events: the handle must be off"
    );
}

#[test]
fn a_run_sends_at_most_its_bound_then_one_output_dropped_event() {
    let events = Arc::new(MemorySink::default());
    let (engine, _) = engine(&events);
    let (_dir, options) = workspace();
    // Two nodes share the run's bound: each writes 6 MiB in 64 KiB chunks (12 MiB > 8 MiB).
    let block = "z".repeat(64 * 1024);
    let inputs = json!({"pieces": [block], "repeat": 96});
    let result = run(
        &engine,
        json!({"version": 1, "nodes": [
            {"id": "a", "type": "test/speaker", "inputs": inputs},
            {"id": "b", "type": "test/speaker", "inputs": inputs}]}),
        options.events(events.clone()).jobs(1),
    );
    assert!(result
        .nodes
        .iter()
        .all(|n| n.status == NodeStatus::Succeeded));
    let all = events.events();
    let sent: u64 = all
        .iter()
        .map(|e| match e {
            Event::OutputChunk { bytes, .. } => *bytes,
            _ => 0,
        })
        .sum();
    let count = all.iter().filter(|e| e.name() == "output_chunk").count() as u64;
    assert!(
        sent <= RUN_OUTPUT_BYTES && count <= RUN_OUTPUT_EVENTS,
        "{sent} bytes in {count} events"
    );
    assert!(
        sent > RUN_OUTPUT_BYTES - 64 * 1024,
        "the bound is used up before dropping: {sent}"
    );
    let dropped: Vec<&Event> = all
        .iter()
        .filter(|e| e.name() == "output_dropped")
        .collect();
    assert_eq!(
        dropped.len(),
        1,
        "exactly one event says output was dropped"
    );
    match dropped[0] {
        Event::OutputDropped {
            node,
            message,
            limit_bytes,
            ..
        } => {
            assert_eq!(node, "b", "a wrote 6 MiB, b crossed the 8 MiB bound");
            assert_eq!(*limit_bytes, RUN_OUTPUT_BYTES);
            assert!(message.contains("bound on live output"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    let line = serde_json::to_value(dropped[0]).unwrap();
    assert_eq!(line["event"], "output_dropped");
}
