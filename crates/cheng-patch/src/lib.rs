//! The apply_patch format (`*** Begin Patch` … `*** End Patch`): parse a patch and compute each
//! file's new content in memory, so a caller can check every path and write all or nothing.
