//! `tools/write_file`: create a file or replace one, through the path policy, the freshness
//! gate (replacing a file needs the model to have read it as it is), the syntax gate and an
//! approval card with the diff. Replacing keeps the file's encoding, BOM and line endings.

use crate::files::{self, MAX_EDIT_BYTES};
use crate::freshness::{Ledger, READ_TRACKING};
use crate::policy::{Access, PathPolicy};
use crate::text::Editable;
use crate::writer::{self, Plan};
use cheng_node::input::{non_empty_str, opt_str, port};
use cheng_node::{
    failure, ApprovalRequest, ApprovalRule, Control, Effects, Node, NodeError, NodeSpec, PortSpec,
    PortType, RunContext, Values,
};
use serde_json::json;

pub static SPEC: NodeSpec = NodeSpec {
    id: "tools/write_file",
    title: "Write File",
    description: "Create a file or replace its whole content. Replacing an existing file requires that it was read (tools/read_file) as it is now; its encoding, BOM and line endings are kept. A person approves the diff first.",
    category: "files",
    inputs: &[
        PortSpec::input("file_path", PortType::String, "Path of the file to write, relative to the workspace root").required(),
        PortSpec::input("content", PortType::String, "The whole new content of the file").required().control(Control::Textarea),
        PortSpec::input("create_parents", PortType::Boolean, "Create missing parent directories").default("false"),
        READ_TRACKING,
        PortSpec::sandbox_root(),
    ],
    outputs: &[
        PortSpec::output("path", PortType::String, "The file written, relative to the workspace root"),
        writer::TAG_OUTPUT,
        PortSpec::output("bytes", PortType::Integer, "Bytes written"),
        PortSpec::output("created", PortType::Boolean, "Whether the file was created (false: replaced)"),
        writer::DIFF_OUTPUT,
        writer::WARNINGS_OUTPUT,
        failure::success("Whether the file was written"),
        writer::SUMMARY_OUTPUT,
        failure::ERROR_KIND,
        failure::TERMINAL,
        failure::ERROR,
    ],
    gate: None,
    effects: Effects::Serial(ApprovalRule::Always),
};

pub struct WriteFile;

cheng_node::inventory::submit! { cheng_node::NodeRegistration::new(&WriteFile) }

#[cheng_node::async_trait]
impl Node for WriteFile {
    fn spec(&self) -> &'static NodeSpec {
        &SPEC
    }

    fn approval_request(
        &self,
        ctx: &RunContext,
        input: &Values,
    ) -> Result<ApprovalRequest, NodeError> {
        let planned = writer::plan_for_card(ctx, input, |ledger| plan(ctx, input, ledger))?;
        Ok(planned.card(ctx, "write_file"))
    }

    async fn run(&self, ctx: &RunContext, input: Values) -> Result<Values, NodeError> {
        writer::blocking(ctx, input, |ctx, input| {
            let (planned, tag) =
                writer::plan_and_write(ctx, input, |ledger| plan(ctx, input, ledger))?;
            let created = planned.old.is_none();
            let verb = if created { "created" } else { "wrote" };
            let summary = format!(
                "{verb} {} ({} bytes, tag {tag})",
                planned.target.display,
                planned.new_bytes.len()
            );
            let extra = Values::from_iter([("created".to_string(), json!(created))]);
            Ok(planned.outputs(&tag, summary, extra))
        })
        .await
    }
}

/// The write, computed in memory: refused before anything is written when the policy, the
/// freshness gate, the encoding or the syntax gate says no.
pub fn plan(ctx: &RunContext, input: &Values, ledger: &Ledger) -> Result<Plan, NodeError> {
    let Some(rel) = non_empty_str(input, "file_path") else {
        return Err(NodeError::invalid_input(
            "file_path is required: the file to write, relative to the workspace root",
        ));
    };
    let Some(content) = opt_str(input, "content") else {
        return Err(NodeError::invalid_input(
            "content is required: the whole new content of the file (\"\" for an empty file)",
        ));
    };
    if content.len() as u64 > MAX_EDIT_BYTES {
        return Err(NodeError::invalid_input(format!(
            "content is {} bytes, over the {} the file nodes write",
            content.len(),
            cheng_node::text::human_bytes(MAX_EDIT_BYTES)
        )));
    }
    let create_parents = cheng_node::input::boolean(input, port(&SPEC, "create_parents")?)?;
    let policy = PathPolicy::new(ctx.workspace.clone(), Vec::new());
    let target = policy.resolve(rel, "file_path", Access::Write)?;
    let display = target.display.clone();
    let fs = files::workspace_fs(&ctx.workspace)?;
    let existing = files::load(&fs, &target.real, &display, "file_path", MAX_EDIT_BYTES)?;
    if existing.is_none() {
        files::parent_exists(&fs, &target, create_parents)?;
    }
    let mut warnings = Vec::new();
    let (old, format) = match existing {
        Some(loaded) => {
            ledger.check(&target.real, &display, &loaded.tag)?;
            match Editable::decode(&loaded.bytes) {
                Ok(editable) => {
                    let text = editable.text.clone();
                    (Some((loaded, text)), editable)
                }
                Err(e) => {
                    warnings.push(format!("{display} {e}; it is replaced by UTF-8 text"));
                    let text = String::from_utf8_lossy(&loaded.bytes).into_owned();
                    (Some((loaded, text)), Editable::new_file(String::new()))
                }
            }
        }
        None => (None, Editable::new_file(String::new())),
    };
    let new_text = format.normalise_input(content).into_owned();
    let new_bytes = format
        .encode(&new_text)
        .map_err(|e| files::encode_error(&display, e))?;
    let verdict = crate::syntax::gate(
        &target.real,
        &display,
        old.as_ref().map(|(_, t)| t.as_str()),
        &new_text,
    )?;
    Ok(Plan {
        target,
        old,
        new_text,
        new_bytes,
        verdict,
        warnings,
        create_parents,
    })
}
