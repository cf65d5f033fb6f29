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
use cheng_nodes_web as _;
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
mod live;
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
    cheng_sandbox::init::run_if_requested();
    // A shell asking for completions (the script `cheng completions` prints)? Answers and exits.
    complete::answer_if_asked();
    let cli = args::Cli::parse();
    // The generated files describe the built-in policy whatever this machine's says.
    let generating = matches!(
        cli.command,
        args::Command::Schemas(_) | args::Command::Docs(_)
    );
    let policy = if generating {
        std::sync::Arc::new(cheng_node::policy::Policy::builtin())
    } else {
        match policy::load(cli.policy.as_deref()) {
            Ok(policy) => policy,
            Err(exit) => return ExitCode::from(exit as u8),
        }
    };
    if let Err(exit) = policy::check_approve_flag(&cli.command, &policy) {
        return ExitCode::from(exit as u8);
    }
    let exit = match cli.command {
        args::Command::Policy {
            command: args::PolicyCommand::Show,
        } => policy::show(&policy),
        args::Command::Nodes { json } => listing::nodes(json, &policy),
        args::Command::Describe { node_type, json } => listing::describe(&node_type, json, &policy),
        args::Command::Run(run) => running::run(run, policy),
        args::Command::Graph { command } => match command {
            args::GraphCommand::Run(run) => running::graph_run(run, policy),
            args::GraphCommand::Check { file } => running::graph_check(&file, policy),
            args::GraphCommand::New { file } => graph_schema::new_graph(&file),
        },
        args::Command::Serve(serve) => serving(serve, policy),
        args::Command::Completions { shell } => complete::print(shell),
        args::Command::Schemas(gen) => generate::schemas(&gen),
        args::Command::Docs(gen) => generate::docs(&gen),
    };
    ExitCode::from(exit as u8)
}

/// `cheng serve --stdio` or `--http`, under the operator's `policy`.
fn serving(args: args::ServeArgs, policy: std::sync::Arc<cheng_node::policy::Policy>) -> Exit {
    let (workspace, source) = set::workspace(args.workspace.as_deref());
    // --http names the workspace in the line with its URL.
    if args.workspace.is_none() && args.http.is_none() {
        // stdout is the protocol; say on stderr which directory the tools will touch.
        out::errln!(
            "cheng serve: workspace {} ({source})",
            workspace
                .canonicalize()
                .unwrap_or_else(|_| workspace.clone())
                .display()
        );
    }
    let options = cheng_mcp::ServeOptions {
        workspace,
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
        policy,
        conformance_fixtures: args.conformance_fixtures,
    };
    let served = match args.http {
        Some(addr) => cheng_http::serve_http(cheng_http::HttpOptions {
            serve: options,
            addr,
            public: args.public,
            token: args.token,
            allow_origins: args.allow_origin,
            allow_hosts: args.allow_host,
        }),
        None => cheng_mcp::serve_stdio(options),
    };
    match served {
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
