//! The sessions of one scope (a `cheng serve` connection or a graph run): at most
//! [`MAX_SESSIONS`], ids never reused, and a record of why an id is no longer live.
//!
//! When full, a new session evicts one: an ended session first, then the least recently used,
//! never one of the [`PROTECTED_RECENT`] most recently used (the reference page's numbers, from Codex's
//! unified exec). Dropping the table (the scope's owner ended) drops every process handle, which
//! kills each session's process group and everything it started.

use cheng_exec::live::LiveProcess;
use cheng_node::{ErrorKind, NodeError};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

/// Most live sessions per scope.
pub const MAX_SESSIONS: usize = 64;
/// The most recently used sessions that are never evicted.
pub const PROTECTED_RECENT: usize = 8;
/// How many ended or evicted ids the table remembers (for a clear error).
const REMEMBERED: usize = 4096;

/// One live session.
#[derive(Debug)]
pub struct Session {
    pub id: i64,
    pub process: LiveProcess,
    /// The command as shown on its approval card.
    pub display: String,
    /// Its working directory, relative to the workspace.
    pub cwd: String,
    pub sandboxed: bool,
    /// What must live as long as the process (the sandbox's masking placeholders).
    pub hold: Option<Box<dyn std::any::Any + Send + Sync>>,
}

#[derive(Debug, Clone)]
enum Gone {
    Evicted { display: String, by: i64 },
    Ended { display: String, how: String },
}

#[derive(Default)]
struct Table {
    next_id: i64,
    clock: u64,
    live: HashMap<i64, (Arc<Session>, u64)>,
    gone: VecDeque<(i64, Gone)>,
}

/// The scope's session table (kept with `RunContext::scope.get_or_init`).
#[derive(Default)]
pub struct Sessions {
    table: Mutex<Table>,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions")
            .field("live", &self.live())
            .finish()
    }
}

/// Which session to evict to make room: `entries` are `(id, last_used, ended)`. `None` when
/// there is still room, or when every session is protected (never with the reference page's numbers).
pub fn victim(entries: &[(i64, u64, bool)], max: usize, protected: usize) -> Option<i64> {
    if entries.len() < max {
        return None;
    }
    let mut by_recency: Vec<&(i64, u64, bool)> = entries.iter().collect();
    // Most recently used first; ids break ties (a later id is newer).
    by_recency.sort_by(|a, b| b.1.cmp(&a.1).then(b.0.cmp(&a.0)));
    let candidates = &by_recency[protected.min(by_recency.len())..];
    // Least recently used first among the rest.
    let lru = candidates.iter().rev();
    lru.clone()
        .find(|e| e.2)
        .or_else(|| lru.clone().next())
        .map(|e| e.0)
}

impl Sessions {
    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        // A poisoned lock only means a call panicked while holding it; the map is intact.
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How many sessions are live.
    pub fn live(&self) -> usize {
        self.lock().live.len()
    }

    /// Adds a session (evicting one when full) and returns it with the id it evicted.
    pub fn insert(&self, make: impl FnOnce(i64) -> Session) -> (Arc<Session>, Option<i64>) {
        let mut table = self.lock();
        let entries: Vec<(i64, u64, bool)> = table
            .live
            .iter()
            .map(|(id, (s, used))| (*id, *used, s.process.ended().is_some()))
            .collect();
        let mut evicted = None;
        if let Some(old) = victim(&entries, MAX_SESSIONS, PROTECTED_RECENT) {
            if let Some((session, _)) = table.live.remove(&old) {
                evicted = Some(old);
                let by = table.next_id + 1;
                remember(
                    &mut table,
                    old,
                    Gone::Evicted {
                        display: session.display.clone(),
                        by,
                    },
                );
                // Dropping the last handle kills it (a call still using it holds another).
                drop(session);
            }
        }
        table.next_id += 1;
        table.clock += 1;
        let id = table.next_id;
        let session = Arc::new(make(id));
        let clock = table.clock;
        table.live.insert(id, (Arc::clone(&session), clock));
        (session, evicted)
    }

    /// The live session `id` (now the most recently used), or an error saying what became of it.
    pub fn get(&self, id: i64) -> Result<Arc<Session>, NodeError> {
        let mut table = self.lock();
        table.clock += 1;
        let clock = table.clock;
        if let Some((session, used)) = table.live.get_mut(&id) {
            *used = clock;
            return Ok(Arc::clone(session));
        }
        Err(not_live(&table, id))
    }

    /// The live session `id` without counting it as a use (for approval cards), or the error
    /// [`Sessions::get`] would give: a call that could only fail is refused before anyone is asked.
    pub fn peek(&self, id: i64) -> Result<Arc<Session>, NodeError> {
        let table = self.lock();
        match table.live.get(&id) {
            Some((session, _)) => Ok(Arc::clone(session)),
            None => Err(not_live(&table, id)),
        }
    }

    /// Forgets an ended session, remembering how it ended.
    pub fn finish(&self, id: i64, how: String) {
        let mut table = self.lock();
        if let Some((session, _)) = table.live.remove(&id) {
            remember(
                &mut table,
                id,
                Gone::Ended {
                    display: session.display.clone(),
                    how,
                },
            );
        }
    }

    /// The ids of the live sessions, oldest first (for tests and messages).
    pub fn ids(&self) -> Vec<i64> {
        let table = self.lock();
        let mut ids: Vec<i64> = table.live.keys().copied().collect();
        ids.sort_unstable();
        ids
    }
}

impl Drop for Sessions {
    /// The owner ended (server connection closed, graph run over or cancelled): every session's
    /// process group and everything it started is killed, as each handle drops (a call still
    /// running holds its own handle and kills the session when it returns).
    fn drop(&mut self) {
        let mut table = self.lock();
        table.live.clear();
    }
}

/// Why `id` names no live session: evicted, ended, gone, or never started here.
fn not_live(table: &Table, id: i64) -> NodeError {
    let message = match table.gone.iter().rev().find(|(gone, _)| *gone == id).map(|(_, why)| why.clone()) {
        Some(Gone::Evicted { display, by }) => format!(
            "session_id {id} ({display}) was evicted to make room for session {by}: at most {MAX_SESSIONS} sessions are kept (an ended one goes first, then the least recently used; the {PROTECTED_RECENT} most recently used never); its process group was killed. Start it again with exec_command"
        ),
        Some(Gone::Ended { display, how }) => format!(
            "session_id {id} ({display}) has ended ({how}); its final output was returned by the call that reported the end. Start it again with exec_command"
        ),
        None if id >= 1 && id <= table.next_id => {
            format!("session_id {id} is not live any more; start the command again with exec_command")
        }
        None => format!(
            "session_id {id} is unknown: no exec_command in this server connection or graph run started it ({} live: {}). Use the session_id an exec_command returned while its process was running",
            table.live.len(),
            live_ids(table)
        ),
    };
    NodeError::new(ErrorKind::NotFound, message)
}

fn remember(table: &mut Table, id: i64, why: Gone) {
    if table.gone.len() >= REMEMBERED {
        table.gone.pop_front();
    }
    table.gone.push_back((id, why));
}

fn live_ids(table: &Table) -> String {
    let mut ids: Vec<i64> = table.live.keys().copied().collect();
    ids.sort_unstable();
    if ids.is_empty() {
        return "none".into();
    }
    ids.iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn there_is_room_below_the_maximum() {
        let entries: Vec<(i64, u64, bool)> = (1..64).map(|i| (i, i as u64, true)).collect();
        assert_eq!(victim(&entries, 64, 8), None);
    }

    #[test]
    fn an_ended_session_goes_before_the_least_recently_used() {
        // 64 running sessions used in id order; 40 has ended.
        let mut entries: Vec<(i64, u64, bool)> = (1..=64).map(|i| (i, i as u64, false)).collect();
        assert_eq!(
            victim(&entries, 64, 8),
            Some(1),
            "least recently used when none has ended"
        );
        entries[39].2 = true;
        assert_eq!(victim(&entries, 64, 8), Some(40));
    }

    #[test]
    fn the_eight_most_recent_are_never_evicted() {
        // Only the eight most recent have ended: they are protected, so the LRU goes.
        let mut entries: Vec<(i64, u64, bool)> = (1..=64).map(|i| (i, i as u64, false)).collect();
        for e in entries.iter_mut().skip(56) {
            e.2 = true;
        }
        assert_eq!(victim(&entries, 64, 8), Some(1));
        // Recency is use, not age: once session 1 is used, 57 (ended) falls out of the eight.
        entries[0].1 = 1000;
        assert_eq!(victim(&entries, 64, 8), Some(57));
    }

    #[test]
    fn recency_is_use_not_age() {
        let mut entries: Vec<(i64, u64, bool)> = (1..=64).map(|i| (i, i as u64, false)).collect();
        entries[0].1 = 1000;
        assert_eq!(victim(&entries, 64, 8), Some(2));
    }

    #[test]
    fn unknown_and_ended_ids_say_what_happened() {
        let sessions = Sessions::default();
        let e = sessions.get(7).unwrap_err();
        assert_eq!(e.kind, ErrorKind::NotFound);
        assert!(
            e.message.contains("session_id 7 is unknown"),
            "{}",
            e.message
        );
    }
}
