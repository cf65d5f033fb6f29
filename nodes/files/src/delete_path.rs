//! `tools/delete_path`: delete a file, a symlink (the link itself, never what it points to) or,
//! with `recursive: true`, a directory and everything in it. Never outside the workspace, never
//! the workspace root, never a protected name at any depth (a directory holding a `.git`
//! anywhere inside is refused whole). The walk that counts what would go and the removal itself
//! go through the workspace handle ([`cheng_fs::WorkspaceFs`]): by descriptor, never following
//! a symlink, so a directory swapped for a link after the check is refused, never followed (a
//! link met inside the directory is removed as a link). The approval card shows the file count and bytes.

use crate::card::{self, Change};
use crate::freshness::Freshness;
use crate::policy::{Access, PathPolicy, Target};
use cheng_fs::{Kind, WorkspaceFs};
use cheng_node::input::{non_empty_str, port};
use cheng_node::paths::{protected_component, real_path};
use cheng_node::{
    failure, ApprovalRequest, ApprovalRule, Effects, ErrorKind, Node, NodeError, NodeSpec,
    PortSpec, PortType, RunContext, Values,
};
use serde_json::json;
use std::path::{Path, PathBuf};

pub static SPEC: NodeSpec = NodeSpec {
    id: "tools/delete_path",
    title: "Delete Path",
    description: "Delete a file or symlink, or a directory with everything in it when recursive is true. Never outside the workspace, never the workspace root, never protected metadata such as .git. A person approves what would be removed first.",
    category: "files",
    inputs: &[
        PortSpec::input("path", PortType::String, "Path to delete, relative to the workspace root").required(),
        PortSpec::input("recursive", PortType::Boolean, "Allow deleting a directory and everything in it").default("false"),
        PortSpec::sandbox_root(),
    ],
    outputs: &[
        PortSpec::output("path", PortType::String, "The path deleted, relative to the workspace root"),
        PortSpec::output("kind", PortType::String, "file, symlink or directory"),
        PortSpec::output("files", PortType::Integer, "Files (and symlinks) removed"),
        PortSpec::output("bytes", PortType::Integer, "Bytes of the files removed"),
        PortSpec::output("warnings", PortType::Array(&PortType::String), "What the caller should know"),
        failure::success("Whether the path was deleted"),
        crate::writer::SUMMARY_OUTPUT,
        failure::ERROR_KIND,
        failure::TERMINAL,
        failure::ERROR,
    ],
    gate: None,
    effects: Effects::Serial(ApprovalRule::Always),
};

pub struct DeletePath;

cheng_node::inventory::submit! { cheng_node::NodeRegistration::new(&DeletePath) }

/// What a delete would remove.
#[derive(Debug, Clone)]
pub struct Removal {
    pub target: Target,
    /// The entry itself: parents resolved, the last component not (a symlink stays a symlink).
    pub entry: PathBuf,
    pub kind: &'static str,
    pub files: u64,
    pub bytes: u64,
}

impl Removal {
    /// What the card was computed from: the kind, files and bytes found.
    fn basis(&self) -> String {
        let what = format!("{} {} file(s) {} B", self.kind, self.files, self.bytes);
        crate::basis::line(&self.target.display, &what)
    }

    fn change(&self) -> Change {
        Change::Delete {
            display: self.target.display.clone(),
            directory: self.kind == "directory",
            files: self.files,
            bytes: self.bytes,
        }
    }
}

#[cheng_node::async_trait]
impl Node for DeletePath {
    fn spec(&self) -> &'static NodeSpec {
        &SPEC
    }

    fn approval_request(
        &self,
        ctx: &RunContext,
        input: &Values,
    ) -> Result<ApprovalRequest, NodeError> {
        let removal = plan(ctx, input)?;
        let mut request = card::request(ctx, "delete_path", &[removal.change()], &[]);
        request.basis = Some(removal.basis());
        Ok(request)
    }

    async fn run(&self, ctx: &RunContext, input: Values) -> Result<Values, NodeError> {
        crate::writer::blocking(ctx, input, |ctx, input| {
            let removal = plan(ctx, input)?;
            crate::basis::check(ctx, &removal.basis())?;
            let display = removal.target.display.clone();
            let fs = crate::files::workspace_fs(&ctx.workspace)?;
            let result = if removal.kind == "directory" {
                fs.remove_dir_all(&removal.entry, |name| {
                    protected_component(Path::new(name)).is_some()
                })
                .map(drop)
            } else {
                fs.remove_file(&removal.entry)
            };
            result.map_err(|e| {
                if cheng_fs::changed_under_us(&e) {
                    return crate::files::changed(&display, "deleted", "deleted");
                }
                let what = if removal.kind == "directory" {
                    "delete it (part of it may be gone)"
                } else {
                    "delete it"
                };
                NodeError::new(
                    ErrorKind::WriteFailed,
                    format!("{display}: cannot {what}: {e}"),
                )
            })?;
            let freshness = Freshness::for_call(ctx, input)?;
            let mut ledger = freshness.open()?;
            ledger.forget(&removal.entry);
            ledger.forget(&removal.target.real);
            ledger.commit()?;
            let summary = match removal.kind {
                "directory" => format!(
                    "deleted directory {display} ({} file(s), {} bytes)",
                    removal.files, removal.bytes
                ),
                kind => format!("deleted {kind} {display} ({} bytes)", removal.bytes),
            };
            let mut out = Values::new();
            out.insert("path".into(), json!(display));
            out.insert("kind".into(), json!(removal.kind));
            out.insert("files".into(), json!(removal.files));
            out.insert("bytes".into(), json!(removal.bytes));
            out.insert("warnings".into(), json!(Vec::<String>::new()));
            out.insert("summary".into(), json!(summary));
            Ok(failure::with(out, &Ok::<(), NodeError>(())))
        })
        .await
    }
}

/// What would be removed, refused before anything is touched when the policy says no.
pub fn plan(ctx: &RunContext, input: &Values) -> Result<Removal, NodeError> {
    let Some(rel) = non_empty_str(input, "path") else {
        return Err(NodeError::invalid_input(
            "path is required: what to delete, relative to the workspace root",
        ));
    };
    let recursive = cheng_node::input::boolean(input, port(&SPEC, "recursive")?)?;
    let policy = PathPolicy::new(ctx.workspace.clone(), Vec::new());
    let target = policy.resolve(rel, "path", Access::Write)?;
    let display = target.display.clone();
    let (Some(parent), Some(name)) = (target.lexical.parent(), target.lexical.file_name()) else {
        return Err(NodeError::policy_denied(format!(
            "path {rel:?} names the workspace root itself, which is never deleted"
        )));
    };
    let parent = real_path(parent)
        .map_err(|e| NodeError::invalid_input(format!("path {rel:?} cannot be resolved: {e}")))?;
    cheng_node::paths::ensure_inside(&ctx.workspace, &parent, Some(rel), "path")?;
    let entry = parent.join(name);
    if entry == ctx.workspace {
        return Err(NodeError::policy_denied(format!(
            "path {rel:?} names the workspace root itself, which is never deleted"
        )));
    }
    let fs = crate::files::workspace_fs(&ctx.workspace)?;
    let meta = match fs.symlink_metadata(&entry) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(NodeError::new(
                ErrorKind::NotFound,
                format!("path {rel:?} does not exist"),
            ))
        }
        Err(e) if cheng_fs::changed_under_us(&e) => {
            return Err(crate::files::changed(&display, "examined", "deleted"))
        }
        Err(e) => {
            return Err(NodeError::new(
                ErrorKind::NotFound,
                format!("path {rel:?} cannot be examined: {e}"),
            ))
        }
    };
    let file_type = meta.file_type();
    if file_type.is_symlink() {
        return Ok(Removal {
            target,
            entry,
            kind: "symlink",
            files: 1,
            bytes: 0,
        });
    }
    if !file_type.is_dir() {
        return Ok(Removal {
            target,
            entry,
            kind: "file",
            files: 1,
            bytes: meta.len(),
        });
    }
    let (files, bytes) = count(&fs, &entry, &display)?;
    if !recursive {
        return Err(NodeError::invalid_input(format!(
            "path {display:?} is a directory ({files} file(s), {bytes} bytes); set recursive to true to delete it and everything in it"
        )));
    }
    Ok(Removal {
        target,
        entry,
        kind: "directory",
        files,
        bytes,
    })
}

/// Files and bytes under `dir` (through the handle, never following symlinks); refuses a
/// protected name anywhere.
fn count(fs: &WorkspaceFs, dir: &Path, display: &str) -> Result<(u64, u64), NodeError> {
    let mut files = 0u64;
    let mut bytes = 0u64;
    let mut protected = None;
    let walked = fs.walk(dir, |rel, entry| {
        if let Some(name) = protected_component(rel) {
            protected = Some((name.to_string(), rel.to_path_buf()));
            return Err(std::io::Error::other("protected"));
        }
        if entry.kind != Kind::Dir {
            files += 1;
            bytes += entry.size.unwrap_or(0);
        }
        Ok(())
    });
    if let Some((name, inside)) = protected {
        let holder = inside
            .parent()
            .map_or(String::new(), |p| p.display().to_string());
        return Err(NodeError::policy_denied(format!(
            "{holder} holds `{name}` ({}), a protected name file nodes never delete; nothing was deleted",
            inside.display()
        )));
    }
    walked.map_err(|e| {
        if cheng_fs::changed_under_us(&e) {
            return crate::files::changed(display, "examined", "deleted");
        }
        NodeError::new(
            ErrorKind::WriteFailed,
            format!("{display} cannot be listed: {e}"),
        )
    })?;
    Ok((files, bytes))
}
