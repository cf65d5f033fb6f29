//! The address ranges a name may not lead to unless a rule names the host or the address:
//! everything that is not the public internet. A script allowed "every public host", or any
//! host under a wildcard, must not reach the host's loopback, the local network or a cloud
//! metadata service by way of a name that resolves there.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A non-public range an address falls in: what it is, and the range as written in rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpecialRange {
    /// What the range is, for a person: "loopback", "private", …
    pub what: &'static str,
    /// The range in the rules' syntax, e.g. `127.0.0.0/8`.
    pub cidr: &'static str,
}

const V4: &[(u32, u8, &str, &str)] = &[
    (
        0x0000_0000,
        8,
        "unspecified (\"this network\")",
        "0.0.0.0/8",
    ),
    (0x0a00_0000, 8, "private", "10.0.0.0/8"),
    (
        0x6440_0000,
        10,
        "shared (carrier-grade NAT)",
        "100.64.0.0/10",
    ),
    (0x7f00_0000, 8, "loopback", "127.0.0.0/8"),
    (
        0xa9fe_0000,
        16,
        "link-local (cloud metadata)",
        "169.254.0.0/16",
    ),
    (0xac10_0000, 12, "private", "172.16.0.0/12"),
    (0xc000_0000, 24, "IETF protocol assignments", "192.0.0.0/24"),
    (0xc0a8_0000, 16, "private", "192.168.0.0/16"),
    (0xc612_0000, 15, "benchmarking", "198.18.0.0/15"),
    (0xe000_0000, 4, "multicast", "224.0.0.0/4"),
    (0xf000_0000, 4, "reserved (and broadcast)", "240.0.0.0/4"),
];

const V6: &[(u128, u8, &str, &str)] = &[
    (0, 128, "unspecified", "::/128"),
    (1, 128, "loopback", "::1/128"),
    (0xfc00 << 112, 7, "unique local (private)", "fc00::/7"),
    (0xfe80 << 112, 10, "link-local", "fe80::/10"),
    (
        0xfec0 << 112,
        10,
        "site-local (deprecated, private)",
        "fec0::/10",
    ),
    (0xff00 << 112, 8, "multicast", "ff00::/8"),
];

/// The non-public range `addr` is in, or `None` for a public address. IPv6 addresses that carry
/// an IPv4 address (mapped `::ffff:a.b.c.d`, compatible `::a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4
/// `2002::/16`) are judged by the IPv4 address they lead to.
pub fn special_range(addr: IpAddr) -> Option<SpecialRange> {
    match addr {
        IpAddr::V4(v4) => special_v4(v4),
        IpAddr::V6(v6) => special_v6(v6),
    }
}

fn special_v4(addr: Ipv4Addr) -> Option<SpecialRange> {
    let bits = u32::from(addr);
    V4.iter()
        .find(|(net, len, _, _)| prefix_matches(u128::from(bits), u128::from(*net), *len, 32))
        .map(|(_, _, what, cidr)| SpecialRange { what, cidr })
}

fn special_v6(addr: Ipv6Addr) -> Option<SpecialRange> {
    let bits = u128::from(addr);
    if let Some((_, _, what, cidr)) = V6
        .iter()
        .find(|(net, len, _, _)| prefix_matches(bits, *net, *len, 128))
    {
        return Some(SpecialRange { what, cidr });
    }
    embedded_v4(bits).and_then(special_v4)
}

/// The IPv4 address an IPv6 address leads to, where it carries one.
fn embedded_v4(bits: u128) -> Option<Ipv4Addr> {
    let low32 = Ipv4Addr::from((bits & 0xffff_ffff) as u32);
    let mapped = bits >> 32 == 0xffff;
    let compatible = bits >> 32 == 0;
    let nat64 = bits >> 32 == 0x0064_ff9b_u128 << 64;
    if mapped || compatible || nat64 {
        return Some(low32);
    }
    if bits >> 112 == 0x2002 {
        return Some(Ipv4Addr::from(((bits >> 80) & 0xffff_ffff) as u32));
    }
    None
}

/// Whether the first `len` of `width` bits of `addr` equal those of `net`.
pub(crate) fn prefix_matches(addr: u128, net: u128, len: u8, width: u8) -> bool {
    if len == 0 {
        return true;
    }
    let shift = u32::from(width - len);
    addr >> shift == net >> shift
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(text: &str) -> Option<&'static str> {
        special_range(text.parse().unwrap()).map(|r| r.cidr)
    }

    #[test]
    fn the_ranges_the_rules_protect_are_special() {
        for (addr, cidr) in [
            ("10.1.2.3", "10.0.0.0/8"),
            ("172.16.0.1", "172.16.0.0/12"),
            ("172.31.255.255", "172.16.0.0/12"),
            ("192.168.1.1", "192.168.0.0/16"),
            ("127.0.0.1", "127.0.0.0/8"),
            ("127.255.0.9", "127.0.0.0/8"),
            ("169.254.169.254", "169.254.0.0/16"),
            ("100.64.0.1", "100.64.0.0/10"),
            ("0.0.0.0", "0.0.0.0/8"),
            ("255.255.255.255", "240.0.0.0/4"),
            ("::1", "::1/128"),
            ("::", "::/128"),
            ("fd00::1", "fc00::/7"),
            ("fe80::1", "fe80::/10"),
        ] {
            assert_eq!(range(addr), Some(cidr), "{addr}");
        }
    }

    #[test]
    fn ipv6_forms_that_lead_to_ipv4_are_judged_by_it() {
        assert_eq!(range("::ffff:127.0.0.1"), Some("127.0.0.0/8"));
        assert_eq!(range("::ffff:169.254.169.254"), Some("169.254.0.0/16"));
        assert_eq!(range("::10.0.0.1"), Some("10.0.0.0/8"));
        assert_eq!(range("64:ff9b::a00:1"), Some("10.0.0.0/8"));
        assert_eq!(range("2002:7f00:1::"), Some("127.0.0.0/8"));
        assert_eq!(range("::ffff:93.184.216.34"), None);
        assert_eq!(range("2002:5db8:d822::1"), None);
    }

    #[test]
    fn public_addresses_are_not_special() {
        for addr in [
            "93.184.216.34",
            "1.1.1.1",
            "172.32.0.1",
            "100.128.0.1",
            "169.255.0.1",
            "2606:4700::1111",
        ] {
            assert_eq!(range(addr), None, "{addr}");
        }
    }
}
