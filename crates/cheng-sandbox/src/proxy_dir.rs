//! The per-run directory holding the filtering proxy's two sockets, shown read-only inside at
//! [`PROXY_DIR`]. It lives beside the I/O directories ([`crate::io_parent`]), inside a parent
//! only cheng's user may enter: on the host nobody else reaches the sockets (they would speak
//! with cheng's network identity under this run's rules), and bwrap binds the inner directory,
//! so inside the sandbox the parent's mode does not matter. Removed when the run is over.

use crate::unavailable as sandbox_unavailable;
use cheng_node::NodeError;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Where the proxy's sockets are inside the sandbox.
pub const PROXY_DIR: &str = "/run/cheng-proxy";

#[derive(Debug)]
pub(crate) struct ProxyDir {
    /// The private parent (0700), removed with everything in it.
    parent: PathBuf,
    /// The directory bwrap binds (0755: the sandbox's uid enters it to reach the sockets).
    path: PathBuf,
    /// Bound when the sandbox is prepared, served from the start of the run.
    listeners: Option<cheng_proxy::Listeners>,
}

fn unavailable(what: &str, path: &Path, e: &std::io::Error) -> NodeError {
    sandbox_unavailable(format!("{what} {}: {e}; nothing ran", path.display()))
}

impl ProxyDir {
    pub fn create() -> Result<ProxyDir, NodeError> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        // A name left by an earlier process with the same pid (one that died before removing
        // it) is skipped, not reused: its sockets are not this run's.
        let parent = loop {
            let parent = crate::io_parent().join(format!(
                "cheng-proxy-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            match std::fs::DirBuilder::new().mode(0o700).create(&parent) {
                Ok(()) => break parent,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => {
                    return Err(unavailable(
                        "cannot make the filtering proxy's directory",
                        &parent,
                        &e,
                    ))
                }
            }
        };
        let mut dir = ProxyDir {
            path: parent.join("net"),
            parent,
            listeners: None,
        };
        std::fs::create_dir(&dir.path)
            .and_then(|()| {
                std::fs::set_permissions(&dir.path, std::fs::Permissions::from_mode(0o755))
            })
            .map_err(|e| {
                unavailable("cannot make the filtering proxy's directory", &dir.path, &e)
            })?;
        dir.listeners = Some(cheng_proxy::Listeners::bind(&dir.path).map_err(|e| {
            unavailable(
                "cannot bind the filtering proxy's sockets (a Unix socket's path must be shorter than 108 bytes) in",
                &dir.path,
                &e,
            )
        })?);
        Ok(dir)
    }

    /// The directory bwrap shows at [`PROXY_DIR`].
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Starts serving the sockets under `gate` (once), each decision also to `output`.
    pub fn serve(
        &mut self,
        gate: cheng_net::Gate,
        output: cheng_node::Output,
    ) -> Result<cheng_proxy::Proxy, NodeError> {
        let listeners = self.listeners.take().ok_or_else(|| {
            NodeError::internal("the filtering proxy of this sandbox was already started")
        })?;
        cheng_proxy::Proxy::serve(listeners, gate, output).map_err(|e| {
            sandbox_unavailable(format!(
                "cannot start the filtering proxy: {e}; nothing ran"
            ))
        })
    }
}

impl Drop for ProxyDir {
    fn drop(&mut self) {
        drop(self.listeners.take());
        let _ = std::fs::remove_dir_all(&self.parent);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    /// Only cheng's user enters the parent; the inner directory (what bwrap binds) and the
    /// sockets are reachable from inside; everything goes when the directory is dropped.
    #[test]
    fn the_sockets_sit_in_a_private_parent_and_go_with_it() {
        let dir = ProxyDir::create().unwrap();
        let parent = dir.path().parent().unwrap().to_path_buf();
        assert_eq!(std::fs::metadata(&parent).unwrap().mode() & 0o777, 0o700);
        assert_eq!(std::fs::metadata(dir.path()).unwrap().mode() & 0o777, 0o755);
        for socket in [cheng_proxy::HTTP_SOCKET, cheng_proxy::SOCKS_SOCKET] {
            assert!(dir.path().join(socket).exists(), "{socket}");
        }
        drop(dir);
        assert!(!parent.exists(), "{} was left", parent.display());
    }
}
