//! The decision: may this run connect to this host and port, and to which addresses.
//!
//! 1. By name, before anything is looked up ([`HostRules::admit`]): a deny rule covering the
//!    target refuses it, whatever allows it; otherwise an allow rule, or "every public host",
//!    must cover it.
//! 2. By address, after the caller resolved the name once ([`Admitted::addresses`]): a deny rule
//!    covering any address refuses the connection; an address in a [`special_range`] is allowed
//!    only when the rule that admitted the target names it exactly (a name without a wildcard, an
//!    address or a network) or an allow rule covers the address itself. A wildcard or "every
//!    public host" never leads to the host's loopback, the local network or a metadata service.
//!
//! The caller then connects to the addresses returned, never to a second lookup of the name, so
//! a name that resolves differently the next time (DNS rebinding) gains nothing.

use crate::pattern::{Host, HostPattern, Target};
use crate::special::{special_range, SpecialRange};
use std::fmt;
use std::net::IpAddr;

/// An allow list, a deny list and whether every public host is allowed besides the list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostRules {
    allow: Vec<HostPattern>,
    deny: Vec<HostPattern>,
    every_public_host: bool,
}

/// Why a connection is refused; its text tells the script's author which rule would change it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A deny rule covers the target or one of its addresses.
    Denied {
        target: Target,
        rule: String,
        address: Option<IpAddr>,
    },
    /// No allow rule covers the target.
    NotAllowed { target: Target },
    /// The target leads to a non-public address that no rule names.
    Special {
        target: Target,
        address: IpAddr,
        range: SpecialRange,
    },
    /// The name resolved to no address.
    NoAddress { target: Target },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Denied { target, rule, address: None } => write!(
                f,
                "{target} is refused by the deny rule {rule:?} (a deny rule wins over every allow rule)"
            ),
            Refusal::Denied { target, rule, address: Some(address) } => write!(
                f,
                "{target} resolves to {address}, which the deny rule {rule:?} refuses (a deny rule wins over every allow rule)"
            ),
            Refusal::NotAllowed { target } => {
                let host = &target.host;
                write!(f, "{target} is not an allowed host; to allow it, add \"{host}\" (any port) or \"{target}\" to the allowed hosts")?;
                if let Host::Name(name) = host {
                    if let Some((_, parent)) = name.split_once('.') {
                        if parent.contains('.') {
                            write!(f, ", or \"*.{parent}\" for every name below {parent}")?;
                        }
                    }
                }
                Ok(())
            }
            Refusal::Special { target, address, range } => write!(
                f,
                "{target} leads to {address}, a {} address ({}); such addresses are reached only through a rule that names the host exactly (\"{target}\") or the address (\"{address}\"), never through a wildcard or every public host",
                range.what, range.cidr
            ),
            Refusal::NoAddress { target } => write!(f, "{} resolves to no address", target.host),
        }
    }
}

impl std::error::Error for Refusal {}

/// A target that passed the check by name; [`Admitted::addresses`] checks what it resolved to.
#[derive(Debug)]
pub struct Admitted<'a> {
    rules: &'a HostRules,
    target: Target,
    /// An allow rule names the target exactly, so it may lead to a non-public address.
    named_exactly: bool,
}

impl HostRules {
    /// Rules from an allow list, a deny list and whether every public host is allowed too.
    pub fn new(allow: Vec<HostPattern>, deny: Vec<HostPattern>, every_public_host: bool) -> Self {
        HostRules {
            allow,
            deny,
            every_public_host,
        }
    }

    /// The allow list (empty with every public host allowed: only the public hosts then).
    pub fn allow(&self) -> &[HostPattern] {
        &self.allow
    }

    /// The deny list.
    pub fn deny(&self) -> &[HostPattern] {
        &self.deny
    }

    /// Whether every public host is allowed besides the allow list.
    pub fn every_public_host(&self) -> bool {
        self.every_public_host
    }

    /// The check by name, before any lookup: a deny rule refuses; an allow rule or every public
    /// host admits.
    pub fn admit(&self, target: &Target) -> Result<Admitted<'_>, Refusal> {
        if let Some(rule) = self.deny.iter().find(|rule| rule.matches(target)) {
            return Err(Refusal::Denied {
                target: target.clone(),
                rule: rule.to_string(),
                address: None,
            });
        }
        let covering = self.allow.iter().filter(|rule| rule.matches(target));
        let mut admitted = self.every_public_host;
        let mut named_exactly = false;
        for rule in covering {
            admitted = true;
            named_exactly |= rule.names_exactly();
        }
        if !admitted {
            return Err(Refusal::NotAllowed {
                target: target.clone(),
            });
        }
        Ok(Admitted {
            rules: self,
            target: target.clone(),
            named_exactly,
        })
    }
}

impl Admitted<'_> {
    /// The target's addresses that may be connected to: all of `resolved`, or a refusal naming
    /// the first address a rule refuses. An address target is checked as its own resolution.
    pub fn addresses(&self, resolved: &[IpAddr]) -> Result<Vec<IpAddr>, Refusal> {
        let own;
        let resolved = match self.target.host {
            Host::Ip(ip) => {
                own = [ip];
                &own[..]
            }
            Host::Name(_) => resolved,
        };
        if resolved.is_empty() {
            return Err(Refusal::NoAddress {
                target: self.target.clone(),
            });
        }
        let port = self.target.port;
        for &address in resolved {
            if let Some(rule) = self
                .rules
                .deny
                .iter()
                .find(|r| r.matches_address(address, port))
            {
                return Err(Refusal::Denied {
                    target: self.target.clone(),
                    rule: rule.to_string(),
                    address: Some(address),
                });
            }
            let Some(range) = special_range(address) else {
                continue;
            };
            let named = self.named_exactly
                || self
                    .rules
                    .allow
                    .iter()
                    .any(|r| r.matches_address(address, port));
            if !named {
                return Err(Refusal::Special {
                    target: self.target.clone(),
                    address,
                    range,
                });
            }
        }
        Ok(resolved.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(allow: &[&str], deny: &[&str], every_public_host: bool) -> HostRules {
        let parse = |list: &[&str]| {
            list.iter()
                .map(|t| HostPattern::parse(t).unwrap())
                .collect()
        };
        HostRules::new(parse(allow), parse(deny), every_public_host)
    }

    fn target(host: &str, port: u16) -> Target {
        Target::new(host, port).unwrap()
    }

    fn ips(list: &[&str]) -> Vec<IpAddr> {
        list.iter().map(|a| a.parse().unwrap()).collect()
    }

    /// The whole check, as a caller makes it: by name, then the resolved addresses.
    fn check(
        rules: &HostRules,
        host: &str,
        port: u16,
        resolved: &[&str],
    ) -> Result<Vec<IpAddr>, Refusal> {
        rules.admit(&target(host, port))?.addresses(&ips(resolved))
    }

    const PUBLIC: &str = "151.101.0.223";

    #[test]
    fn an_allowed_host_is_reached_and_others_are_not() {
        let rules = rules(&["pypi.org", "*.pythonhosted.org:443"], &[], false);
        assert_eq!(
            check(&rules, "pypi.org", 443, &[PUBLIC]),
            Ok(ips(&[PUBLIC]))
        );
        assert!(check(&rules, "files.pythonhosted.org", 443, &[PUBLIC]).is_ok());
        let refused = check(&rules, "files.pythonhosted.org", 80, &[PUBLIC]).unwrap_err();
        assert!(matches!(refused, Refusal::NotAllowed { .. }));
        let text = check(&rules, "evil.example.com", 443, &[PUBLIC])
            .unwrap_err()
            .to_string();
        assert!(text.contains("\"evil.example.com:443\""), "{text}");
        assert!(text.contains("\"*.example.com\""), "{text}");
    }

    #[test]
    fn a_deny_rule_wins_over_every_allow_rule() {
        let rules = rules(
            &["*.example.com", "api.example.com"],
            &["api.example.com"],
            true,
        );
        let refused = check(&rules, "api.example.com", 443, &[PUBLIC]).unwrap_err();
        assert!(
            refused
                .to_string()
                .contains("deny rule \"api.example.com\""),
            "{refused}"
        );
        assert!(check(&rules, "www.example.com", 443, &[PUBLIC]).is_ok());
        // A deny rule on an address refuses a name that resolves there, whatever allowed it.
        let rules = self::rules(&["mirror.example.com"], &["151.101.0.0/16"], true);
        let refused = check(&rules, "mirror.example.com", 443, &[PUBLIC]).unwrap_err();
        assert!(
            matches!(
                refused,
                Refusal::Denied {
                    address: Some(_),
                    ..
                }
            ),
            "{refused}"
        );
    }

    #[test]
    fn a_deny_rule_refuses_before_the_name_is_looked_up() {
        let rules = rules(&[], &["*.tracker.example"], true);
        assert!(matches!(
            rules.admit(&target("a.tracker.example", 443)),
            Err(Refusal::Denied { address: None, .. })
        ));
    }

    #[test]
    fn every_public_host_never_leads_to_a_special_address() {
        let rules = rules(&[], &[], true);
        assert!(check(&rules, "example.com", 443, &[PUBLIC]).is_ok());
        for special in [
            "127.0.0.1",
            "10.0.0.5",
            "169.254.169.254",
            "::1",
            "::ffff:127.0.0.1",
        ] {
            let refused = check(&rules, "rebind.example.com", 443, &[PUBLIC, special]).unwrap_err();
            assert!(
                matches!(refused, Refusal::Special { .. }),
                "{special}: {refused}"
            );
            let refused = check(&rules, special, 80, &[]).unwrap_err();
            assert!(
                matches!(refused, Refusal::Special { .. }),
                "{special}: {refused}"
            );
        }
        let text = check(&rules, "metadata.example", 80, &["169.254.169.254"])
            .unwrap_err()
            .to_string();
        assert!(text.contains("link-local (cloud metadata)"), "{text}");
        assert!(text.contains("\"169.254.169.254\""), "{text}");
    }

    #[test]
    fn a_wildcard_never_leads_to_a_special_address() {
        let rules = rules(&["*.example.com"], &[], false);
        let refused = check(&rules, "internal.example.com", 443, &["10.1.2.3"]).unwrap_err();
        assert!(matches!(refused, Refusal::Special { .. }), "{refused}");
    }

    #[test]
    fn a_rule_naming_the_host_or_the_address_reaches_a_special_address() {
        let rules = self::rules(&["db.internal.example:5432", "localhost"], &[], false);
        assert!(check(&rules, "db.internal.example", 5432, &["10.1.2.3"]).is_ok());
        assert!(check(&rules, "localhost", 8080, &["127.0.0.1", "::1"]).is_ok());
        let rules = self::rules(&["*.corp.example", "10.0.0.0/8"], &[], false);
        assert!(check(&rules, "git.corp.example", 22, &["10.4.4.4"]).is_ok());
        assert!(check(&rules, "git.corp.example", 22, &["192.168.1.1"]).is_err());
        assert!(check(&rules, "10.9.9.9", 22, &[]).is_ok());
        let rules = self::rules(&["127.0.0.1:8080"], &[], true);
        assert!(check(&rules, "127.0.0.1", 8080, &[]).is_ok());
        assert!(check(&rules, "127.0.0.1", 8081, &[]).is_err());
    }

    #[test]
    fn no_rule_reaches_nothing_and_no_address_connects_nowhere() {
        let rules = HostRules::default();
        assert!(matches!(
            rules.admit(&target("example.com", 443)),
            Err(Refusal::NotAllowed { .. })
        ));
        let rules = self::rules(&["example.com"], &[], false);
        assert!(matches!(
            check(&rules, "example.com", 443, &[]),
            Err(Refusal::NoAddress { .. })
        ));
    }
}
