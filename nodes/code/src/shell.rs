//! `tools/code_shell`: a shell script run by `sh` inside the bubblewrap sandbox.
//!
//! Decisions where the reference page is silent (the sandbox itself is described in `sandboxed` and
//! `cheng_sandbox`):
//!
//! - **Input**: `input` serialised as JSON is in `$INPUT` when it is at most [`ENV_INPUT_MAX`]
//!   bytes (Linux refuses longer single environment strings) and always in the file named by
//!   `$INPUT_FILE` (read-only inside the sandbox).
//! - **Result**: stdout parsed as JSON when the whole of it is JSON, else the stdout text
//!   without its trailing newline; `null` when the run failed or stdout was truncated.
//! - **Warnings** come from a look at the script before it runs (network tools with
//!   `allow_network` off, writes into the workspace with `allow_filesystem` off, `sudo`/`su`, an
//!   empty script) and from the sandbox (what it could not enforce here).
//! - **memory_mb** is enforced as RLIMIT_AS (see `cheng_sandbox::SandboxLimits`); min 16, max 4096 (the
//!   reference page names no maximum; docs/guides/policy.md).

use crate::ports;
use crate::sandboxed::{self, SandboxPorts};
use cheng_node::{
    async_trait, capability, failure, Audience, Effects, Node, NodeError, NodeSpec, PortSpec,
    PortType, RunContext, Values,
};
use serde_json::Value;
use std::ffi::OsString;

/// Longest JSON input also placed in `$INPUT` (Linux's MAX_ARG_STRLEN is 128 KiB per string).
pub const ENV_INPUT_MAX: usize = 120 * 1024;

/// The reference page's `tools/code_shell`.
pub struct CodeShell;

const INPUTS: &[PortSpec] = &[
    ports::input("Input data (any JSON), available to the script through the $INPUT environment variable"),
    ports::script("[Required] Shell script. Example: curl -s 'wttr.in/Tokyo?format=3'"),
    ports::WORKING_SUBDIR,
    ports::switch(
        "allow_filesystem",
        "Whether the script may write files in the workspace",
        &capability::FILESYSTEM,
    ),
    ports::switch(
        "allow_full_disk_readonly",
        "Whether the script may read the whole disk (for disk-wide search / file lookup). Writing still requires allow_filesystem.",
        &capability::FULL_DISK_READONLY,
    ),
    ports::REQUEST_READ_PATHS,
    ports::switch(
        "allow_network",
        "Whether network access is allowed (curl, HTTP requests etc. need true)",
        &capability::NETWORK,
    ),
    PortSpec::input(
        cheng_node::policy::HOST_RULES_PORT,
        PortType::Array(&PortType::String),
        "Hosts the script may reach with allow_network, through cheng's filtering proxy and within the operator's network_allow: pypi.org, *.pythonhosted.org, example.com:8443, 203.0.113.7, 10.0.0.0/8. Not set: every public host the operator allows; an empty list: none",
    )
    .audience(Audience::Author),
    PortSpec::input(
        sandboxed::REQUEST_HOSTS,
        PortType::Array(&PortType::String),
        "Hosts beyond the node's allowed_hosts the script must reach with allow_network (e.g. files.pythonhosted.org:443). Each needs a person's approval for this execution; without an allowed_hosts list every host the operator's rules allow is reachable already and nothing is asked. The operator's network rules always apply.",
    )
    .default("[]"),
    ports::limit(
        "timeout_ms",
        "Timeout in milliseconds. Default 5000 ms, max 300000 ms.",
        "5000",
        (sandboxed::MIN_TIMEOUT_MS, sandboxed::MAX_TIMEOUT_MS),
    ),
    ports::limit(
        "memory_mb",
        "Memory limit (MB), enforced with prlimit under Bubblewrap. Default 128 MB.",
        "128",
        (sandboxed::MEMORY_MIN, sandboxed::MEMORY_MAX),
    ),
];

const OUTPUTS: &[PortSpec] = &[
    PortSpec::output("result", PortType::Any, "Script execution result"),
    PortSpec::output(
        "isolation_level",
        PortType::String,
        "Isolation level actually used: bubblewrap > quickjs > python",
    ),
    PortSpec::output("metrics", PortType::Object, "Execution performance metrics"),
    PortSpec::output("stdout", PortType::String, "Standard output"),
    PortSpec::output("stderr", PortType::String, "Standard error"),
    PortSpec::output(
        "warnings",
        PortType::Array(&PortType::String),
        "Script validation warnings",
    ),
    sandboxed::SUCCESS_OUTPUT,
    failure::ERROR_KIND,
    failure::TERMINAL,
    failure::ERROR,
];

static SPEC: NodeSpec = NodeSpec {
    id: "tools/code_shell",
    title: "Shell executor",
    description: "Runs a shell script in a bubblewrap sandbox (OS namespace isolation: PID/IPC/UTS/network). Fail-closed: \
                  when bubblewrap is unavailable it reports an error and never silently degrades. Suited to curl, wget, \
                  system commands, file operations and pipelines of external processes. Not suited to pure computation \
                  (-> JS) or data transformation (-> Python). Outbound HTTP needs allow_network=true. Example: \
                  {\"script\":\"curl -s 'wttr.in/Tokyo?format=3'\",\"allow_network\":true}",
    category: "code",
    inputs: INPUTS,
    outputs: OUTPUTS,
    gate: None,
    effects: Effects::Sandboxed,
};

cheng_node::inventory::submit! { cheng_node::NodeRegistration::new(&CodeShell) }

#[async_trait]
impl Node for CodeShell {
    fn spec(&self) -> &'static NodeSpec {
        &SPEC
    }

    fn approval_request(
        &self,
        ctx: &RunContext,
        input: &Values,
    ) -> Result<cheng_node::ApprovalRequest, NodeError> {
        let mut card = sandboxed::script_card(ctx, input, "sh");
        // The hosts beyond the author's list go on the run's one card (entries that are not
        // host rules are refused by the run before anything is asked).
        let network = input.get("allow_network").and_then(Value::as_bool) == Some(true);
        if network {
            card.requested_hosts = sandboxed::hosts_to_ask(input)
                .unwrap_or_default()
                .iter()
                .map(|host| host.as_str().to_string())
                .collect();
        }
        Ok(card)
    }

    async fn run(&self, ctx: &RunContext, input: Values) -> Result<Values, NodeError> {
        let ports = SandboxPorts::read(ctx, &SPEC, &input)?;
        let mut warnings = lint(&ports.script, ports.allow_network, ports.allow_filesystem);
        ports.approve_read_paths(ctx, "code_shell").await?;
        ports.approve_hosts(ctx, "code_shell").await?;

        let (_io_guard, io) = sandboxed::io_dir()?;
        let json = serde_json::to_string(&ports.input)
            .map_err(|e| NodeError::internal(format!("input cannot be serialised: {e}")))?;
        std::fs::write(io.join("input.json"), &json)
            .map_err(|e| NodeError::internal(format!("cannot write the input file: {e}")))?;
        let command: Vec<OsString> = vec![
            "/bin/sh".into(),
            "-c".into(),
            ports.script.clone().into(),
            "code_shell".into(),
        ];
        let mut request = ports.request(ctx, command);
        request.io_dir = Some(io);
        request.env.push((
            "INPUT_FILE".into(),
            format!("{}/input.json", cheng_sandbox::IO_DIR).into(),
        ));
        if json.len() <= ENV_INPUT_MAX {
            request.env.push(("INPUT".into(), json.into()));
        } else {
            warnings.push(format!(
                "input is {} bytes, more than fits in $INPUT ({ENV_INPUT_MAX} bytes): read it from $INPUT_FILE",
                json.len()
            ));
        }

        let run = sandboxed::run(ctx, request).await?;
        warnings.extend(sandboxed::enforcement_warnings(&run));
        let failure = sandboxed::classify(&run.output, ports.timeout_ms);
        let result = if failure.is_none() && !run.output.stdout.truncated {
            parse_result(&run.output.stdout.text)
        } else {
            Value::Null
        };
        Ok(sandboxed::outputs(&run, result, warnings, failure))
    }
}

/// stdout as JSON when it is JSON, else the text without its trailing newline.
pub fn parse_result(stdout: &str) -> Value {
    let trimmed = stdout.trim();
    if !trimmed.is_empty() {
        if let Ok(v) = serde_json::from_str::<Value>(trimmed) {
            return v;
        }
    }
    let text = stdout
        .strip_suffix('\n')
        .map(|s| s.strip_suffix('\r').unwrap_or(s))
        .unwrap_or(stdout);
    Value::String(text.to_string())
}

/// Pre-execution warnings: what the script seems to need that the switches do not allow.
pub fn lint(script: &str, network: bool, filesystem: bool) -> Vec<String> {
    let mut warnings = Vec::new();
    if script.trim().is_empty() {
        warnings.push("script is empty: nothing will run".into());
        return warnings;
    }
    let words: Vec<&str> = script
        .split(|c: char| {
            c.is_whitespace() || matches!(c, ';' | '|' | '&' | '(' | ')' | '`' | '$' | '{' | '}')
        })
        .filter(|w| !w.is_empty())
        .collect();
    let has = |names: &[&'static str]| -> Option<&'static str> {
        names.iter().copied().find(|n| {
            words
                .iter()
                .any(|w| w == n || w.ends_with(&format!("/{n}")))
        })
    };
    if !network {
        if let Some(tool) = has(&[
            "curl", "wget", "nc", "ncat", "netcat", "ssh", "scp", "rsync", "ftp", "telnet", "ping",
            "dig", "nslookup",
        ]) {
            warnings.push(format!(
                "script uses {tool} but allow_network is off: the sandbox has no network (the node's author must allow it)"
            ));
        }
    }
    if let Some(tool) = has(&["sudo", "su", "doas"]) {
        warnings.push(format!(
            "script uses {tool}: the sandbox has no privileges to gain, it will fail"
        ));
    }
    if !filesystem {
        let writes_file = script
            .split(['>'])
            .skip(1)
            .filter(|rest| !rest.is_empty())
            .any(|rest| {
                let target = rest.trim_start_matches('|').trim_start();
                !(target.starts_with("/dev/")
                    || target.starts_with("/tmp")
                    || target.starts_with('&')
                    || target.starts_with("$TMPDIR"))
            });
        let tool = has(&[
            "touch", "mkdir", "rm", "rmdir", "mv", "cp", "tee", "ln", "chmod", "truncate", "dd",
        ]);
        let sed_in_place = words
            .windows(2)
            .any(|w| w[0] == "sed" && w[1].starts_with("-i"));
        if writes_file || tool.is_some() || sed_in_place {
            let what = match (writes_file, tool) {
                (true, _) => "a redirection into a file".to_string(),
                (false, Some(t)) => t.to_string(),
                (false, None) => "sed -i".to_string(),
            };
            warnings.push(format!(
                "script appears to write files ({what}) but allow_filesystem is off: the workspace is read-only; only /tmp (private, discarded) is writable"
            ));
        }
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_are_json_or_trimmed_text() {
        assert_eq!(parse_result("{\"a\": 1}\n"), serde_json::json!({"a": 1}));
        assert_eq!(parse_result("42\n"), serde_json::json!(42));
        assert_eq!(parse_result("hello\n"), serde_json::json!("hello"));
        assert_eq!(
            parse_result("two\nlines\n\n"),
            serde_json::json!("two\nlines\n")
        );
        assert_eq!(parse_result(""), serde_json::json!(""));
    }

    #[test]
    fn lint_names_what_the_switches_forbid() {
        let w = lint("curl -s https://example.com | jq .", false, false);
        assert!(
            w.iter()
                .any(|w| w.contains("curl") && w.contains("allow_network")),
            "{w:?}"
        );
        assert!(lint("curl -s x", true, false).is_empty());
        let w = lint("echo hi > out.txt", false, false);
        assert!(w.iter().any(|w| w.contains("allow_filesystem")), "{w:?}");
        assert!(lint("echo hi > /dev/null; echo x >/tmp/a 2>&1", false, false).is_empty());
        assert!(lint("echo hi > out.txt", false, true).is_empty());
        assert!(lint("sudo rm -rf /", true, true)
            .iter()
            .any(|w| w.contains("sudo")));
        assert!(lint("  \n", false, false)[0].contains("empty"));
        assert!(lint("echo $INPUT", false, false).is_empty());
    }
}
