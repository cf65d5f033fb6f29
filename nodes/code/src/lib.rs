//! Code executors: `tools/code_shell` (bubblewrap, always registered), `tools/code_python`
//! (feature `python`, registered when CHENG_ENABLE_CODE_PYTHON is set) and `tools/code_js`
//! (feature `js`, QuickJS in a jailed worker process, registered when CHENG_ENABLE_CODE_JS is set).

#![forbid(unsafe_code)]

#[cfg(feature = "js")]
pub mod js;
mod ports;
#[cfg(feature = "python")]
pub mod python;
pub mod result;
pub mod sandboxed;
pub mod shell;
