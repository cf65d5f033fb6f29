mod support;

mod execute;
mod list;
mod live_output;
mod gates;
mod presets;
