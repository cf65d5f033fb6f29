mod capture;
mod descendants;
mod env;
mod fd_hygiene;
mod kill;
mod spawn;
mod support;
