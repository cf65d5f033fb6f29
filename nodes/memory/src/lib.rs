//! What an agent keeps between tasks (ChengOS's agent-tools reference, its `skill` and `notes`
//! groups):
//!
//! - `tools/skill`: manuals for particular kinds of task. The node's description lists the
//!   catalogue (name and one line each), scanned once when a toolkit is built so the description
//!   stays stable; a call loads one whole `SKILL.md`. The author names the skill directories
//!   (`skill_dirs`, in order; the first wins on a name clash); no location is built in.
//! - `tools/notes_list`, `tools/notes_read`, `tools/notes_write`: a notes store the author
//!   chooses (`notes_dir`: one note per file), listed with previews and dates, read, and created
//!   or replaced atomically; a write asks a person first when the author sets
//!   `notes_write_sensitive`.
//!
//! Every file is read and written through the workspace handle ([`cheng_fs::WorkspaceFs`])
//! opened on the author's directory, so a symlink planted or swapped in there is refused, never
//! followed. Note names are checked in one place, [`NoteName::parse`], before any store sees
//! them.
//!
//! ```
//! use cheng_nodes_memory::{store::{MemoryStore, NotesStore}, NoteName};
//!
//! let store = MemoryStore::default();
//! let name = NoteName::parse("build-setup").unwrap();
//! assert!(store.write(&name, "cargo needs CARGO_INCREMENTAL=0 here").unwrap());
//! assert_eq!(store.read(&name).unwrap().unwrap().content, "cargo needs CARGO_INCREMENTAL=0 here");
//! assert!(NoteName::parse("../x").is_err());
//! ```

#![forbid(unsafe_code)]

#[doc(hidden)]
pub mod fuzzing;
pub mod name;
pub mod notes;
pub mod skill;
pub mod skills;
pub mod store;

pub use name::NoteName;
pub use notes::{NotesList, NotesRead, NotesWrite};
pub use skill::Skill;
