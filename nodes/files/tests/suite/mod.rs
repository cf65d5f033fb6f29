mod support;

mod apply_patch_safety;
mod apply_patch_scenarios;
mod apply_patch_support;
mod approval;
mod delete;
mod edit;
mod encodings;
mod freshness;
mod half_way;
mod races;
mod read;
mod symlinks;
mod write;

mod search_glob;
mod search_grep;
mod search_list_dir;
mod search_read_roots;
mod search_support;
