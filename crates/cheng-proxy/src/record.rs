//! Every attempt the proxy saw, for the node's `metrics` and the run's warnings.

use crate::counted::Counters;
use serde_json::{json, Value};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// At most this many attempts are kept per run; later ones are only counted.
pub const MAX_RECORDED: usize = 200;

/// How the client asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// A plain `http://` request through the HTTP proxy.
    Http,
    /// A CONNECT tunnel (HTTPS, or anything else over TCP).
    Connect,
    /// A SOCKS5 CONNECT.
    Socks5,
}

impl Via {
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Http => "http",
            Via::Connect => "connect",
            Via::Socks5 => "socks5",
        }
    }
}

/// What became of an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Connected to `address`.
    Connected { address: IpAddr },
    /// The host rules refused it; the text names the rule to add or the one that refused.
    Refused(String),
    /// Allowed, but the lookup or every connection failed.
    Failed(String),
}

/// One attempt, as reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub via: Via,
    /// As the client named it (a name or an address).
    pub host: String,
    pub port: u16,
    pub outcome: Outcome,
    pub bytes_sent: u64,
    pub bytes_received: u64,
}

/// Every attempt of a run (the first [`MAX_RECORDED`]) and how many more there were.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub attempts: Vec<Attempt>,
    pub omitted: u64,
}

impl Report {
    /// The refusals' texts, each once, for the run's warnings.
    pub fn refusals(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for attempt in &self.attempts {
            if let Outcome::Refused(why) = &attempt.outcome {
                if !out.contains(why) {
                    out.push(why.clone());
                }
            }
        }
        out
    }

    pub fn to_json(&self) -> Value {
        let attempts: Vec<Value> = self
            .attempts
            .iter()
            .map(|a| {
                let mut v = json!({
                    "via": a.via.as_str(),
                    "host": a.host,
                    "port": a.port,
                    "bytes_sent": a.bytes_sent,
                    "bytes_received": a.bytes_received,
                });
                let (outcome, detail) = match &a.outcome {
                    Outcome::Connected { address } => {
                        ("connected", ("address", address.to_string()))
                    }
                    Outcome::Refused(why) => ("refused", ("reason", why.clone())),
                    Outcome::Failed(why) => ("failed", ("error", why.clone())),
                };
                v["outcome"] = json!(outcome);
                v[detail.0] = json!(detail.1);
                v
            })
            .collect();
        json!({ "attempts": attempts, "attempts_omitted": self.omitted })
    }
}

#[derive(Debug)]
struct Entry {
    via: Via,
    host: String,
    port: u16,
    outcome: Outcome,
    counters: Arc<Counters>,
}

#[derive(Debug, Default)]
pub(crate) struct Record {
    entries: Mutex<Vec<Entry>>,
    omitted: AtomicU64,
}

impl Record {
    /// Records an attempt; returns the counters its bytes go to, and whether it was kept (the
    /// first [`MAX_RECORDED`]; later ones are only counted).
    pub fn add(&self, via: Via, host: &str, port: u16, outcome: Outcome) -> (Arc<Counters>, bool) {
        let counters = Arc::new(Counters::default());
        // A poisoned lock only means a handler panicked mid-push; the list is still a list.
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.len() >= MAX_RECORDED {
            self.omitted.fetch_add(1, Ordering::Relaxed);
            return (counters, false);
        }
        entries.push(Entry {
            via,
            host: host.to_string(),
            port,
            outcome,
            counters: Arc::clone(&counters),
        });
        (counters, true)
    }

    pub fn report(&self) -> Report {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        Report {
            attempts: entries
                .iter()
                .map(|e| Attempt {
                    via: e.via,
                    host: e.host.clone(),
                    port: e.port,
                    outcome: e.outcome.clone(),
                    bytes_sent: e.counters.sent.load(Ordering::Relaxed),
                    bytes_received: e.counters.received.load(Ordering::Relaxed),
                })
                .collect(),
            omitted: self.omitted.load(Ordering::Relaxed),
        }
    }
}
