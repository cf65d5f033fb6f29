mod support;

mod execute;
mod list;
