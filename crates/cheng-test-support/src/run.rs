//! Running a node as the engine would, outside the engine.

use cheng_node::{Decision, Node, NodeError, RunContext, Values};
use serde_json::Value;
use std::path::Path;

/// `input` with the spec's defaults filled in and `sandbox_root` set to `root`, as the engine
/// passes a node its values.
pub fn with_defaults(node: &dyn Node, root: &Path, input: Value) -> Values {
    let mut values = input.as_object().cloned().unwrap_or_default();
    for port in node.spec().inputs {
        if !values.contains_key(port.name) {
            if let Some(default) = port.default_value() {
                values.insert(port.name.to_string(), default);
            }
        }
    }
    values.insert(
        "sandbox_root".into(),
        Value::String(root.display().to_string()),
    );
    values
}

/// Runs `node` on `root` the way the engine does (defaults applied, `sandbox_root` set) on a
/// runtime of its own, refusing any approval it asks for.
pub fn run_denied(node: &dyn Node, root: &Path, input: Value) -> Result<Values, NodeError> {
    let ctx = RunContext::for_workspace(node.spec().id, root.to_path_buf(), Decision::Denied);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(node.run(&ctx, with_defaults(node, root, input)))
}
