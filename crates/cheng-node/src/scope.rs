//! State shared by the calls of one scope: a graph run, one `cheng serve` connection, or a named
//! `cheng run --session`. Nodes keep what must outlive a single call here (the file nodes'
//! freshness table, live process sessions), keyed by type; it is dropped with the scope, so
//! whatever a value's `Drop` cleans up (killing a session's processes) happens when the owner ends.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Who owns the state, and so how long it lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScopeKind {
    /// A single `cheng run` of one node: nothing outlives the call.
    Call,
    /// One graph run: state lives until the run ends.
    Graph,
    /// One `cheng serve` connection: state lives until the client disconnects or the server exits.
    Server,
    /// `cheng run --session NAME`: state a node can persist (in the user's state directory) under
    /// this name.
    Session(String),
}

impl ScopeKind {
    /// Whether a later call can see what this one leaves (every kind but [`ScopeKind::Call`]).
    pub fn outlives_call(&self) -> bool {
        !matches!(self, ScopeKind::Call)
    }
}

/// Checks a session name (`cheng run --session NAME`): 1 to 64 of `A-Z a-z 0-9 . _ -`, not
/// starting with `.`, so that it is one safe directory name.
pub fn check_session_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "session name {name:?} is not valid: use 1 to 64 letters, digits, '.', '_' or '-', not starting with '.'"
        ))
    }
}

/// Where named sessions keep their state: `$XDG_STATE_HOME/cheng/sessions` (an absolute
/// `XDG_STATE_HOME`), else `$HOME/.local/state/cheng/sessions`; `None` when neither is set.
pub fn sessions_dir() -> Option<std::path::PathBuf> {
    let state = std::env::var_os("XDG_STATE_HOME")
        .map(std::path::PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| std::path::PathBuf::from(h).join(".local/state"))
        })?;
    Some(state.join("cheng").join("sessions"))
}

/// A cheap, cloneable handle; every clone sees the same values.
#[derive(Clone)]
pub struct Scope {
    inner: Arc<Inner>,
}

struct Inner {
    kind: ScopeKind,
    values: Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

impl Scope {
    pub fn new(kind: ScopeKind) -> Self {
        Scope {
            inner: Arc::new(Inner {
                kind,
                values: Mutex::new(HashMap::new()),
            }),
        }
    }

    pub fn kind(&self) -> &ScopeKind {
        &self.inner.kind
    }

    /// The scope's value of type `T`, made by `init` on first use.
    pub fn get_or_init<T: Any + Send + Sync>(&self, init: impl FnOnce() -> T) -> Arc<T> {
        // A poisoned lock only means another call panicked while inserting; the map is intact.
        let mut values = self.inner.values.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(value) = values
            .get(&TypeId::of::<T>())
            .and_then(|v| Arc::clone(v).downcast::<T>().ok())
        {
            return value;
        }
        let value = Arc::new(init());
        values.insert(
            TypeId::of::<T>(),
            Arc::clone(&value) as Arc<dyn Any + Send + Sync>,
        );
        value
    }

    /// The scope's value of type `T`, if one was made.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        let values = self.inner.values.lock().unwrap_or_else(|p| p.into_inner());
        values
            .get(&TypeId::of::<T>())
            .and_then(|v| Arc::clone(v).downcast::<T>().ok())
    }
}

impl std::fmt::Debug for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scope")
            .field("kind", &self.inner.kind)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_shared_by_clones_and_made_once() {
        let scope = Scope::new(ScopeKind::Graph);
        let other = scope.clone();
        let a = scope.get_or_init(|| Mutex::new(vec![1]));
        a.lock().unwrap().push(2);
        let b = other.get_or_init(|| Mutex::new(vec![9]));
        assert_eq!(*b.lock().unwrap(), vec![1, 2]);
        assert!(scope.get::<String>().is_none());
    }

    #[test]
    fn values_drop_with_the_last_handle() {
        struct Flag(Arc<std::sync::atomic::AtomicBool>);
        impl Drop for Flag {
            fn drop(&mut self) {
                self.0.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let dropped = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let scope = Scope::new(ScopeKind::Server);
        scope.get_or_init(|| Flag(Arc::clone(&dropped)));
        drop(scope);
        assert!(dropped.load(std::sync::atomic::Ordering::SeqCst));
    }

    #[test]
    fn session_names_are_single_safe_directory_names() {
        for good in ["s", "work-1", "a.b_c"] {
            assert!(check_session_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            ".",
            "..",
            "../x",
            "a/b",
            ".hidden",
            &"x".repeat(65),
            "sp ace",
        ] {
            assert!(check_session_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn only_a_single_call_is_short_lived() {
        assert!(!ScopeKind::Call.outlives_call());
        assert!(ScopeKind::Session("s".into()).outlives_call());
    }
}
