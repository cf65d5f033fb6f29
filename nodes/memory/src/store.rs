//! Where notes live. The mechanism (where and how they are kept) is the store's; the nodes only
//! wrap it as three calls. Two stores: [`DirStore`] (one note per file in the author's
//! directory, through the workspace handle) and [`MemoryStore`] (in process, for tests and
//! embedding). Both trust the [`NoteName`] they are given: it was checked when it was made.

use crate::NoteName;
use cheng_fs::{Kind, WorkspaceFs};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

/// Largest note, in bytes (a write over it is refused; a larger file in the directory is not
/// read).
pub const MAX_NOTE_BYTES: usize = 64 * 1024;
/// Most notes one listing returns (the rest are counted).
pub const MAX_LISTED: usize = 1000;
/// A preview's longest length, in characters.
pub const PREVIEW_CHARS: usize = 80;
/// The file name extension of a note in a [`DirStore`].
pub const EXTENSION: &str = ".md";

/// One note as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteInfo {
    pub name: NoteName,
    /// The first non-blank line, cut at [`PREVIEW_CHARS`].
    pub preview: String,
    pub modified: Option<SystemTime>,
    pub bytes: u64,
}

/// One note as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub content: String,
    pub modified: Option<SystemTime>,
}

/// A notes store.
pub trait NotesStore: Send + Sync {
    /// Every note, by name, with what a listing shows.
    fn list(&self) -> std::io::Result<Vec<NoteInfo>>;
    /// The note, or `None` when there is none of that name.
    fn read(&self, name: &NoteName) -> std::io::Result<Option<Note>>;
    /// Creates or replaces the note, all or nothing; `true` when it was created.
    fn write(&self, name: &NoteName, content: &str) -> std::io::Result<bool>;
}

/// The first non-blank line of `content`, cut at [`PREVIEW_CHARS`] (with `…`).
pub fn preview(content: &str) -> String {
    let line = content
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    if line.chars().count() <= PREVIEW_CHARS {
        return line.to_string();
    }
    let mut cut: String = line.chars().take(PREVIEW_CHARS).collect();
    cut.push('…');
    cut
}

/// Notes in memory, for tests and embedding.
#[derive(Debug, Default)]
pub struct MemoryStore {
    notes: Mutex<BTreeMap<NoteName, Note>>,
}

impl MemoryStore {
    fn notes(&self) -> std::sync::MutexGuard<'_, BTreeMap<NoteName, Note>> {
        // A panic elsewhere cannot leave a map half-written; keep using it.
        self.notes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl NotesStore for MemoryStore {
    fn list(&self) -> std::io::Result<Vec<NoteInfo>> {
        Ok(self
            .notes()
            .iter()
            .map(|(name, note)| NoteInfo {
                name: name.clone(),
                preview: preview(&note.content),
                modified: note.modified,
                bytes: note.content.len() as u64,
            })
            .collect())
    }

    fn read(&self, name: &NoteName) -> std::io::Result<Option<Note>> {
        Ok(self.notes().get(name).cloned())
    }

    fn write(&self, name: &NoteName, content: &str) -> std::io::Result<bool> {
        let note = Note {
            content: content.to_string(),
            modified: Some(SystemTime::now()),
        };
        Ok(self.notes().insert(name.clone(), note).is_none())
    }
}

/// One note per file (`<name>.md`) in a directory, every access through the workspace handle
/// opened on that directory: a note that is a symlink, or a directory swapped for one, is
/// refused, never followed. Files whose names are not note names (dot files such as the atomic
/// writes' temporary files, other extensions) are not notes.
#[derive(Debug)]
pub struct DirStore {
    /// `None` while the directory does not exist: no notes yet (reading never creates it).
    fs: Option<WorkspaceFs>,
}

impl DirStore {
    /// Opens `dir` for reading; a missing directory is an empty store.
    pub fn open(dir: &Path) -> std::io::Result<DirStore> {
        match WorkspaceFs::open(dir) {
            Ok(fs) => Ok(DirStore { fs: Some(fs) }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(DirStore { fs: None }),
            Err(e) => Err(e),
        }
    }

    /// Opens `dir` for writing, creating it (and its parents) when missing.
    pub fn create(dir: &Path) -> std::io::Result<DirStore> {
        std::fs::create_dir_all(dir)?;
        Ok(DirStore {
            fs: Some(WorkspaceFs::open(dir)?),
        })
    }

    fn file(name: &NoteName) -> PathBuf {
        PathBuf::from(format!("{name}{EXTENSION}"))
    }

    /// The file's size and its first `limit` bytes as text with its modification time; `None`
    /// when missing. A whole read (`limit` of [`MAX_NOTE_BYTES`]) of a larger file is refused.
    fn load(&self, file: &Path, limit: usize) -> std::io::Result<Option<(u64, Note)>> {
        let Some(fs) = &self.fs else {
            return Ok(None);
        };
        let opened = match fs.open_read(file) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let meta = opened.metadata()?;
        if !meta.is_file() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{} is not a regular file", file.display()),
            ));
        }
        if meta.len() > MAX_NOTE_BYTES as u64 && limit >= MAX_NOTE_BYTES {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "{} is {} bytes; a note holds at most {MAX_NOTE_BYTES}",
                    file.display(),
                    meta.len()
                ),
            ));
        }
        let mut bytes = Vec::new();
        opened.take(limit as u64).read_to_end(&mut bytes)?;
        let note = Note {
            content: String::from_utf8_lossy(&bytes).into_owned(),
            modified: meta.modified().ok(),
        };
        Ok(Some((meta.len(), note)))
    }
}

impl NotesStore for DirStore {
    fn list(&self) -> std::io::Result<Vec<NoteInfo>> {
        let mut notes = Vec::new();
        let Some(fs) = &self.fs else {
            return Ok(notes);
        };
        for entry in fs.read_dir(Path::new("."))? {
            if entry.kind != Kind::File || notes.len() >= MAX_LISTED {
                continue;
            }
            let Some(stem) = entry.name.to_str().and_then(|n| n.strip_suffix(EXTENSION)) else {
                continue;
            };
            let Ok(name) = NoteName::parse(stem) else {
                continue;
            };
            // A preview needs the first lines only.
            let Some((bytes, note)) = self.load(&Self::file(&name), 4096)? else {
                continue;
            };
            notes.push(NoteInfo {
                preview: preview(&note.content),
                name,
                modified: note.modified,
                bytes,
            });
        }
        Ok(notes)
    }

    fn read(&self, name: &NoteName) -> std::io::Result<Option<Note>> {
        Ok(self
            .load(&Self::file(name), MAX_NOTE_BYTES)?
            .map(|(_, note)| note))
    }

    fn write(&self, name: &NoteName, content: &str) -> std::io::Result<bool> {
        let file = Self::file(name);
        let Some(fs) = &self.fs else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "the notes directory does not exist (a store opened for reading)",
            ));
        };
        let created = !fs.exists(&file)?;
        fs.write(&file, content.as_bytes())?;
        Ok(created)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(n: &str) -> NoteName {
        NoteName::parse(n).unwrap()
    }

    fn exercise(store: &dyn NotesStore) {
        assert!(store.list().unwrap().is_empty());
        assert_eq!(store.read(&name("a")).unwrap(), None);
        assert!(store.write(&name("a"), "\n  first line  \nsecond").unwrap());
        assert!(!store.write(&name("a"), "replaced\nbody").unwrap());
        assert!(store.write(&name("b"), &"y".repeat(200)).unwrap());
        let listed = store.list().unwrap();
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0].name.as_str(), "a");
        assert_eq!(listed[0].preview, "replaced");
        assert_eq!(listed[0].bytes, 13);
        assert!(listed[0].modified.is_some());
        assert_eq!(listed[1].preview.chars().count(), PREVIEW_CHARS + 1);
        assert_eq!(
            store.read(&name("a")).unwrap().unwrap().content,
            "replaced\nbody"
        );
    }

    #[test]
    fn the_memory_store_keeps_notes() {
        exercise(&MemoryStore::default());
    }

    #[test]
    fn the_dir_store_keeps_one_file_per_note() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("notes");
        // Reading a missing directory is an empty store and does not create it.
        let reader = DirStore::open(&root).unwrap();
        assert!(reader.list().unwrap().is_empty());
        assert_eq!(reader.read(&name("a")).unwrap(), None);
        assert!(reader.write(&name("a"), "x").is_err());
        assert!(!root.exists());
        exercise(&DirStore::create(&root).unwrap());
        assert_eq!(
            std::fs::read_to_string(root.join("a.md")).unwrap(),
            "replaced\nbody"
        );
        // No temporary file is left behind by the atomic writes.
        let mut names: Vec<_> = std::fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["a.md", "b.md"]);
    }

    #[test]
    fn the_dir_store_lists_only_notes_and_never_follows_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join(".hidden.md"), "no").unwrap();
        std::fs::write(root.join("other.txt"), "no").unwrap();
        std::fs::create_dir(root.join("sub.md")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.join("passwd.md")).unwrap();
        std::fs::write(root.join("real.md"), "yes").unwrap();
        let store = DirStore::open(root).unwrap();
        let names: Vec<String> = store
            .list()
            .unwrap()
            .into_iter()
            .map(|n| n.name.to_string())
            .collect();
        assert_eq!(names, ["real"]);
        let err = store.read(&name("passwd")).unwrap_err();
        assert!(cheng_fs::changed_under_us(&err), "{err}");
        // Positive control: the same file is readable by name outside the handle.
        assert!(std::fs::read_to_string(root.join("passwd.md"))
            .unwrap()
            .contains("root"));
        // Writing onto the link replaces the link, never /etc/passwd.
        store.write(&name("passwd"), "mine").unwrap();
        assert!(std::fs::read_to_string("/etc/passwd")
            .unwrap()
            .contains("root"));
    }

    #[test]
    fn an_oversized_file_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("big.md"), vec![b'x'; MAX_NOTE_BYTES + 1]).unwrap();
        let store = DirStore::open(dir.path()).unwrap();
        let err = store.read(&name("big")).unwrap_err();
        assert!(err.to_string().contains("at most 65536"), "{err}");
        assert_eq!(store.list().unwrap()[0].bytes, MAX_NOTE_BYTES as u64 + 1);
    }
}
