mod search_glob;
mod search_grep;
mod search_list_dir;
mod search_support;
