//! Port specs the code executors share, so a port that means the same on two nodes reads the
//! same on both (the python and js reference tables word their outputs identically; shell and python
//! share working_subdir and request_read_paths). The failure outputs are `cheng_node::failure`'s.

use cheng_node::{capability, Audience, Control, PortSpec, PortType};

// The sandboxed executors' ports, each in its node's own words (the reference tables word the
// same port differently per node, and port descriptions are taken from them verbatim).

/// `input`: the JSON value handed to the script.
pub const fn input(description: &'static str) -> PortSpec {
    PortSpec::input("input", PortType::Any, description).default("null")
}

/// `script`: the program, required.
pub const fn script(description: &'static str) -> PortSpec {
    PortSpec::input("script", PortType::String, description)
        .default("null")
        .required()
        .control(Control::CodeEditor)
}

/// A capped switch that is off unless granted: `allow_filesystem`, `allow_network`, ...
pub const fn switch(
    name: &'static str,
    description: &'static str,
    capability: &'static capability::Capability,
) -> PortSpec {
    PortSpec::input(name, PortType::Boolean, description)
        .default("false")
        .audience(Audience::Capped)
        .control(Control::Switch)
        .capability(capability)
}

/// A capped integer limit with its default and bounds: `timeout_ms`, `memory_mb`.
pub const fn limit(
    name: &'static str,
    description: &'static str,
    default: &'static str,
    (min, max): (i64, i64),
) -> PortSpec {
    PortSpec::input(name, PortType::Integer, description)
        .default(default)
        .min(min)
        .max(max)
        .audience(Audience::Capped)
        .control(Control::Number)
}

pub const WORKING_SUBDIR: PortSpec = PortSpec::input(
    "working_subdir",
    PortType::String,
    "Relative working subdirectory inside the execution boundary (e.g. project-alpha). Only sets the process cwd; cannot widen filesystem access.",
)
.default("null");

pub const REQUEST_READ_PATHS: PortSpec = PortSpec::input(
    "request_read_paths",
    PortType::Array(&PortType::String),
    "Absolute host paths outside the sandbox to request, read-only (e.g. /home/me/project). Each path needs a person's approval for this execution; approved paths are mounted read-only. Use only when the script must read files the sandbox cannot see.",
)
.default("[]");

/// The reference outputs of tools/code_python and tools/code_js (identical in both tables).
#[cfg(any(feature = "python", feature = "js"))]
pub const SCRIPT_OUTPUTS: [PortSpec; 6] = [
    PortSpec::output("result", PortType::Any, "The result the script returns"),
    PortSpec::output(
        "isolation_level",
        PortType::String,
        "Isolation level actually used at run time: bubblewrap, quickjs, python, shell or container",
    ),
    PortSpec::output("metrics", PortType::Object, "Runtime execution metrics"),
    PortSpec::output("stdout", PortType::String, "Standard output stream"),
    PortSpec::output("stderr", PortType::String, "Standard error stream"),
    PortSpec::output("warnings", PortType::Array(&PortType::String), "Validation warnings produced before execution"),
];
