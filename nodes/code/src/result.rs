//! The result limit shared by the script executors.
//!
//! A script's `result` becomes part of the node's output object, which cheng holds in memory,
//! writes to the terminal or hands to an agent. Streams are truncated head+tail, but a result
//! cannot be cut without changing its meaning, so one that is too large is refused with
//! `LOCAL_EXECUTOR_OUTPUT_LIMIT` instead.
//!
//! The limit is a documented constant rather than a port: the reference page's port tables have no such
//! field, and a value an agent could raise would defeat the point (cheng's own memory). Output
//! that is legitimately large belongs in a file in the workspace (code_python with
//! `allow_filesystem`) or in several smaller runs.

/// The largest result, in bytes of its JSON text, a script executor returns (16 MiB).
pub const RESULT_LIMIT_BYTES: usize = 16 << 20;

/// The limit as people read it.
pub const RESULT_LIMIT_HUMAN: &str = "16 MiB";
const _: () = assert!(
    RESULT_LIMIT_BYTES == 16 * 1024 * 1024,
    "RESULT_LIMIT_HUMAN names 16 MiB"
);

/// The error for a result past the limit. `size` says what is known of its size (e.g. "its
/// JSON is 419430400 bytes"); `remedy` what the script can do instead.
pub fn too_large(size: &str, remedy: &str) -> String {
    format!("the result is larger than the {RESULT_LIMIT_HUMAN} result limit ({size}); {remedy}")
}
