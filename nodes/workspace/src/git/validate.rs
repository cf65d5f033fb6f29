//! Checks on user values before git ever sees them.
//!
//! Everything here is refused up front, with the offending value named, rather than relying on
//! git's own parsing: a value that starts with `-` could be an option (`--output=/tmp/x`), a
//! leading `:` is pathspec magic (`:(top)`, `:!`), and revision syntax reaches far beyond "a
//! commit" (`@{upstream}`, `rev:path`, `a..b`, `^{/regex}`).

use cheng_node::NodeError;

/// The longest pathspec or revision accepted.
pub const MAX_VALUE_LEN: usize = 4096;
/// The most pathspecs accepted in one call.
pub const MAX_PATHSPECS: usize = 256;

/// Relative pathspecs only: no absolute paths, no `..` segment, no leading `-`, no magic.
pub fn pathspecs(values: &[String]) -> Result<(), NodeError> {
    if values.len() > MAX_PATHSPECS {
        return Err(NodeError::invalid_input(format!(
            "pathspecs has {} entries; at most {MAX_PATHSPECS} are accepted",
            values.len()
        )));
    }
    for (i, value) in values.iter().enumerate() {
        let why = if value.is_empty() {
            Some("is empty")
        } else if value.len() > MAX_VALUE_LEN {
            Some("is longer than 4096 bytes")
        } else if value.contains('\0') {
            Some("contains a NUL byte")
        } else if value.starts_with('/') {
            Some("is absolute; pathspecs are relative to cwd")
        } else if value.starts_with('-') {
            Some("starts with '-' (it would read as an option)")
        } else if value.starts_with(':') {
            Some("starts with ':' (pathspec magic is not accepted)")
        } else if value.split('/').any(|segment| segment == "..") {
            Some("has a '..' segment; pathspecs may not climb out of cwd")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(NodeError::invalid_input(format!(
                "pathspecs[{i}] {value:?} {why}"
            )));
        }
    }
    Ok(())
}

/// A plain local revision: a ref name or hash, optionally followed by `~N` / `^N` suffixes.
///
/// Returns the name part (without suffixes) so the caller can check what it refers to.
pub fn revision(value: &str) -> Result<&str, NodeError> {
    let reject = |why: &str| {
        Err(NodeError::invalid_input(format!(
            "revision {value:?} {why}"
        )))
    };
    if value.is_empty() {
        return reject("is empty; use a branch name, tag, commit hash or HEAD");
    }
    if value.len() > 256 {
        return reject("is longer than 256 bytes");
    }
    if value.starts_with('-') {
        return reject("starts with '-' (it would read as an option)");
    }
    if value.contains("..") {
        return reject("is a range ('..' / '...'); show takes a single revision");
    }
    if value.contains("@{") {
        return reject("uses '@{...}' reflog/upstream syntax, which is not accepted");
    }
    if value.contains("^{") {
        return reject("uses '^{...}' peeling syntax, which is not accepted");
    }
    if value.contains(':') {
        return reject("contains ':' (rev:path, URLs and remote syntax are not accepted)");
    }
    if value.chars().any(char::is_whitespace) {
        return reject("contains whitespace");
    }
    if value.starts_with("refs/remotes/") {
        return reject("is a remote-tracking ref; show is local only");
    }
    // Split off the `~N` / `^N` suffixes; the rest must be a plain name.
    let name_end = value.find(['~', '^']).unwrap_or(value.len());
    let (name, suffix) = value.split_at(name_end);
    if !valid_suffix(suffix) {
        return reject("has a suffix other than ~N or ^N");
    }
    if name.is_empty() {
        return reject("has no name before its ~/^ suffix");
    }
    let name_ok = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '/' | '-'))
        && !name.starts_with(['.', '/'])
        && !name.ends_with(['.', '/'])
        && !name.contains("//")
        && !name.contains("/.")
        && !name.ends_with(".lock");
    if !name_ok {
        return reject(
            "is not a plain ref name or commit hash (letters, digits, '.', '_', '/', '-')",
        );
    }
    Ok(name)
}

/// `~`, `~3`, `^`, `^2`, in any sequence.
fn valid_suffix(suffix: &str) -> bool {
    let bytes = suffix.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if !matches!(bytes[i], b'~' | b'^') {
            return false;
        }
        i += 1;
        let digits = bytes[i..].iter().take_while(|b| b.is_ascii_digit()).count();
        if digits > 6 {
            return false;
        }
        i += digits;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_revisions_pass() {
        for ok in [
            "HEAD",
            "main",
            "feature/x-1",
            "v1.2.3",
            "a1b2c3d",
            "HEAD~2",
            "main^2~1",
            "HEAD^",
            "refs/tags/v1",
        ] {
            assert!(revision(ok).is_ok(), "{ok}");
        }
        assert_eq!(revision("main~3").unwrap(), "main");
    }

    #[test]
    fn hostile_revisions_are_refused_with_the_value_named() {
        for bad in [
            "--output=/tmp/x",
            "-p",
            "main..dev",
            "a...b",
            "HEAD@{1}",
            "@{upstream}",
            "HEAD:secret.txt",
            "HEAD^{tree}",
            "main dev",
            "refs/remotes/origin/main",
            "https://example.com/repo.git",
            "ext::sh -c touch% /tmp/x",
            "file:///etc",
            "",
            "HEAD~x",
            ".hidden",
            "x.lock",
            "a//b",
            "$(id)",
            "origin/main@{1}",
            "HEAD^{/fix}",
            "main\tdev",
            "HEAD\n",
            "git@example.com:org/repo.git",
            "ssh://host/repo",
            "//example.com/repo",
        ] {
            let err = revision(bad).unwrap_err();
            assert_eq!(err.kind, cheng_node::ErrorKind::InvalidInput, "{bad}");
            assert!(err.message.contains("revision"), "{}", err.message);
            assert!(
                err.message.contains(&format!("{bad:?}")),
                "the offending value is named: {}",
                err.message
            );
        }
    }

    #[test]
    fn each_rejection_says_why() {
        for (bad, why) in [
            ("-p", "starts with '-'"),
            ("main..dev", "range"),
            ("a...b", "range"),
            ("HEAD@{1}", "'@{...}'"),
            ("HEAD:a.txt", "contains ':'"),
            ("https://example.com/r.git", "contains ':'"),
            ("HEAD^{tree}", "'^{...}'"),
            ("main dev", "whitespace"),
            ("refs/remotes/origin/main", "remote-tracking"),
            ("HEAD~x", "suffix"),
        ] {
            let err = revision(bad).unwrap_err();
            assert!(err.message.contains(why), "{bad}: {}", err.message);
        }
    }

    #[test]
    fn hostile_pathspecs_are_refused_with_index_and_value() {
        for bad in [
            "/etc/passwd",
            "../x",
            "a/../../b",
            "--output=/tmp/x",
            "-c",
            ":(top)x",
            ":!a",
            "",
            "a\0b",
        ] {
            let err = pathspecs(&[String::from("ok.txt"), bad.to_string()]).unwrap_err();
            assert!(
                err.message.starts_with("pathspecs[1]"),
                "{bad}: {}",
                err.message
            );
            assert!(
                err.message.contains(&format!("{bad:?}")),
                "the offending value is named: {}",
                err.message
            );
        }
        for (bad, why) in [
            ("/abs", "absolute"),
            ("a/../b", "'..' segment"),
            ("-x", "starts with '-'"),
            (":!x", "pathspec magic"),
        ] {
            let err = pathspecs(&[bad.to_string()]).unwrap_err();
            assert!(err.message.contains(why), "{bad}: {}", err.message);
        }
        assert!(pathspecs(&["src".into(), "*.rs".into(), "a b/c".into(), "x..y".into()]).is_ok());
    }
}
