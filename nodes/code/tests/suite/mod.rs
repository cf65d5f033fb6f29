#[cfg(feature = "js")]
mod etc_copies;
#[cfg(feature = "js")]
mod js;
mod js_fresh;

mod live_output;
mod protect;
#[cfg(feature = "python")]
mod python;
#[cfg(feature = "python")]
mod python_memory;
mod read_paths;
mod result_cap;
mod sandbox_support;
mod seccomp;
mod shell;
mod view;
mod write_boundary;
