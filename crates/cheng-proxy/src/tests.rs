//! The proxy against loopback servers, driven over its Unix sockets as the sandbox's bridge
//! would.

use super::*;
use cheng_net::{HostPattern, HostRules};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, UnixStream};

fn gate(allow: &[&str]) -> Gate {
    let allow = allow
        .iter()
        .map(|p| HostPattern::parse(p).unwrap())
        .collect();
    Gate::default().with(HostRules::new(allow, Vec::new(), true), "the test")
}

/// A proxy under `gate(allow)` on sockets in a fresh directory (kept alive with it).
fn start(allow: &[&str]) -> (tempfile::TempDir, Proxy) {
    let dir = tempfile::tempdir().unwrap();
    let proxy = Proxy::serve(
        Listeners::bind(dir.path()).unwrap(),
        gate(allow),
        Output::off(),
    )
    .unwrap();
    (dir, proxy)
}

/// A server that answers every connection with a fixed HTTP response and closes.
async fn server(body: &'static str) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = stream.read(&mut buf).await;
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(reply.as_bytes()).await;
            });
        }
    });
    port
}

async fn exchange(path: &std::path::Path, bytes: &[u8]) -> Vec<u8> {
    let mut stream = UnixStream::connect(path).await.unwrap();
    stream.write_all(bytes).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        stream.read_to_end(&mut out),
    )
    .await;
    out
}

#[tokio::test]
async fn plain_http_to_an_allowed_address_is_forwarded_and_counted() {
    let port = server("hello").await;
    let (dir, proxy) = start(&["127.0.0.1"]);
    let request = format!("GET http://127.0.0.1:{port}/x HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\nconnection: close\r\n\r\n");
    let answer = exchange(&dir.path().join(HTTP_SOCKET), request.as_bytes()).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.starts_with("HTTP/1.1 200") && answer.ends_with("hello"),
        "{answer}"
    );
    let report = proxy.finish().await;
    assert_eq!(report.attempts.len(), 1, "{report:?}");
    let attempt = &report.attempts[0];
    assert_eq!((attempt.via, attempt.port), (Via::Http, port));
    assert!(matches!(attempt.outcome, Outcome::Connected { .. }));
    assert!(
        attempt.bytes_received > 5 && attempt.bytes_sent > 10,
        "{attempt:?}"
    );
}

#[tokio::test]
async fn loopback_without_a_rule_naming_it_is_refused_with_the_rule_to_add() {
    let port = server("secret").await;
    let (dir, proxy) = start(&[]);
    let request = format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n\r\n");
    let answer =
        String::from_utf8_lossy(&exchange(&dir.path().join(HTTP_SOCKET), request.as_bytes()).await)
            .to_string();
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(
        answer.contains("loopback") && !answer.contains("secret"),
        "{answer}"
    );
    let report = proxy.finish().await;
    assert!(
        matches!(report.attempts[0].outcome, Outcome::Refused(_)),
        "{report:?}"
    );
    assert_eq!(report.refusals().len(), 1);
}

#[tokio::test]
async fn a_connect_tunnel_carries_bytes_both_ways() {
    let port = server("tunnelled").await;
    let (dir, proxy) = start(&["127.0.0.1"]);
    let request = format!(
        "CONNECT 127.0.0.1:{port} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n\r\nGET / HTTP/1.1\r\n\r\n"
    );
    let answer =
        String::from_utf8_lossy(&exchange(&dir.path().join(HTTP_SOCKET), request.as_bytes()).await)
            .to_string();
    assert!(
        answer.starts_with("HTTP/1.1 200") && answer.ends_with("tunnelled"),
        "{answer}"
    );
    let report = proxy.finish().await;
    assert_eq!(report.attempts[0].via, Via::Connect);
}

#[tokio::test]
async fn socks5_connects_by_name_and_refuses_with_reply_2() {
    let port = server("over socks").await;
    let (dir, proxy) = start(&["127.0.0.1"]);
    let socket = dir.path().join(SOCKS_SOCKET);
    // Greeting (no auth), then CONNECT 127.0.0.1:port by address, then an HTTP request.
    let mut hello = vec![5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1];
    hello.extend(port.to_be_bytes());
    hello.extend(b"GET / HTTP/1.1\r\n\r\n");
    let answer = exchange(&socket, &hello).await;
    assert_eq!(&answer[..4], &[5, 0, 5, 0], "{answer:?}");
    assert!(String::from_utf8_lossy(&answer).ends_with("over socks"));
    // A name no rule allows (every public host is allowed, loopback is not): reply 2.
    let mut denied = vec![5, 1, 0, 5, 1, 0, 4];
    denied.extend(std::iter::repeat_n(0, 15));
    denied.push(1);
    denied.extend(port.to_be_bytes());
    let answer = exchange(&socket, &denied).await;
    assert_eq!(&answer[..4], &[5, 0, 5, 2], "{answer:?}");
    let report = proxy.finish().await;
    assert_eq!(report.attempts.len(), 2, "{report:?}");
    assert!(report.attempts.iter().all(|a| a.via == Via::Socks5));
}

/// A server that answers with the request head it received, as the body.
async fn echo_head() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let n = stream.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).to_string();
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{head}",
                    head.len()
                );
                let _ = stream.write_all(reply.as_bytes()).await;
            });
        }
    });
    port
}

/// The request goes on with the Host the rules checked, never the client's own: a shared
/// server routes by it. Hop-by-hop headers, and those `Connection` names, stay behind.
#[tokio::test]
async fn the_host_header_is_the_checked_host() {
    let port = echo_head().await;
    let (dir, proxy) = start(&["127.0.0.1"]);
    let request = format!("GET http://127.0.0.1:{port}/x HTTP/1.1\r\nhost: refused.example\r\nproxy-authorization: secret\r\nconnection: close, x-private\r\nx-private: 1\r\n\r\n");
    let answer =
        String::from_utf8_lossy(&exchange(&dir.path().join(HTTP_SOCKET), request.as_bytes()).await)
            .to_lowercase();
    assert!(
        answer.contains(&format!("host: 127.0.0.1:{port}")),
        "{answer}"
    );
    assert!(
        !answer.contains("refused.example")
            && !answer.contains("secret")
            && !answer.contains("x-private"),
        "{answer}"
    );
    proxy.finish().await;
}

/// A dropped proxy (a session's, never finished) stops its tunnels too.
#[tokio::test]
async fn a_dropped_proxy_ends_its_tunnels() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    // An upstream that accepts and then says nothing, ever.
    let held = tokio::spawn(async move { listener.accept().await.map(|(s, _)| s) });
    let (dir, proxy) = start(&["127.0.0.1"]);
    let mut client = UnixStream::connect(dir.path().join(HTTP_SOCKET))
        .await
        .unwrap();
    let request = format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n\r\n");
    client.write_all(request.as_bytes()).await.unwrap();
    let mut buf = [0u8; 256];
    let n = client.read(&mut buf).await.unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    let mut upstream = held.await.unwrap().unwrap();
    drop(proxy);
    // The tunnel's end closes: the upstream reads end of file instead of waiting forever.
    let read =
        tokio::time::timeout(std::time::Duration::from_secs(5), upstream.read(&mut buf)).await;
    assert!(matches!(read, Ok(Ok(0))), "{read:?}");
}

/// Past MAX_CONNECTIONS a connection is closed at once; the ones before it are still served.
#[tokio::test]
async fn connections_past_the_bound_are_closed_at_once() {
    let (dir, proxy) = start(&[]);
    let socket = dir.path().join(SOCKS_SOCKET);
    let mut held = Vec::new();
    for _ in 0..MAX_CONNECTIONS {
        held.push(UnixStream::connect(&socket).await.unwrap());
    }
    // Accepted in order, so this one comes after all of them, whenever the loop gets to it.
    let mut extra = UnixStream::connect(&socket).await.unwrap();
    let mut buf = [0u8; 8];
    let read = tokio::time::timeout(std::time::Duration::from_secs(10), extra.read(&mut buf)).await;
    assert!(
        matches!(read, Ok(Ok(0))),
        "the connection past the bound stayed open: {read:?}"
    );
    // Once one of them closes, a new one is served again (SOCKS5: no authentication
    // accepted), as soon as its task has ended and given back its slot.
    drop(held.pop());
    let mut served = false;
    for _ in 0..100 {
        let mut again = UnixStream::connect(&socket).await.unwrap();
        again.write_all(&[5, 1, 0]).await.unwrap();
        let n =
            tokio::time::timeout(std::time::Duration::from_secs(10), again.read(&mut buf)).await;
        if matches!(n, Ok(Ok(2))) && buf[..2] == [5, 0] {
            served = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(served, "no connection was served after one closed");
    proxy.finish().await;
}
