//! Which hosts a run may reach: the rules every network path of cheng is meant to go through
//! (the sandbox's filtering proxy and `tools/web_fetch`). The rules are kept apart from any I/O so
//! that the decision can be tested on its own; the only I/O here is the one name lookup.
//!
//! - [`HostPattern`]: one rule as an operator or author writes it: `example.com`, `*.pypi.org`,
//!   `host:443`, `10.0.0.5`, `10.0.0.0/8`, `[::1]:5432`.
//! - [`special_range`]: the addresses no wildcard and no "every public host" reaches: private,
//!   loopback, link-local (cloud metadata), shared, unspecified, multicast and the IPv6 forms that
//!   embed them.
//! - [`HostRules`]: an allow list, a deny list and whether every public host is allowed. A
//!   connection is checked twice: by name before anything is looked up ([`HostRules::admit`]),
//!   then every address the name resolved to ([`Admitted::addresses`]), so the caller connects
//!   to the addresses it checked and never looks the name up a second time.
//! - [`Gate`]: the layers a connection passes (the operator's rules, an author's, what a person
//!   approved), with the one lookup between the two checks ([`resolve::lookup`]).

#[doc(hidden)]
pub mod fuzzing;
mod gate;
mod pattern;
pub mod resolve;
mod rules;
mod special;

pub use gate::{Gate, GateError};
pub use pattern::{Host, HostPattern, PatternError, Target};
pub use rules::{Admitted, HostRules, Refusal};
pub use special::{special_range, SpecialRange};
