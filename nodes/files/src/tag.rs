//! Content tags: FNV-1a 32-bit over a file's bytes, as 8 upper-case hex digits.
//!
//! A tag is a hash of the content, not a modification time: "changed within the same second to
//! the same length" is exactly what the freshness gate must catch.
//!
//! ```
//! assert_eq!(cheng_nodes_files::tag::tag(b"hello"), "4F9F2CAB");
//! ```

const OFFSET_BASIS: u32 = 0x811C_9DC5;
const PRIME: u32 = 0x0100_0193;

/// FNV-1a 32-bit of `bytes`.
pub fn fnv1a(bytes: &[u8]) -> u32 {
    let mut hash = OFFSET_BASIS;
    for &b in bytes {
        hash ^= u32::from(b);
        hash = hash.wrapping_mul(PRIME);
    }
    hash
}

/// The tag of `bytes`: 8 upper-case hex digits.
pub fn tag(bytes: &[u8]) -> String {
    format!("{:08X}", fnv1a(bytes))
}

/// A hash's state is kept every this many bytes ([`Checkpointed`]).
pub const CHECKPOINT: usize = 64 * 1024;

/// FNV-1a of some bytes plus its running state every [`CHECKPOINT`] bytes, so that the hash of
/// an edited copy is computed from the first changed byte on ([`Checkpointed::rehash`]): FNV is
/// strictly sequential, and an edit near the end of a 10 MB file then hashes kilobytes, not
/// megabytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpointed {
    pub hash: u32,
    /// `states[k]`: the state after the first `k * CHECKPOINT` bytes.
    states: Vec<u32>,
}

impl Checkpointed {
    pub fn new(bytes: &[u8]) -> Self {
        let mut states = Vec::with_capacity(bytes.len() / CHECKPOINT + 1);
        let mut hash = OFFSET_BASIS;
        states.push(hash);
        for chunk in bytes.chunks(CHECKPOINT) {
            for &b in chunk {
                hash ^= u32::from(b);
                hash = hash.wrapping_mul(PRIME);
            }
            if chunk.len() == CHECKPOINT {
                states.push(hash);
            }
        }
        Checkpointed { hash, states }
    }

    /// The tag of the hashed bytes.
    pub fn tag(&self) -> String {
        format!("{:08X}", self.hash)
    }

    /// FNV-1a of `new`, given that its first `common` bytes equal those hashed.
    pub fn rehash(&self, new: &[u8], common: usize) -> u32 {
        let k = (common.min(new.len()) / CHECKPOINT).min(self.states.len() - 1);
        let mut hash = self.states[k];
        for &b in &new[k * CHECKPOINT..] {
            hash ^= u32::from(b);
            hash = hash.wrapping_mul(PRIME);
        }
        hash
    }
}

/// How many leading bytes `a` and `b` share (compared a block at a time).
pub fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 4096;
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + BLOCK <= n && a[i..i + BLOCK] == b[i..i + BLOCK] {
        i += BLOCK;
    }
    i + a[i..n]
        .iter()
        .zip(&b[i..n])
        .take_while(|(x, y)| x == y)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vectors() {
        assert_eq!(tag(b"hello"), "4F9F2CAB");
        assert_eq!(tag(b""), "811C9DC5");
        assert_eq!(tag(b"a"), "E40C292C");
        assert_ne!(tag(b"ab"), tag(b"ba"));
    }

    #[test]
    fn rehash_from_a_checkpoint_equals_a_full_hash() {
        let old: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let hashed = Checkpointed::new(&old);
        assert_eq!(hashed.hash, fnv1a(&old));
        for at in [
            0usize,
            5,
            CHECKPOINT - 1,
            CHECKPOINT,
            2 * CHECKPOINT + 7,
            old.len() - 1,
        ] {
            let mut new = old.clone();
            new.splice(at..at + 1, [7u8, 7, 7]);
            let common = common_prefix(&old, &new);
            assert_eq!(hashed.rehash(&new, common), fnv1a(&new), "edit at {at}");
        }
        let shorter = &old[..CHECKPOINT * 2];
        assert_eq!(
            hashed.rehash(shorter, common_prefix(&old, shorter)),
            fnv1a(shorter)
        );
        assert_eq!(common_prefix(b"abcd", b"abXd"), 2);
    }
}
