//! The SOCKS5 side (fast-socks5 parses it): no authentication, CONNECT only, by name
//! (`socks5h://`) or by address. A refusal is reply 0x02, "connection not allowed by ruleset".

use crate::connect::{self, Denied};
use crate::record::Via;
use crate::Shared;
use fast_socks5::server::Socks5ServerProtocol;
use fast_socks5::util::target_addr::TargetAddr;
use fast_socks5::{ReplyError, Socks5Command};
use std::net::SocketAddr;
use std::sync::Arc;

pub async fn serve(stream: tokio::net::UnixStream, shared: Arc<Shared>) {
    // A client that speaks something else, breaks off or says nothing ends its own connection.
    let handshake = async {
        let protocol = Socks5ServerProtocol::accept_no_auth(stream).await.ok()?;
        protocol.read_command().await.ok()
    };
    let Ok(Some((protocol, command, target))) =
        tokio::time::timeout(crate::HANDSHAKE_TIMEOUT, handshake).await
    else {
        return;
    };
    if command != Socks5Command::TCPConnect {
        let _ = protocol.reply_error(&ReplyError::CommandNotSupported).await;
        return;
    }
    let (host, port) = match target {
        TargetAddr::Ip(address) => (address.ip().to_string(), address.port()),
        TargetAddr::Domain(name, port) => (name, port),
    };
    let mut upstream = match connect::open(&shared, Via::Socks5, &host, port).await {
        Ok(stream) => stream,
        Err(denied) => {
            let reply = match denied {
                Denied::Refused(_) => ReplyError::ConnectionNotAllowed,
                Denied::Failed(_) => ReplyError::HostUnreachable,
            };
            let _ = protocol.reply_error(&reply).await;
            return;
        }
    };
    let Ok(mut client) = protocol
        .reply_success(SocketAddr::from(([0, 0, 0, 0], 0)))
        .await
    else {
        return;
    };
    crate::relay(&mut client, &mut upstream).await;
}
