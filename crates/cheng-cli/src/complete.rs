//! `cheng completions bash|zsh|fish|…`: a completion script generated from the flags.

use crate::Exit;
use clap::CommandFactory;

pub fn print(shell: clap_complete::Shell) -> Exit {
    let mut script = Vec::new();
    clap_complete::generate(
        shell,
        &mut crate::args::Cli::command(),
        "cheng",
        &mut script,
    );
    crate::out::print(&String::from_utf8_lossy(&script))
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn completions_name_the_commands() {
        let mut script = Vec::new();
        clap_complete::generate(
            clap_complete::Shell::Bash,
            &mut crate::args::Cli::command(),
            "cheng",
            &mut script,
        );
        let script = String::from_utf8(script).unwrap();
        for word in ["run", "graph", "describe", "--set", "--workspace"] {
            assert!(script.contains(word), "{word}");
        }
    }
}
