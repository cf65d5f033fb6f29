//! The primitives cheng's process layer and its node API share, with no dependency on either:
//! live output handles ([`output`]), bounded text and human-readable sizes ([`text`]), and the
//! stable failure classes ([`error`]). `cheng-node` re-exports each at its old path
//! (`cheng_node::text`, `cheng_node::Output`, `cheng_node::ErrorKind`), so `cheng-exec` runs
//! processes without depending on the node API.

pub mod error;
pub mod output;
pub mod text;

pub use error::{ErrorKind, InvalidInput};
pub use output::{Output, OutputSink, OutputStream};
