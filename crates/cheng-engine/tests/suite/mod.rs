mod nodes;

mod after;
mod approval;
mod cancel;
mod engine_ports;
mod inject;
mod live_output;
mod schedule;
mod serial;
mod validation;
