mod support;

mod execute;
mod list;
mod gates;
mod presets;
