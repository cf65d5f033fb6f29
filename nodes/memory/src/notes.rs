//! `tools/notes_list`, `tools/notes_read`, `tools/notes_write`: the author's notes store as three
//! calls a model can make, with *when* a note is worth writing in the descriptions (ChengOS's
//! agent-tools reference: a description that only says "write a note" gets one of two
//! extremes, no notes at all or every turn logged).
//!
//! The reference describes these in prose; the ports come from its sentences:
//!
//! | port | from |
//! |---|---|
//! | `notes_dir` (author) | "the mechanism (where notes are kept, how they are grouped) is the host's store; built in: dir-store (one file per note in a directory)" and the toolkit's "must be given `{:notes store}`" |
//! | `notes_write_sensitive` (author, notes_write) | "`{:notes-write-sensitive? true}` makes writes go through approval" |
//! | `name` (read, write) | "names are validated once, in the tool layer (never build a path out of a name to escape); stores may trust it" |
//! | `content` (write) | notes_write: "write a note" |
//! | `notes` (list: name, preview, modified, bytes) | notes_list, with the short preview and dates a model needs to choose what to read |
//!
//! Every name goes through [`NoteName::parse`] before a store sees it; the directory store reads
//! and writes through the workspace handle (atomic writes, no symlink followed).

use crate::store::{DirStore, NoteInfo, NotesStore, MAX_NOTE_BYTES};
use crate::NoteName;
use cheng_node::input::{self, non_empty_str};
use cheng_node::{
    failure, ApprovalRequest, ApprovalRule, Audience, Effects, ErrorKind, Node, NodeError,
    NodeSpec, PortSpec, PortType, RunContext, Values,
};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::SystemTime;

/// When a note is worth writing: the part of notes_write's description that keeps a model from
/// writing none or logging every turn.
macro_rules! worth_a_note {
    () => {
        "A note is worth writing when you learned something a later task will need and cannot easily find again: a decision and why it was made, how this project is built, tested or deployed, a pitfall you hit and its fix, a preference the user stated. Do not write one for every turn, to log what you did, or to repeat what the code, its docs or its history already say; update an existing note (read it first) rather than adding a near-duplicate."
    };
}

const NOTES_DIR: PortSpec = PortSpec::input(
    "notes_dir",
    PortType::String,
    "The notes directory (absolute path, or ~/…; created by the first write): one note per file, NAME.md",
)
.required()
.audience(Audience::Author);

const NAME: PortSpec = PortSpec::input(
    "name",
    PortType::String,
    "The note's name: one plain word or phrase such as build-setup (at most 100 characters; no /, \\, .. or leading dot)",
)
.required();

pub static LIST_SPEC: NodeSpec = NodeSpec {
    id: "tools/notes_list",
    title: "List notes",
    description: "List the notes kept from earlier tasks: each note's name, a short preview (its first line) and when it was last written. Check them when starting a task, and read the ones that bear on it before working it out again. Read-only.",
    category: "memory",
    inputs: &[NOTES_DIR],
    outputs: &[
        PortSpec::output(
            "notes",
            PortType::Array(&PortType::Object),
            "The notes, by name: name, preview (first non-blank line, at most 80 characters), modified (RFC 3339, UTC) and bytes",
        ),
        PortSpec::output("count", PortType::Integer, "How many notes there are"),
        PortSpec::output("content", PortType::String, "The listing as text: one `name (modified): preview` line per note"),
        PortSpec::output("summary", PortType::String, "Human-readable summary"),
        failure::success("Whether the notes were listed"),
        failure::ERROR_KIND,
        failure::TERMINAL,
        failure::ERROR,
    ],
    gate: None,
    effects: Effects::ReadOnly,
};

pub static READ_SPEC: NodeSpec = NodeSpec {
    id: "tools/notes_read",
    title: "Read a note",
    description:
        "Read one note kept from an earlier task, whole (notes_list names them). Read-only.",
    category: "memory",
    inputs: &[NAME, NOTES_DIR],
    outputs: &[
        PortSpec::output("name", PortType::String, "The note's name"),
        PortSpec::output("content", PortType::String, "The note's text"),
        PortSpec::output(
            "modified",
            PortType::String,
            "When it was last written (RFC 3339, UTC)",
        ),
        PortSpec::output("summary", PortType::String, "Human-readable summary"),
        failure::success("Whether the note was read"),
        failure::ERROR_KIND,
        failure::TERMINAL,
        failure::ERROR,
    ],
    gate: None,
    effects: Effects::ReadOnly,
};

/// The author's switch that puts every write before a person.
pub const SENSITIVE: &str = "notes_write_sensitive";

pub static WRITE_SPEC: NodeSpec = NodeSpec {
    id: "tools/notes_write",
    title: "Write a note",
    description: concat!(
        "Create a note, or replace the note of that name whole, for later tasks to read (at most 65536 bytes). ",
        worth_a_note!()
    ),
    category: "memory",
    inputs: &[
        NAME,
        PortSpec::input("content", PortType::String, "The note's whole text (at most 65536 bytes; replaces what the note held)")
            .required(),
        NOTES_DIR,
        PortSpec::input(
            SENSITIVE,
            PortType::Boolean,
            "Ask a person to approve every write (the card shows the note's name and text)",
        )
        .default("false")
        .audience(Audience::Author),
    ],
    outputs: &[
        PortSpec::output("name", PortType::String, "The note's name"),
        PortSpec::output("created", PortType::Boolean, "True when the note did not exist before"),
        PortSpec::output("bytes", PortType::Integer, "The note's size in bytes"),
        PortSpec::output("summary", PortType::String, "Human-readable summary"),
        failure::success("Whether the note was written"),
        failure::ERROR_KIND,
        failure::TERMINAL,
        failure::ERROR,
    ],
    gate: None,
    effects: Effects::Approval(ApprovalRule::Switch(SENSITIVE)),
};

pub struct NotesList;
pub struct NotesRead;
pub struct NotesWrite;

cheng_node::inventory::submit! { cheng_node::NodeRegistration::new(&NotesList) }
cheng_node::inventory::submit! { cheng_node::NodeRegistration::new(&NotesRead) }
cheng_node::inventory::submit! { cheng_node::NodeRegistration::new(&NotesWrite) }

#[cheng_node::async_trait]
impl Node for NotesList {
    fn spec(&self) -> &'static NodeSpec {
        &LIST_SPEC
    }

    async fn run(&self, _ctx: &RunContext, input: Values) -> Result<Values, NodeError> {
        let store = open(&input, false)?;
        blocking(move || list(&store)).await
    }
}

#[cheng_node::async_trait]
impl Node for NotesRead {
    fn spec(&self) -> &'static NodeSpec {
        &READ_SPEC
    }

    async fn run(&self, _ctx: &RunContext, input: Values) -> Result<Values, NodeError> {
        let name = note_name(&input)?;
        let store = open(&input, false)?;
        blocking(move || read(&store, &name)).await
    }
}

#[cheng_node::async_trait]
impl Node for NotesWrite {
    fn spec(&self) -> &'static NodeSpec {
        &WRITE_SPEC
    }

    fn approval_request(
        &self,
        ctx: &RunContext,
        input: &Values,
    ) -> Result<ApprovalRequest, NodeError> {
        let name = note_name(input)?;
        let content = content(input)?;
        let dir = notes_dir(input)?;
        let mut card = ApprovalRequest::new(ctx, format!("notes_write {name}"));
        // Whether the write replaces a note (what it held is lost); unknown when unreadable.
        let replaces = DirStore::open(&dir)
            .and_then(|store| store.read(&name))
            .ok()
            .flatten();
        let verb = match replaces {
            Some(old) => format!("replace note {name} ({} bytes now)", old.content.len()),
            None => format!("create note {name}"),
        };
        // Raw here: every card renderer shows it through the display escaper.
        card.details = Some(format!(
            "{verb} in {} with {} bytes:\n{content}",
            dir.display(),
            content.len()
        ));
        Ok(card)
    }

    async fn run(&self, _ctx: &RunContext, input: Values) -> Result<Values, NodeError> {
        let name = note_name(&input)?;
        let content = content(&input)?.to_string();
        let store = open(&input, true)?;
        blocking(move || write(&store, &name, &content)).await
    }
}

fn note_name(input: &Values) -> Result<NoteName, NodeError> {
    NoteName::parse(input::opt_str(input, "name").unwrap_or("")).map_err(NodeError::invalid_input)
}

fn content(input: &Values) -> Result<&str, NodeError> {
    let content = input::opt_str(input, "content")
        .ok_or_else(|| NodeError::invalid_input("content is required: the note's whole text"))?;
    if content.len() > MAX_NOTE_BYTES {
        return Err(NodeError::invalid_input(format!(
            "content is {} bytes; a note holds at most {MAX_NOTE_BYTES}",
            content.len()
        )));
    }
    Ok(content)
}

fn notes_dir(input: &Values) -> Result<PathBuf, NodeError> {
    let Some(dir) = non_empty_str(input, "notes_dir") else {
        return Err(NodeError::new(
            ErrorKind::PolicyDenied,
            "no notes store is configured: the toolkit's author sets notes_dir (an absolute path, or ~/…) in this tool's config",
        ));
    };
    crate::skills::expand(dir)
        .map_err(|problem| NodeError::invalid_input(format!("notes_dir: {problem}")))
}

/// The author's store: opened for reading (a missing directory holds no notes yet), or for
/// writing (created when missing).
fn open(input: &Values, write: bool) -> Result<DirStore, NodeError> {
    let dir = notes_dir(input)?;
    let opened = if write {
        DirStore::create(&dir)
    } else {
        DirStore::open(&dir)
    };
    opened.map_err(|e| {
        NodeError::new(
            ErrorKind::NotFound,
            format!(
                "the notes directory {} cannot be opened: {e}",
                dir.display()
            ),
        )
    })
}

async fn blocking<F>(work: F) -> Result<Values, NodeError>
where
    F: FnOnce() -> Result<Values, NodeError> + Send + 'static,
{
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| NodeError::internal(format!("the notes store stopped unexpectedly: {e}")))?
}

fn store_error(what: &str, e: &std::io::Error) -> NodeError {
    if cheng_fs::changed_under_us(e) {
        return NodeError::new(
            ErrorKind::FileChanged,
            format!("{what}: the note is a symlink or lies behind one; refused"),
        );
    }
    NodeError::new(ErrorKind::WriteFailed, format!("{what}: {e}"))
}

fn date(time: Option<SystemTime>) -> Value {
    time.map_or(Value::Null, |t| {
        json!(humantime::format_rfc3339_seconds(t).to_string())
    })
}

fn finish(mut out: Values) -> Result<Values, NodeError> {
    failure::fill::<()>(&mut out, &Ok(()));
    Ok(out)
}

/// The notes_list outputs.
pub fn list(store: &dyn NotesStore) -> Result<Values, NodeError> {
    let notes: Vec<NoteInfo> = store
        .list()
        .map_err(|e| store_error("the notes cannot be listed", &e))?;
    let mut content = String::new();
    for note in &notes {
        let modified = date(note.modified);
        content.push_str(&format!(
            "{} ({}): {}\n",
            note.name,
            modified.as_str().unwrap_or("unknown date"),
            note.preview
        ));
    }
    let rows: Vec<Value> = notes
        .iter()
        .map(|n| {
            json!({
                "name": n.name.as_str(),
                "preview": n.preview,
                "modified": date(n.modified),
                "bytes": n.bytes,
            })
        })
        .collect();
    let summary = match notes.len() {
        0 => "no notes yet".to_string(),
        1 => "1 note".to_string(),
        n => format!("{n} notes"),
    };
    let mut out = Values::new();
    out.insert("count".into(), json!(notes.len()));
    out.insert("notes".into(), Value::Array(rows));
    out.insert("content".into(), json!(content));
    out.insert("summary".into(), json!(summary));
    finish(out)
}

/// The notes_read outputs; a missing note names the ones that exist.
pub fn read(store: &dyn NotesStore, name: &NoteName) -> Result<Values, NodeError> {
    let what = format!("note {name}");
    let Some(note) = store.read(name).map_err(|e| store_error(&what, &e))? else {
        let existing: Vec<String> = store
            .list()
            .map(|notes| notes.into_iter().map(|n| n.name.to_string()).collect())
            .unwrap_or_default();
        let shown = cheng_node::display::line(name.as_str());
        let message = if existing.is_empty() {
            format!("no note named `{}`; there are no notes yet", shown.as_str())
        } else {
            format!(
                "no note named `{}`; the notes are: {}",
                shown.as_str(),
                existing.join(", ")
            )
        };
        return Err(NodeError::new(ErrorKind::NotFound, message));
    };
    let mut out = Values::new();
    out.insert("name".into(), json!(name.as_str()));
    out.insert(
        "summary".into(),
        json!(format!("note {name} ({} bytes)", note.content.len())),
    );
    out.insert("modified".into(), date(note.modified));
    out.insert("content".into(), json!(note.content));
    finish(out)
}

/// The notes_write outputs.
pub fn write(store: &dyn NotesStore, name: &NoteName, content: &str) -> Result<Values, NodeError> {
    let what = format!("note {name} was not written");
    let created = store
        .write(name, content)
        .map_err(|e| store_error(&what, &e))?;
    let verb = if created { "created" } else { "replaced" };
    let mut out = Values::new();
    out.insert("name".into(), json!(name.as_str()));
    out.insert("created".into(), json!(created));
    out.insert("bytes".into(), json!(content.len()));
    out.insert(
        "summary".into(),
        json!(format!("{verb} note {name} ({} bytes)", content.len())),
    );
    finish(out)
}

#[cfg(test)]
mod tests;
