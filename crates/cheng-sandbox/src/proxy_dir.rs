//! The per-run directory holding the filtering proxy's two sockets, shown read-only inside at
//! [`PROXY_DIR`]. It lives beside the I/O directories ([`crate::io_parent`]) and is removed
//! when the run is over.

use cheng_node::{ErrorKind, NodeError};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Where the proxy's sockets are inside the sandbox.
pub const PROXY_DIR: &str = "/run/cheng-proxy";

#[derive(Debug)]
pub(crate) struct ProxyDir {
    path: PathBuf,
    /// Bound when the sandbox is prepared, served from the start of the run.
    listeners: Option<cheng_proxy::Listeners>,
}

impl ProxyDir {
    pub fn create() -> Result<ProxyDir, NodeError> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let unavailable = |e: std::io::Error, path: &Path| {
            NodeError::new(
                ErrorKind::SandboxUnavailable,
                format!(
                    "cannot make the filtering proxy's directory {}: {e}; nothing ran",
                    path.display()
                ),
            )
        };
        // A name left by an earlier process with the same pid (one that died before removing
        // it) is skipped, not reused: its sockets are not this run's.
        let path = loop {
            let path = crate::io_parent().join(format!(
                "cheng-proxy-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            match std::fs::create_dir(&path) {
                Ok(()) => break path,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(unavailable(e, &path)),
            }
        };
        // Owned by cheng; entered by the sandbox's uid only to reach the two sockets.
        let mut dir = ProxyDir {
            path,
            listeners: None,
        };
        std::fs::set_permissions(&dir.path, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| unavailable(e, &dir.path))?;
        dir.listeners =
            Some(cheng_proxy::Listeners::bind(&dir.path).map_err(|e| unavailable(e, &dir.path))?);
        Ok(dir)
    }

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
            NodeError::new(
                ErrorKind::SandboxUnavailable,
                format!("cannot start the filtering proxy: {e}; nothing ran"),
            )
        })
    }
}

impl Drop for ProxyDir {
    fn drop(&mut self) {
        drop(self.listeners.take());
        let _ = std::fs::remove_file(self.path.join(cheng_proxy::HTTP_SOCKET));
        let _ = std::fs::remove_file(self.path.join(cheng_proxy::SOCKS_SOCKET));
        let _ = std::fs::remove_dir(&self.path);
    }
}
