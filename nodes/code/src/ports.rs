//! Port specs the code executors share, so a port that means the same on two nodes reads the
//! same on both (the python and js reference tables word their outputs identically; shell and python
//! share working_subdir and request_read_paths). The failure outputs are `cheng_node::failure`'s.

use cheng_node::{PortSpec, PortType};

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
