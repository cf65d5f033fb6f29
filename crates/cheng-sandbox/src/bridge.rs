//! The sandbox's end of the filtering proxy: inside the sandbox's own network namespace (where
//! only loopback exists) a small process listens on `127.0.0.1:PORT` and copies each connection
//! to the proxy's Unix socket, which bwrap shows in the view. Programs that honour `HTTP_PROXY`
//! and `ALL_PROXY` then reach the proxy on loopback; nothing else leads out.
//!
//! The init step starts it ([`start`]) after the uid drop, no_new_privs and Landlock, so the
//! bridge has no more rights than the command; it is a forked child of the init step, which then
//! executes the command. It dies with the sandbox: the kernel kills it when the command exits
//! (parent-death signal), and with the rest of the sandbox's PID namespace.
//!
//! Deliberately plain: blocking sockets, two threads per connection (one each way). The
//! deciding is all on the host side ([`cheng_proxy`]'s gate); this only moves bytes.

use std::io;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;

/// One listening port inside and the proxy socket it leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub port: u16,
    pub socket: PathBuf,
}

/// Binds every route's port on 127.0.0.1, then forks the bridge. Returns in the parent once the
/// ports listen (so the command finds them ready); the child never returns.
pub fn start(routes: &[Route]) -> Result<(), String> {
    let listeners = routes
        .iter()
        .map(|route| {
            TcpListener::bind(("127.0.0.1", route.port))
                .map(|l| (l, route.socket.clone()))
                .map_err(|e| {
                    format!(
                        "the proxy bridge cannot listen on 127.0.0.1:{}: {e}",
                        route.port
                    )
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    // SAFETY: this process is single-threaded here (the init step starts no threads before
    // exec), so the child may go on running ordinary code.
    match unsafe { libc::fork() } {
        -1 => Err(format!(
            "cannot start the proxy bridge: {}",
            io::Error::last_os_error()
        )),
        0 => serve(listeners),
        // The parent's copies of the listeners close here; the child's stay open.
        _ => Ok(()),
    }
}

fn serve(listeners: Vec<(TcpListener, PathBuf)>) -> ! {
    // SAFETY: prctl with constant arguments: the bridge gets SIGKILL when the init step (soon
    // the command) exits.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
    detach_standard_streams();
    let mut listeners = listeners.into_iter();
    let first = listeners.next();
    for (listener, socket) in listeners {
        // A port whose thread cannot start refuses its connections (the listener closes).
        let _ = std::thread::Builder::new().spawn(move || accept(&listener, &socket));
    }
    if let Some((listener, socket)) = first {
        accept(&listener, &socket);
    }
    // SAFETY: _exit ends only this child.
    unsafe { libc::_exit(0) }
}

/// The run's stdout and stderr pipes must close when the command ends, not when the bridge
/// does: the bridge holds /dev/null instead.
fn detach_standard_streams() {
    let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    else {
        return;
    };
    use std::os::fd::AsRawFd;
    for fd in 0..3 {
        // SAFETY: dup2 onto the standard descriptors from a descriptor open here.
        unsafe { libc::dup2(null.as_raw_fd(), fd) };
    }
}

fn accept(listener: &TcpListener, socket: &std::path::Path) {
    for client in listener.incoming() {
        let Ok(client) = client else {
            // Out of descriptors, most likely: wait a moment rather than retry at once.
            std::thread::sleep(std::time::Duration::from_millis(100));
            continue;
        };
        let socket = socket.to_path_buf();
        // Out of threads (RLIMIT_NPROC): the connection is dropped and the client sees it close.
        let _ = std::thread::Builder::new().spawn(move || relay(client, &socket));
    }
}

/// Copies until end of file or an error, 64 KiB at a time (`io::copy`'s 8 KiB between two
/// sockets cost a third of a download's throughput in system calls).
fn copy(from: &mut impl io::Read, to: &mut impl io::Write) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// Copies both ways until either side closes.
fn relay(client: TcpStream, socket: &std::path::Path) {
    let Ok(proxy) = UnixStream::connect(socket) else {
        return;
    };
    let (Ok(mut client_read), Ok(mut proxy_write)) = (client.try_clone(), proxy.try_clone()) else {
        return;
    };
    let upstream = std::thread::Builder::new().spawn(move || {
        copy(&mut client_read, &mut proxy_write);
        let _ = proxy_write.shutdown(Shutdown::Write);
    });
    let (mut proxy_read, mut client_write) = (proxy, client);
    copy(&mut proxy_read, &mut client_write);
    let _ = client_write.shutdown(Shutdown::Write);
    if let Ok(upstream) = upstream {
        let _ = upstream.join();
    }
}
