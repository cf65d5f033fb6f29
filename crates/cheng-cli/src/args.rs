//! Command-line flags (clap derive).

use clap::{ArgGroup, Args, Parser, Subcommand};
use clap_complete::engine::ArgValueCompleter;
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "cheng",
    version,
    about = "Run tool nodes (shell, git, tests, markdown, code) safely on a workspace",
    after_help = "Exit status: 0 success; 1 a node reported success:false (or a --check found stale files); \
                  2 usage or validation error (nothing ran); 130 cancelled with Ctrl-C."
)]
pub struct Cli {
    /// A user policy file (else $CHENG_POLICY) that tightens the machine policy
    /// /etc/cheng/policy.toml, which always applies when it exists; a key that would loosen it
    /// is an error. See `cheng policy show`.
    #[arg(long, global = true, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// List registered node types (the canvas palette), sorted by id.
    Nodes {
        /// Everything a canvas needs to draw each node, as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show a node type's ports, defaults, controls, audiences, gate and effects.
    #[command(
        after_help = "Examples:\n  cheng describe workspace_git          # short ids work when unambiguous\n  \
                            cheng describe tools/workspace_shell --json"
    )]
    Describe {
        /// A node type such as tools/workspace_shell (or just workspace_shell).
        #[arg(value_name = "TYPE", add = ArgValueCompleter::new(crate::complete::node_ids))]
        node_type: String,
        /// Print the spec and its JSON Schemas as JSON instead of Markdown.
        #[arg(long)]
        json: bool,
    },
    /// Run one node: a summary and its main output on a terminal, its output object as JSON otherwise.
    #[command(after_help = RUN_EXAMPLES)]
    Run(RunArgs),
    /// Run or check a graph file.
    Graph {
        #[command(subcommand)]
        command: GraphCommand,
    },
    /// The operator's policy.
    Policy {
        #[command(subcommand)]
        command: PolicyCommand,
    },
    /// Serve every node: as MCP tools over stdio (--stdio), or over HTTP (--http) as a canvas
    /// API with live run events, MCP over Streamable HTTP and a web canvas.
    #[command(after_help = SERVE_EXAMPLES)]
    Serve(ServeArgs),
    /// Print a shell completion script (node ids and ports included): `cheng completions bash >
    /// /etc/bash_completion.d/cheng`, or `source <(cheng completions bash)` in ~/.bashrc.
    Completions {
        /// The shell to complete for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// (maintainers, in the cheng repository) Write or check the JSON Schemas in schemas/.
    #[command(hide = true)]
    Schemas(GenerateArgs),
    /// (maintainers, in the cheng repository) Write or check docs/nodes/ and docs/errors.md.
    #[command(hide = true)]
    Docs(GenerateArgs),
}

const RUN_EXAMPLES: &str = "Examples:
  cheng run workspace_git --set operation=diff                 # the patch, in the current directory
  cheng run workspace_shell -w ~/proj -- cargo test            # command=cargo, args=[\"test\"]
  cheng run workspace_shell --set command=cargo --set args+=test --set args+=--release
  cheng run code_shell --set script=@build.sh --config-set allow_network:=true
  cat input.json | cheng run workspace_markdown --input @- --json
  cheng run workspace_shell --input '{\"command\":\"ls\"}' --approve --quiet";

const GRAPH_RUN_EXAMPLES: &str = "Examples:
  cheng graph run fixtures/graphs/quickstart.json -w fixtures/workspaces/hello   # asks before each gated node
  cheng graph run pipeline.json --approve --quiet --json > result.json
  cheng graph run pipeline.json --events jsonl --jobs 1";

const SERVE_EXAMPLES: &str = "Examples:
  cheng serve --stdio -w ~/proj                                 # for an MCP client that launches it
  cheng serve --http -w fixtures/workspaces/hello               # open the printed URL in a browser
  cheng serve --http 127.0.0.1:0 --token \"$(openssl rand -hex 16)\"  # a free port, a chosen token";

#[derive(Subcommand)]
pub enum PolicyCommand {
    /// Print the policy's layers (machine, user) and every effective value with where it came
    /// from.
    Show,
}

#[derive(Subcommand)]
pub enum GraphCommand {
    /// Validate and run a graph: a per-node table on a terminal, otherwise JSON
    /// {status, nodes: {id: {status, outputs, ...}}}.
    #[command(after_help = GRAPH_RUN_EXAMPLES)]
    Run(GraphRunArgs),
    /// Write a starter graph to FILE (never over an existing file), to edit and run.
    New {
        /// Where to write the graph.
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// Validate a graph without running it.
    Check {
        /// The graph file (JSON, version 1).
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
}

/// How gated runs are decided.
#[derive(Args, Clone)]
#[command(group(ArgGroup::new("decision").args(["approve", "deny"])))]
pub struct ApprovalArgs {
    /// Approve every approval request (for scripts and CI).
    #[arg(long)]
    pub approve: bool,
    /// Deny every approval request.
    #[arg(long)]
    pub deny: bool,
    /// Do not log each `--approve` / `--deny` decision on stderr.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

#[derive(Args)]
pub struct RunArgs {
    /// A node type such as tools/workspace_shell.
    #[arg(value_name = "TYPE", add = ArgValueCompleter::new(crate::complete::node_ids))]
    pub node_type: String,
    /// The workspace root; every path the node touches resolves inside it [default: $CHENG_WORKSPACE, else the current directory]
    #[arg(long, short = 'w', value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// The node's inputs as a JSON object, @FILE to read it from a file, or @- from stdin.
    #[arg(long, value_name = "JSON|@FILE|@-")]
    pub input: Option<String>,
    /// Set one input port: PORT=TEXT (a string), PORT=@FILE (a file's text) or PORT:=JSON (any
    /// JSON value); repeatable, applied over --input.
    #[arg(long = "set", short = 's', value_name = "PORT=VALUE", add = ArgValueCompleter::new(crate::complete::input_ports))]
    pub set: Vec<String>,
    /// The author's config (author-only ports, ceilings) as a JSON object, @FILE or @-.
    #[arg(long, value_name = "JSON|@FILE|@-")]
    pub config: Option<String>,
    /// Set one config port, like --set: PORT=TEXT, PORT=@FILE or PORT:=JSON; repeatable.
    #[arg(long = "config-set", value_name = "PORT=VALUE", add = ArgValueCompleter::new(crate::complete::config_ports))]
    pub config_set: Vec<String>,
    #[command(flatten)]
    pub approval: ApprovalArgs,
    /// Write run events as JSON lines: `jsonl` (or `-`) streams them to stderr, anything else is
    /// a FILE to write them to.
    #[arg(long, value_name = "jsonl|FILE")]
    pub events: Option<PathBuf>,
    #[command(flatten)]
    pub output: crate::render::OutputArgs,
    /// Exit 1 when the node reports diagnostics of this severity or worse (for CI, as linters
    /// do): `warning` fails on any finding, `error` on errors only. For nodes with diagnostics
    /// (tools/workspace_markdown).
    #[arg(long, value_enum, value_name = "warning|error")]
    pub fail_on: Option<crate::render::Severity>,
    /// Run as part of the named session: state that outlives one call (the file nodes' record of
    /// what was read, for their freshness gate) is kept under
    /// $XDG_STATE_HOME/cheng/sessions/NAME (else ~/.local/state/...) and seen by every later
    /// `cheng run --session NAME`. Without it each run stands alone.
    #[arg(long, value_name = "NAME")]
    pub session: Option<String>,
    /// After `--`, the program and its arguments, for nodes with `command` and `args` ports
    /// (`cheng run workspace_shell -- cargo test` sets command=cargo, args=["test"]).
    #[arg(last = true, value_name = "COMMAND")]
    pub command_line: Vec<String>,
}

#[derive(Args)]
pub struct GraphRunArgs {
    /// The graph file (JSON, version 1).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The workspace root; every path a node touches resolves inside it [default: $CHENG_WORKSPACE, else the current directory]
    #[arg(long, short = 'w', value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    #[command(flatten)]
    pub approval: ApprovalArgs,
    /// Write run events as JSON lines: `jsonl` (or `-`) streams them to stderr, anything else is
    /// a FILE to write them to.
    #[arg(long, value_name = "jsonl|FILE")]
    pub events: Option<PathBuf>,
    /// How many nodes may run at once (default: the number of CPUs).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,
    #[command(flatten)]
    pub output: crate::render::OutputArgs,
}

#[derive(Args)]
#[command(group(ArgGroup::new("mode").args(["write", "check"]).required(true)))]
pub struct GenerateArgs {
    /// Regenerate the files (and remove stale ones).
    #[arg(long)]
    pub write: bool,
    /// Exit 1 when any file is missing, stale or extra.
    #[arg(long)]
    pub check: bool,
    /// The output directory (default: schemas/ or docs/ under the current directory, which must
    /// be the root of the cheng repository).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Args)]
#[command(group(clap::ArgGroup::new("transport").required(true).args(["stdio", "http"])))]
pub struct ServeArgs {
    /// Speak MCP over stdin/stdout (one JSON-RPC message per line; logs go to stderr).
    #[arg(long)]
    pub stdio: bool,
    /// Serve over HTTP at ADDR [default: 127.0.0.1:8765; port 0 picks a free one]: the canvas
    /// API (/api), MCP over Streamable HTTP (/mcp) and the web canvas (/). Prints the URL with
    /// its token on stderr.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = cheng_http::DEFAULT_ADDR)]
    pub http: Option<std::net::SocketAddr>,
    /// The bearer token every HTTP request must carry (at least 16 URL-safe characters)
    /// [default: 32 random bytes, hex].
    #[arg(
        long,
        value_name = "TOKEN",
        env = "CHENG_TOKEN",
        hide_env_values = true,
        requires = "http"
    )]
    pub token: Option<String>,
    /// A browser origin (https://canvas.example) allowed to call the HTTP API from its own page;
    /// repeatable. Without it no cross-origin request is accepted.
    #[arg(long, value_name = "ORIGIN", requires = "http")]
    pub allow_origin: Vec<String>,
    /// A Host name (NAME:PORT) the server answers to besides its bound address, e.g. the one a
    /// reverse proxy forwards; repeatable.
    #[arg(long, value_name = "HOST", requires = "http")]
    pub allow_host: Vec<String>,
    /// Allow --http to bind an address that is not loopback. There is no TLS: put a reverse
    /// proxy that terminates TLS in front.
    #[arg(long, requires = "http")]
    pub public: bool,
    /// The workspace root; every path a tool touches resolves inside it [default: $CHENG_WORKSPACE, else the current directory]
    #[arg(long, short = 'w', value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// The tools to offer: the exposed_tools JSON array tools/runtime takes (default: every
    /// registered node with its default config).
    #[arg(long, value_name = "FILE")]
    pub tools: Option<PathBuf>,
    /// How many tool calls (and, with --http, how many canvas runs) may run at once (default:
    /// the number of CPUs).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,
    /// For clients that cannot ask a person (no elicitation): --approve runs gated calls,
    /// --deny (the default) refuses them and says why.
    #[command(flatten)]
    pub approval: ApprovalArgs,
    /// The largest message accepted, in bytes (default 16 MiB).
    #[arg(long, value_name = "BYTES", default_value_t = cheng_mcp::transport::MAX_MESSAGE)]
    pub max_message: usize,
    /// Also offer the MCP conformance suite's fixture tools (test builds of cheng only).
    #[arg(long, hide = true)]
    pub conformance_fixtures: bool,
}
