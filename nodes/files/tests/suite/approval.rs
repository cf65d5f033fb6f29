//! The writers' approval: the card is built within a time budget (a huge diff is summarised),
//! the workspace lock is not held while a person decides, and what is written is what the
//! approved card was computed from.

use super::support::*;
use cheng_engine::{Engine, Graph, RunOptions};
use cheng_node::{
    async_trait, ApprovalRequest, Approver, Decision, FixedApprover, Registry, Scope, ScopeKind,
};
use cheng_nodes_files::{EditFile, ReadFile, WriteFile};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[test]
fn replacing_100_000_lines_by_one_is_summarised_on_the_card_and_in_the_output() {
    let (_d, ws) = temp_workspace();
    let old: String = (0..100_000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(ws.join("big.txt"), &old).unwrap();
    let c = ctx(&WriteFile, &ws, ScopeKind::Graph);
    ok(&ReadFile, &c, json!({"file_path": "big.txt"}));
    let input = json!({"file_path": "big.txt", "content": "one\n"});
    let started = Instant::now();
    let card = card(&WriteFile, &c, input.clone()).unwrap();
    let card_took = started.elapsed();
    let summary = "from line 1: 100 000 lines replaced by 1; diff too large to show";
    let details = card.details.unwrap();
    assert!(details.contains(summary), "{details}");
    let started = Instant::now();
    let out = ok(&WriteFile, &c, input);
    let run_took = started.elapsed();
    assert!(out["diff"].as_str().unwrap().contains(summary), "{out:#?}");
    assert_eq!(
        std::fs::read_to_string(ws.join("big.txt")).unwrap(),
        "one\n"
    );
    eprintln!("card {card_took:?}, run {run_took:?}");
}

/// Approves once `ready` holds (polled), or denies after 30 s; records whether it had to.
struct WaitsFor {
    ready: Box<dyn Fn() -> bool + Send + Sync>,
    gave_up: std::sync::atomic::AtomicBool,
}

#[async_trait]
impl Approver for WaitsFor {
    async fn decide(&self, _request: &ApprovalRequest) -> Decision {
        let limit = Instant::now() + Duration::from_secs(30);
        while !(self.ready)() {
            if Instant::now() > limit {
                self.gave_up
                    .store(true, std::sync::atomic::Ordering::SeqCst);
                return Decision::Denied;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Decision::Approved
    }
}

fn waits_for(ready: impl Fn() -> bool + Send + Sync + 'static) -> Arc<WaitsFor> {
    Arc::new(WaitsFor {
        ready: Box::new(ready),
        gave_up: Default::default(),
    })
}

fn write(path: &str, content: &str) -> Graph {
    Graph::from_value(&json!({"version": 1, "nodes": [
        {"id": "write", "type": "tools/write_file", "inputs": {"file_path": path, "content": content}}
    ]}))
    .unwrap()
}

fn options(ws: &Path, scope: &Scope, approver: Arc<dyn Approver>) -> RunOptions {
    RunOptions::new(ws)
        .unwrap()
        .approver(approver)
        .scope(scope.clone())
}

fn has(path: PathBuf, content: &'static str) -> impl Fn() -> bool + Send + Sync {
    move || std::fs::read_to_string(&path).is_ok_and(|text| text == content)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn another_file_is_written_while_a_person_decides() {
    let (_d, ws) = temp_workspace();
    let engine = Engine::new(
        Registry::new().with(WriteFile),
        cheng_node::policy::Policy::builtin(),
    );
    let scope = Scope::new(ScopeKind::Graph);
    let slow = engine.validate(&write("a.txt", "a\n")).unwrap();
    let quick = engine.validate(&write("b.txt", "b\n")).unwrap();
    // The person deciding about a.txt answers only once b.txt is written.
    let person = waits_for(has(ws.join("b.txt"), "b\n"));
    let approved = Arc::new(FixedApprover(Decision::Approved));
    let (a, b) = runtime().block_on(async {
        tokio::join!(
            engine.run(&slow, options(&ws, &scope, person.clone())),
            engine.run(&quick, options(&ws, &scope, approved))
        )
    });
    assert!(
        !person.gave_up.load(std::sync::atomic::Ordering::SeqCst),
        "b.txt was not written while a.txt's card waited for its answer"
    );
    assert_eq!(a.nodes[0].outputs["success"], true, "{:#?}", a.nodes[0]);
    assert_eq!(b.nodes[0].outputs["success"], true, "{:#?}", b.nodes[0]);
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "a\n");
}

#[test]
fn a_file_another_write_changed_while_its_card_was_shown_is_not_written() {
    let (_d, ws) = temp_workspace();
    std::fs::write(ws.join("a.txt"), "count = 1\nname = x\n").unwrap();
    let engine = Engine::new(
        Registry::new().with(EditFile).with(WriteFile),
        cheng_node::policy::Policy::builtin(),
    );
    // One agent (one scope) that read the file: its own writes keep the freshness gate content.
    let scope = Scope::new(ScopeKind::Graph);
    let mut c = ctx(&ReadFile, &ws, ScopeKind::Graph);
    c.scope = scope.clone();
    ok(&ReadFile, &c, json!({"file_path": "a.txt"}));
    let edit = Graph::from_value(&json!({"version": 1, "nodes": [
        {"id": "edit", "type": "tools/edit_file", "inputs": {"file_path": "a.txt", "old": "count = 1", "new": "count = 2"}}
    ]}))
    .unwrap();
    let edit = engine.validate(&edit).unwrap();
    let replace = engine
        .validate(&write("a.txt", "count = 1\nname = y\n"))
        .unwrap();
    // The edit's card (count = 1 -> 2 on `name = x`) is approved once the other write landed.
    let person = waits_for(has(ws.join("a.txt"), "count = 1\nname = y\n"));
    let approved = Arc::new(FixedApprover(Decision::Approved));
    let (a, b) = runtime().block_on(async {
        tokio::join!(
            engine.run(&edit, options(&ws, &scope, person.clone())),
            engine.run(&replace, options(&ws, &scope, approved))
        )
    });
    assert_eq!(b.nodes[0].outputs["success"], true, "{:#?}", b.nodes[0]);
    let outputs = &a.nodes[0].outputs;
    assert_eq!(
        outputs["error_kind"], "LOCAL_EXECUTOR_FILE_CHANGED",
        "{outputs:#?}"
    );
    let error = outputs["error"].as_str().unwrap();
    assert!(
        error.contains("a.txt changed since it was approved")
            && error.contains("nothing was written"),
        "{error}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        "count = 1\nname = y\n"
    );
}
