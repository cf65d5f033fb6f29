//! The filtering proxy sandboxed code reaches the network through.
//!
//! A sandbox has its own, empty network namespace: nothing there leads out. For a run that may
//! use the network, cheng binds two Unix sockets in a per-run directory ([`Listeners::bind`]),
//! bwrap shows that directory inside, and the sandbox's init step bridges `127.0.0.1:3128` (HTTP,
//! with CONNECT) and `127.0.0.1:1080` (SOCKS5) to them, so programs that honour `HTTP_PROXY`,
//! `HTTPS_PROXY` and `ALL_PROXY` (curl, pip, npm, git, cargo) work unchanged.
//!
//! Every connection asked of the proxy goes through one [`cheng_net::Gate`]: the host rules admit
//! the name, the name is looked up once, every address is checked, and the proxy connects to
//! exactly those addresses ([`connect::open`]). There is no TLS interception: a CONNECT tunnel
//! carries whatever the client sends to an allowed host. Every attempt, allowed or refused, is
//! recorded with its host, port, address and bytes ([`Report`]).
//!
//! HTTP is parsed by hyper and SOCKS5 by fast-socks5; this crate only decides and copies.

mod connect;
mod counted;
mod http;
mod record;
mod socks;

pub use record::{Attempt, Outcome, Report, Via, MAX_RECORDED};

use cheng_io::Output;
use cheng_net::Gate;
use record::Record;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use tokio::net::UnixListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// The HTTP proxy's socket, in the directory given to [`Listeners::bind`].
pub const HTTP_SOCKET: &str = "http.sock";
/// The SOCKS5 proxy's socket.
pub const SOCKS_SOCKET: &str = "socks.sock";
/// The ports the sandbox's bridge listens on, on 127.0.0.1 inside.
pub const HTTP_PORT: u16 = 3128;
pub const SOCKS_PORT: u16 = 1080;

/// The two sockets of one run, bound and not yet served (binding needs no runtime, so it
/// happens while the sandbox is prepared; serving starts with the run).
#[derive(Debug)]
pub struct Listeners {
    http: std::os::unix::net::UnixListener,
    socks: std::os::unix::net::UnixListener,
}

impl Listeners {
    /// Binds [`HTTP_SOCKET`] and [`SOCKS_SOCKET`] in `dir`, connectable by any uid that
    /// reaches them (the sandbox's code may run as a uid of its own): the caller keeps `dir`
    /// where only the sandbox reaches it.
    pub fn bind(dir: &Path) -> io::Result<Listeners> {
        let bind = |name: &str| -> io::Result<std::os::unix::net::UnixListener> {
            let path = dir.join(name);
            let listener = std::os::unix::net::UnixListener::bind(&path)?;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666))?;
            listener.set_nonblocking(true)?;
            Ok(listener)
        };
        Ok(Listeners {
            http: bind(HTTP_SOCKET)?,
            socks: bind(SOCKS_SOCKET)?,
        })
    }
}

/// A running proxy. [`Proxy::finish`] stops it (cutting open connections: the run they served
/// is over) and reports every attempt.
#[derive(Debug)]
pub struct Proxy {
    stop: CancellationToken,
    tasks: JoinSet<()>,
    record: Arc<Record>,
}

/// At most this many connections are served at once per proxy (one run or session), an open
/// CONNECT tunnel counting as one; a connection past it is closed at once. Each holds
/// descriptors in cheng's own process.
pub const MAX_CONNECTIONS: usize = 128;

/// How long a client has to say where it wants to go (the SOCKS5 greeting and request, an
/// HTTP request's head) before its connection is closed.
pub const HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// What one connection's handler needs.
#[derive(Debug)]
pub(crate) struct Shared {
    pub gate: Gate,
    /// Each attempt's decision goes here as it is made (the run's live output).
    pub output: Output,
    pub record: Arc<Record>,
    pub stop: CancellationToken,
    /// One permit per connection served and per CONNECT tunnel ([`MAX_CONNECTIONS`]).
    pub slots: Arc<tokio::sync::Semaphore>,
}

impl Proxy {
    /// Serves `listeners` under `gate` until [`Proxy::finish`], telling `output` of each
    /// attempt as it is decided. Must be called within a tokio runtime.
    pub fn serve(listeners: Listeners, gate: Gate, output: Output) -> io::Result<Proxy> {
        let stop = CancellationToken::new();
        let record = Arc::new(Record::default());
        let shared = Arc::new(Shared {
            gate,
            output,
            record: Arc::clone(&record),
            stop: stop.clone(),
            slots: Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS)),
        });
        let http = UnixListener::from_std(listeners.http)?;
        let socks = UnixListener::from_std(listeners.socks)?;
        let mut tasks = JoinSet::new();
        tasks.spawn(accept(http, Arc::clone(&shared), Protocol::Http));
        tasks.spawn(accept(socks, shared, Protocol::Socks));
        Ok(Proxy {
            stop,
            tasks,
            record,
        })
    }

    /// Stops serving and returns what was attempted.
    pub async fn finish(mut self) -> Report {
        self.stop.cancel();
        while self.tasks.join_next().await.is_some() {}
        self.record.report()
    }
}

impl Drop for Proxy {
    /// A proxy dropped without [`Proxy::finish`] (a session's, or a run that was itself dropped)
    /// stops too: every connection task, tunnels included, ends on this token.
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

#[derive(Clone, Copy)]
enum Protocol {
    Http,
    Socks,
}

/// Accepts until stopped; each connection is served on a task of its own, cut when stopped.
async fn accept(listener: UnixListener, shared: Arc<Shared>, protocol: Protocol) {
    let mut connections = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            () = shared.stop.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _)) = accepted else {
            // Out of descriptors, most likely: the client sees its connection fail; wait a
            // moment rather than retry at once.
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            continue;
        };
        // Past the bound the connection is dropped here: the client sees it close.
        let Ok(slot) = Arc::clone(&shared.slots).try_acquire_owned() else {
            continue;
        };
        let shared = Arc::clone(&shared);
        connections.spawn(async move {
            let _slot = slot;
            let stop = shared.stop.clone();
            tokio::select! {
                () = stop.cancelled() => {}
                () = serve(stream, shared, protocol) => {}
            }
        });
        // Reap the finished ones as we go.
        while connections.try_join_next().is_some() {}
    }
    connections.abort_all();
    while connections.join_next().await.is_some() {}
}

async fn serve(stream: tokio::net::UnixStream, shared: Arc<Shared>, protocol: Protocol) {
    match protocol {
        Protocol::Http => http::serve(stream, shared).await,
        Protocol::Socks => socks::serve(stream, shared).await,
    }
}

/// Copies both ways until both sides are done, 64 KiB at a time each way (tokio's default is
/// 8 KiB: eight times the system calls for a bulk download; docs/performance.md has the
/// proxy's throughput).
pub(crate) async fn relay<A, B>(a: &mut A, b: &mut B)
where
    A: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + ?Sized,
    B: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + ?Sized,
{
    const BUFFER: usize = 64 * 1024;
    let _ = tokio::io::copy_bidirectional_with_sizes(a, b, BUFFER, BUFFER).await;
}

#[cfg(test)]
mod tests;
