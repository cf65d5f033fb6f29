mod nodes;

mod approval;
mod cancel;
mod inject;
mod schedule;
mod validation;
