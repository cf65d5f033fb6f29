//! The child's environment: a minimal allowlisted base from the host plus the node's `env` input.
//!
//! Nothing else is inherited. The base carries only what programs need to behave normally
//! (`PATH`, `HOME`, `LANG`, `LC_*`, `TERM`, `TMPDIR`, `USER`), and never a host variable whose name
//! contains `KEY`, `SECRET`, `TOKEN` or `PASSWORD` (case-insensitive), so credentials in the
//! server's environment do not leak into commands an agent asked for.
//!
//! User variables may not change how programs are found or loaded, or inject code into
//! interpreters and shells: `PATH`, `LD_*`, `DYLD_*`, `BASH_ENV`, `ENV`, `BASH_FUNC_*`, `IFS`, `PS4`,
//! `SHELLOPTS`, `NODE_OPTIONS`, `PYTHONSTARTUP`, `PYTHONPATH`, `PERL5OPT`, `RUBYOPT`, `GIT_*`.
//! Names are compared case-insensitively (stricter than the OS, never looser).
//!
//! A denied variable is `LOCAL_EXECUTOR_INVALID_INPUT` (not `POLICY_DENIED`): no author setting
//! lifts the rule, and the caller can always succeed by dropping the variable, so the error is
//! not terminal.

use cheng_io::InvalidInput;
use serde_json::{Map, Value};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

/// Most user variables accepted in one request.
pub const MAX_USER_VARS: usize = 128;
/// Longest accepted variable name, in bytes.
pub const MAX_NAME_BYTES: usize = 256;
/// Longest accepted value, in bytes.
pub const MAX_VALUE_BYTES: usize = 32 * 1024;
/// Total size of all user names and values (the kernel's argv+envp limit is shared with args).
pub const MAX_TOTAL_BYTES: usize = 256 * 1024;

/// Used when the host has no `PATH` at all.
const FALLBACK_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Host variables copied into the base (plus every `LC_*`).
const BASE_NAMES: &[&str] = &["PATH", "HOME", "LANG", "TERM", "TMPDIR", "USER"];

/// Name fragments that mark a host variable as a credential.
const SECRET_MARKERS: &[&str] = &["KEY", "SECRET", "TOKEN", "PASSWORD"];

/// User variables that are denied exactly, with the reason shown to the caller.
const DENIED_EXACT: &[(&str, &str)] = &[
    (
        "PATH",
        "it decides which program runs; the host PATH is used",
    ),
    (
        "BASH_ENV",
        "bash runs the file it names before every script",
    ),
    ("ENV", "sh runs the file it names at start-up"),
    ("IFS", "it changes how shells split words"),
    (
        "PS4",
        "shells expand it (command substitution included) when tracing",
    ),
    (
        "SHELLOPTS",
        "it turns on shell options such as xtrace in every bash",
    ),
    ("NODE_OPTIONS", "it makes node preload arbitrary modules"),
    ("PYTHONSTARTUP", "python runs the file it names"),
    (
        "PYTHONPATH",
        "it makes python import modules from elsewhere",
    ),
    ("PERL5OPT", "it injects options and modules into every perl"),
    (
        "RUBYOPT",
        "it injects options and libraries into every ruby",
    ),
];

/// User variables denied by prefix, with the reason.
const DENIED_PREFIX: &[(&str, &str)] = &[
    (
        "LD_",
        "the dynamic loader reads LD_* (LD_PRELOAD injects code into every program)",
    ),
    ("DYLD_", "the dynamic loader reads DYLD_* (code injection)"),
    (
        "BASH_FUNC_",
        "bash imports functions from BASH_FUNC_* variables",
    ),
    (
        "GIT_",
        "GIT_* variables redirect git to other repositories, configs and programs",
    ),
];

/// The minimal base environment taken from this process's environment.
pub fn base() -> Vec<(OsString, OsString)> {
    base_from(std::env::vars_os())
}

/// [`base`] over an explicit list of host variables (for tests).
pub fn base_from(
    host: impl IntoIterator<Item = (OsString, OsString)>,
) -> Vec<(OsString, OsString)> {
    let mut out: Vec<(OsString, OsString)> = host
        .into_iter()
        .filter(|(name, _)| is_base_name(name) && !looks_secret(name))
        .collect();
    if !out.iter().any(|(name, _)| name == "PATH") {
        out.push(("PATH".into(), FALLBACK_PATH.into()));
    }
    out
}

/// The base environment plus the node's `env` input (which replaces base values of the same name).
///
/// Errors name the variable and the rule; see the module documentation for the denylist.
pub fn build(user: &Map<String, Value>) -> Result<Vec<(OsString, OsString)>, InvalidInput> {
    let user = validate(user)?;
    let mut env = base();
    for (name, value) in user {
        env.retain(|(existing, _)| existing != name.as_str());
        env.push((name.into(), value.into()));
    }
    Ok(env)
}

/// Checks the node's `env` input and returns the variables in order.
pub fn validate(user: &Map<String, Value>) -> Result<Vec<(String, String)>, InvalidInput> {
    if user.len() > MAX_USER_VARS {
        return Err(InvalidInput::new(format!(
            "env has {} variables; at most {MAX_USER_VARS} are accepted",
            user.len()
        )));
    }
    let mut total = 0usize;
    let mut out = Vec::with_capacity(user.len());
    for (name, value) in user {
        check_name(name)?;
        let value = match value {
            Value::String(s) => s,
            other => {
                return Err(InvalidInput::new(format!(
                    "env.{name} must be a string, got {}; quote it, e.g. \"{name}\": \"{}\"",
                    cheng_io::text::json_kind(other),
                    other.to_string().trim_matches('"')
                )))
            }
        };
        if value.contains('\0') {
            return Err(InvalidInput::new(format!("env.{name} contains a NUL byte")));
        }
        if value.len() > MAX_VALUE_BYTES {
            return Err(InvalidInput::new(format!(
                "env.{name} is {} bytes; a value may be at most {MAX_VALUE_BYTES} bytes",
                value.len()
            )));
        }
        total += name.len() + value.len() + 2;
        if total > MAX_TOTAL_BYTES {
            return Err(InvalidInput::new(format!(
                "env is larger than {MAX_TOTAL_BYTES} bytes in all; pass large data in a file instead"
            )));
        }
        out.push((name.clone(), value.clone()));
    }
    Ok(out)
}

/// Rejects malformed names and names on the denylist.
fn check_name(name: &str) -> Result<(), InvalidInput> {
    if name.is_empty() {
        return Err(InvalidInput::new("env has a variable with an empty name"));
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(InvalidInput::new(format!(
            "env has a variable name of {} bytes; at most {MAX_NAME_BYTES} are accepted",
            name.len()
        )));
    }
    if name.contains('=') || name.contains('\0') {
        return Err(InvalidInput::new(format!(
            "env variable name {name:?} is invalid: names may not contain '=' or NUL"
        )));
    }
    if let Some(reason) = denied_reason(name) {
        return Err(InvalidInput::new(format!(
            "env.{name} may not be set: {reason}. Remove it from env"
        )));
    }
    Ok(())
}

/// Why a user may not set `name`, or `None` when it is allowed.
pub fn denied_reason(name: &str) -> Option<&'static str> {
    let upper = name.to_ascii_uppercase();
    DENIED_EXACT
        .iter()
        .find(|(denied, _)| upper == *denied)
        .or_else(|| {
            DENIED_PREFIX
                .iter()
                .find(|(prefix, _)| upper.starts_with(prefix))
        })
        .map(|(_, reason)| *reason)
}

fn is_base_name(name: &OsStr) -> bool {
    let bytes = name.as_bytes();
    BASE_NAMES.iter().any(|n| n.as_bytes() == bytes) || bytes.starts_with(b"LC_")
}

/// Whether a host variable's name marks it as a credential.
fn looks_secret(name: &OsStr) -> bool {
    let upper = name.as_bytes().to_ascii_uppercase();
    SECRET_MARKERS
        .iter()
        .any(|marker| upper.windows(marker.len()).any(|w| w == marker.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn host(vars: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        vars.iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    fn names(env: &[(OsString, OsString)]) -> Vec<String> {
        env.iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect()
    }

    fn map(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(m) => m,
            _ => unreachable!("test input is an object"),
        }
    }

    #[test]
    fn base_keeps_only_the_allowlist() {
        let env = base_from(host(&[
            ("PATH", "/usr/bin"),
            ("HOME", "/root"),
            ("LANG", "C.UTF-8"),
            ("LC_ALL", "C"),
            ("TERM", "xterm"),
            ("TMPDIR", "/tmp"),
            ("USER", "root"),
            ("SHELL", "/bin/bash"),
            ("LD_PRELOAD", "/evil.so"),
            ("CARGO_HOME", "/x"),
        ]));
        assert_eq!(
            names(&env),
            ["PATH", "HOME", "LANG", "LC_ALL", "TERM", "TMPDIR", "USER"]
        );
    }

    #[test]
    fn base_never_passes_secrets_through() {
        let env = base_from(host(&[
            ("PATH", "/usr/bin"),
            ("LC_API_KEY", "k"),
            ("LC_secret_thing", "s"),
            ("LC_GH_TOKEN", "t"),
            ("LC_DB_Password", "p"),
            ("AWS_SECRET_ACCESS_KEY", "a"),
            ("LC_TIME", "C"),
        ]));
        assert_eq!(names(&env), ["PATH", "LC_TIME"]);
    }

    #[test]
    fn base_without_host_path_gets_a_default() {
        let env = base_from(host(&[("HOME", "/root")]));
        assert!(env.iter().any(|(k, v)| k == "PATH" && v == FALLBACK_PATH));
    }

    #[test]
    fn build_adds_user_vars_and_replaces_base_values() {
        let env = build(&map(
            json!({"RUST_LOG": "debug", "LANG": "C", "API_KEY": "mine"}),
        ))
        .unwrap();
        let get = |n: &str| {
            env.iter()
                .filter(|(k, _)| k == n)
                .map(|(_, v)| v.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(get("RUST_LOG"), [OsString::from("debug")]);
        assert_eq!(get("LANG"), [OsString::from("C")]);
        assert_eq!(
            get("API_KEY"),
            [OsString::from("mine")],
            "a caller's own value is passed"
        );
        assert_eq!(get("PATH").len(), 1);
    }

    #[test]
    fn denylisted_variables_are_rejected_by_name() {
        for name in [
            "PATH",
            "path",
            "LD_PRELOAD",
            "ld_preload",
            "LD_LIBRARY_PATH",
            "LD_AUDIT",
            "ld_audit",
            "DYLD_INSERT_LIBRARIES",
            "DYLD_LIBRARY_PATH",
            "BASH_ENV",
            "ENV",
            "BASH_FUNC_ls%%",
            "BASH_FUNC_true()",
            "IFS",
            "PS4",
            "SHELLOPTS",
            "NODE_OPTIONS",
            "PYTHONSTARTUP",
            "PYTHONPATH",
            "PERL5OPT",
            "RUBYOPT",
            "GIT_DIR",
            "GIT_SSH_COMMAND",
            "GIT_CONFIG_GLOBAL",
            "GIT_EXEC_PATH",
        ] {
            let err = build(&map(json!({ name: "x" }))).unwrap_err();
            assert_eq!(err.kind(), cheng_io::ErrorKind::InvalidInput, "{name}");
            assert!(err.message.contains(name), "{name}: {}", err.message);
            assert!(err.message.contains("may not be set"), "{}", err.message);
        }
    }

    #[test]
    fn similar_but_harmless_names_are_allowed() {
        assert!(build(&map(
            json!({"MY_PATH": "x", "ENVIRONMENT": "dev", "GITHUB_REF": "main"})
        ))
        .is_ok());
    }

    #[test]
    fn values_must_be_strings_and_names_well_formed() {
        let err = build(&map(json!({"PORT": 8080}))).unwrap_err();
        assert!(
            err.message
                .contains("env.PORT must be a string, got an integer"),
            "{}",
            err.message
        );
        for bad in ["", "A=B", "A\0B"] {
            let err = build(&map(json!({ bad: "x" }))).unwrap_err();
            assert_eq!(err.kind(), cheng_io::ErrorKind::InvalidInput, "{bad:?}");
        }
        let err = build(&map(json!({"A": "x\0y"}))).unwrap_err();
        assert!(err.message.contains("NUL"));
    }

    #[test]
    fn size_limits_name_the_limit() {
        let many: Map<String, Value> = (0..=MAX_USER_VARS)
            .map(|i| (format!("V{i}"), json!("x")))
            .collect();
        let err = build(&many).unwrap_err();
        assert!(
            err.message.contains(&MAX_USER_VARS.to_string()),
            "{}",
            err.message
        );
        let err = build(&map(json!({"BIG": "x".repeat(MAX_VALUE_BYTES + 1)}))).unwrap_err();
        assert!(err.message.contains("env.BIG"), "{}", err.message);
        let total: Map<String, Value> = (0..10)
            .map(|i| (format!("V{i}"), json!("x".repeat(MAX_VALUE_BYTES - 100))))
            .collect();
        let err = build(&total).unwrap_err();
        assert!(err.message.contains("in all"), "{}", err.message);
    }
}
