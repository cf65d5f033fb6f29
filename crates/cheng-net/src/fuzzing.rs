//! Properties the fuzzer checks on the host rules (fuzz/fuzz_targets/host_rules.rs); the
//! ordinary tests run the checked-in seeds through the same function. Each check panics when a
//! property does not hold.

use crate::{special_range, HostPattern, HostRules, Target};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Input: `PATTERN\nHOST` (the pattern alone when there is no line break); the input's first
/// bytes also make a port and the addresses the classification is checked on.
pub fn host_rules(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (pattern_text, host_text) = text.split_once('\n').unwrap_or((&text, ""));
    let port = data.first().map_or(1, |b| u16::from(*b).max(1)) * 257;

    // A rule reads back as itself; a refusal names the rule as written.
    let pattern = match HostPattern::parse(pattern_text) {
        Ok(pattern) => {
            assert_eq!(HostPattern::parse(pattern.as_str()).as_ref(), Ok(&pattern));
            Some(pattern)
        }
        Err(error) => {
            assert_eq!(error.pattern, pattern_text);
            None
        }
    };

    if let Ok(target) = Target::new(host_text, port) {
        // Normalising is idempotent, and the rule written from a target covers it.
        let again = Target::new(&target.host.to_string(), port);
        assert_eq!(again.as_ref(), Ok(&target), "{host_text:?}");
        let exact = HostPattern::parse(&target.to_string());
        assert!(
            exact.as_ref().is_ok_and(|p| p.matches(&target)),
            "{target}: {exact:?}"
        );
        if let Some(pattern) = pattern {
            // A deny rule wins over the same rule allowing and over every public host.
            let rules = HostRules::new(vec![pattern.clone()], vec![pattern.clone()], true);
            assert_eq!(rules.admit(&target).is_err(), pattern.matches(&target));
        }
    }

    // An IPv6 form that carries an IPv4 address is judged as that address.
    let mut bytes = [0u8; 16];
    for (slot, byte) in bytes.iter_mut().zip(data) {
        *slot = *byte;
    }
    let v6 = Ipv6Addr::from(bytes);
    let v4 = Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3]);
    let _ = special_range(IpAddr::V6(v6));
    assert_eq!(
        special_range(IpAddr::V4(v4)),
        special_range(IpAddr::V6(v4.to_ipv6_mapped()))
    );
    let six_to_four = Ipv6Addr::from((0x2002u128 << 112) | (u128::from(u32::from(v4)) << 80));
    assert_eq!(
        special_range(IpAddr::V4(v4)),
        special_range(IpAddr::V6(six_to_four))
    );
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_fuzz_seeds_hold_the_properties() {
        cheng_test_support::check_fuzz_seeds(&[("host_rules", super::host_rules)]);
    }
}
