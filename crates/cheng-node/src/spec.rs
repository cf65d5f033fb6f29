//! Declarative node and port specifications.
//!
//! Specs are `'static` tables so that a node's contract can be read (listed, rendered to JSON
//! Schema, documented, validated against) without running anything.

/// A node type: what it is called, what it takes, what it returns and what it may do.
#[derive(Debug)]
pub struct NodeSpec {
    /// Public, stable id such as `tools/workspace_shell`. Never renamed.
    pub id: &'static str,
    pub title: &'static str,
    /// The reference page's one-paragraph description.
    pub description: &'static str,
    /// Palette group: "workspace", "code", "runtime".
    pub category: &'static str,
    pub inputs: &'static [PortSpec],
    pub outputs: &'static [PortSpec],
    /// Environment variable that must be set for the node to be registered at all.
    pub gate: Option<&'static str>,
    pub effects: Effects,
}

impl NodeSpec {
    pub fn input(&self, name: &str) -> Option<&'static PortSpec> {
        self.inputs.iter().find(|p| p.name == name)
    }

    pub fn output(&self, name: &str) -> Option<&'static PortSpec> {
        self.outputs.iter().find(|p| p.name == name)
    }

    /// What is wrong with this spec, one sentence each (empty when nothing): an engine port the
    /// engine does not fill, a default that is not valid JSON or that validation would refuse
    /// (other than `""`, the reference pages' "nothing chosen"),
    /// a failure output declared with the wrong type or wording. Registration tests assert it is
    /// empty for every linked node.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        for port in self.inputs {
            if port.audience == Audience::Engine
                && crate::engine_ports::EnginePort::from_name(port.name).is_none()
            {
                problems.push(format!(
                    "{}: engine port `{}` is not one the engine fills",
                    self.id, port.name
                ));
            }
            if let Some(problem) = capability_problem(port) {
                problems.push(format!("{}: {problem}", self.id));
            }
            match (port.default, port.default_value()) {
                (Some(text), None) => problems.push(format!(
                    "{}: default of `{}` is not JSON: {text}",
                    self.id, port.name
                )),
                // `""` is the reference pages' "nothing chosen" for an operation; the node names the choices.
                (_, Some(value)) if !value.is_null() && value != "" => {
                    if let Err(message) = crate::check::check_value(port, &value) {
                        problems.push(format!(
                            "{}: default of `{}` fails its own spec: {message}",
                            self.id, port.name
                        ));
                    }
                }
                _ => {}
            }
        }
        for port in self.outputs {
            if let Err(message) = crate::failure::declared_as(port) {
                problems.push(format!("{}: {message}", self.id));
            }
        }
        problems
    }

    /// The last path segment of the id, used for file names: `workspace_shell`.
    pub fn short_name(&self) -> &'static str {
        self.id.rsplit('/').next().unwrap_or(self.id)
    }
}

/// What is wrong with a port's capability: a capped switch without one (the operator could not
/// decide it), or one on a port its kind does not fit.
fn capability_problem(port: &PortSpec) -> Option<String> {
    use crate::capability::Kind;
    let name = port.name;
    let switch = port.audience == Audience::Capped && port.ty == PortType::Boolean;
    match port.capability.map(|c| c.kind) {
        None if switch => Some(format!(
            "capped switch `{name}` declares no capability; the operator's policy could not decide it"
        )),
        Some(Kind::Request) if !switch => Some(format!(
            "`{name}` declares a capability an agent requests, which needs a capped boolean port"
        )),
        Some(Kind::Switch) if port.audience != Audience::Author => Some(format!(
            "`{name}` declares a capability its author switches on, which needs an author port"
        )),
        _ => None,
    }
}

/// What running a node may do to the machine; drives approval and client hints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effects {
    /// Never changes anything; runs without approval.
    ReadOnly,
    /// Runs sandboxed; approval is asked only for what leaves the sandbox (e.g. extra read paths).
    Sandboxed,
    /// A person must approve each run that matches the rule.
    Approval(ApprovalRule),
    /// Changes the workspace's files: approved like [`Effects::Approval`], and never run while
    /// another `Serial` node runs on the same workspace (the engine holds a per-workspace lock
    /// from the decided approval card to the end of `run`, across graph runs and server calls
    /// alike; `run` checks its card's `basis` under it).
    Serial(ApprovalRule),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalRule {
    /// Every run.
    Always,
    /// Runs whose `operation` input is one of these (e.g. workspace_tests `run`).
    Operations(&'static [&'static str]),
    /// Runs whose boolean input of this name is `true`: an author switch such as notes_write's
    /// `notes_write_sensitive` (the author decides whether a person is asked).
    Switch(&'static str),
}

impl Effects {
    /// Whether a run with this (validated, defaulted) input must be approved first.
    pub fn requires_approval(&self, input: &serde_json::Map<String, serde_json::Value>) -> bool {
        match self {
            Effects::ReadOnly | Effects::Sandboxed => false,
            Effects::Approval(ApprovalRule::Always) | Effects::Serial(ApprovalRule::Always) => true,
            Effects::Approval(ApprovalRule::Operations(ops))
            | Effects::Serial(ApprovalRule::Operations(ops)) => input
                .get("operation")
                .and_then(|v| v.as_str())
                .is_some_and(|op| ops.contains(&op)),
            Effects::Approval(ApprovalRule::Switch(port))
            | Effects::Serial(ApprovalRule::Switch(port)) => {
                input.get(*port).and_then(|v| v.as_bool()) == Some(true)
            }
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Effects::ReadOnly => "read-only".to_string(),
            Effects::Sandboxed => "sandboxed (approval for paths outside the sandbox)".to_string(),
            Effects::Approval(ApprovalRule::Always) => "approval-gated (every run)".to_string(),
            Effects::Approval(ApprovalRule::Operations(ops)) => {
                format!("approval-gated (operation: {})", ops.join(", "))
            }
            Effects::Approval(ApprovalRule::Switch(port)) => {
                format!("approval-gated (when {port} is true)")
            }
            Effects::Serial(ApprovalRule::Always) => {
                "approval-gated (every run), one at a time per workspace".to_string()
            }
            Effects::Serial(ApprovalRule::Switch(port)) => {
                format!("approval-gated (when {port} is true), one at a time per workspace")
            }
            Effects::Serial(ApprovalRule::Operations(ops)) => {
                format!(
                    "approval-gated (operation: {}), one at a time per workspace",
                    ops.join(", ")
                )
            }
        }
    }

    /// Whether the engine runs this node only while no other serial node runs on the workspace.
    pub fn serial(&self) -> bool {
        matches!(self, Effects::Serial(_))
    }
}

/// The JSON type of a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortType {
    String,
    Integer,
    Boolean,
    Object,
    Any,
    Array(&'static PortType),
    /// A string restricted to these values (the reference page's `enum` type).
    Enum(&'static [&'static str]),
}

impl PortType {
    /// The reference-table spelling: `string`, `array<string>`, `enum`.
    pub fn display(&self) -> String {
        match self {
            PortType::String => "string".into(),
            PortType::Integer => "integer".into(),
            PortType::Boolean => "boolean".into(),
            PortType::Object => "object".into(),
            PortType::Any => "any".into(),
            PortType::Array(elem) => format!("array<{}>", elem.display()),
            PortType::Enum(_) => "enum".into(),
        }
    }

    /// Whether `value` has this type. `null` is handled by the caller (it means "unset").
    pub fn accepts(&self, value: &serde_json::Value) -> bool {
        use serde_json::Value;
        match (self, value) {
            (PortType::Any, _) => true,
            (PortType::String, Value::String(_)) => true,
            (PortType::Integer, Value::Number(n)) => n.is_i64() || n.is_u64(),
            (PortType::Boolean, Value::Bool(_)) => true,
            (PortType::Object, Value::Object(_)) => true,
            (PortType::Array(elem), Value::Array(items)) => items.iter().all(|v| elem.accepts(v)),
            (PortType::Enum(values), Value::String(s)) => values.contains(&s.as_str()),
            _ => false,
        }
    }
}

/// Who may set a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    /// Agents (and canvases) may fill it: part of the LLM-facing input schema.
    Llm,
    /// Only the node's author, in the node's config on the canvas.
    Author,
    /// An agent may request it in input; honoured only up to what the author's config allows.
    Capped,
    /// Filled only by the engine (e.g. `sandbox_root`); rejected from input and config.
    Engine,
}

impl Audience {
    pub fn as_str(&self) -> &'static str {
        match self {
            Audience::Llm => "llm",
            Audience::Author => "author",
            Audience::Capped => "capped",
            Audience::Engine => "engine",
        }
    }
}

/// The widget a canvas draws for a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    Switch,
    Textarea,
    CodeEditor,
    Number,
    Select,
}

impl Control {
    pub fn as_str(&self) -> &'static str {
        match self {
            Control::Switch => "switch",
            Control::Textarea => "textarea",
            Control::CodeEditor => "code-editor",
            Control::Number => "number",
            Control::Select => "select",
        }
    }
}

/// One input or output port.
#[derive(Debug, Clone, Copy)]
pub struct PortSpec {
    pub name: &'static str,
    pub ty: PortType,
    pub required: bool,
    /// JSON text of the default, verbatim from the reference table (`""`, `[]`, `null`, `5000`).
    pub default: Option<&'static str>,
    pub min: Option<i64>,
    pub max: Option<i64>,
    /// Allowed values for a string port (rendered as a JSON Schema `enum`).
    pub choices: Option<&'static [&'static str]>,
    pub description: &'static str,
    pub audience: Audience,
    pub control: Option<Control>,
    /// What setting this port opens beyond the node's defaults, decided by the operator's
    /// policy (see [`crate::capability`]).
    pub capability: Option<&'static crate::capability::Capability>,
    /// The fields an object port takes, where the reference names them (a canvas draws a
    /// widget for each).
    pub fields: &'static [Field],
}

/// One field of an object port.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    pub name: &'static str,
    pub ty: PortType,
    pub description: &'static str,
}

impl Field {
    pub const fn new(name: &'static str, ty: PortType, description: &'static str) -> Field {
        Field {
            name,
            ty,
            description,
        }
    }
}

impl PortSpec {
    /// An input port filled by agents, with no default; refine with the builder methods.
    pub const fn input(name: &'static str, ty: PortType, description: &'static str) -> Self {
        PortSpec {
            name,
            ty,
            required: false,
            default: None,
            min: None,
            max: None,
            choices: None,
            description,
            audience: Audience::Llm,
            control: None,
            capability: None,
            fields: &[],
        }
    }

    /// An output port.
    pub const fn output(name: &'static str, ty: PortType, description: &'static str) -> Self {
        Self::input(name, ty, description)
    }

    /// The engine-injected `sandbox_root` port every workspace-bound node declares (rendered from
    /// `RunContext::workspace`, see `engine_ports`).
    pub const fn sandbox_root() -> Self {
        Self::input(
            "sandbox_root",
            PortType::String,
            "Server-local sandbox root directory (engine-injected; not for LLM)",
        )
        .default("null")
        .audience(Audience::Engine)
    }

    pub const fn required(mut self) -> Self {
        self.required = true;
        self
    }
    pub const fn default(mut self, json: &'static str) -> Self {
        self.default = Some(json);
        self
    }
    pub const fn min(mut self, min: i64) -> Self {
        self.min = Some(min);
        self
    }
    pub const fn max(mut self, max: i64) -> Self {
        self.max = Some(max);
        self
    }
    pub const fn choices(mut self, values: &'static [&'static str]) -> Self {
        self.choices = Some(values);
        self
    }
    pub const fn audience(mut self, audience: Audience) -> Self {
        self.audience = audience;
        self
    }
    pub const fn control(mut self, control: Control) -> Self {
        self.control = Some(control);
        self
    }
    pub const fn fields(mut self, fields: &'static [Field]) -> Self {
        self.fields = fields;
        self
    }
    /// Declares the capability this port opens: the engine checks it against the operator's
    /// policy, and an `"ask"` goes on the run's approval card.
    pub const fn capability(mut self, capability: &'static crate::capability::Capability) -> Self {
        self.capability = Some(capability);
        self
    }

    /// The default parsed as JSON (`None` when the spec has none or it is not valid JSON).
    pub fn default_value(&self) -> Option<serde_json::Value> {
        self.default.and_then(|d| serde_json::from_str(d).ok())
    }

    /// Whether an agent may fill this port in `inputs`.
    pub fn agent_visible(&self) -> bool {
        matches!(self.audience, Audience::Llm | Audience::Capped)
    }

    /// Whether the node's author may set this port in `config`.
    pub fn author_settable(&self) -> bool {
        matches!(self.audience, Audience::Author | Audience::Capped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn array_types_check_their_elements() {
        let ty = PortType::Array(&PortType::String);
        assert!(ty.accepts(&json!(["a", "b"])));
        assert!(!ty.accepts(&json!(["a", 1])));
        assert_eq!(ty.display(), "array<string>");
    }

    #[test]
    fn integers_reject_floats() {
        assert!(PortType::Integer.accepts(&json!(5)));
        assert!(!PortType::Integer.accepts(&json!(5.5)));
    }

    #[test]
    fn operation_rule_matches_only_listed_operations() {
        let effects = Effects::Approval(ApprovalRule::Operations(&["run"]));
        let run = json!({"operation": "run"});
        let detect = json!({"operation": "detect"});
        assert!(effects.requires_approval(run.as_object().unwrap()));
        assert!(!effects.requires_approval(detect.as_object().unwrap()));
    }

    #[test]
    fn switch_rule_asks_only_when_the_switch_is_true() {
        let effects = Effects::Approval(ApprovalRule::Switch("sensitive"));
        for (input, asks) in [
            (json!({"sensitive": true}), true),
            (json!({"sensitive": false}), false),
            (json!({"sensitive": "true"}), false),
            (json!({}), false),
        ] {
            assert_eq!(
                effects.requires_approval(input.as_object().unwrap()),
                asks,
                "{input}"
            );
        }
        assert_eq!(
            effects.describe(),
            "approval-gated (when sensitive is true)"
        );
    }

    #[test]
    fn problems_name_unknown_engine_ports_bad_defaults_and_failure_ports() {
        static BAD: NodeSpec = NodeSpec {
            id: "test/bad",
            title: "Bad",
            description: "",
            category: "test",
            inputs: &[
                PortSpec::sandbox_root(),
                PortSpec::input("secret_root", PortType::String, "").audience(Audience::Engine),
                PortSpec::input("timeout_ms", PortType::Integer, "")
                    .default("0")
                    .min(1),
                PortSpec::input("mode", PortType::String, "").default("nope"),
            ],
            outputs: &[
                PortSpec::output("terminal", PortType::String, ""),
                PortSpec::output("error_kind", PortType::String, "my own words"),
            ],
            gate: None,
            effects: Effects::ReadOnly,
        };
        let problems = BAD.problems();
        assert_eq!(problems.len(), 5, "{problems:#?}");
        assert!(
            problems[0].contains("engine port `secret_root`"),
            "{}",
            problems[0]
        );
        assert!(
            problems[1].contains("`timeout_ms` fails its own spec"),
            "{}",
            problems[1]
        );
        assert!(
            problems[2].contains("`mode` is not JSON"),
            "{}",
            problems[2]
        );
        assert!(
            problems[3].contains("`terminal` must be boolean"),
            "{}",
            problems[3]
        );
        assert!(
            problems[4].contains("`error_kind` must use"),
            "{}",
            problems[4]
        );
    }

    #[test]
    fn capability_ports_must_fit_their_capability() {
        use crate::capability::{NETWORK, SHELL_SYNTAX};
        static SPEC: NodeSpec = NodeSpec {
            id: "test/caps",
            title: "Caps",
            description: "",
            category: "test",
            inputs: &[
                // A capped switch the operator could not decide.
                PortSpec::input("allow_x", PortType::Boolean, "").audience(Audience::Capped),
                // A request capability on an author port, a switch one on a capped port.
                PortSpec::input("allow_y", PortType::Boolean, "")
                    .audience(Audience::Author)
                    .capability(&NETWORK),
                PortSpec::input("allow_z", PortType::Boolean, "")
                    .audience(Audience::Capped)
                    .capability(&SHELL_SYNTAX),
                // Both fit (the control).
                PortSpec::input("allow_network", PortType::Boolean, "")
                    .audience(Audience::Capped)
                    .capability(&NETWORK),
                PortSpec::input("allow_shell_string", PortType::Boolean, "")
                    .audience(Audience::Author)
                    .capability(&SHELL_SYNTAX),
            ],
            outputs: &[],
            gate: None,
            effects: Effects::ReadOnly,
        };
        let problems = SPEC.problems();
        assert_eq!(problems.len(), 3, "{problems:#?}");
        for (problem, port) in problems.iter().zip(["allow_x", "allow_y", "allow_z"]) {
            assert!(problem.contains(&format!("`{port}`")), "{problem}");
        }
    }

    #[test]
    fn every_reference_default_parses() {
        for text in ["\"\"", "[]", "null", "{}", "false", "5000"] {
            let port = PortSpec::input("x", PortType::Any, "").default(text);
            assert!(port.default_value().is_some(), "{text}");
        }
    }
}
