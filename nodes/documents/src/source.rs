//! Reading workspace files for analysis: one resolver, a size cap checked before reading, and
//! an honest answer for directories, binary files and invalid UTF-8. Every open goes through
//! the workspace handle ([`cheng_fs::WorkspaceFs`]): beneath the root's descriptor with no
//! symlink followed, so a directory swapped for a link after the path was resolved is refused,
//! not read through.

use cheng_fs::WorkspaceFs;
use cheng_node::paths::{display_relative, resolve_existing};
use cheng_node::text::human_bytes;
use cheng_node::{ErrorKind, NodeError};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Largest file the markdown node analyses and the preview node renders: 16 MiB. Parsing keeps
/// the whole text and its event offsets in memory, so the cap bounds memory, not just time.
pub const MAX_TEXT_BYTES: u64 = 16 * 1024 * 1024;

/// A text file read from the workspace.
#[derive(Debug, Clone)]
pub struct TextFile {
    /// Canonical absolute path.
    pub path: PathBuf,
    /// Path relative to the workspace root, for output.
    pub display: String,
    pub text: String,
    /// Size on disk in bytes.
    pub bytes: u64,
    /// Byte offset of the first invalid UTF-8 sequence when the file was decoded lossily.
    pub invalid_utf8_at: Option<usize>,
}

/// The handle on the workspace root for one call.
pub fn workspace_fs(root: &Path) -> Result<WorkspaceFs, NodeError> {
    WorkspaceFs::open(root).map_err(|e| {
        NodeError::new(
            ErrorKind::NotFound,
            format!(
                "the workspace {} cannot be opened: {e}; check that it still exists",
                root.display()
            ),
        )
    })
}

/// A workspace file resolved, opened through the handle and checked to be a regular file.
fn open_file(
    root: &Path,
    rel: &str,
    field: &str,
) -> Result<(PathBuf, std::fs::File, std::fs::Metadata), NodeError> {
    let path = resolve_existing(root, Some(rel), field)?;
    let file = workspace_fs(root)?.open_read(&path).map_err(|e| {
        if cheng_fs::changed_under_us(&e) {
            return NodeError::new(
                ErrorKind::FileChanged,
                format!("{field} {rel:?} changed while it was being read (a directory on its path was replaced by a symlink); nothing was read through the link, try again"),
            );
        }
        NodeError::new(
            ErrorKind::NotFound,
            format!("{field} {rel:?} cannot be read: {e}"),
        )
    })?;
    let meta = file.metadata().map_err(|e| {
        NodeError::new(
            ErrorKind::NotFound,
            format!("{field} {rel:?} cannot be read: {e}"),
        )
    })?;
    if meta.is_dir() {
        return Err(NodeError::invalid_input(format!(
            "{field} {rel:?} is a directory; name a file inside the workspace"
        )));
    }
    if !meta.is_file() {
        return Err(NodeError::invalid_input(format!(
            "{field} {rel:?} is not a regular file"
        )));
    }
    Ok((path, file, meta))
}

/// A workspace file resolved and checked to be a regular file (not read yet).
pub fn resolve_file(
    root: &Path,
    rel: &str,
    field: &str,
) -> Result<(PathBuf, std::fs::Metadata), NodeError> {
    let (path, _, meta) = open_file(root, rel, field)?;
    Ok((path, meta))
}

/// Reads a text file of at most `cap` bytes. Binary files (a NUL byte in the first 8 KiB) are
/// rejected; invalid UTF-8 is decoded lossily and reported through `invalid_utf8_at`.
pub fn read_text(root: &Path, rel: &str, field: &str, cap: u64) -> Result<TextFile, NodeError> {
    let (path, file, meta) = open_file(root, rel, field)?;
    if meta.len() > cap {
        return Err(NodeError::invalid_input(format!(
            "{field} {rel:?} is {} ({} bytes), over the {} cap for this operation; split the file or pick a smaller one",
            human_bytes(meta.len()),
            meta.len(),
            human_bytes(cap)
        )));
    }
    let bytes = read_capped(file, cap).map_err(|e| {
        NodeError::new(
            ErrorKind::NotFound,
            format!("{field} {rel:?} cannot be read: {e}"),
        )
    })?;
    if bytes.len() as u64 > cap {
        // The file grew between the metadata check and the read.
        return Err(NodeError::invalid_input(format!(
            "{field} {rel:?} grew past the {} cap while being read",
            human_bytes(cap)
        )));
    }
    if looks_binary(&bytes) {
        return Err(NodeError::invalid_input(format!(
            "{field} {rel:?} looks like a binary file (it contains NUL bytes); name a text file"
        )));
    }
    let size = bytes.len() as u64;
    let (text, invalid_utf8_at) = decode(bytes);
    Ok(TextFile {
        display: display_relative(root, &path),
        path,
        text,
        bytes: size,
        invalid_utf8_at,
    })
}

/// Reads at most `cap + 1` bytes, so a caller can tell "exactly at the cap" from "over it".
pub fn read_capped(file: std::fs::File, cap: u64) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// A NUL byte in the first 8 KiB is the same heuristic git and grep use.
pub fn looks_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(8192)].contains(&0)
}

/// UTF-8 text, lossily when needed, with the offset of the first invalid byte.
pub fn decode(bytes: Vec<u8>) -> (String, Option<usize>) {
    match String::from_utf8(bytes) {
        Ok(text) => (text, None),
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            (String::from_utf8_lossy(e.as_bytes()).into_owned(), Some(at))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        (dir, root)
    }

    #[test]
    fn oversized_files_are_refused_before_reading() {
        let (_d, root) = ws();
        std::fs::write(root.join("big.md"), vec![b'a'; 2048]).unwrap();
        let err = read_text(&root, "big.md", "path", 1024).unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidInput);
        assert!(
            err.message.contains("over the 1.0 KiB cap"),
            "{}",
            err.message
        );
        assert!(read_text(&root, "big.md", "path", 2048).is_ok());
    }

    #[test]
    fn directories_binaries_and_missing_files_are_named() {
        let (_d, root) = ws();
        std::fs::create_dir(root.join("dir")).unwrap();
        std::fs::write(root.join("bin.md"), b"a\0b").unwrap();
        assert!(read_text(&root, "dir", "path", 100)
            .unwrap_err()
            .message
            .contains("is a directory"));
        assert!(read_text(&root, "bin.md", "path", 100)
            .unwrap_err()
            .message
            .contains("binary"));
        assert_eq!(
            read_text(&root, "nope.md", "path", 100).unwrap_err().kind,
            ErrorKind::NotFound
        );
        assert_eq!(
            read_text(&root, "../x.md", "path", 100).unwrap_err().kind,
            ErrorKind::PathOutsideWorkspace
        );
    }

    #[test]
    fn invalid_utf8_is_decoded_lossily_with_its_offset() {
        let (_d, root) = ws();
        std::fs::write(root.join("l.md"), b"ok\n\xffbad\n").unwrap();
        let file = read_text(&root, "l.md", "path", 100).unwrap();
        assert_eq!(file.invalid_utf8_at, Some(3));
        assert!(file.text.contains('\u{FFFD}'));
    }
}
