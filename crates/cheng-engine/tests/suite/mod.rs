mod nodes;

mod approval;
mod cancel;
mod engine_ports;
mod inject;
mod schedule;
mod serial;
mod validation;
