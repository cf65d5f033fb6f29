//! The one name lookup a connection makes (a fetch hop, a proxied connection), and the test switch that maps names to loopback.
//!
//! Tests never leave the machine: they serve pages on 127.0.0.1 and name them with
//! [`TEST_RESOLVE_VAR`] (`docs.test=127.0.0.1,cdn.test=127.0.0.1`). Only a debug build (what
//! `cargo test` runs) honours it, and while it is set no other name is looked up at all. A
//! release build refuses every lookup while it is set, so it can never quietly redirect a real connection.

use std::net::IpAddr;

/// The test switch: comma-separated `NAME=ADDRESS` pairs.
pub const TEST_RESOLVE_VAR: &str = "CHENG_TEST_RESOLVE";

/// The addresses `host` resolves to, deduplicated in the order the resolver gave them.
pub async fn lookup(host: &str, port: u16) -> Result<Vec<IpAddr>, String> {
    if let Some(map) = test_map()? {
        return match map.iter().find(|(name, _)| name == host) {
            Some((_, addr)) => Ok(vec![*addr]),
            None => Err(format!(
                "{host} is not one of the names {TEST_RESOLVE_VAR} maps (a test run looks up no other)"
            )),
        };
    }
    let found = tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| format!("cannot look up {host}: {e}"))?;
    let mut addrs: Vec<IpAddr> = Vec::new();
    for addr in found.map(|a| a.ip()) {
        if !addrs.contains(&addr) {
            addrs.push(addr);
        }
    }
    Ok(addrs)
}

/// The test switch's map when it is set (and this is a debug build), else `None`.
fn test_map() -> Result<Option<Vec<(String, IpAddr)>>, String> {
    let Some(value) = std::env::var_os(TEST_RESOLVE_VAR) else {
        return Ok(None);
    };
    if !cfg!(debug_assertions) {
        return Err(format!(
            "{TEST_RESOLVE_VAR} is set; it is a switch of cheng's test suite, refused by release builds: unset it"
        ));
    }
    let value = value.to_string_lossy();
    let mut map = Vec::new();
    for pair in value.split(',').filter(|p| !p.trim().is_empty()) {
        let parsed = pair.split_once('=').and_then(|(name, addr)| {
            Some((name.trim().to_ascii_lowercase(), addr.trim().parse().ok()?))
        });
        match parsed {
            Some(entry) => map.push(entry),
            None => return Err(format!("{TEST_RESOLVE_VAR}: {pair:?} is not NAME=ADDRESS")),
        }
    }
    Ok(Some(map))
}
