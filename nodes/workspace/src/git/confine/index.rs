//! The gitlink (submodule) paths of a git index file, read directly: no git process, one pass.
//!
//! Format (gitformat-index): `DIRC`, version (2, 3 or 4), entry count, then the entries sorted by
//! path. Each entry: ten 32-bit stat/mode fields, the object id (20 or 32 bytes), 16-bit flags
//! (bit 0x4000: a second 16-bit flags word follows, version 3 and later), then the path:
//! NUL-terminated and padded with NULs to a multiple of 8 bytes (versions 2 and 3), or, in
//! version 4, a varint count of bytes to drop from the previous path and the NUL-terminated rest
//! (no padding). Extensions and the trailing checksum follow the entries and are not needed.

/// The mode of a gitlink entry.
const GITLINK: u32 = 0o160000;
/// The mode bits that give the entry's type.
const TYPE_MASK: u32 = 0o170000;
/// Bytes before the object id in every entry.
const STAT_BYTES: usize = 40;

/// The paths of every gitlink entry, or `None` when `bytes` is not an index this parser reads.
pub fn gitlinks(bytes: &[u8], hash_len: usize) -> Option<Vec<Vec<u8>>> {
    if bytes.get(..4)? != b"DIRC" {
        return None;
    }
    let version = be32(bytes, 4)?;
    if !(2..=4).contains(&version) {
        return None;
    }
    let count = be32(bytes, 8)? as usize;
    let mut at = 12;
    // Version 4 names each path relative to the previous one; the buffer is reused.
    let mut path: Vec<u8> = Vec::new();
    let mut out = Vec::new();
    for _ in 0..count {
        let start = at;
        let mode = be32(bytes, start + 24)?;
        at = start + STAT_BYTES + hash_len;
        let flags = u16::from_be_bytes(bytes.get(at..at + 2)?.try_into().ok()?);
        at += 2;
        if flags & 0x4000 != 0 {
            if version < 3 {
                return None;
            }
            at += 2;
        }
        let gitlink = mode & TYPE_MASK == GITLINK;
        if version == 4 {
            let (drop, used) = varint(bytes.get(at..)?)?;
            at += used;
            let keep = path.len().checked_sub(usize::try_from(drop).ok()?)?;
            let end = at + bytes.get(at..)?.iter().position(|b| *b == 0)?;
            path.truncate(keep);
            path.extend_from_slice(&bytes[at..end]);
            at = end + 1;
            if gitlink {
                out.push(path.clone());
            }
        } else {
            let end = at + bytes.get(at..)?.iter().position(|b| *b == 0)?;
            if gitlink {
                out.push(bytes[at..end].to_vec());
            }
            // Entry length rounded up to a multiple of 8, at least one NUL.
            at = start + (end - start + 8) / 8 * 8;
        }
        if at > bytes.len() {
            return None;
        }
    }
    Some(out)
}

fn be32(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

/// git's offset varint (varint.c): 7 bits per byte, high bit set on all but the last, with one
/// added per continuation. Returns the value and the bytes used.
fn varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut used = 0;
    let mut c = *bytes.first()?;
    used += 1;
    let mut value = u64::from(c & 127);
    while c & 128 != 0 {
        value = value.checked_add(1)?;
        if value >> 57 != 0 {
            return None;
        }
        c = *bytes.get(used)?;
        used += 1;
        value = (value << 7) + u64::from(c & 127);
    }
    Some((value, used))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use std::process::Command;

    /// A repository with two files and two gitlinks (one nested), its index written in `version`.
    fn index_of(dir: &Path, version: &str) -> Vec<u8> {
        let git = |args: &[&str]| {
            let out = Command::new("git")
                .args(args)
                .current_dir(dir)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .output()
                .expect("git runs");
            assert!(
                out.status.success(),
                "git {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        git(&["init", "-q", "."]);
        std::fs::create_dir_all(dir.join("deep/er")).expect("mkdir");
        std::fs::write(dir.join("a.txt"), "a").expect("write");
        std::fs::write(dir.join("deep/er/b.txt"), "b").expect("write");
        git(&["add", "a.txt", "deep/er/b.txt"]);
        let hash = "1111111111111111111111111111111111111111";
        git(&[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{hash},deep/er/sub"),
        ]);
        git(&[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{hash},mod"),
        ]);
        if version != "2" {
            // An extended flags word on one entry (version 3 and later).
            git(&["update-index", "--skip-worktree", "a.txt"]);
        }
        git(&["update-index", "--index-version", version]);
        std::fs::read(dir.join(".git/index")).expect("index")
    }

    #[test]
    fn gitlinks_are_found_in_every_index_version() {
        for version in ["2", "3", "4"] {
            let dir = tempfile::tempdir().expect("tempdir");
            let bytes = index_of(dir.path(), version);
            let links =
                gitlinks(&bytes, 20).unwrap_or_else(|| panic!("version {version} not parsed"));
            assert_eq!(
                links,
                vec![b"deep/er/sub".to_vec(), b"mod".to_vec()],
                "version {version}"
            );
        }
    }

    #[test]
    fn garbage_is_not_an_index() {
        assert_eq!(gitlinks(b"", 20), None);
        assert_eq!(gitlinks(b"DIRC\0\0\0\x05\0\0\0\0", 20), None);
        assert_eq!(gitlinks(b"DIRC\0\0\0\x02\0\0\0\x01short", 20), None);
        assert_eq!(gitlinks(b"DIRC\0\0\0\x02\0\0\0\0", 20), Some(vec![]));
    }
}
