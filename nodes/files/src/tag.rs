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
}
