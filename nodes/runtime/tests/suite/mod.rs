mod support;

mod execute;
mod gates;
mod list;
mod live_output;
mod presets;
