#[cfg(feature = "js")]
mod js;

mod protect;
mod sandbox_support;
mod shell;
#[cfg(feature = "python")]
mod python;
