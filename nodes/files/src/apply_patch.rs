//! `tools/apply_patch`: apply a patch in the Codex CLI format (`*** Begin Patch` …
//! `*** End Patch`, parsed and computed by the `cheng-patch` crate) to the workspace, all or
//! nothing. Every run is approval-gated; the card shows a unified diff of every file.
//!
//! What a run does, in order, before anything is written (and again, identically, when it runs
//! after the approval):
//!
//! 1. Parses `input` (lenient: padded markers, a heredoc wrapper). A malformed patch is
//!    `LOCAL_EXECUTOR_INVALID_INPUT` naming the patch line and what was expected there.
//! 2. Resolves every path the patch names (Add, Update, Move target, Delete) through the path
//!    policy for writing: inside the workspace on the lexical and on the real path, no protected
//!    name, never the root. A symlink leading out (a file link, a linked directory to add under,
//!    a move target) is `LOCAL_EXECUTOR_PATH_OUTSIDE_WORKSPACE`. Two spellings of one real file
//!    (a symlink and its target) in one patch are refused.
//! 3. Reads each existing target (at most [`MAX_FILE_BYTES`]); a file that is updated is decoded
//!    as editable text (encoding, BOM and line endings are written back as read; binary and
//!    undecodable files are refused).
//! 4. Computes every file's new content in memory (`cheng_patch::apply`). A hunk that cannot be
//!    found, an update of a missing file (`LOCAL_EXECUTOR_NOT_FOUND`), a delete of a missing file
//!    or a directory: the whole patch fails, naming the file and the hunk.
//! 5. The freshness gate, for every existing file the patch changes or removes (an Add over an
//!    existing file included): refused (`LOCAL_EXECUTOR_FILE_CHANGED`) when the model never read
//!    it in this scope or it changed since.
//! 6. The "not worse" syntax gate for every file written (`LOCAL_EXECUTOR_SYNTAX_WORSE`).
//! 7. Writes, all through the workspace handle ([`cheng_fs::WorkspaceFs`]: temporary files and
//!    renames in the parent's descriptor, no symlink followed, so a directory swapped for a link
//!    after step 2 fails the patch instead of being written through): every new content staged
//!    beside its target, then renamed in, removals last; a failure part-way undoes what was done
//!    (see `commit`). Then the new tags are registered.
//!
//! The output's `summary` is Codex's (`Success. Updated the following files:` then `A path`,
//! `M path`, `D path`); `files` lists each file with its new tag.

mod commit;

use crate::freshness::{Freshness, READ_TRACKING};
use crate::policy::{Access, PathPolicy, Target};
use crate::text::Editable;
use crate::{card, syntax, tag};
use cheng_fs::WorkspaceFs;
use cheng_node::text::head_tail;
use cheng_node::{
    failure, ApprovalRequest, ApprovalRule, Control, Effects, ErrorKind, Node, NodeError, NodeSpec,
    PortSpec, PortType, RunContext, Values,
};
use cheng_patch::{Change, PatchError};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::fs::Permissions;
use std::io;
use std::path::{Path, PathBuf};

/// The largest file a patch reads (to update it, or to keep for undoing a replace or delete):
/// the limit every file node edits under.
pub const MAX_FILE_BYTES: u64 = crate::files::MAX_EDIT_BYTES;

/// The patch text.
pub const INPUT: PortSpec = PortSpec::input(
    "input",
    PortType::String,
    "The entire contents of the apply_patch command: `*** Begin Patch`, then file operations — `*** Add File: PATH` followed by its lines each starting with `+`; `*** Update File: PATH`, optionally `*** Move to: NEW_PATH`, then hunks (`@@` or `@@ context line`, then lines starting with ` ` for context, `-` to remove, `+` to add; `*** End of File` after a hunk that ends the file); `*** Delete File: PATH` — then `*** End Patch`. Paths are relative to the workspace root. Every file is changed or none is.",
)
.required()
.control(Control::CodeEditor);

static OBJECT: PortType = PortType::Object;
static STRING: PortType = PortType::String;

pub static SPEC: NodeSpec = NodeSpec {
    id: "tools/apply_patch",
    title: "Apply Patch",
    description: "Apply a patch in the Codex apply_patch format (add, update with context hunks, move and delete files) to the workspace. The whole patch is checked in memory first — path policy, freshness of every changed file, syntax not made worse — and written all or nothing after approval.",
    category: "files",
    inputs: &[INPUT, PortSpec::sandbox_root(), READ_TRACKING],
    outputs: &[
        failure::success("Whether every file of the patch was written"),
        PortSpec::output("summary", PortType::String, "Which files changed: `A path` added, `M path` updated (or moved there), `D path` deleted"),
        PortSpec::output("files", PortType::Array(&OBJECT), "One object per changed file: path, status (A, M or D), from (a move's old path), tag (the new content's tag, registered with the freshness gate), bytes"),
        PortSpec::output("diff", PortType::String, "Unified diff of every file changed (bounded)"),
        PortSpec::output("warnings", PortType::Array(&STRING), "Things the caller should know, e.g. that the freshness gate was off"),
        failure::ERROR_KIND,
        failure::TERMINAL,
        failure::error("Error message when the patch was not applied (nothing was written)"),
    ],
    gate: None,
    effects: Effects::Serial(ApprovalRule::Always),
};

pub struct ApplyPatch;

cheng_node::inventory::submit! { cheng_node::NodeRegistration::new(&ApplyPatch) }

#[cheng_node::async_trait]
impl Node for ApplyPatch {
    fn spec(&self) -> &'static NodeSpec {
        &SPEC
    }

    fn approval_request(
        &self,
        ctx: &RunContext,
        input: &Values,
    ) -> Result<ApprovalRequest, NodeError> {
        let freshness = Freshness::for_call(ctx, input)?;
        let plan = Plan::compute(ctx, input)?;
        // Refuse a stale patch before anybody is asked.
        plan.check_fresh(&freshness.open()?)?;
        let mut notes = plan.notes.clone();
        notes.extend(freshness.warning().map(str::to_string));
        let mut request = card::request(ctx, "apply_patch", &plan.card, &notes);
        // What was shown is what the run may write (see `run`).
        request.basis = Some(plan.fingerprint());
        Ok(request)
    }

    async fn run(&self, ctx: &RunContext, input: Values) -> Result<Values, NodeError> {
        crate::writer::blocking(ctx, input, run_blocking).await
    }
}

/// The run itself (file work, on a blocking thread).
fn run_blocking(ctx: &RunContext, input: &Values) -> Result<Values, NodeError> {
    let freshness = Freshness::for_call(ctx, input)?;
    let plan = Plan::compute(ctx, input)?;
    // Check, write and record as one step (a session's table stays locked meanwhile).
    let mut ledger = freshness.open()?;
    plan.check_fresh(&ledger)?;
    // A file changed between the card and now (another approved write got there first, the
    // freshness gate off): the approved diff is no longer what would be written.
    crate::basis::check(ctx, &plan.fingerprint())?;
    let fs = crate::files::workspace_fs(&ctx.workspace)?;
    commit::commit(&plan.entries, &RealDisk(&fs)).map_err(|e| {
        NodeError::new(
            ErrorKind::WriteFailed,
            format!("the patch was not applied: {e}"),
        )
    })?;
    for entry in &plan.entries {
        match &entry.after {
            Some(bytes) => ledger.record(&entry.target, &tag::tag(bytes)),
            None => ledger.forget(&entry.target),
        }
    }
    ledger.commit()?;
    let warnings: Vec<String> = freshness
        .warning()
        .map(str::to_string)
        .into_iter()
        .collect();
    let diff = card::diffs(&plan.card);
    let mut out = Values::new();
    out.insert("summary".into(), json!(plan.summary()));
    out.insert(
        "files".into(),
        Value::Array(plan.files.iter().map(FileReport::to_json).collect()),
    );
    out.insert(
        "diff".into(),
        json!(head_tail(diff.as_bytes(), card::DIFF_CAP).text),
    );
    out.insert("warnings".into(), json!(warnings));
    failure::fill::<()>(&mut out, &Ok(()));
    Ok(out)
}

/// Every write goes through the workspace handle: beneath the root's descriptor, no symlink
/// followed, temporary files and renames inside the parent's descriptor.
struct RealDisk<'a>(&'a WorkspaceFs);

impl commit::Disk for RealDisk<'_> {
    type Staged = cheng_fs::Staged;
    fn exists(&self, path: &Path) -> bool {
        // An error other than "absent" (a symlink swapped in) counts as present: the write that
        // follows meets it and says so.
        !matches!(self.0.exists(path), Ok(false))
    }
    fn stage(&self, path: &Path, bytes: &[u8]) -> io::Result<cheng_fs::Staged> {
        self.0.stage(path, bytes)
    }
    fn commit(&self, staged: cheng_fs::Staged) -> io::Result<()> {
        staged.commit()
    }
    fn write(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        self.0.write(path, bytes)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.0.remove_file(path)
    }
    fn create_dir(&self, path: &Path) -> io::Result<()> {
        self.0.create_dir(path)
    }
    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        self.0.remove_dir(path)
    }
    fn set_permissions(&self, path: &Path, permissions: Permissions) -> io::Result<()> {
        use std::os::unix::fs::PermissionsExt;
        self.0.set_mode(path, permissions.mode())
    }
}

/// One changed file, for the output.
struct FileReport {
    path: String,
    status: &'static str,
    from: Option<String>,
    tag: Option<String>,
    bytes: u64,
}

impl FileReport {
    fn to_json(&self) -> Value {
        json!({"path": self.path, "status": self.status, "from": self.from, "tag": self.tag, "bytes": self.bytes})
    }
}

/// A real path the patch touches, as found on disk and as it will be.
struct State {
    target: Target,
    /// The patch line that first named it (for messages).
    line: usize,
    before: Option<commit::Before>,
    /// The decoded text of `before`, when it is editable text.
    before_text: Option<Result<Editable, String>>,
    after: Option<Vec<u8>>,
    /// The format new content is written in (the file's own once decoded).
    format: Option<Editable>,
    /// Whether a patch operation leaves it existing (as the operations run in order).
    exists: bool,
}

/// Everything a run would write, computed and checked in memory.
struct Plan {
    entries: Vec<commit::Entry>,
    card: Vec<card::Change>,
    notes: Vec<String>,
    files: Vec<FileReport>,
    /// For the freshness gate: (real path, display, tag now) of every existing file changed.
    existing: Vec<(PathBuf, String, String)>,
}

impl Plan {
    fn compute(ctx: &RunContext, input: &Values) -> Result<Plan, NodeError> {
        let text =
            match input.get(INPUT.name) {
                Some(Value::String(text)) => text.as_str(),
                _ => return Err(NodeError::invalid_input(
                    "input is required: the patch text, from `*** Begin Patch` to `*** End Patch`",
                )),
            };
        // Every path of a patch is written: the read-only roots other file nodes take do not apply.
        let policy = PathPolicy::new(ctx.workspace.clone(), Vec::new());
        let fs = crate::files::workspace_fs(&ctx.workspace)?;
        let patch = cheng_patch::parse(text)
            .map_err(|e| NodeError::invalid_input(format!("input: {e}; nothing was written")))?;

        // Every path the patch names, resolved for writing, keyed by the text as written.
        let mut states: Vec<State> = Vec::new();
        let mut by_real: HashMap<PathBuf, usize> = HashMap::new();
        let mut by_name: HashMap<PathBuf, usize> = HashMap::new();
        for op in &patch.operations {
            let mut names = vec![op.path()];
            if let cheng_patch::Operation::Update {
                move_to: Some(to), ..
            } = op
            {
                names.push(to);
            }
            for name in names {
                if by_name.contains_key(name) {
                    continue;
                }
                let field = format!("patch line {}: path", op.line());
                let target = policy.resolve(&name.to_string_lossy(), &field, Access::Write)?;
                let index = match by_real.get(&target.real) {
                    Some(&i) if states[i].target.lexical != target.lexical => {
                        return Err(NodeError::invalid_input(format!(
                            "patch line {}: '{}' is the same file as '{}' (patch line {}) through a symlink; name each file one way in a patch",
                            op.line(),
                            name.display(),
                            states[i].target.display,
                            states[i].line
                        )));
                    }
                    Some(&i) => i,
                    None => {
                        let state = State::load(&fs, target, op.line())?;
                        states.push(state);
                        by_real.insert(
                            states[states.len() - 1].target.real.clone(),
                            states.len() - 1,
                        );
                        states.len() - 1
                    }
                };
                by_name.insert(name.to_path_buf(), index);
            }
        }

        // The texts, for cheng_patch (it reads only files an earlier operation did not touch).
        let read_error: std::cell::RefCell<Option<NodeError>> = std::cell::RefCell::new(None);
        let changes = cheng_patch::apply(&patch, |name| {
            let state = by_name.get(name).map(|&i| &states[i]);
            match state.map(|s| (&s.before_text, s)) {
                Some((Some(Ok(file)), _)) => Ok(file.text.clone()),
                Some((Some(Err(why)), s)) => {
                    *read_error.borrow_mut() = Some(NodeError::invalid_input(format!(
                        "patch line {}: '{}' {why}; nothing was written",
                        s.line, s.target.display
                    )));
                    Err(io::Error::other(why.clone()))
                }
                Some((None, s)) if s.is_dir() => {
                    *read_error.borrow_mut() = Some(NodeError::invalid_input(format!(
                        "patch line {}: cannot update '{}': it is a directory; apply_patch changes files only; nothing was written",
                        s.line, s.target.display
                    )));
                    Err(io::Error::other("a directory"))
                }
                _ => Err(io::Error::from(io::ErrorKind::NotFound)),
            }
        })
        .map_err(|e| match read_error.borrow_mut().take() {
            Some(err) => err,
            None => patch_error(&e),
        })?;

        // The final state of every real path, following the operations in order.
        let mut order: Vec<usize> = Vec::new();
        let mut cards = Vec::new();
        let mut files = Vec::new();
        let state_of = |name: &Path| by_name.get(name).copied().unwrap_or(0);
        for (change, op) in changes.iter().zip(&patch.operations) {
            let line = op.line();
            match change {
                Change::Add { path, content } => {
                    let i = state_of(path);
                    let s = &mut states[i];
                    s.refuse_directory(line, "add")?;
                    let file = Editable::new_file(content.clone());
                    let bytes = encode(&file, content, &s.target.display, line)?;
                    cards.push(card::Change::Write {
                        display: s.target.display.clone(),
                        old: s.exists.then(|| s.current_text()).flatten(),
                        new: content.clone(),
                        old_bytes: s.current_len(),
                        new_bytes: bytes.len() as u64,
                    });
                    files.push(FileReport {
                        path: s.target.display.clone(),
                        status: "A",
                        from: None,
                        tag: Some(tag::tag(&bytes)),
                        bytes: bytes.len() as u64,
                    });
                    s.after = Some(bytes);
                    s.format = Some(file);
                    s.exists = true;
                    order.push(i);
                }
                Change::Update {
                    path,
                    move_to,
                    old_content,
                    new_content,
                } => {
                    let i = state_of(path);
                    let format = states[i]
                        .format
                        .clone()
                        .unwrap_or_else(|| Editable::new_file(String::new()));
                    let old_bytes = states[i].current_len();
                    let dest = move_to.as_deref().map(state_of).unwrap_or(i);
                    let display = states[dest].target.display.clone();
                    if dest != i {
                        states[dest].refuse_directory(line, "move a file onto")?;
                    }
                    let bytes = encode(&format, new_content, &display, line)?;
                    let from = (dest != i).then(|| states[i].target.display.clone());
                    cards.push(match &from {
                        Some(from) => card::Change::Move {
                            from: from.clone(),
                            to: display.clone(),
                            old: old_content.clone(),
                            new: new_content.clone(),
                            old_bytes,
                            new_bytes: bytes.len() as u64,
                            replaces: states[dest].exists.then(|| states[dest].current_len()),
                        },
                        None => card::Change::Write {
                            display: display.clone(),
                            old: Some(old_content.clone()),
                            new: new_content.clone(),
                            old_bytes,
                            new_bytes: bytes.len() as u64,
                        },
                    });
                    files.push(FileReport {
                        path: display,
                        status: "M",
                        from,
                        tag: Some(tag::tag(&bytes)),
                        bytes: bytes.len() as u64,
                    });
                    if dest != i {
                        states[i].after = None;
                        states[i].exists = false;
                        order.push(i);
                    }
                    let d = &mut states[dest];
                    d.after = Some(bytes);
                    d.format = Some(format);
                    d.exists = true;
                    order.push(dest);
                }
                Change::Delete { path } => {
                    let i = state_of(path);
                    let s = &mut states[i];
                    s.refuse_directory(line, "delete")?;
                    if crate::files::entry_path(&s.target)
                        .and_then(|entry| fs.symlink_metadata(&entry))
                        .is_ok_and(|m| m.file_type().is_symlink())
                    {
                        return Err(NodeError::invalid_input(format!(
                            "patch line {line}: '{}' is a symbolic link; apply_patch deletes files, not links (tools/delete_path removes a link); nothing was written",
                            s.target.display
                        )));
                    }
                    if !s.exists {
                        return Err(NodeError::new(
                            ErrorKind::NotFound,
                            format!("patch line {line}: cannot delete '{}': the file does not exist; nothing was written", s.target.display),
                        ));
                    }
                    cards.push(card::Change::Delete {
                        display: s.target.display.clone(),
                        directory: false,
                        files: 1,
                        bytes: s.current_len(),
                    });
                    files.push(FileReport {
                        path: s.target.display.clone(),
                        status: "D",
                        from: None,
                        tag: None,
                        bytes: 0,
                    });
                    s.after = None;
                    s.exists = false;
                    order.push(i);
                }
            }
        }

        // One entry per real path, in the order first touched; unchanged ones left out.
        let mut entries = Vec::new();
        let mut notes = Vec::new();
        let mut existing = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for i in order {
            if !seen.insert(i) {
                continue;
            }
            let s = &states[i];
            let before_bytes = s.before.as_ref().map(|b| b.bytes.as_slice());
            if before_bytes == s.after.as_deref() {
                continue;
            }
            if let Some(after) = &s.after {
                if let Some(new_text) = decode_for_check(after) {
                    let old_text = match &s.before_text {
                        Some(Ok(file)) => Some(file.text.as_str()),
                        _ => None,
                    };
                    let verdict =
                        syntax::gate(&s.target.real, &s.target.display, old_text, &new_text)
                            .map_err(|e| {
                                NodeError::new(
                                    e.kind,
                                    format!("patch line {}: {}", s.line, e.message),
                                )
                            })?;
                    notes.extend(verdict.line().map(|l| format!("{}: {l}", s.target.display)));
                }
            }
            if let Some(before) = &s.before {
                existing.push((
                    s.target.real.clone(),
                    s.target.display.clone(),
                    tag::tag(&before.bytes),
                ));
            }
            entries.push(commit::Entry {
                target: s.target.real.clone(),
                display: s.target.display.clone(),
                before: s.before.clone(),
                after: s.after.clone(),
            });
        }
        Ok(Plan {
            entries,
            card: cards,
            notes,
            files,
            existing,
        })
    }

    /// The freshness gate for every existing file the patch changes or removes.
    fn check_fresh(&self, ledger: &crate::freshness::Ledger) -> Result<(), NodeError> {
        for (real, display, now) in &self.existing {
            ledger.check(real, display, now).map_err(|e| {
                NodeError::new(e.kind, format!("{}; nothing was written", e.message))
            })?;
        }
        Ok(())
    }

    /// What would be written, as the card's basis: every target with digests before and after.
    fn fingerprint(&self) -> String {
        let mut text = String::new();
        for entry in &self.entries {
            let before = entry
                .before
                .as_ref()
                .map_or("absent".to_string(), |b| digest(&b.bytes));
            let after = entry
                .after
                .as_ref()
                .map_or("removed".to_string(), |a| digest(a));
            text.push_str(&crate::basis::line(
                &entry.display,
                &format!("{before} -> {after}"),
            ));
        }
        text
    }

    /// Codex's summary lines.
    fn summary(&self) -> String {
        let mut text = String::from("Success. Updated the following files:");
        for file in &self.files {
            text.push('\n');
            text.push_str(file.status);
            text.push(' ');
            text.push_str(&file.path);
        }
        text
    }
}

impl State {
    /// Reads what is at `target` now (a directory is remembered, and refused by the operation
    /// that names it).
    fn load(fs: &WorkspaceFs, target: Target, line: usize) -> Result<State, NodeError> {
        let mut state = State {
            target,
            line,
            before: None,
            before_text: None,
            after: None,
            format: None,
            exists: false,
        };
        if fs
            .symlink_metadata(&state.target.real)
            .is_ok_and(|m| m.is_dir())
        {
            state.exists = true;
            return Ok(state);
        }
        let field = format!("patch line {line}: path");
        let Some(loaded) = crate::files::load(
            fs,
            &state.target.real,
            &state.target.display,
            &field,
            MAX_FILE_BYTES,
        )?
        else {
            return Ok(state);
        };
        let permissions = fs
            .symlink_metadata(&state.target.real)
            .map_err(|e| {
                if cheng_fs::changed_under_us(&e) {
                    return crate::files::changed(&state.target.display, "read", "written");
                }
                NodeError::invalid_input(format!(
                    "{field} {:?} cannot be read: {e}",
                    state.target.display
                ))
            })?
            .permissions();
        let decoded = Editable::decode(&loaded.bytes).map_err(|e| e.to_string());
        state.exists = true;
        state.format = decoded.as_ref().ok().cloned();
        state.before_text = Some(decoded);
        state.before = Some(commit::Before {
            bytes: loaded.bytes,
            permissions,
        });
        Ok(state)
    }

    fn is_dir(&self) -> bool {
        self.exists && self.before.is_none() && self.after.is_none()
    }

    fn refuse_directory(&self, line: usize, verb: &str) -> Result<(), NodeError> {
        if self.is_dir() {
            return Err(NodeError::invalid_input(format!(
                "patch line {line}: cannot {verb} '{}': it is a directory; apply_patch changes files only; nothing was written",
                self.target.display
            )));
        }
        Ok(())
    }

    /// The text the file holds at this point of the patch, when it is text.
    fn current_text(&self) -> Option<String> {
        match (&self.after, &self.format) {
            (Some(bytes), _) => decode_for_check(bytes),
            (None, _) => match &self.before_text {
                Some(Ok(file)) => Some(file.text.clone()),
                _ => None,
            },
        }
    }

    fn current_len(&self) -> u64 {
        match (&self.after, &self.before) {
            (Some(bytes), _) => bytes.len() as u64,
            (None, Some(before)) if self.exists => before.bytes.len() as u64,
            _ => 0,
        }
    }
}

/// A 64-bit digest and the length of `bytes` (for comparing a plan with the approved one).
fn digest(bytes: &[u8]) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    bytes.hash(&mut hasher);
    format!("{:016x}:{}", hasher.finish(), bytes.len())
}

fn decode_for_check(bytes: &[u8]) -> Option<String> {
    Editable::decode(bytes).ok().map(|f| f.text)
}

fn encode(format: &Editable, text: &str, display: &str, line: usize) -> Result<Vec<u8>, NodeError> {
    format.encode(text).map_err(|e| {
        NodeError::invalid_input(format!(
            "patch line {line}: '{display}' {e}; nothing was written"
        ))
    })
}

/// The error for a patch that cannot be applied.
fn patch_error(e: &PatchError) -> NodeError {
    let kind = match e {
        PatchError::File {
            hunk: None,
            message,
            ..
        } if message.contains("does not exist") => ErrorKind::NotFound,
        _ => ErrorKind::InvalidInput,
    };
    NodeError::new(kind, format!("{e}; nothing was written"))
}
