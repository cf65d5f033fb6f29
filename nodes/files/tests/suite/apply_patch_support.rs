//! Running tools/apply_patch through the engine, as `cheng run … --approve` does, in a scope the
//! test controls (so the freshness gate is on, and reads can be registered as read_file would).
#![allow(dead_code)]

use cheng_engine::{Engine, NodeResult, NodeStatus, RunOptions};
use cheng_node::{
    async_trait, ApprovalRequest, Approver, Decision, Registry, RunContext, Scope, ScopeKind,
    Values,
};
use cheng_nodes_files::apply_patch::ApplyPatch;
use cheng_nodes_files::freshness::Freshness;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Approves (or denies) and keeps every card it was shown.
pub struct Recorder {
    pub decision: Decision,
    pub cards: Mutex<Vec<ApprovalRequest>>,
    /// Runs while the card is shown (something changing the workspace meanwhile).
    pub meanwhile: Option<Box<dyn Fn() + Send + Sync>>,
}

impl Recorder {
    pub fn new(decision: Decision) -> Arc<Self> {
        Arc::new(Recorder {
            decision,
            cards: Mutex::new(Vec::new()),
            meanwhile: None,
        })
    }
}

#[async_trait]
impl Approver for Recorder {
    async fn decide(&self, request: &ApprovalRequest) -> Decision {
        self.cards.lock().unwrap().push(request.clone());
        if let Some(meanwhile) = &self.meanwhile {
            meanwhile();
        }
        self.decision
    }
}

/// A workspace and the scope its calls share (one graph run's).
pub struct Ws {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub scope: Scope,
}

impl Ws {
    pub fn new() -> Ws {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        Ws {
            _dir: dir,
            root,
            scope: Scope::new(ScopeKind::Graph),
        }
    }

    pub fn write(&self, rel: &str, bytes: impl AsRef<[u8]>) {
        let path = self.root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    pub fn read(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.root.join(rel)).unwrap()
    }

    /// Registers `rel`'s current content as seen by the model (what read_file's header does).
    pub fn seen(&self, rel: &str) {
        let mut ctx =
            RunContext::for_workspace("tools/apply_patch", self.root.clone(), Decision::Denied);
        ctx.scope = self.scope.clone();
        let freshness = Freshness::for_call(&ctx, &Values::new()).unwrap();
        let mut ledger = freshness.open().unwrap();
        let real = self.root.join(rel).canonicalize().unwrap();
        ledger.record(
            &real,
            &cheng_nodes_files::tag::tag(&std::fs::read(&real).unwrap()),
        );
        ledger.commit().unwrap();
    }

    /// Registers every file under the root as seen.
    pub fn seen_all(&self) {
        for rel in tree(&self.root)
            .into_iter()
            .filter_map(|(k, v)| v.map(|_| k))
        {
            self.seen(&rel);
        }
    }

    /// Runs tools/apply_patch with `patch` (and `config`), approved.
    pub fn apply(&self, patch: &str) -> NodeResult {
        self.apply_with(patch, json!({}), Recorder::new(Decision::Approved))
    }

    pub fn apply_with(&self, patch: &str, config: Value, approver: Arc<Recorder>) -> NodeResult {
        let engine = Engine::new(
            Registry::new().with(ApplyPatch),
            cheng_node::policy::Policy::builtin(),
        );
        let options = RunOptions::new(&self.root)
            .unwrap()
            .approver(approver)
            .scope(self.scope.clone());
        let inputs = json!({"input": patch});
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime
            .block_on(engine.run_node(
                "tools/apply_patch",
                config.as_object().cloned().unwrap_or_default(),
                inputs.as_object().cloned().unwrap_or_default(),
                options,
            ))
            .unwrap_or_else(|e| panic!("validation: {e:?}"))
    }

    pub fn tree(&self) -> BTreeMap<String, Option<Vec<u8>>> {
        tree(&self.root)
    }
}

/// The outcome's error text, or panics when it succeeded.
pub fn error_of(result: &NodeResult) -> (String, String) {
    assert_eq!(result.status, NodeStatus::Failed, "{:?}", result.outputs);
    (
        result.outputs["error_kind"]
            .as_str()
            .unwrap_or("")
            .to_string(),
        result.outputs["error"].as_str().unwrap_or("").to_string(),
    )
}

/// Every entry under `root` (symlinks not followed): relative path → file bytes, `None` for a
/// directory (a symlink is its target's text prefixed with `-> `).
pub fn tree(root: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Option<Vec<u8>>>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(root).unwrap().display().to_string();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.file_type().is_symlink() {
                let to = std::fs::read_link(&path).unwrap();
                out.insert(rel, Some(format!("-> {}", to.display()).into_bytes()));
            } else if meta.is_dir() {
                out.insert(rel, None);
                walk(root, &path, out);
            } else {
                out.insert(rel, Some(std::fs::read(&path).unwrap()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}
