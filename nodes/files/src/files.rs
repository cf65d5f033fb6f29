//! Reading a workspace file for editing, and the write step every writer shares. Every open,
//! create and rename goes through the workspace handle ([`cheng_fs::WorkspaceFs`]), beneath the
//! root's descriptor with no symlink followed: the policy resolved the legitimate links, so a
//! link met now was swapped in after the check, and the operation stops ([`changed`]).

use crate::policy::Target;
use crate::text::{Editable, TextError};
use cheng_fs::WorkspaceFs;
use cheng_node::text::human_bytes;
use cheng_node::{ErrorKind, NodeError};
use std::io::Read;
use std::path::Path;

/// Largest file the file nodes tag, edit or replace: 16 MiB (the whole file is hashed, decoded
/// and diffed in memory). read_file still reads a window of a larger file, untagged.
pub const MAX_EDIT_BYTES: u64 = 16 * 1024 * 1024;

/// A regular file's bytes and tag.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub bytes: Vec<u8>,
    pub tag: String,
    /// The hash with its checkpoints, to tag an edited copy quickly ([`Loaded::tag_of`]).
    pub hashed: crate::tag::Checkpointed,
}

impl Loaded {
    /// The tag of `new`, an edited copy of these bytes (hashed from the first changed byte on).
    pub fn tag_of(&self, new: &[u8]) -> String {
        let common = crate::tag::common_prefix(&self.bytes, new);
        format!("{:08X}", self.hashed.rehash(new, common))
    }
}

/// The handle on a root (the workspace, or a read-only root) for one call.
pub fn workspace_fs(root: &Path) -> Result<WorkspaceFs, NodeError> {
    WorkspaceFs::open(root).map_err(|e| {
        NodeError::new(
            ErrorKind::NotFound,
            format!(
                "the directory {} cannot be opened: {e}; check that it still exists",
                root.display()
            ),
        )
    })
}

/// The handle on the root `real` lies in: the read-only root holding it (the innermost), else
/// the workspace (whose handle refuses a path outside it).
pub fn fs_for(policy: &crate::policy::PathPolicy, real: &Path) -> Result<WorkspaceFs, NodeError> {
    let root = policy
        .read_roots()
        .iter()
        .filter(|root| !real.starts_with(policy.root()) && real.starts_with(root))
        .max_by_key(|root| root.as_os_str().len())
        .map_or(policy.root(), |root| root.as_path());
    workspace_fs(root)
}

/// The refusal when the handle met a symlink (or an escape) the policy did not see: the path
/// was changed between the check and the operation. `doing`/`done`: "written"/"written",
/// "deleted"/"deleted", "read"/"read".
pub fn changed(display: &str, doing: &str, done: &str) -> NodeError {
    NodeError::new(
        ErrorKind::FileChanged,
        format!("{display:?} changed while it was being {doing} (a directory on its path was replaced by a symlink); nothing was {done} through the link, try again"),
    )
}

/// The entry a target names: its parent with symlinks resolved, its last component as named (a
/// symlink stays the link, for examining or removing the link itself).
pub fn entry_path(target: &Target) -> std::io::Result<std::path::PathBuf> {
    match (target.lexical.parent(), target.lexical.file_name()) {
        (Some(parent), Some(name)) => Ok(cheng_node::paths::real_path(parent)?.join(name)),
        _ => Ok(target.real.clone()),
    }
}

/// Opens `real` (in `fs`) for reading without following any symlink and without blocking on a
/// FIFO, and checks that it is a regular file. `Ok(None)` when it does not exist.
pub fn open_regular(
    fs: &WorkspaceFs,
    real: &Path,
    display: &str,
    field: &str,
) -> Result<Option<(std::fs::File, u64)>, NodeError> {
    let file = match fs.open_read(real) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::EISDIR) => {
            return Err(is_directory(display, field))
        }
        Err(e) if cheng_fs::changed_under_us(&e) => return Err(changed(display, "read", "read")),
        Err(e) => {
            return Err(NodeError::new(
                ErrorKind::NotFound,
                format!("{field} {display:?} cannot be opened: {e}"),
            ))
        }
    };
    let meta = file.metadata().map_err(|e| {
        NodeError::new(
            ErrorKind::NotFound,
            format!("{field} {display:?} cannot be read: {e}"),
        )
    })?;
    if meta.is_dir() {
        return Err(is_directory(display, field));
    }
    if !meta.is_file() {
        return Err(NodeError::invalid_input(format!(
            "{field} {display:?} is not a regular file (a FIFO, socket or device); file nodes only read and write regular files"
        )));
    }
    Ok(Some((file, meta.len())))
}

fn is_directory(display: &str, field: &str) -> NodeError {
    NodeError::invalid_input(format!(
        "{field} {display:?} is a directory; name a file (tools/list_dir lists a directory)"
    ))
}

/// The whole file, refused above `cap`; `Ok(None)` when it does not exist.
pub fn load(
    fs: &WorkspaceFs,
    real: &Path,
    display: &str,
    field: &str,
    cap: u64,
) -> Result<Option<Loaded>, NodeError> {
    Ok(load_with(fs, real, display, field, cap, |_| ())?.map(|(loaded, ())| loaded))
}

/// [`load`], running `work` on the bytes on this thread while they are hashed on another (FNV
/// is sequential: on a large file the hash is the longest step).
pub fn load_with<T: Send>(
    fs: &WorkspaceFs,
    real: &Path,
    display: &str,
    field: &str,
    cap: u64,
    work: impl FnOnce(&[u8]) -> T + Send,
) -> Result<Option<(Loaded, T)>, NodeError> {
    let Some(bytes) = read_bytes(fs, real, display, field, cap)? else {
        return Ok(None);
    };
    let (hashed, out) = if bytes.len() < 256 * 1024 {
        (crate::tag::Checkpointed::new(&bytes), work(&bytes))
    } else {
        std::thread::scope(|scope| {
            let hasher = scope.spawn(|| crate::tag::Checkpointed::new(&bytes));
            let out = work(&bytes);
            let hashed = hasher
                .join()
                .unwrap_or_else(|_| crate::tag::Checkpointed::new(&bytes));
            (hashed, out)
        })
    };
    Ok(Some((
        Loaded {
            tag: hashed.tag(),
            bytes,
            hashed,
        },
        out,
    )))
}

fn read_bytes(
    fs: &WorkspaceFs,
    real: &Path,
    display: &str,
    field: &str,
    cap: u64,
) -> Result<Option<Vec<u8>>, NodeError> {
    let Some((file, len)) = open_regular(fs, real, display, field)? else {
        return Ok(None);
    };
    if len > cap {
        return Err(too_large(display, field, len, cap));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(cap + 1).read_to_end(&mut bytes).map_err(|e| {
        NodeError::new(
            ErrorKind::NotFound,
            format!("{field} {display:?} cannot be read: {e}"),
        )
    })?;
    if bytes.len() as u64 > cap {
        return Err(too_large(display, field, bytes.len() as u64, cap));
    }
    Ok(Some(bytes))
}

fn too_large(display: &str, field: &str, len: u64, cap: u64) -> NodeError {
    NodeError::invalid_input(format!(
        "{field} {display:?} is {} ({len} bytes), over the {} the file nodes edit; change it with a program instead (e.g. through tools/workspace_shell)",
        human_bytes(len),
        human_bytes(cap)
    ))
}

/// The file decoded for editing; a clear refusal for binary and undecodable files.
pub fn editable(loaded: &Loaded, display: &str) -> Result<Editable, NodeError> {
    Editable::decode(&loaded.bytes).map_err(|e| NodeError::invalid_input(format!("{display} {e}")))
}

/// A text error from encoding new content.
pub fn encode_error(display: &str, e: TextError) -> NodeError {
    NodeError::invalid_input(format!("{display} {e}"))
}

/// Whether the target's parent directory exists. A missing one is refused unless
/// `create_parents` is set: the plan asks before the approval card is drawn and the write asks
/// again, so a write that could only fail does so before anyone is asked, with the same error.
pub fn parent_exists(
    fs: &WorkspaceFs,
    target: &Target,
    create_parents: bool,
) -> Result<bool, NodeError> {
    let display = &target.display;
    let parent = target
        .real
        .parent()
        .ok_or_else(|| NodeError::invalid_input(format!("{display:?} names no file")))?;
    let parent_is_dir = match fs.symlink_metadata(parent) {
        // The policy resolved every link on the path: one here was swapped in since.
        Ok(meta) if meta.file_type().is_symlink() => {
            return Err(changed(display, "written", "written"))
        }
        Ok(meta) => meta.is_dir(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => return Err(write_failed(display, "open its directory", &e)),
    };
    if !parent_is_dir && !create_parents {
        return Err(NodeError::new(
            ErrorKind::NotFound,
            format!("the directory of {display:?} does not exist; set create_parents to true to create it"),
        ));
    }
    Ok(parent_is_dir)
}

/// Writes `bytes` onto the target's real path through `fs`, all or nothing. Missing parent
/// directories are created only when `create_parents` is set.
pub fn write(
    fs: &WorkspaceFs,
    target: &Target,
    bytes: &[u8],
    create_parents: bool,
) -> Result<(), NodeError> {
    let display = &target.display;
    if !parent_exists(fs, target, create_parents)? {
        if let Some(parent) = target.real.parent() {
            fs.create_dir_all(parent)
                .map_err(|e| write_failed(display, "create its directory", &e))?;
        }
    }
    fs.write(&target.real, bytes)
        .map_err(|e| write_failed(display, "write it", &e))
}

/// `WRITE_FAILED` naming the path, the step and the system's reason ([`changed`] when the
/// handle met a symlink swapped in after the policy's check).
pub fn write_failed(display: &str, what: &str, e: &std::io::Error) -> NodeError {
    if cheng_fs::changed_under_us(e) {
        return changed(display, "written", "written");
    }
    NodeError::new(
        ErrorKind::WriteFailed,
        format!("{display}: cannot {what}: {e}; nothing was changed"),
    )
}

/// The 1-based line of byte `offset` in `text`.
pub fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}
