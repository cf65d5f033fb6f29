//! `cheng`: list, describe and run tool nodes and graphs; generate schemas and docs.
//!
//! The binary only wires flags to the libraries: node specs come from `cheng-node`, validation,
//! scheduling, approval and events from `cheng-engine`, rendering from `cheng_engine::catalog`.

#![forbid(unsafe_code)]

// Linked so that their inventory registrations are present.
use cheng_nodes_code as _;
use cheng_nodes_documents as _;
use cheng_nodes_files as _;
use cheng_nodes_memory as _;
use cheng_nodes_runtime as _;
use cheng_nodes_workspace as _;

/// mimalloc rather than the system allocator: Markdown operations on a 10 MB document take
/// 0.68–0.81× the CPU time, since glibc unmaps the parser's large tree after each parse and
/// faults it in again (docs/performance.md, "Allocator"). Only this binary:
/// `cheng-sandbox-init` keeps the system allocator (it runs under the sandbox's RLIMIT_AS).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod approve;
mod args;
mod complete;
mod generate;
mod graph_schema;
mod listing;
mod out;
mod policy;
mod render;
mod running;
mod set;
mod suggested_diff;

use clap::Parser;
use std::process::ExitCode;

/// Exit statuses (documented in `cheng --help`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Everything succeeded.
    Ok = 0,
    /// A node ran and reported `success: false` (or a check found stale files).
    Failed = 1,
    /// Usage or validation error; nothing ran.
    Usage = 2,
    /// Cancelled with Ctrl-C.
    Cancelled = 130,
}

fn main() -> ExitCode {
    // Re-executed as a sandbox launcher? That path never returns.
    cheng_exec::reaper::run_if_requested();
    cheng_exec::sandbox::init::run_if_requested();
    let cli = args::Cli::parse();
    // The generated files describe the built-in policy whatever this machine's says.
    let generating = matches!(
        cli.command,
        args::Command::Schemas(_) | args::Command::Docs(_)
    );
    if !generating {
        if let Err(exit) = policy::load_and_install(cli.policy.as_deref()) {
            return ExitCode::from(exit as u8);
        }
    }
    if let Err(exit) = policy::check_approve_flag(&cli.command) {
        return ExitCode::from(exit as u8);
    }
    let exit = match cli.command {
        args::Command::Policy {
            command: args::PolicyCommand::Show,
        } => policy::show(),
        args::Command::Nodes { json } => listing::nodes(json),
        args::Command::Describe { node_type, json } => listing::describe(&node_type, json),
        args::Command::Run(run) => running::run(run),
        args::Command::Graph { command } => match command {
            args::GraphCommand::Run(run) => running::graph_run(run),
            args::GraphCommand::Check { file } => running::graph_check(&file),
            args::GraphCommand::New { file } => graph_schema::new_graph(&file),
        },
        args::Command::Serve(serve) => serving(serve),
        args::Command::Completions { shell } => complete::print(shell),
        args::Command::Schemas(gen) => generate::schemas(&gen),
        args::Command::Docs(gen) => generate::docs(&gen),
    };
    ExitCode::from(exit as u8)
}

/// `cheng serve --stdio`.
fn serving(args: args::ServeArgs) -> Exit {
    let options = cheng_mcp::ServeOptions {
        workspace: args.workspace,
        tools: args.tools,
        jobs: args
            .jobs
            .map_or_else(cheng_engine::default_jobs, usize::from),
        fallback: if args.approval.approve {
            cheng_node::Decision::Approved
        } else {
            cheng_node::Decision::Denied
        },
        max_message: args.max_message.max(1024),
    };
    match cheng_mcp::serve_stdio(options) {
        Ok(()) => Exit::Ok,
        Err(e) => {
            complain(e);
            Exit::Usage
        }
    }
}

/// Prints `cheng: <message>` on stderr.
pub fn complain(message: impl std::fmt::Display) {
    out::errln!("cheng: {message}");
}

/// `singular` for one, `plural` otherwise ("1 node", "2 nodes", "0 nodes").
pub fn plural<'a>(n: usize, singular: &'a str, plural: &'a str) -> &'a str {
    if n == 1 {
        singular
    } else {
        plural
    }
}
