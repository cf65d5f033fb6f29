//! Inputs without JSON gymnastics: `--input @-` (stdin), `--set port=value` / `port=@FILE` /
//! `port:=JSON` (and `--config-set`), the workspace default, short node ids.

use cheng_node::{NodeSpec, PortType, Registry, Values};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A JSON object from `JSON`, `@FILE` or `@-` (stdin); absent means `{}`. `stdin` supplies
/// stdin's text (read at most once by the caller).
pub fn json_object(
    flag: &str,
    text: Option<&str>,
    stdin: &mut dyn FnMut() -> Result<String, String>,
) -> Result<Values, String> {
    let Some(text) = text else {
        return Ok(Values::new());
    };
    let (source, text) = match text.strip_prefix('@') {
        Some("-") => (
            format!("{flag} @- (standard input)"),
            stdin().map_err(|e| format!("{flag} @-: {e}"))?,
        ),
        Some(path) => match std::fs::read_to_string(path) {
            Ok(contents) => (format!("{flag} @{path}"), contents),
            Err(e) => return Err(format!("{flag} @{path}: cannot read the file: {e}")),
        },
        None => (flag.to_string(), text.to_string()),
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(format!(
            "{source}: expected a JSON object like {{\"command\": \"ls\"}}, got {}",
            cheng_node::text::json_kind(&other)
        )),
        Err(e) => {
            let mut message = format!("{source}: not valid JSON: {e}");
            if !text.trim_start().starts_with('{') && Path::new(&text).is_file() {
                message.push_str(&format!(
                    "; {text:?} is a file: did you mean {flag} @{text}?"
                ));
            }
            Err(message)
        }
    }
}

/// Reads all of stdin as UTF-8 text.
pub fn read_stdin() -> Result<String, String> {
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
        .map_err(|e| format!("cannot read standard input: {e}"))?;
    Ok(text)
}

/// Applies `--set`-style assignments (`flag` names the flag in messages) on top of `values`:
/// `port=text` sets a string, `port=@FILE` the file's text, `port:=JSON` a JSON value and
/// `port+=TEXT` appends a string to an array port (repeatable: `--set args+=test --set
/// args+=--release`; it extends the array `--input` gave, if any). Otherwise a port may be set
/// once per flag; `--set` overrides what `--input` gave.
pub fn apply(flag: &str, assignments: &[String], values: &mut Values) -> Result<(), String> {
    let mut set = std::collections::BTreeSet::new();
    let mut appended = std::collections::BTreeSet::new();
    for assignment in assignments {
        if let Some((port, item)) = parse_append(flag, assignment)? {
            if set.contains(&port) {
                return Err(format!(
                    "{flag} {port} is both set and appended to (+=); use one or the other"
                ));
            }
            let entry = values
                .entry(port.clone())
                .or_insert_with(|| Value::Array(Vec::new()));
            let Value::Array(array) = entry else {
                return Err(format!(
                    "{flag} {port}+=…: --input gave {port} as {}; += appends to an array",
                    cheng_node::text::json_kind(entry)
                ));
            };
            array.push(item);
            appended.insert(port);
            continue;
        }
        let (port, value) = parse(flag, assignment)?;
        if appended.contains(&port) {
            return Err(format!(
                "{flag} {port} is both set and appended to (+=); use one or the other"
            ));
        }
        if !set.insert(port.clone()) {
            return Err(format!("{flag} {port} is given twice; set each port once (the last one is not silently taken)"));
        }
        values.insert(port, value);
    }
    Ok(())
}

/// `port=TEXT` is text; where the node's port takes an integer or a boolean and the text spells
/// one (`--set timeout_ms=3000`, `--set allow_network=true`), it becomes that value, as
/// `gh api -F` does. Anything else stays text, for validation to name.
pub fn typed_text(spec: &NodeSpec, assignments: &[String], values: &mut Values) {
    for assignment in assignments {
        let Some((port, text)) = assignment.split_once('=') else {
            continue;
        };
        if port.ends_with(':') || port.ends_with('+') || text.starts_with('@') {
            continue;
        }
        let typed = match spec.input(port).map(|p| p.ty) {
            Some(PortType::Integer) => text.trim().parse::<i64>().ok().map(Value::from),
            Some(PortType::Boolean) => match text.trim() {
                "true" => Some(Value::Bool(true)),
                "false" => Some(Value::Bool(false)),
                _ => None,
            },
            _ => None,
        };
        if let Some(value) = typed {
            values.insert(port.to_string(), value);
        }
    }
}

/// `cheng run NODE -- PROGRAM ARGS...`: sets the node's `command` and `args` ports, which must
/// exist and not be set otherwise.
pub fn command_line(spec: &NodeSpec, words: &[String], values: &mut Values) -> Result<(), String> {
    let Some((program, args)) = words.split_first() else {
        return Ok(());
    };
    let takes = |port: &str, ty: fn(&PortType) -> bool| spec.input(port).is_some_and(|p| ty(&p.ty));
    if !takes("command", |t| *t == PortType::String)
        || !takes("args", |t| matches!(t, PortType::Array(PortType::String)))
    {
        return Err(format!(
            "`-- {program} …`: {} has no command and args ports; set its inputs with --set PORT=VALUE (see `cheng describe {}`)",
            spec.id, spec.id
        ));
    }
    for port in ["command", "args"] {
        if values.contains_key(port) {
            return Err(format!(
                "{port} is given both after `--` and with --set or --input; give the command one way"
            ));
        }
    }
    values.insert("command".into(), Value::String(program.clone()));
    values.insert(
        "args".into(),
        Value::Array(args.iter().cloned().map(Value::String).collect()),
    );
    Ok(())
}

/// For a string given to an array-of-strings port (`--set args=test`): how to give an array.
pub fn array_hint(spec: &NodeSpec, port: &str, given: &Value) -> Option<String> {
    let ty = spec.input(port).map(|p| p.ty)?;
    if !matches!(ty, PortType::Array(PortType::String)) {
        return None;
    }
    let Value::String(text) = given else {
        return None;
    };
    let words: Vec<String> = text.split_whitespace().map(str::to_string).collect();
    let json = serde_json::to_string(&words).ok()?;
    let appends: Vec<String> = words
        .iter()
        .map(|w| {
            format!(
                "--set {}",
                cheng_node::text::shell_quote(&format!("{port}+={w}"))
            )
        })
        .collect();
    let as_json = format!(
        "--set {}",
        cheng_node::text::shell_quote(&format!("{port}:={json}"))
    );
    Some(if appends.is_empty() {
        format!("  hint: {port} is an array of strings: {as_json}")
    } else {
        format!(
            "  hint: {port} is an array of strings: {as_json} (or {})",
            appends.join(" ")
        )
    })
}

/// `port+=TEXT` (or `port+=@FILE`): the port and the string to append; `None` for any other
/// assignment.
fn parse_append(flag: &str, assignment: &str) -> Result<Option<(String, Value)>, String> {
    let Some((key, text)) = assignment.split_once('=') else {
        return Ok(None);
    };
    let Some(port) = key.strip_suffix('+') else {
        return Ok(None);
    };
    if port.is_empty() {
        return Err(format!(
            "{flag} {assignment:?}: the port name before `+=` is empty"
        ));
    }
    let item = match text.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| format!("{flag} {port}+=@{path}: cannot read the file: {e}"))?,
        None => text.to_string(),
    };
    Ok(Some((port.to_string(), Value::String(item))))
}

/// One `port=value` / `port=@FILE` / `port:=JSON`.
pub fn parse(flag: &str, assignment: &str) -> Result<(String, Value), String> {
    let Some((key, text)) = assignment.split_once('=') else {
        return Err(format!(
            "{flag} {assignment:?}: expected PORT=TEXT, PORT=@FILE or PORT:=JSON (for example {flag} command=ls)"
        ));
    };
    let (port, json) = match key.strip_suffix(':') {
        Some(port) => (port, true),
        None => (key, false),
    };
    if port.is_empty() {
        return Err(format!(
            "{flag} {assignment:?}: the port name before `=` is empty"
        ));
    }
    let value = if json {
        serde_json::from_str::<Value>(text).map_err(|e| {
            format!("{flag} {port}:=…: not valid JSON: {e} (for text, use {port}=TEXT; for a JSON string, quote it: {port}:='\"text\"')")
        })?
    } else if let Some(path) = text.strip_prefix('@') {
        let contents = std::fs::read_to_string(path).map_err(|e| {
            format!("{flag} {port}=@{path}: cannot read the file: {e} (for text starting with @, use {port}:='\"@…\"')")
        })?;
        Value::String(contents)
    } else {
        Value::String(text.to_string())
    };
    Ok((port.to_string(), value))
}

/// The workspace and where it came from (for messages): `--workspace` / `-w`, else
/// `CHENG_WORKSPACE`, else the current directory.
pub fn workspace(flag: Option<&Path>) -> (PathBuf, &'static str) {
    if let Some(path) = flag {
        return (path.to_path_buf(), "--workspace");
    }
    match std::env::var_os("CHENG_WORKSPACE") {
        Some(path) if !path.is_empty() => (PathBuf::from(path), "CHENG_WORKSPACE"),
        _ => (PathBuf::from("."), "the workspace (the current directory)"),
    }
}

/// `workspace_git` → `tools/workspace_git` when exactly one registered id ends with
/// `/workspace_git`; any other name is returned as given (the engine explains unknown ones).
pub fn node_type(registry: &Registry, name: &str) -> String {
    if name.contains('/') {
        return name.to_string();
    }
    let suffix = format!("/{name}");
    let matches: Vec<&str> = registry
        .specs()
        .map(|s| s.id)
        .filter(|id| id.ends_with(&suffix))
        .collect();
    match matches.as_slice() {
        [one] => (*one).to_string(),
        // A gated node is not registered: `tools/<name>` lets the engine say how to enable it.
        [] => format!("tools/{name}"),
        _ => name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn one(text: &str) -> Result<(String, Value), String> {
        parse("--set", text)
    }

    #[test]
    fn text_json_and_equals_signs() {
        assert_eq!(one("command=ls").unwrap(), ("command".into(), json!("ls")));
        assert_eq!(one("command=").unwrap(), ("command".into(), json!("")));
        assert_eq!(
            one("expr=a=b").unwrap(),
            ("expr".into(), json!("a=b")),
            "only the first = splits"
        );
        assert_eq!(
            one("args:=[\"-l\",\"a b\"]").unwrap(),
            ("args".into(), json!(["-l", "a b"]))
        );
        assert_eq!(one("n:=30").unwrap(), ("n".into(), json!(30)));
        assert_eq!(
            one("n=30").unwrap(),
            ("n".into(), json!("30")),
            "= is always text"
        );
        assert_eq!(one("x:=\"@lit\"").unwrap(), ("x".into(), json!("@lit")));
        assert_eq!(
            one("input:={\"n\":30}").unwrap(),
            ("input".into(), json!({"n": 30}))
        );
    }

    #[test]
    fn malformed_assignments_say_what_to_write() {
        assert!(one("command").unwrap_err().contains("expected PORT=TEXT"));
        assert!(one("=ls")
            .unwrap_err()
            .contains("port name before `=` is empty"));
        assert!(one(":=1")
            .unwrap_err()
            .contains("port name before `=` is empty"));
        let e = one("args:=[oops").unwrap_err();
        assert!(
            e.contains("not valid JSON") && e.contains("args=TEXT"),
            "{e}"
        );
    }

    #[test]
    fn at_reads_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("fib.js");
        std::fs::write(&file, "let a = 1;\n").unwrap();
        let (port, value) = one(&format!("script=@{}", file.display())).unwrap();
        assert_eq!((port.as_str(), value), ("script", json!("let a = 1;\n")));
        let e = one("script=@/nonexistent/fib.js").unwrap_err();
        assert!(
            e.contains("cannot read the file") && e.contains("/nonexistent/fib.js"),
            "{e}"
        );
    }

    #[test]
    fn a_port_set_twice_is_refused_and_set_overrides_input() {
        let mut values = Values::new();
        values.insert("command".into(), json!("ls"));
        apply("--set", &["command=pwd".into()], &mut values).unwrap();
        assert_eq!(values["command"], json!("pwd"));
        let e = apply("--set", &["a=1".into(), "a:=2".into()], &mut values).unwrap_err();
        assert!(e.contains("--set a is given twice"), "{e}");
    }

    #[test]
    fn a_file_named_without_at_gets_a_hint() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("input.json");
        std::fs::write(&file, "{}").unwrap();
        let name = file.to_str().unwrap();
        let e = json_object("--input", Some(name), &mut || Ok(String::new())).unwrap_err();
        assert!(e.contains(&format!("did you mean --input @{name}?")), "{e}");
        let e = json_object("--input", Some("nope"), &mut || Ok(String::new())).unwrap_err();
        assert!(!e.contains("did you mean"), "{e}");
    }

    #[test]
    fn at_dash_reads_stdin() {
        let values = json_object("--input", Some("@-"), &mut || {
            Ok("{\"command\":\"ls\"}".into())
        })
        .unwrap();
        assert_eq!(values["command"], json!("ls"));
    }

    #[test]
    fn appends_build_an_array_and_strings_to_arrays_get_a_hint() {
        let mut values = Values::new();
        apply(
            "--set",
            &["args+=a".into(), "args+=b c".into()],
            &mut values,
        )
        .unwrap();
        assert_eq!(values["args"], json!(["a", "b c"]));
        let e = apply("--set", &["+=x".into()], &mut values).unwrap_err();
        assert!(e.contains("the port name before `+=` is empty"), "{e}");
        let registry = Registry::from_inventory_with(|_| false);
        let spec = registry.get("tools/workspace_shell").unwrap().spec();
        assert_eq!(
            array_hint(spec, "args", &json!("")).as_deref(),
            Some("  hint: args is an array of strings: --set 'args:=[]'")
        );
        assert_eq!(array_hint(spec, "command", &json!("x")), None);
    }

    #[test]
    fn short_node_ids() {
        let registry = Registry::from_inventory_with(|_| false);
        assert_eq!(
            node_type(&registry, "tools/workspace_git"),
            "tools/workspace_git"
        );
        assert_eq!(node_type(&registry, "workspace_git"), "tools/workspace_git");
        assert_eq!(
            node_type(&registry, "nothing_like_it"),
            "tools/nothing_like_it"
        );
    }
}
