//! Shell completion: `cheng completions SHELL` prints a script that asks `cheng` itself for
//! candidates (clap_complete's dynamic completion, activated by `CHENG_COMPLETE`), so node ids
//! after `run`/`describe` and a node's ports after `--set`/`--config-set` come from the registry
//! of the binary being completed. Hidden maintainer subcommands are never offered.

use crate::Exit;
use cheng_node::{Audience, NodeSpec, PortType, Registry};
use clap::CommandFactory;
use clap_complete::engine::CompletionCandidate;
use std::ffi::OsStr;

/// The variable that makes `cheng` answer a completion request instead of running (a name of its
/// own: a stray `COMPLETE` in someone's environment must not hijack every run).
const VAR: &str = "CHENG_COMPLETE";

/// Answers a completion request and exits, when the shell's script asked for one.
pub fn answer_if_asked() {
    clap_complete::CompleteEnv::with_factory(crate::args::Cli::command)
        .var(VAR)
        .complete();
}

/// `cheng completions SHELL`: the registration script for that shell.
pub fn print(shell: clap_complete::Shell) -> Exit {
    let name = match shell {
        clap_complete::Shell::Bash => "bash",
        clap_complete::Shell::Elvish => "elvish",
        clap_complete::Shell::Fish => "fish",
        clap_complete::Shell::PowerShell => "powershell",
        clap_complete::Shell::Zsh => "zsh",
        _ => {
            crate::complain("completions: this shell is not supported; use bash, zsh, fish, elvish or powershell");
            return Exit::Usage;
        }
    };
    let shells = clap_complete::env::Shells::builtins();
    let Some(completer) = shells.completer(name) else {
        crate::complain(format!("completions: no completer for {name}"));
        return Exit::Usage;
    };
    let mut script = Vec::new();
    if let Err(e) = completer.write_registration(VAR, "cheng", "cheng", "cheng", &mut script) {
        crate::complain(format!("completions: {e}"));
        return Exit::Failed;
    }
    crate::out::print(&String::from_utf8_lossy(&script))
}

/// Candidates for a node type: every registered id and its short form where unambiguous.
pub fn node_ids(current: &OsStr) -> Vec<CompletionCandidate> {
    let current = current.to_string_lossy();
    let registry = Registry::from_inventory();
    let specs: Vec<&'static NodeSpec> = registry.specs().collect();
    let mut out = Vec::new();
    for spec in &specs {
        let short = spec.id.rsplit('/').next().unwrap_or(spec.id);
        let unique = specs
            .iter()
            .filter(|s| s.id.rsplit('/').next() == Some(short))
            .count()
            == 1;
        let names = [Some(spec.id), unique.then_some(short)];
        for name in names.into_iter().flatten() {
            if name.starts_with(current.as_ref()) {
                out.push(
                    CompletionCandidate::new(name)
                        .help(Some(first_sentence(spec.description).into())),
                );
            }
        }
    }
    out
}

/// Candidates for `--set`: the inputs of the node named on the command line.
pub fn input_ports(current: &OsStr) -> Vec<CompletionCandidate> {
    ports(current, |a| matches!(a, Audience::Llm | Audience::Capped))
}

/// Candidates for `--config-set`: the author's ports (and the capped ones, whose ceiling the
/// author sets).
pub fn config_ports(current: &OsStr) -> Vec<CompletionCandidate> {
    ports(current, |a| {
        matches!(a, Audience::Author | Audience::Capped)
    })
}

fn ports(current: &OsStr, audience: fn(&Audience) -> bool) -> Vec<CompletionCandidate> {
    let current = current.to_string_lossy();
    let args: Vec<String> = std::env::args().collect();
    let Some(name) = node_on_command_line(&args) else {
        return Vec::new();
    };
    let registry = Registry::from_inventory();
    let id = crate::set::node_type(&registry, &name);
    let Some(spec) = registry.get(&id).map(|n| n.spec()) else {
        return Vec::new();
    };
    port_candidates(spec, &current, audience)
}

/// `PORT=` for each port (`PORT:=` for the JSON-valued ones); after `PORT=`, the values an enum
/// or boolean port takes.
fn port_candidates(
    spec: &NodeSpec,
    current: &str,
    audience: fn(&Audience) -> bool,
) -> Vec<CompletionCandidate> {
    let ports = spec.inputs.iter().filter(|p| audience(&p.audience));
    if let Some((port, typed)) = current.split_once('=') {
        let Some(port) = spec.inputs.iter().find(|p| p.name == port) else {
            return Vec::new();
        };
        let values: Vec<&str> = match port.ty {
            PortType::Enum(values) => values.to_vec(),
            PortType::Boolean => vec!["true", "false"],
            _ => port.choices.map(<[&str]>::to_vec).unwrap_or_default(),
        };
        return values
            .into_iter()
            .filter(|v| v.starts_with(typed))
            .map(|v| CompletionCandidate::new(format!("{}={v}", port.name)))
            .collect();
    }
    ports
        .filter(|p| p.name.starts_with(current))
        .map(|p| {
            let assign = match p.ty {
                PortType::Object | PortType::Any => ":=",
                _ => "=",
            };
            CompletionCandidate::new(format!("{}{assign}", p.name))
                .help(Some(first_sentence(p.description).into()))
        })
        .collect()
}

/// The node type of `cheng … run NODE …` as the shell passed the words (after `--`).
fn node_on_command_line(args: &[String]) -> Option<String> {
    let words = &args[args.iter().position(|a| a == "--")? + 1..];
    let run = words.iter().position(|w| w == "run")?;
    let mut rest = words[run + 1..].iter();
    while let Some(word) = rest.next() {
        if TAKES_VALUE.contains(&word.as_str()) {
            rest.next();
        } else if !word.starts_with('-') {
            return Some(word.clone());
        }
    }
    None
}

/// `cheng run`'s options that take a value as the next word.
const TAKES_VALUE: &[&str] = &[
    "-w",
    "--workspace",
    "--input",
    "-s",
    "--set",
    "--config",
    "--config-set",
    "--events",
    "--format",
    "--color",
    "--fail-on",
    "--session",
    "--policy",
];

fn first_sentence(text: &str) -> String {
    let end = text.find(". ").map_or(text.len(), |i| i + 1);
    text[..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Every flag and argument of every command says what it is for in `--help`.
    #[test]
    fn every_flag_has_help() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in cmd.get_arguments() {
                let id = arg.get_id().as_str();
                if id != "help" && id != "version" && arg.get_help().is_none() {
                    missing.push(format!("{path} {id}"));
                }
            }
            for sub in cmd.get_subcommands() {
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(&crate::args::Cli::command(), "cheng", &mut missing);
        assert!(missing.is_empty(), "flags without help: {missing:?}");
    }

    fn words(line: &str) -> Vec<String> {
        std::iter::once("cheng")
            .chain(line.split(' '))
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn the_node_is_found_past_options_and_their_values() {
        let found = |line: &str| node_on_command_line(&words(line));
        assert_eq!(
            found("-- cheng run workspace_shell --set "),
            Some("workspace_shell".into())
        );
        assert_eq!(
            found("-- cheng --policy p.toml run -w /tmp --set a=b tools/grep -s "),
            Some("tools/grep".into())
        );
        assert_eq!(found("-- cheng run --set "), None);
        assert_eq!(found("-- cheng describe "), None);
    }

    #[test]
    fn ports_and_their_values_complete() {
        let registry = Registry::from_inventory();
        let spec = registry
            .get("tools/workspace_git")
            .expect("workspace_git")
            .spec();
        let names = |current: &str| -> Vec<String> {
            port_candidates(spec, current, |a| {
                matches!(a, Audience::Llm | Audience::Capped)
            })
            .iter()
            .map(|c| c.get_value().to_string_lossy().into_owned())
            .collect()
        };
        assert!(
            names("").contains(&"operation=".to_string()),
            "{:?}",
            names("")
        );
        assert!(
            !names("").iter().any(|n| n.starts_with("sandbox_root")),
            "engine-only ports stay out"
        );
        assert!(
            names("operation=d").contains(&"operation=diff".to_string()),
            "{:?}",
            names("operation=d")
        );
        let ids: Vec<String> = node_ids(OsStr::new("workspace_g"))
            .iter()
            .map(|c| c.get_value().to_string_lossy().into_owned())
            .collect();
        assert_eq!(ids, ["workspace_git"]);
    }
}
