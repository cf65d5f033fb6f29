#[cfg(feature = "js")]
mod js;

mod sandbox_support;
mod shell;
#[cfg(feature = "python")]
mod python;
mod result_cap;
