//! One host rule as an operator or author writes it, and the host a connection names.
//!
//! | written | reaches |
//! |---|---|
//! | `example.com` | that name, any port |
//! | `example.com:443` | that name, port 443 |
//! | `*.pypi.org` | every name below `pypi.org` (not `pypi.org` itself) |
//! | `10.0.0.5`, `[::1]:5432` | that address (a port after a bracketed IPv6 address) |
//! | `10.0.0.0/8`, `[fc00::/7]:443` | every address of the network |
//!
//! Names are compared in lower case without a trailing dot; international names are written in
//! their ASCII form (`xn--…`). A name that a resolver could read as an address (`127.1`,
//! `0x7f.1`: its last label all digits or hexadecimal) is refused, so a rule and a resolver never
//! disagree about what a name is.

use crate::special::prefix_matches;
use std::fmt;
use std::net::IpAddr;

/// The longest host name DNS can carry.
const MAX_NAME: usize = 253;
/// The longest label of a name.
const MAX_LABEL: usize = 63;

/// A rule that could not be read: the rule as written and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternError {
    pub pattern: String,
    pub reason: String,
}

impl fmt::Display for PatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "host rule {:?}: {}", self.pattern, self.reason)
    }
}

impl std::error::Error for PatternError {}

/// The host part of a connection: a name (to be resolved) or an address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    Name(String),
    Ip(IpAddr),
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(name) => f.write_str(name),
            Host::Ip(IpAddr::V6(v6)) => write!(f, "[{v6}]"),
            Host::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

/// What a connection asks for: a host and a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub host: Host,
    pub port: u16,
}

impl Target {
    /// The host as a client named it (a URL's host, a CONNECT or SOCKS request's), checked and
    /// normalised as rules are: an address, or a name in lower case without a trailing dot.
    pub fn new(host: &str, port: u16) -> Result<Target, PatternError> {
        let error = |reason: String| PatternError {
            pattern: host.to_string(),
            reason,
        };
        let bare = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        let host = match bare.parse::<IpAddr>() {
            Ok(ip) => Host::Ip(ip),
            Err(_) => Host::Name(name(bare).map_err(error)?),
        };
        Ok(Target { host, port })
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostMatch {
    /// `example.com`: that name only.
    Name(String),
    /// `*.example.com`: any name below it, not the name itself.
    Below(String),
    /// `10.0.0.5`, `10.0.0.0/8`: an address or a network.
    Net { addr: IpAddr, len: u8 },
}

/// One host rule: which hosts, and on which port (any when none is written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPattern {
    host: HostMatch,
    port: Option<u16>,
    text: String,
}

impl HostPattern {
    /// Reads one rule; see the module's table for the forms.
    pub fn parse(text: &str) -> Result<HostPattern, PatternError> {
        let error = |reason: &str| PatternError {
            pattern: text.to_string(),
            reason: reason.into(),
        };
        let written = text.trim();
        if written.is_empty() {
            return Err(error(
                "is empty; write a host name, `*.` and a domain, or an address",
            ));
        }
        let (host, port) = split_port(written).map_err(|reason| error(&reason))?;
        let host = if let Some((addr, len)) = host.split_once('/') {
            network(addr, len).map_err(|reason| error(&reason))?
        } else if let Ok(addr) = host.parse::<IpAddr>() {
            HostMatch::Net {
                addr,
                len: width(addr),
            }
        } else if let Some(domain) = host.strip_prefix("*.") {
            HostMatch::Below(name(domain).map_err(|reason| error(&reason))?)
        } else {
            HostMatch::Name(name(host).map_err(|reason| error(&reason))?)
        };
        Ok(HostPattern {
            host,
            port,
            text: written.to_string(),
        })
    }

    /// The rule as it was written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the rule names one host exactly (a name without a wildcard, or an address or
    /// network): such a rule may lead to a non-public address.
    pub(crate) fn names_exactly(&self) -> bool {
        !matches!(self.host, HostMatch::Below(_))
    }

    /// Whether the rule covers the target's host and port.
    pub fn matches(&self, target: &Target) -> bool {
        self.port_matches(target.port)
            && match (&self.host, &target.host) {
                (HostMatch::Name(rule), Host::Name(name)) => rule == name,
                (HostMatch::Below(rule), Host::Name(name)) => below(name, rule),
                (HostMatch::Net { .. }, Host::Ip(ip)) => self.net_contains(*ip),
                _ => false,
            }
    }

    /// Whether every host and port this rule reaches, `wider` reaches too: how a user policy's
    /// allow list is checked against the machine policy's (it may only narrow it).
    pub fn within(&self, wider: &HostPattern) -> bool {
        let port = wider.port.is_none() || wider.port == self.port;
        port && match (&self.host, &wider.host) {
            (HostMatch::Name(name), HostMatch::Name(wide)) => name == wide,
            // Not a name under a wildcard: a rule naming a host exactly may lead to a private
            // address, which the wildcard never does, so it would reach more.
            (HostMatch::Below(name), HostMatch::Below(wide)) => name == wide || below(name, wide),
            (HostMatch::Net { addr, len }, HostMatch::Net { len: wide_len, .. }) => {
                len >= wide_len && wider.net_contains(*addr)
            }
            _ => false,
        }
    }

    /// Whether the rule is an address or network rule covering `addr` on `port`.
    pub(crate) fn matches_address(&self, addr: IpAddr, port: u16) -> bool {
        self.port_matches(port) && self.net_contains(addr)
    }

    fn port_matches(&self, port: u16) -> bool {
        self.port.is_none_or(|p| p == port)
    }

    fn net_contains(&self, ip: IpAddr) -> bool {
        let HostMatch::Net { addr, len } = self.host else {
            return false;
        };
        match (addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                prefix_matches(u32::from(ip).into(), u32::from(net).into(), len, 32)
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => prefix_matches(ip.into(), net.into(), len, 128),
            // A v4 rule covers the same address written as v4-mapped IPv6, and back.
            (IpAddr::V4(_), IpAddr::V6(ip)) => ip
                .to_ipv4_mapped()
                .is_some_and(|v4| self.net_contains(IpAddr::V4(v4))),
            (IpAddr::V6(net), IpAddr::V4(v4)) => {
                net.to_ipv4_mapped().is_some()
                    && prefix_matches(v4.to_ipv6_mapped().into(), net.into(), len, 128)
            }
        }
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

fn width(addr: IpAddr) -> u8 {
    if addr.is_ipv4() {
        32
    } else {
        128
    }
}

fn below(name: &str, domain: &str) -> bool {
    name.len() > domain.len()
        && name.ends_with(domain)
        && name.as_bytes()[name.len() - domain.len() - 1] == b'.'
}

/// Splits `host:port`, `[v6]:port`, `[v6]` and a bare IPv6 address (which has no port).
fn split_port(written: &str) -> Result<(&str, Option<u16>), String> {
    if let Some(rest) = written.strip_prefix('[') {
        let Some((inside, after)) = rest.split_once(']') else {
            return Err(
                "has `[` without `]`; write an IPv6 address as `[::1]` or `[::1]:443`".into(),
            );
        };
        return match after {
            "" => Ok((inside, None)),
            _ => match after.strip_prefix(':') {
                Some(port_text) => Ok((inside, Some(port(port_text)?))),
                None => Err(format!("has {after:?} after `]`; only `:PORT` may follow")),
            },
        };
    }
    match written.matches(':').count() {
        0 => Ok((written, None)),
        1 => {
            let (host, port_text) = written.split_once(':').unwrap_or((written, ""));
            Ok((host, Some(port(port_text)?)))
        }
        // More than one colon: an IPv6 address or network, without a port.
        _ => Ok((written, None)),
    }
}

fn port(text: &str) -> Result<u16, String> {
    match text.parse::<u16>() {
        Ok(port) if port > 0 => Ok(port),
        _ => Err(format!("port {text:?} is not a number from 1 to 65535")),
    }
}

fn network(addr: &str, len: &str) -> Result<HostMatch, String> {
    let addr: IpAddr = addr
        .parse()
        .map_err(|_| format!("{addr:?} before `/` is not an IPv4 or IPv6 address"))?;
    let max = width(addr);
    let len = len
        .parse::<u8>()
        .ok()
        .filter(|len| *len <= max)
        .ok_or_else(|| format!("prefix length {len:?} is not a number from 0 to {max}"))?;
    let bits: u128 = match addr {
        IpAddr::V4(v4) => u32::from(v4).into(),
        IpAddr::V6(v6) => v6.into(),
    };
    let host_bits = if len == max {
        0
    } else {
        bits & (u128::MAX >> (128 - u32::from(max - len)))
    };
    if host_bits != 0 {
        return Err(format!(
            "has bits set past its /{len} prefix; write the network's first address"
        ));
    }
    Ok(HostMatch::Net { addr, len })
}

/// A host name checked and normalised: lower case, no trailing dot, labels of letters, digits,
/// `-` and `_`, and a last label that cannot be read as a number.
fn name(text: &str) -> Result<String, String> {
    let lower = text.to_ascii_lowercase();
    let name = lower.strip_suffix('.').unwrap_or(&lower);
    if name.is_empty() {
        return Err("names no host".into());
    }
    if !name.is_ascii() {
        return Err("is not ASCII; write an international name in its ASCII form (xn--…)".into());
    }
    if name.contains('*') {
        return Err("has `*` where only a leading `*.` is a wildcard (`*.example.com`)".into());
    }
    if name.len() > MAX_NAME {
        return Err(format!(
            "is {} characters long; a host name has at most {MAX_NAME}",
            name.len()
        ));
    }
    for label in name.split('.') {
        if label.is_empty() || label.len() > MAX_LABEL {
            return Err(format!(
                "has an empty label or one over {MAX_LABEL} characters"
            ));
        }
        if let Some(bad) = label
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
        {
            return Err(format!(
                "has {bad:?}; a host name has letters, digits, `-` and `_`"
            ));
        }
    }
    let last = name.rsplit('.').next().unwrap_or(name);
    let numeric = last.bytes().all(|b| b.is_ascii_digit())
        || last
            .strip_prefix("0x")
            .is_some_and(|hex| hex.bytes().all(|b| b.is_ascii_hexdigit()));
    if numeric {
        return Err(
            "looks like a number a resolver could read as an address; write the address in full (127.0.0.1)".into(),
        );
    }
    Ok(name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(host: &str, port: u16) -> Target {
        Target::new(host, port).unwrap()
    }

    fn rule(text: &str) -> HostPattern {
        HostPattern::parse(text).unwrap()
    }

    #[test]
    fn a_name_rule_covers_that_name_on_any_port_or_the_one_written() {
        assert!(rule("Example.COM.").matches(&target("example.com", 443)));
        assert!(rule("example.com").matches(&target("EXAMPLE.com.", 22)));
        assert!(!rule("example.com").matches(&target("www.example.com", 443)));
        assert!(rule("example.com:443").matches(&target("example.com", 443)));
        assert!(!rule("example.com:443").matches(&target("example.com", 80)));
    }

    #[test]
    fn a_wildcard_covers_names_below_the_domain_only() {
        let pypi = rule("*.pypi.org");
        assert!(pypi.matches(&target("files.pypi.org", 443)));
        assert!(pypi.matches(&target("a.b.pypi.org", 443)));
        assert!(!pypi.matches(&target("pypi.org", 443)));
        assert!(!pypi.matches(&target("evilpypi.org", 443)));
        assert!(!pypi.matches(&target("pypi.org.evil.com", 443)));
        assert!(!pypi.names_exactly());
    }

    #[test]
    fn address_and_network_rules_cover_addresses() {
        assert!(rule("10.0.0.5").matches(&target("10.0.0.5", 1)));
        assert!(!rule("10.0.0.5").matches(&target("10.0.0.6", 1)));
        assert!(rule("10.0.0.0/8").matches(&target("10.200.1.1", 5432)));
        assert!(rule("[::1]:5432").matches(&target("[::1]", 5432)));
        assert!(!rule("[::1]:5432").matches(&target("::1", 5433)));
        assert!(rule("fc00::/7").matches(&target("fd12::9", 80)));
        assert!(rule("[fc00::/7]:443").matches(&target("fd12::9", 443)));
        assert!(rule("0.0.0.0/0").matches(&target("8.8.8.8", 53)));
        // The same address written as v4-mapped IPv6, either way round.
        assert!(rule("127.0.0.0/8").matches(&target("::ffff:127.0.0.2", 80)));
        assert!(rule("::ffff:127.0.0.1").matches(&target("127.0.0.1", 80)));
        // A name rule never covers an address, nor an address rule a name.
        assert!(!rule("localhost").matches(&target("127.0.0.1", 80)));
        assert!(!rule("127.0.0.1").matches(&target("localhost", 80)));
    }

    #[test]
    fn a_rule_is_within_a_wider_one_only_when_it_reaches_no_more() {
        let within = |narrow: &str, wide: &str| rule(narrow).within(&rule(wide));
        assert!(within("pypi.org", "pypi.org"));
        assert!(within("pypi.org:443", "pypi.org"));
        assert!(!within("pypi.org", "pypi.org:443"));
        // An exact name may reach a private address; the wildcard never does.
        assert!(!within("files.pypi.org", "*.pypi.org"));
        assert!(within("*.files.pypi.org", "*.pypi.org"));
        assert!(within("*.pypi.org", "*.pypi.org"));
        assert!(!within("pypi.org", "*.pypi.org"));
        assert!(!within("*.pypi.org", "files.pypi.org"));
        assert!(!within("*.org", "*.pypi.org"));
        assert!(within("10.1.0.0/16", "10.0.0.0/8"));
        assert!(within("10.1.2.3", "10.0.0.0/8"));
        assert!(!within("10.0.0.0/8", "10.1.0.0/16"));
        assert!(!within("11.0.0.0/16", "10.0.0.0/8"));
        assert!(!within("localhost", "127.0.0.1"));
    }

    #[test]
    fn unreadable_rules_say_why() {
        for (text, says) in [
            ("", "is empty"),
            ("  ", "is empty"),
            ("example.com:0", "1 to 65535"),
            ("example.com:65536", "1 to 65535"),
            ("example.com:http", "1 to 65535"),
            ("[::1", "without `]`"),
            ("[::1]x", "only `:PORT`"),
            ("10.0.0.1/8", "first address"),
            ("10.0.0.0/33", "0 to 32"),
            ("nonsense/8", "not an IPv4"),
            ("*", "only a leading `*.`"),
            ("a.*.com", "only a leading `*.`"),
            ("*example.com", "only a leading `*.`"),
            ("bücher.de", "xn--"),
            ("a..b", "empty label"),
            ("under score.com", "letters, digits"),
            ("127.1", "write the address in full"),
            ("0x7f.1", "write the address in full"),
        ] {
            let error = HostPattern::parse(text).unwrap_err();
            assert!(error.to_string().contains(says), "{text:?}: {error}");
            assert!(error.to_string().contains(&format!("{text:?}")), "{error}");
        }
        let long = format!("{}.com", "a.".repeat(130));
        assert!(HostPattern::parse(&long)
            .unwrap_err()
            .reason
            .contains("at most 253"));
    }

    #[test]
    fn a_target_is_normalised_like_a_rule() {
        assert_eq!(
            target("WWW.Example.com.", 443).host,
            Host::Name("www.example.com".into())
        );
        assert_eq!(target("[::1]", 80).to_string(), "[::1]:80");
        assert!(Target::new("127.1", 80).is_err());
        assert!(Target::new("exa mple.com", 80).is_err());
    }
}
