mod common;
mod git;
mod git_confinement;
mod testing;
