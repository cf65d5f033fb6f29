//! `tools/web_fetch` (ChengOS's agent-tools reference): fetch one page for a model to read. The
//! reference names the problem it solves: a model that can only `curl` a page gets tens of
//! kilobytes of `<script>` and no text within its output limit. So: fetch, let Content-Type
//! decide, reduce HTML to readable text, in one step.
//!
//! - [`fetch`]: the hops. Every hop's host goes through the operator's and the author's host
//!   rules (cheng_net) before it is looked up, and its addresses after; the connection goes to
//!   the addresses checked, never to a second lookup. Redirects are followed by hand, each
//!   checked the same way; the body is counted as it is read, never trusting Content-Length.
//! - [`content`]: what the model is shown of a body, by its Content-Type.

pub mod content;
pub mod fetch;
mod web_fetch;

pub use web_fetch::{WebFetch, SPEC};
