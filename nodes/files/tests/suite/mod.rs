mod apply_patch_safety;
mod apply_patch_scenarios;
mod apply_patch_support;
