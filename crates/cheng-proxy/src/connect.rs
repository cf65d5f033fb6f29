//! The one way the proxy opens a connection: the gate decides, then exactly the addresses it
//! checked are tried, each attempt recorded.

use crate::counted::Counted;
use crate::record::{Outcome, Via};
use crate::Shared;
use cheng_io::output::Connection;
use cheng_net::{GateError, Target};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::TcpStream;

/// How long one address may take to accept.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why no connection was opened; the text is what the client is told.
#[derive(Debug)]
pub enum Denied {
    Refused(String),
    Failed(String),
}

/// Connects to `host:port` as the gate allows, recording the attempt.
pub async fn open(
    shared: &Shared,
    via: Via,
    host: &str,
    port: u16,
) -> Result<Counted<TcpStream>, Denied> {
    let decided = decide(shared, host, port).await;
    let (outcome, result) = match decided {
        Ok((stream, address)) => (Outcome::Connected { address }, Ok(stream)),
        Err(Denied::Refused(why)) => (Outcome::Refused(why.clone()), Err(Denied::Refused(why))),
        Err(Denied::Failed(why)) => (Outcome::Failed(why.clone()), Err(Denied::Failed(why))),
    };
    let (counters, kept) = shared.record.add(via, host, port, outcome.clone());
    if kept {
        shared.output.connection(&live(via, host, port, &outcome));
    }
    result.map(|stream| Counted::new(stream, counters))
}

/// The attempt as the run's live output shows it.
fn live(via: Via, host: &str, port: u16, outcome: &Outcome) -> Connection {
    let (outcome, address, reason) = match outcome {
        Outcome::Connected { address } => ("connected", Some(address.to_string()), None),
        Outcome::Refused(why) => ("refused", None, Some(why.clone())),
        Outcome::Failed(why) => ("failed", None, Some(why.clone())),
    };
    Connection {
        via: via.as_str(),
        host: host.to_string(),
        port,
        outcome,
        address,
        reason,
    }
}

async fn decide(
    shared: &Shared,
    host: &str,
    port: u16,
) -> Result<(TcpStream, std::net::IpAddr), Denied> {
    let target = Target::new(host, port).map_err(|e| {
        Denied::Refused(format!(
            "{host}:{port} is not a host the proxy can reach: {e}"
        ))
    })?;
    let addresses = shared.gate.addresses(&target).await.map_err(|e| match e {
        GateError::Refused { .. } => Denied::Refused(format!("cheng refused the connection: {e}")),
        GateError::Lookup(_) => Denied::Failed(e.to_string()),
    })?;
    let mut last = String::new();
    for address in addresses {
        match tokio::time::timeout(
            CONNECT_TIMEOUT,
            TcpStream::connect(SocketAddr::new(address, port)),
        )
        .await
        {
            Ok(Ok(stream)) => return Ok((stream, address)),
            Ok(Err(e)) => last = format!("{address}: {e}"),
            Err(_) => {
                last = format!(
                    "{address}: no answer within {} s",
                    CONNECT_TIMEOUT.as_secs()
                )
            }
        }
    }
    Err(Denied::Failed(format!(
        "cannot connect to {target} ({last})"
    )))
}
