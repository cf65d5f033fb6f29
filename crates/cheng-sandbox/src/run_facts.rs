//! This run's facts: what the plan needs to know about the paths of one request (which
//! ancestors others cannot enter, who owns what must be idmapped, which uid the run gets), and
//! what must exist before bwrap starts (the masking placeholders, the run's cgroup group).

use crate::{
    cgroup, etc_copies, idmap, mounts, plan, unavailable, CgroupV2, HostFacts, PinnedPath,
    SandboxLimits, SandboxRequest, SANDBOX_UID_BASE, SANDBOX_UID_SLOTS,
};
use cheng_node::NodeError;
use std::path::{Path, PathBuf};

/// A uid (= gid) for one run: distinct per process and per concurrent run, never root.
fn sandbox_ids() -> (u32, u32) {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let slot = NEXT.fetch_add(1, Ordering::Relaxed) % SANDBOX_UID_SLOTS;
    let process = (std::process::id() % 20_000) * SANDBOX_UID_SLOTS;
    let id = SANDBOX_UID_BASE + (process + slot) % 200_000_000;
    (id, id)
}
/// Whether others may list and enter `dir` (r-x for "other").
fn world_listable(dir: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(dir).is_ok_and(|m| m.permissions().mode() & 0o005 == 0o005)
}

/// Finds out what the plan needs to know about this run's paths, and makes what must exist
/// before bwrap starts: the masking placeholders of a writable boundary and the run's cgroup
/// group. Returns the facts and the two guards (dropping them undoes what was made).
pub(crate) fn gather(
    request: &SandboxRequest,
    host: &HostFacts,
) -> Result<
    (
        plan::RunFacts,
        mounts::Placeholders,
        Option<cgroup::RunGroup>,
    ),
    NodeError,
> {
    let mut warnings = Vec::new();
    let ids = sandbox_ids();
    let closed = if request.full_disk_readonly && host.root {
        let bound = request
            .extra_ro
            .iter()
            .map(PathBuf::as_path)
            .chain(request.read_paths.iter().map(PinnedPath::path))
            .chain(std::iter::once(request.boundary.as_path()));
        closed_ancestors(bound)
    } else {
        Vec::new()
    };
    let protections = if request.writable {
        mounts::protect(&request.boundary, &mut warnings).map_err(|e| {
            unavailable(format!(
                "cannot prepare the protected metadata of {}: {e}; nothing ran",
                request.boundary.display()
            ))
        })?
    } else {
        mounts::Placeholders::default()
    };
    if let Some(io) = &request.io_dir {
        for name in &request.io_outputs {
            use std::os::unix::fs::FileTypeExt;
            let fifo =
                std::fs::symlink_metadata(io.join(name)).is_ok_and(|m| m.file_type().is_fifo());
            if !fifo {
                return Err(NodeError::internal(format!(
                    "the sandbox output {name} is not a FIFO made by cheng_sandbox::channel; a regular file would store what the script writes on the host"
                )));
            }
        }
    }
    let (memory, group) = match &request.memory_cgroup {
        Some(CgroupV2::Delegated(parent)) => {
            let limits = SandboxLimits::with_memory_mb(request.memory_mb);
            let group_limits = cgroup::GroupLimits {
                memory_bytes: limits.memory_bytes,
                pids: limits.nproc,
            };
            match cgroup::RunGroup::create(parent, group_limits, &mut warnings) {
                Ok(group) => (plan::MemoryFact::Group(group.describe()), Some(group)),
                Err(why) => (plan::MemoryFact::GroupFailed(why), None),
            }
        }
        Some(CgroupV2::Unavailable(why)) => (plan::MemoryFact::Unavailable(why.clone()), None),
        None => (plan::MemoryFact::Rlimit, None),
    };
    let etc_copies = if request.full_disk_readonly {
        None
    } else {
        etc_copies::for_run(host.root, &host.system_view)
    };
    let io_copies = match &request.io_dir {
        Some(io) if request.io_outputs.is_empty() && !request.full_disk_readonly => {
            plan::io_copies(io)
        }
        _ => None,
    };
    let mut owners = Vec::new();
    let boundary_listable = world_listable(&request.boundary);
    if host.root {
        let boundary_needed = request.writable || !boundary_listable;
        if boundary_needed {
            let path = &request.boundary;
            let target = idmap::IdmapTarget::for_path(path)
                .map_err(|e| unavailable(format!("cannot inspect {}: {e}", path.display())))?;
            owners.push(target);
        }
        // A read path's owner as it was when it was opened (never looked up by path again).
        owners.extend(
            request
                .read_paths
                .iter()
                .map(idmap::IdmapTarget::for_pinned),
        );
    }
    let facts = plan::RunFacts {
        ids,
        closed_ancestors: closed,
        boundary_listable,
        owners,
        protections: protections.list().to_vec(),
        io_copies,
        etc_copies,
        proxy_dir: None,
        warnings,
        memory,
    };
    Ok((facts, protections, group))
}

/// For each path, its topmost ancestor others may not enter (no `o+x`), without duplicates or
/// one inside another.
fn closed_ancestors<'a>(paths: impl Iterator<Item = &'a Path>) -> Vec<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let mut out: Vec<PathBuf> = Vec::new();
    for path in paths {
        let mut ancestors: Vec<&Path> = path.ancestors().skip(1).collect();
        ancestors.reverse();
        let closed = ancestors
            .into_iter()
            .filter(|dir| *dir != Path::new("/"))
            .find(|dir| std::fs::metadata(dir).is_ok_and(|m| m.permissions().mode() & 0o001 == 0));
        if let Some(dir) = closed {
            if !out.iter().any(|o| dir.starts_with(o)) {
                out.retain(|o| !o.starts_with(dir));
                out.push(dir.to_path_buf());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::path::PathBuf;

    #[test]
    fn the_topmost_ancestor_others_cannot_enter_is_found_once() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::create_dir_all(root.join("home/lib/python")).unwrap();
        std::fs::create_dir_all(root.join("home/ws")).unwrap();
        std::fs::create_dir_all(root.join("open/inner")).unwrap();
        std::fs::set_permissions(root.join("home"), std::fs::Permissions::from_mode(0o700))
            .unwrap();
        // A closed directory deeper inside an already closed one adds nothing.
        std::fs::set_permissions(
            root.join("home/lib"),
            std::fs::Permissions::from_mode(0o700),
        )
        .unwrap();
        let paths = [
            root.join("home/lib/python"),
            root.join("home/ws"),
            root.join("open/inner"),
        ];
        assert_eq!(
            closed_ancestors(paths.iter().map(PathBuf::as_path)),
            [root.join("home")]
        );
    }
}
