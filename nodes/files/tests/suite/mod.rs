mod support;

mod apply_patch_safety;
mod apply_patch_scenarios;
mod apply_patch_support;
mod delete;
mod edit;
mod encodings;
mod freshness;
mod half_way;
mod read;
mod symlinks;
mod write;
