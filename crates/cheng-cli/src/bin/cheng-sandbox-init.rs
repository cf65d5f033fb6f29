//! `cheng-sandbox-init`: the sandbox's init step as its own small executable.
//!
//! bubblewrap runs it as the first program inside every code_shell / code_python sandbox; it
//! sets the rlimits, drops to the run's uid, clears capabilities, sets no_new_privs, applies
//! Landlock, closes every descriptor above 2 and executes the command
//! (`cheng_sandbox::init`). `cheng` uses it when it sits next to the `cheng` binary
//! (`cargo build` and `cargo install --path crates/cheng-cli` put it there) and otherwise runs
//! the same step from its own, much larger binary. It links little besides that step, so it
//! starts in a fraction of the time.
//!
//! With `__reaper` as its first argument it is instead the per-run reaper cheng starts around
//! every command it runs on the host (`cheng_exec::reaper`).
//!
//! With `__js-worker` as argv[1] it is instead a JavaScript worker for `tools/code_js` (QuickJS
//! in a jail of its own: `cheng_nodes_code::js::worker`).

#![forbid(unsafe_code)]

fn main() {
    cheng_exec::reaper::run_if_requested();
    #[cfg(feature = "js")]
    cheng_nodes_code::js::worker::run_if_requested();
    cheng_sandbox::init::main()
}
