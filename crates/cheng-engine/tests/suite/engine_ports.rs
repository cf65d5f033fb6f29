//! Engine ports: rendered from the run's context, and a spec declaring one the engine does not
//! know is refused instead of running with it silently unset.

use super::nodes::*;
use cheng_engine::{Engine, ValidationErrorKind};
use cheng_node::*;
use serde_json::json;

/// Declares `sandbox_root` and an engine port no engine fills.
struct Unknown;
static UNKNOWN: NodeSpec = NodeSpec {
    id: "test/unknown_engine_port",
    title: "Unknown engine port",
    description: "Declares an engine port the engine does not know.",
    category: "test",
    inputs: &[
        PortSpec::sandbox_root(),
        PortSpec::input("secret_root", PortType::String, "Never filled").audience(Audience::Engine),
    ],
    outputs: &[PortSpec::output(
        "seen",
        PortType::Object,
        "The input as received",
    )],
    gate: None,
    effects: Effects::ReadOnly,
};

#[async_trait]
impl Node for Unknown {
    fn spec(&self) -> &'static NodeSpec {
        &UNKNOWN
    }
    async fn run(&self, _ctx: &RunContext, input: Values) -> Result<Values, NodeError> {
        Ok(Values::from_iter([(
            "seen".to_string(),
            serde_json::Value::Object(input),
        )]))
    }
}

#[test]
fn an_engine_port_the_engine_does_not_fill_is_refused_at_validation() {
    let engine = Engine::new(
        registry().with(Unknown),
        cheng_node::policy::Policy::builtin(),
    );
    let errs = errors_of(
        &engine,
        json!({"version": 1, "nodes": [{"id": "u", "type": "test/unknown_engine_port"}]}),
    );
    let err = only(&errs, ValidationErrorKind::UnknownPort);
    assert_eq!(err.port.as_deref(), Some("secret_root"));
    assert!(err.message.contains("does not fill"), "{}", err.message);
    assert_eq!(UNKNOWN.problems().len(), 1, "{:?}", UNKNOWN.problems());
}

#[test]
fn an_unknown_engine_port_is_never_silently_unfilled_when_injected() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = RunContext::for_workspace(UNKNOWN.id, dir.path().to_path_buf(), Decision::Denied);
    let mut input = Values::new();
    let err = ctx.inject_engine_ports(&UNKNOWN, &mut input).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Internal);
    assert!(err.message.contains("secret_root"), "{}", err.message);
}

#[test]
fn the_injected_root_is_the_context_workspace() {
    let (_dir, options) = workspace();
    let expected = options.workspace.display().to_string();
    let result = run(
        &engine(),
        json!({"version": 1, "nodes": [{"id": "e", "type": "test/echo"}]}),
        options,
    );
    assert_eq!(
        result.node("e").unwrap().outputs["seen"]["sandbox_root"],
        expected
    );
}

#[test]
fn run_options_refuse_a_file_and_a_missing_path_like_the_nodes_do() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("file"), "x").unwrap();
    let err = cheng_engine::RunOptions::new(dir.path().join("file"))
        .err()
        .expect("a file is no workspace");
    assert_eq!(err.kind(), std::io::ErrorKind::NotADirectory);
    assert!(err.to_string().contains("is not a directory"), "{err}");
    let err = cheng_engine::RunOptions::new(dir.path().join("nope"))
        .err()
        .expect("missing");
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
}
