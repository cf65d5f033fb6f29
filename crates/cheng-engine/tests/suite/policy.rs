//! The operator's policy as an engine value: capabilities a node declares on its ports are
//! decided by it (a capability it does not name is refused), and each engine's nodes see that
//! engine's policy and no other.

use super::nodes::*;
use cheng_engine::{Engine, NodeStatus, ValidationErrorKind};
use cheng_node::capability::{Capability, Kind, Setting};
use cheng_node::policy::Policy;
use cheng_node::*;
use serde_json::{json, Value};

/// A capability no policy knows of until its file names it: an agent requests it per run.
const GPU: Capability = Capability {
    name: "the GPU",
    key: "allow_gpu",
    opens: "the host's GPU (any kernel it runs)",
    kind: Kind::Request,
    open_world: false,
};

/// One the node's author switches on.
const MOUNTS: Capability = Capability {
    name: "host mounts",
    key: "host_mounts",
    opens: "mounting host directories",
    kind: Kind::Switch,
    open_world: false,
};

/// Declares both made-up capabilities; reports what it received and the shell_syntax setting of
/// the policy its context carries.
struct Gpu;
static GPU_SPEC: NodeSpec = NodeSpec {
    id: "test/gpu",
    title: "GPU",
    description: "Declares made-up capabilities.",
    category: "test",
    inputs: &[
        PortSpec::input("allow_gpu", PortType::Boolean, "Use the GPU")
            .default("false")
            .audience(Audience::Capped)
            .capability(&GPU),
        PortSpec::input("mounts", PortType::Array(&PortType::String), "Host mounts")
            .default("[]")
            .audience(Audience::Author)
            .capability(&MOUNTS),
    ],
    outputs: &[
        PortSpec::output("seen", PortType::Object, "The input as received"),
        PortSpec::output(
            "shell_syntax",
            PortType::String,
            "The run's policy's setting",
        ),
    ],
    gate: None,
    effects: Effects::ReadOnly,
};

#[async_trait]
impl Node for Gpu {
    fn spec(&self) -> &'static NodeSpec {
        &GPU_SPEC
    }
    async fn run(&self, ctx: &RunContext, input: Values) -> Result<Values, NodeError> {
        // Long enough that two engines' runs overlap.
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        let (setting, _) = ctx.policy().setting(ctx.node_type, "shell_syntax");
        Ok(obj(json!({
            "seen": Value::Object(input),
            "shell_syntax": setting.as_str(),
        })))
    }
}

fn engine_under(policy: &str) -> Engine {
    let policy = match Policy::from_toml_str(policy, "/test/policy.toml") {
        Ok(policy) => policy,
        Err(e) => panic!("{e}"),
    };
    assert!(policy.check_names([&GPU_SPEC]).is_ok());
    Engine::new(Registry::new().with(Gpu), policy)
}

fn one(node: Value) -> Value {
    json!({"version": 1, "nodes": [node]})
}

#[test]
fn a_made_up_capability_is_refused_by_default_and_allowed_once_the_policy_names_it() {
    // The built-in policy does not know allow_gpu: an agent's request is refused at validation,
    // naming the capability and the key that would allow it, and nobody is asked.
    let builtin = Engine::new(Registry::new().with(Gpu), Policy::builtin());
    let request = one(json!({"id": "g", "type": "test/gpu", "inputs": {"allow_gpu": true}}));
    let errors = errors_of(&builtin, request.clone());
    let e = only(&errors, ValidationErrorKind::AboveCap);
    assert!(
        e.message.contains("`allow_gpu`")
            && e.message.contains("does not name")
            && e.message.contains("allow_gpu = true or \"ask\"")
            && e.message.contains("[nodes.\"test/gpu\"]"),
        "{}",
        e.message
    );
    // An author cannot grant it either, nor switch on the made-up author capability.
    let granted = one(json!({"id": "g", "type": "test/gpu", "config": {"allow_gpu": true}}));
    let e = errors_of(&builtin, granted.clone());
    assert!(e[0].message.contains("does not name"), "{e:?}");
    let mounts = one(json!({"id": "g", "type": "test/gpu", "config": {"mounts": ["/srv"]}}));
    let e = errors_of(&builtin, mounts.clone());
    assert!(e[0].message.contains("host_mounts = true"), "{e:?}");
    // Not using them is fine (the positive control: the node itself runs).
    let (_dir, options) = workspace();
    let result = run(
        &builtin,
        one(json!({"id": "g", "type": "test/gpu"})),
        options,
    );
    assert_eq!(result.node("g").unwrap().status, NodeStatus::Succeeded);

    // Once the operator names it "ask", the request goes on the run's card with what it opens,
    // and runs when a person approves.
    let asking = engine_under("[nodes.\"test/gpu\"]\nallow_gpu = \"ask\"\n");
    let approver = Recording::new(Decision::Approved);
    let (_dir, options) = workspace();
    let result = run(&asking, request.clone(), options.approver(approver.clone()));
    let g = result.node("g").unwrap();
    assert_eq!(g.status, NodeStatus::Succeeded, "{:?}", g.outputs);
    assert_eq!(g.outputs["seen"]["allow_gpu"], true);
    let cards = approver.requests();
    assert_eq!(cards.len(), 1);
    assert_eq!(cards[0].capabilities[0].name, "allow_gpu");
    assert_eq!(cards[0].capabilities[0].opens, GPU.opens);
    // Denied: nothing ran, and the message names the port and what it opens.
    let (_dir, options) = workspace();
    let result = run(
        &asking,
        request.clone(),
        options.approver(Recording::new(Decision::Denied)),
    );
    let g = result.node("g").unwrap();
    assert_eq!(g.outputs["error_kind"], "LOCAL_EXECUTOR_APPROVAL_DENIED");
    assert!(
        g.outputs["error"]
            .as_str()
            .is_some_and(|e| e.contains("allow_gpu=true (the host's GPU")),
        "{:?}",
        g.outputs
    );

    // Named true: the author may grant it without asking, and the author's switch is allowed.
    let open = engine_under("[all]\nallow_gpu = true\nhost_mounts = true\n");
    let approver = Recording::new(Decision::Denied);
    let (_dir, options) = workspace();
    let graph = json!({"version": 1, "nodes": [
        {"id": "g", "type": "test/gpu", "config": {"allow_gpu": true, "mounts": ["/srv"]}, "inputs": {"allow_gpu": true}}]});
    let result = run(&open, graph, options.approver(approver.clone()));
    let g = result.node("g").unwrap();
    assert_eq!(g.status, NodeStatus::Succeeded, "{:?}", g.outputs);
    assert_eq!(g.outputs["seen"]["mounts"], json!(["/srv"]));
    assert!(approver.requests().is_empty());
    // A policy can still refuse what it names.
    let closed = engine_under("[all]\nallow_gpu = false\n");
    let e = errors_of(&closed, request);
    assert!(
        e[0].message.contains("above the operator's limit false"),
        "{e:?}"
    );
}

#[test]
fn two_engines_in_one_process_each_run_under_their_own_policy() {
    let strict = engine_under("[all]\nshell_syntax = false\n");
    let open = engine_under("[all]\nshell_syntax = true\nallow_gpu = true\n");
    assert_eq!(
        strict.policy().setting("test/gpu", "shell_syntax").0,
        Setting::Deny
    );
    // Validation: the same graph is refused by one and accepted by the other.
    let granted = one(json!({"id": "g", "type": "test/gpu", "config": {"allow_gpu": true}}));
    assert!(strict.validate(&graph(granted.clone())).is_err());
    let validated_open = match open.validate(&graph(granted)) {
        Ok(v) => v,
        Err(e) => panic!("{e:?}"),
    };
    let validated_strict =
        match strict.validate(&graph(one(json!({"id": "g", "type": "test/gpu"})))) {
            Ok(v) => v,
            Err(e) => panic!("{e:?}"),
        };
    // Run at the same time: each node reads its own engine's policy from its context.
    let (_a, options_a) = workspace();
    let (_b, options_b) = workspace();
    let (a, b) = runtime().block_on(async {
        tokio::join!(
            strict.run(&validated_strict, options_a),
            open.run(&validated_open, options_b)
        )
    });
    assert_eq!(a.node("g").unwrap().outputs["shell_syntax"], "false");
    assert_eq!(b.node("g").unwrap().outputs["shell_syntax"], "true");
    assert_eq!(b.node("g").unwrap().outputs["seen"]["allow_gpu"], true);
    // A third engine built afterwards under the built-in policy is unaffected by both.
    let builtin = Engine::new(Registry::new().with(Gpu), Policy::builtin());
    let (_c, options) = workspace();
    let c = run(
        &builtin,
        one(json!({"id": "g", "type": "test/gpu"})),
        options,
    );
    assert_eq!(c.node("g").unwrap().outputs["shell_syntax"], "false");
    assert!(builtin
        .validate(&graph(one(
            json!({"id": "g", "type": "test/gpu", "config": {"allow_gpu": true}})
        )))
        .is_err());
}

#[test]
fn a_node_asks_its_context_whether_a_capability_is_allowed() {
    let ctx = RunContext::for_workspace("test/gpu", std::env::temp_dir(), Decision::Denied);
    let e = match ctx.require_capability(&capability::SHELL_SYNTAX) {
        Err(e) => e,
        Ok(()) => panic!("the built-in policy allowed raw shell syntax"),
    };
    assert_eq!(e.kind, ErrorKind::PolicyDenied);
    assert!(e.message.contains("shell_syntax = true"), "{}", e.message);
    let unknown = ctx.require_capability(&MOUNTS);
    assert!(
        unknown.is_err_and(|e| e.message.contains("does not name")),
        "a capability nobody named was allowed"
    );
    let policy = Policy::from_toml_str("[all]\nshell_syntax = true\n", "/p.toml");
    let ctx = ctx.under(std::sync::Arc::new(policy.unwrap_or_default()));
    assert!(ctx.require_capability(&capability::SHELL_SYNTAX).is_ok());
}
