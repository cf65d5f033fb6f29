use super::*;
use crate::store::MemoryStore;
use cheng_engine::{Engine, RunOptions};
use cheng_node::{Approver, Decision, Registry};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

fn name(n: &str) -> NoteName {
    NoteName::parse(n).unwrap()
}

#[test]
fn list_read_and_write_over_a_store() {
    let store = MemoryStore::default();
    let out = list(&store).unwrap();
    assert_eq!(out["count"], 0);
    assert_eq!(out["summary"], "no notes yet");
    let out = write(&store, &name("build"), "cargo build -p x\nmore").unwrap();
    assert_eq!(out["created"], true);
    assert_eq!(out["summary"], "created note build (21 bytes)");
    let out = write(&store, &name("build"), "replaced").unwrap();
    assert_eq!(out["created"], false);
    write(&store, &name("pitfall"), "# Tests hang\nwhen ...").unwrap();
    let out = list(&store).unwrap();
    assert_eq!(out["count"], 2);
    assert_eq!(out["notes"][1]["name"], "pitfall");
    assert_eq!(out["notes"][1]["preview"], "# Tests hang");
    assert_eq!(out["notes"][1]["bytes"], 21);
    let modified = out["notes"][1]["modified"].as_str().unwrap();
    assert!(humantime::parse_rfc3339(modified).is_ok(), "{modified}");
    let content = out["content"].as_str().unwrap();
    assert!(content.starts_with("build ("), "{content}");
    assert!(content.ends_with("): # Tests hang\n"), "{content}");
    let out = read(&store, &name("build")).unwrap();
    assert_eq!(out["content"], "replaced");
    assert_eq!(out["success"], true);
}

#[test]
fn a_missing_note_names_the_existing_ones() {
    let store = MemoryStore::default();
    let err = read(&store, &name("x")).unwrap_err();
    assert_eq!(err.kind, ErrorKind::NotFound);
    assert!(
        err.message.contains("there are no notes yet"),
        "{}",
        err.message
    );
    write(&store, &name("a"), "1").unwrap();
    write(&store, &name("b"), "2").unwrap();
    let err = read(&store, &name("x")).unwrap_err();
    assert!(
        err.message.ends_with("the notes are: a, b"),
        "{}",
        err.message
    );
}

#[test]
fn names_and_sizes_are_checked_before_any_store() {
    let input = |n: &str, c: &str| {
        Values::from_iter([
            ("name".to_string(), json!(n)),
            ("content".to_string(), json!(c)),
        ])
    };
    for bad in ["../x", ".hidden", "a/b", &"x".repeat(101)] {
        assert_eq!(
            note_name(&input(bad, "")).unwrap_err().kind,
            ErrorKind::InvalidInput
        );
    }
    let big = "x".repeat(MAX_NOTE_BYTES + 1);
    let err = content(&input("a", &big)).unwrap_err();
    assert!(err.message.contains("65537 bytes") && err.message.contains("at most 65536"));
    assert!(content(&input("a", &big[1..])).is_ok());
}

#[test]
fn the_specs_are_sound_and_the_write_says_when_a_note_is_worth_it() {
    for spec in [&LIST_SPEC, &READ_SPEC, &WRITE_SPEC] {
        assert!(spec.problems().is_empty(), "{:?}", spec.problems());
    }
    assert!(WRITE_SPEC
        .description
        .contains("Do not write one for every turn"));
    assert!(WRITE_SPEC.description.contains("worth writing when"));
}

/// Counts the cards it is shown and answers with its decision.
struct Counting(AtomicUsize, Decision);

#[cheng_node::async_trait]
impl Approver for Counting {
    async fn decide(&self, request: &ApprovalRequest) -> Decision {
        self.0.fetch_add(1, Ordering::SeqCst);
        assert_eq!(request.command_display, "notes_write plan");
        let details = request.details.as_deref().unwrap_or("");
        assert!(details.starts_with("create note plan in "), "{details}");
        assert!(details.ends_with(" with 8 bytes:\nthe text"), "{details}");
        self.1
    }
}

/// notes_write run by the engine: its outputs, the cards asked, the workspace (holding `notes`).
async fn write_through_engine(
    sensitive: bool,
    decision: Decision,
) -> (Values, usize, tempfile::TempDir) {
    let workspace = tempfile::tempdir().unwrap();
    let notes = workspace.path().join("notes");
    let engine = Engine::new(
        Registry::new().with(NotesWrite),
        Arc::new(cheng_node::policy::Policy::builtin()),
    );
    let approver = Arc::new(Counting(AtomicUsize::new(0), decision));
    let config = json!({"notes_dir": notes, SENSITIVE: sensitive});
    let inputs = json!({"name": "plan", "content": "the text"});
    let result = engine
        .run_node(
            "tools/notes_write",
            config.as_object().unwrap().clone(),
            inputs.as_object().unwrap().clone(),
            RunOptions::new(workspace.path())
                .unwrap()
                .approver(approver.clone()),
        )
        .await
        .unwrap();
    let asked = approver.0.load(Ordering::SeqCst);
    (result.outputs, asked, workspace)
}

#[tokio::test]
async fn a_write_asks_a_person_only_when_the_author_says_so() {
    let note = |ws: &tempfile::TempDir| ws.path().join("notes").join("plan.md");
    let (out, asked, ws) = write_through_engine(false, Decision::Denied).await;
    assert_eq!((out["success"].clone(), asked), (json!(true), 0));
    assert_eq!(std::fs::read_to_string(note(&ws)).unwrap(), "the text");

    let (out, asked, ws) = write_through_engine(true, Decision::Denied).await;
    assert_eq!(asked, 1);
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_APPROVAL_DENIED");
    assert!(!note(&ws).exists());

    let (out, asked, ws) = write_through_engine(true, Decision::Approved).await;
    assert_eq!((out["success"].clone(), asked), (json!(true), 1));
    assert!(note(&ws).exists());
}
