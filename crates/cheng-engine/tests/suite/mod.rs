mod nodes;

mod after;
mod approval;
mod cancel;
mod engine_ports;
mod in_place;
mod inject;
mod live_output;
mod policy;
mod schedule;
mod serial;
mod validation;
