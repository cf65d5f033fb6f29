#[cfg(feature = "js")]
mod js;

mod live_output;
mod protect;
mod sandbox_support;
mod seccomp;
mod shell;
mod view;
#[cfg(feature = "python")]
mod python;
mod result_cap;
