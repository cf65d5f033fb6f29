//! What write_file and edit_file share: a plan computed in full before anything is written
//! (policy, freshness, decoding, the change, encoding, the syntax gate), the approval card made
//! from it, and the write that carries it out. The engine builds the card, asks, and only then
//! takes the per-workspace lock (`Effects::Serial`) to run the node; `run` plans again under it
//! and refuses when the file is no longer what the card was computed from ([`crate::basis`]), so
//! what is written is what the card showed.
//! The write goes through the workspace handle ([`crate::files::write`]): a directory on the
//! path swapped for a symlink after the plan is refused, never written through.

use crate::card::{self, Change};
use crate::files::{self, Loaded};
use crate::freshness::{Freshness, Ledger};
use crate::policy::Target;
use crate::syntax::Verdict;
use cheng_node::{failure, ApprovalRequest, NodeError, PortSpec, PortType, RunContext, Values};
use serde_json::json;

/// Output ports every file change reports (write_file, edit_file; delete_path the last two).
pub const TAG_OUTPUT: PortSpec = PortSpec::output(
    "tag",
    PortType::String,
    "Content tag of the file as written (FNV-1a, 8 hex digits)",
);
pub const DIFF_OUTPUT: PortSpec = PortSpec::output(
    "diff",
    PortType::String,
    "Unified diff of the change (bounded)",
);
pub const WARNINGS_OUTPUT: PortSpec = PortSpec::output(
    "warnings",
    PortType::Array(&PortType::String),
    "What the caller should know (e.g. the freshness gate was off)",
);
pub const SUMMARY_OUTPUT: PortSpec =
    PortSpec::output("summary", PortType::String, "Human-readable summary");

/// A change computed in memory, ready to be approved and written.
#[derive(Debug, Clone)]
pub struct Plan {
    pub target: Target,
    /// The file as it is (`None`: it will be created) and its text as the model sees it.
    pub old: Option<(Loaded, String)>,
    pub new_text: String,
    pub new_bytes: Vec<u8>,
    pub verdict: Verdict,
    pub warnings: Vec<String>,
    /// Create missing parent directories.
    pub create_parents: bool,
}

impl Plan {
    pub fn change(&self) -> Change {
        Change::Write {
            display: self.target.display.clone(),
            old: self.old.as_ref().map(|(_, text)| text.clone()),
            new: self.new_text.clone(),
            old_bytes: self.old.as_ref().map_or(0, |(l, _)| l.bytes.len() as u64),
            new_bytes: self.new_bytes.len() as u64,
        }
    }

    /// Notes for the card: the syntax line, the warnings.
    pub fn notes(&self) -> Vec<String> {
        self.verdict
            .line()
            .into_iter()
            .chain(self.warnings.iter().cloned())
            .collect()
    }

    pub fn card(&self, ctx: &RunContext, title: &str) -> ApprovalRequest {
        let mut request = card::request(ctx, title, &[self.change()], &self.notes());
        request.basis = Some(self.basis());
        request
    }

    /// What the plan was computed from: the file's tag and size as read, or its absence.
    pub fn basis(&self) -> String {
        let now = self
            .old
            .as_ref()
            .map(|(l, _)| (l.tag.as_str(), l.bytes.len()));
        crate::basis::file(&self.target.display, now)
    }

    /// Writes the new bytes (all or nothing) and registers the new tag; returns the tag. The tag
    /// is computed while the file is written and synced.
    pub fn write(
        &self,
        fs: &cheng_fs::WorkspaceFs,
        ledger: &mut Ledger,
    ) -> Result<String, NodeError> {
        let new_tag = || match &self.old {
            Some((loaded, _)) => loaded.tag_of(&self.new_bytes),
            None => crate::tag::tag(&self.new_bytes),
        };
        let (written, tag) = std::thread::scope(|scope| {
            let hasher = scope.spawn(new_tag);
            let written = files::write(fs, &self.target, &self.new_bytes, self.create_parents);
            (written, hasher.join().unwrap_or_else(|_| new_tag()))
        });
        written?;
        ledger.record(&self.target.real, &tag);
        Ok(tag)
    }

    /// The unified diff of the change (within its own time budget, summarised past it).
    pub fn diff(&self) -> String {
        let display = &self.target.display;
        match &self.old {
            Some((_, old)) => card::unified(
                old,
                &self.new_text,
                &format!("a/{display}"),
                &format!("b/{display}"),
            ),
            None => card::unified("", &self.new_text, "/dev/null", &format!("b/{display}")),
        }
    }

    /// The outputs every writer returns; `extra` adds the node's own.
    pub fn outputs(&self, tag: &str, summary: String, extra: Values) -> Values {
        let mut out = Values::new();
        out.insert("path".into(), json!(self.target.display));
        out.insert("tag".into(), json!(tag));
        out.insert("bytes".into(), json!(self.new_bytes.len()));
        out.extend(extra);
        let diff = self.diff();
        out.insert(
            "diff".into(),
            json!(cheng_node::text::head_tail(diff.as_bytes(), card::DIFF_CAP).text),
        );
        out.insert("warnings".into(), json!(self.warnings));
        out.insert("summary".into(), json!(summary));
        failure::with(out, &Ok::<(), NodeError>(()))
    }
}

/// Runs `plan` then writes, under the call's freshness ledger (a session's is locked for the
/// whole step). `plan` gets the ledger to check against before it matches anything.
pub fn plan_and_write(
    ctx: &RunContext,
    input: &Values,
    plan: impl FnOnce(&Ledger) -> Result<Plan, NodeError>,
) -> Result<(Plan, String), NodeError> {
    let freshness = Freshness::for_call(ctx, input)?;
    let mut ledger = freshness.open()?;
    let mut planned = plan(&ledger)?;
    crate::basis::check(ctx, &planned.basis())?;
    if let Some(warning) = freshness.warning() {
        planned.warnings.push(warning.to_string());
    }
    let fs = files::workspace_fs(&ctx.workspace)?;
    let tag = planned.write(&fs, &mut ledger)?;
    ledger.commit()?;
    Ok((planned, tag))
}

/// The plan for the approval card (same checks, nothing written).
pub fn plan_for_card(
    ctx: &RunContext,
    input: &Values,
    plan: impl FnOnce(&Ledger) -> Result<Plan, NodeError>,
) -> Result<Plan, NodeError> {
    let freshness = Freshness::for_call(ctx, input)?;
    let ledger = freshness.open()?;
    let mut planned = plan(&ledger)?;
    if let Some(warning) = freshness.warning() {
        planned.warnings.push(warning.to_string());
    }
    Ok(planned)
}

/// `input` read on a blocking thread (file work), then turned into the output object.
pub async fn blocking(
    ctx: &RunContext,
    input: Values,
    work: impl FnOnce(&RunContext, &Values) -> Result<Values, NodeError> + Send + 'static,
) -> Result<Values, NodeError> {
    let ctx = ctx.clone();
    let result = tokio::task::spawn_blocking(move || work(&ctx, &input))
        .await
        .map_err(|e| NodeError::internal(format!("the file node stopped unexpectedly: {e}")))?;
    Ok(match result {
        Ok(out) => out,
        Err(e) => e.to_outputs(),
    })
}
