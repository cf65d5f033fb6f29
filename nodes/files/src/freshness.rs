//! The freshness gate: a table from a file's real path to the tag last handed to the model.
//!
//! Every place that hands the model a tag registers it ([`Ledger::record`]): read_file's
//! `[path#TAG]` header and every write's new tag. A node that changes an existing file checks it
//! first ([`Ledger::check`], before matching anything): refused when the file was never read in
//! this scope, or when its content changed since (its tag differs).
//!
//! Where the table lives follows the run's [`Scope`](cheng_node::Scope):
//!
//! | scope | table |
//! |---|---|
//! | `Graph`, `Server` | in memory, shared by the run's / connection's calls |
//! | `Session(NAME)` | `$XDG_STATE_HOME/cheng/sessions/NAME/freshness.json`, locked with `flock` while a call uses it |
//! | `Call` (one `cheng run`) | none: the gate is off and the output's `warnings` say so |
//!
//! The node's author can switch the gate off (`read_tracking: false`, the reference page's
//! `:read-tracking? false`): then nothing is checked or registered, and `warnings` say so.

use cheng_node::{
    Audience, ErrorKind, NodeError, PortSpec, PortType, RunContext, ScopeKind, Values,
};
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The author switch (`read_tracking`, default true).
pub const READ_TRACKING: PortSpec = PortSpec::input(
    "read_tracking",
    PortType::Boolean,
    "Freshness gate: refuse to change a file the model has not read, or that changed since it did; false turns the gate (and tag registration) off for this node",
)
.default("true")
.audience(Audience::Author);

/// The file holding a session's table, inside its directory.
pub const SESSION_FILE: &str = "freshness.json";

/// The in-memory table of a graph run or server connection (kept in the scope).
#[derive(Default)]
struct Table(Mutex<HashMap<PathBuf, String>>);

/// The gate for one call.
pub struct Freshness {
    mode: Mode,
}

enum Mode {
    Off(String),
    Memory {
        table: Arc<Table>,
        scope: &'static str,
    },
    Session {
        name: String,
        dir: PathBuf,
    },
}

impl Freshness {
    /// The gate for a call in `ctx`, honouring the node's `read_tracking` switch.
    pub fn for_call(ctx: &RunContext, input: &Values) -> Result<Freshness, NodeError> {
        let tracking = cheng_node::input::boolean(input, &READ_TRACKING)?;
        if !tracking {
            return Ok(Freshness { mode: Mode::Off("the freshness gate is off: the node's author set read_tracking to false, so this change was not checked against what the model last read".into()) });
        }
        let mode = match ctx.scope.kind() {
            ScopeKind::Call => Mode::Off(
                "the freshness gate is off: a single `cheng run` keeps no record of what the model read, so this change was not checked against it; run with `--session NAME` (or in a graph, or through `cheng serve`) to keep one".into(),
            ),
            ScopeKind::Graph => Mode::Memory { table: ctx.scope.get_or_init(Table::default), scope: "this graph run" },
            ScopeKind::Server => Mode::Memory { table: ctx.scope.get_or_init(Table::default), scope: "this server connection" },
            ScopeKind::Session(name) => {
                cheng_node::scope::check_session_name(name).map_err(NodeError::invalid_input)?;
                let Some(dir) = cheng_node::scope::sessions_dir() else {
                    return Err(NodeError::invalid_input(format!(
                        "session {name:?} needs a state directory: set XDG_STATE_HOME (absolute) or HOME"
                    )));
                };
                Mode::Session { name: name.clone(), dir: dir.join(name) }
            }
        };
        Ok(Freshness { mode })
    }

    /// A gate that is off, for tests and embedding.
    pub fn off(why: impl Into<String>) -> Freshness {
        Freshness {
            mode: Mode::Off(why.into()),
        }
    }

    pub fn is_on(&self) -> bool {
        !matches!(self.mode, Mode::Off(_))
    }

    /// The warning a write reports when the gate is off.
    pub fn warning(&self) -> Option<&str> {
        match &self.mode {
            Mode::Off(why) => Some(why),
            _ => None,
        }
    }

    /// Opens the table for one call: a session's is locked (other processes wait) until the
    /// ledger is committed or dropped, so check, write and record happen as one step.
    pub fn open(&self) -> Result<Ledger, NodeError> {
        match &self.mode {
            Mode::Off(_) => Ok(Ledger {
                state: State::Off,
                scope: String::new(),
            }),
            Mode::Memory { table, scope } => Ok(Ledger {
                state: State::Memory(Arc::clone(table)),
                scope: (*scope).to_string(),
            }),
            Mode::Session { name, dir } => {
                let session_error = |what: &str, e: std::io::Error| {
                    NodeError::internal(format!(
                        "session {name:?}: cannot {what} in {}: {e}",
                        dir.display()
                    ))
                };
                create_private_dir(dir)
                    .map_err(|e| session_error("create the session directory", e))?;
                let lock = std::fs::OpenOptions::new()
                    .create(true)
                    .truncate(false)
                    .write(true)
                    .open(dir.join("lock"))
                    .map_err(|e| session_error("open the lock file", e))?;
                cheng_exec::flock::lock_exclusive(&lock)
                    .map_err(|e| session_error("lock the session", e))?;
                let path = dir.join(SESSION_FILE);
                let tags = match std::fs::read(&path) {
                    Ok(bytes) => serde_json::from_slice::<SessionFile>(&bytes)
                        .map_err(|e| NodeError::invalid_input(format!(
                            "session {name:?}: {} is not a freshness table ({e}); delete it to start the session afresh",
                            path.display()
                        )))?
                        .tags,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
                    Err(e) => return Err(session_error("read the freshness table", e)),
                };
                Ok(Ledger {
                    state: State::Session {
                        _lock: lock,
                        path,
                        tags,
                        dirty: false,
                    },
                    scope: format!("session {name:?}"),
                })
            }
        }
    }
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[derive(serde::Serialize, serde::Deserialize)]
struct SessionFile {
    version: u32,
    tags: BTreeMap<String, String>,
}

/// The table, open for one call.
pub struct Ledger {
    state: State,
    scope: String,
}

enum State {
    Off,
    Memory(Arc<Table>),
    Session {
        _lock: File,
        path: PathBuf,
        tags: BTreeMap<String, String>,
        dirty: bool,
    },
}

impl Ledger {
    pub fn is_on(&self) -> bool {
        !matches!(self.state, State::Off)
    }

    /// The tag last handed to the model for `real`.
    pub fn seen(&self, real: &Path) -> Option<String> {
        match &self.state {
            State::Off => None,
            State::Memory(table) => table
                .0
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(real)
                .cloned(),
            State::Session { tags, .. } => tags.get(&real.to_string_lossy().into_owned()).cloned(),
        }
    }

    /// `Err(FILE_CHANGED)` unless the model last saw exactly `current` (the file's tag now).
    /// Always `Ok` when the gate is off.
    pub fn check(&self, real: &Path, display: &str, current: &str) -> Result<(), NodeError> {
        if !self.is_on() {
            return Ok(());
        }
        match self.seen(real) {
            None => Err(NodeError::new(
                ErrorKind::FileChanged,
                format!(
                    "{display} was never read in {}: the freshness gate refuses to change a file the model has not seen; \
                     read it with tools/read_file first (its [path#TAG] header registers it), then redo the change",
                    self.scope
                ),
            )),
            Some(seen) if seen != current => Err(NodeError::new(
                ErrorKind::FileChanged,
                format!(
                    "{display} changed since the model last read it (tag then {seen}, now {current}): \
                     read it again with tools/read_file and redo the change on what it holds now"
                ),
            )),
            Some(_) => Ok(()),
        }
    }

    /// Registers that the model now knows `real` as `tag`.
    pub fn record(&mut self, real: &Path, tag: &str) {
        match &mut self.state {
            State::Off => {}
            State::Memory(table) => {
                table
                    .0
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(real.to_path_buf(), tag.to_string());
            }
            State::Session { tags, dirty, .. } => {
                tags.insert(real.to_string_lossy().into_owned(), tag.to_string());
                *dirty = true;
            }
        }
    }

    /// Forgets `real` and everything under it (a deleted file or directory).
    pub fn forget(&mut self, real: &Path) {
        match &mut self.state {
            State::Off => {}
            State::Memory(table) => table
                .0
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .retain(|k, _| !k.starts_with(real)),
            State::Session { tags, dirty, .. } => {
                let before = tags.len();
                tags.retain(|k, _| !Path::new(k).starts_with(real));
                *dirty |= tags.len() != before;
            }
        }
    }

    /// Saves a session's table (atomically) and releases its lock.
    pub fn commit(self) -> Result<(), NodeError> {
        if let State::Session {
            path,
            tags,
            dirty: true,
            ..
        } = &self.state
        {
            let file = SessionFile {
                version: 1,
                tags: tags.clone(),
            };
            let bytes = serde_json::to_vec_pretty(&file).map_err(|e| {
                NodeError::internal(format!("cannot encode the freshness table: {e}"))
            })?;
            let saved = match path.parent() {
                Some(dir) => cheng_fs::WorkspaceFs::open(dir)
                    .and_then(|fs| fs.write(Path::new(SESSION_FILE), &bytes)),
                None => Err(std::io::Error::other("it has no directory")),
            };
            saved.map_err(|e| {
                NodeError::internal(format!(
                    "cannot save the freshness table {}: {e}",
                    path.display()
                ))
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cheng_node::{Decision, Scope};

    fn ctx(kind: ScopeKind) -> RunContext {
        let mut ctx =
            RunContext::for_workspace("tools/edit_file", std::env::temp_dir(), Decision::Approved);
        ctx.scope = Scope::new(kind);
        ctx
    }

    #[test]
    fn never_read_and_changed_are_refused_with_different_messages() {
        let gate = Freshness::for_call(&ctx(ScopeKind::Graph), &Values::new()).unwrap();
        let mut ledger = gate.open().unwrap();
        let err = ledger
            .check(Path::new("/w/a"), "a", "11111111")
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::FileChanged);
        assert!(
            err.message.contains("never read in this graph run"),
            "{}",
            err.message
        );
        ledger.record(Path::new("/w/a"), "11111111");
        assert!(ledger.check(Path::new("/w/a"), "a", "11111111").is_ok());
        let err = ledger
            .check(Path::new("/w/a"), "a", "22222222")
            .unwrap_err();
        assert!(
            err.message.contains("changed since the model last read it"),
            "{}",
            err.message
        );
        ledger.forget(Path::new("/w"));
        assert!(ledger.seen(Path::new("/w/a")).is_none());
    }

    #[test]
    fn a_single_call_and_the_author_switch_turn_it_off_with_a_warning() {
        let gate = Freshness::for_call(&ctx(ScopeKind::Call), &Values::new()).unwrap();
        assert!(!gate.is_on());
        assert!(gate.warning().unwrap().contains("--session"));
        assert!(gate
            .open()
            .unwrap()
            .check(Path::new("/x"), "x", "0")
            .is_ok());
        let mut off = Values::new();
        off.insert("read_tracking".into(), serde_json::json!(false));
        let gate = Freshness::for_call(&ctx(ScopeKind::Graph), &off).unwrap();
        assert!(gate.warning().unwrap().contains("read_tracking"));
    }
}
