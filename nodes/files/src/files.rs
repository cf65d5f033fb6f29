//! Reading a workspace file for editing, and the write step every writer shares.

use crate::policy::Target;
use crate::text::{Editable, TextError};
use cheng_node::text::human_bytes;
use cheng_node::{ErrorKind, NodeError};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
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

/// Opens `real` for reading without following a final symlink and without blocking on a FIFO,
/// and checks that it is a regular file. `Ok(None)` when it does not exist.
pub fn open_regular(
    real: &Path,
    display: &str,
    field: &str,
) -> Result<Option<(std::fs::File, u64)>, NodeError> {
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(real)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::EISDIR) => {
            return Err(is_directory(display, field))
        }
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
    real: &Path,
    display: &str,
    field: &str,
    cap: u64,
) -> Result<Option<Loaded>, NodeError> {
    Ok(load_with(real, display, field, cap, |_| ())?.map(|(loaded, ())| loaded))
}

/// [`load`], running `work` on the bytes on this thread while they are hashed on another (FNV
/// is sequential: on a large file the hash is the longest step).
pub fn load_with<T: Send>(
    real: &Path,
    display: &str,
    field: &str,
    cap: u64,
    work: impl FnOnce(&[u8]) -> T + Send,
) -> Result<Option<(Loaded, T)>, NodeError> {
    let Some(bytes) = read_bytes(real, display, field, cap)? else {
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
    real: &Path,
    display: &str,
    field: &str,
    cap: u64,
) -> Result<Option<Vec<u8>>, NodeError> {
    let Some((file, len)) = open_regular(real, display, field)? else {
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

/// Writes `bytes` onto the target's real path, all or nothing. Missing parent directories are
/// created only when `create_parents` is set.
pub fn write(target: &Target, bytes: &[u8], create_parents: bool) -> Result<(), NodeError> {
    let display = &target.display;
    let parent = target
        .real
        .parent()
        .ok_or_else(|| NodeError::invalid_input(format!("{display:?} names no file")))?;
    if !parent.is_dir() {
        if !create_parents {
            return Err(NodeError::new(
                ErrorKind::NotFound,
                format!("the directory of {display:?} does not exist; set create_parents to true to create it"),
            ));
        }
        std::fs::create_dir_all(parent)
            .map_err(|e| write_failed(display, "create its directory", &e))?;
    }
    crate::atomic::write(&target.real, bytes).map_err(|e| write_failed(display, "write it", &e))
}

/// `WRITE_FAILED` naming the path, the step and the system's reason.
pub fn write_failed(display: &str, what: &str, e: &std::io::Error) -> NodeError {
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
