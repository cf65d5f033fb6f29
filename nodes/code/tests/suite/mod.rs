#[cfg(feature = "js")]
mod js;
#[cfg(feature = "js")]
mod etc_copies;
mod js_fresh;

mod live_output;
mod protect;
mod sandbox_support;
mod seccomp;
mod shell;
mod view;
#[cfg(feature = "python")]
mod python;
mod result_cap;
