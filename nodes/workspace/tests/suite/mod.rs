mod common;
mod git;
mod testing;
