mod search_glob;
mod search_grep;
mod search_list_dir;
mod search_read_roots;
mod search_support;
