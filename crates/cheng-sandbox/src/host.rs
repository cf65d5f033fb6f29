//! What the sandbox plan needs to know about this host, gathered into one plain struct.
//!
//! Everything here is read, never changed: who cheng runs as, which bwrap, whether this binary
//! (or the helper next to it) can be the init step, the Landlock ABI, the util-linux tools used
//! when there is no init step, and the read-only system view. The parts that cannot change
//! while cheng runs are gathered once per process; the bwrap path is looked up per run (a
//! request or `$CHENG_BWRAP` may name another one). [`super::plan::plan`] turns a request and
//! these facts into the command line without looking at the host again.

use super::mounts::{self, SystemEntry};
use super::{bwrap, init, landlock};
use cheng_node::NodeError;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Facts about this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostFacts {
    /// cheng's effective uid is 0 (bwrap then skips the user namespace and the code runs as a
    /// fresh unprivileged uid per run).
    pub root: bool,
    /// cheng's own real uid and gid (the identity inside the user namespace when not root).
    pub own_ids: (u32, u32),
    /// The bwrap binary ([`bwrap::locate`]).
    pub bwrap: PathBuf,
    /// The kernel's Landlock ABI version; `None` without Landlock.
    pub landlock_abi: Option<i32>,
    /// The sandbox init step to bind into the sandbox ([`init::launcher`]); `None` when neither
    /// this binary nor a helper next to it offers one.
    pub launcher: Option<PathBuf>,
    /// util-linux `setpriv` (the uid drop as root without an init step).
    pub setpriv: Option<PathBuf>,
    /// util-linux `prlimit` (RLIMIT_NPROC inside the user namespace without an init step).
    pub prlimit: Option<PathBuf>,
    /// The read-only system directories and /etc entries that exist here.
    pub system_view: Vec<SystemEntry>,
}

/// The part of [`HostFacts`] that cannot change while cheng runs.
#[derive(Debug, Clone)]
struct Fixed {
    root: bool,
    own_ids: (u32, u32),
    landlock_abi: Option<i32>,
    setpriv: Option<PathBuf>,
    prlimit: Option<PathBuf>,
    system_view: Vec<SystemEntry>,
}

fn fixed() -> &'static Fixed {
    static FIXED: OnceLock<Fixed> = OnceLock::new();
    FIXED.get_or_init(|| {
        let (euid, uid, gid) = (
            rustix::process::geteuid().as_raw(),
            rustix::process::getuid().as_raw(),
            rustix::process::getgid().as_raw(),
        );
        Fixed {
            root: euid == 0,
            own_ids: (uid, gid),
            landlock_abi: landlock::kernel_abi(),
            setpriv: system_tool("setpriv"),
            prlimit: system_tool("prlimit"),
            system_view: mounts::system_view(),
        }
    })
}

impl HostFacts {
    /// Gathers the facts; `bwrap` overrides `$CHENG_BWRAP` and the system bwrap. Fails closed
    /// (SANDBOX_UNAVAILABLE, with the fix) when no bwrap can be found.
    pub fn gather(bwrap: Option<&Path>) -> Result<HostFacts, NodeError> {
        let bwrap = bwrap::locate(bwrap)?;
        let f = fixed();
        Ok(HostFacts {
            root: f.root,
            own_ids: f.own_ids,
            bwrap,
            landlock_abi: f.landlock_abi,
            launcher: init::launcher(),
            setpriv: f.setpriv.clone(),
            prlimit: f.prlimit.clone(),
            system_view: f.system_view.clone(),
        })
    }
}

/// An executable `name` in the system directories (never the caller's PATH).
fn system_tool(name: &str) -> Option<PathBuf> {
    ["/usr/bin", "/bin", "/usr/sbin", "/sbin"]
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}
