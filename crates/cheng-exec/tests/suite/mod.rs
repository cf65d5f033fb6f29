mod capture;
mod env;
mod kill;
mod spawn;
mod support;
