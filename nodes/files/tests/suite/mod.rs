mod support;

mod delete;
mod edit;
mod encodings;
mod freshness;
mod half_way;
mod read;
mod symlinks;
mod write;
