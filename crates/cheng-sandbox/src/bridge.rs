//! The sandbox's end of the filtering proxy: inside the sandbox's own network namespace (where
//! only loopback exists) a small process listens on `127.0.0.1:PORT` and copies each connection
//! to the proxy's Unix socket, which bwrap shows in the view. Programs that honour `HTTP_PROXY`
//! and `ALL_PROXY` then reach the proxy on loopback; nothing else leads out.
//!
//! The init step starts it ([`start`]) after the uid drop, no_new_privs, Landlock and the closing
//! of every inherited descriptor, so the bridge has no more rights and no more descriptors than
//! the command. It is forked twice, so it is not the command's child (a command that waits for
//! all its children never waits for it) but the sandbox's init's, bwrap's pid 1, which exits
//! when the command does: the kernel then kills everything left in the sandbox's PID namespace,
//! the bridge included.
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

/// Binds every route's port on 127.0.0.1, then forks the bridge (twice). Returns in the init
/// step once the ports listen (so the command finds them ready); the bridge never returns.
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
    let failed = || {
        format!(
            "cannot start the proxy bridge: {}",
            io::Error::last_os_error()
        )
    };
    // SAFETY: this process is single-threaded here (the init step starts no threads before
    // exec), so the child may go on running ordinary code.
    let middle = match unsafe { libc::fork() } {
        -1 => return Err(failed()),
        // The middle child: forks the bridge and exits at once (1 when that fork failed).
        0 => {
            // SAFETY: as above (the middle child is single-threaded too).
            let bridge = unsafe { libc::fork() };
            if bridge == 0 {
                serve(listeners);
            }
            // SAFETY: _exit ends only the middle child.
            unsafe { libc::_exit(if bridge == -1 { 1 } else { 0 }) }
        }
        pid => pid,
    };
    let mut status = 0;
    // SAFETY: waitpid on our own child with a valid status pointer.
    let waited = unsafe { libc::waitpid(middle, &mut status, 0) };
    if waited != middle || !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        return Err(failed());
    }
    // This process's copies of the listeners close here; the bridge's stay open.
    Ok(())
}

fn serve(listeners: Vec<(TcpListener, PathBuf)>) -> ! {
    // Without /dev/null the bridge would hold the run's output pipes open: no bridge then.
    if !detach_standard_streams() {
        // SAFETY: _exit ends only this process.
        unsafe { libc::_exit(1) }
    }
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
/// does: the bridge holds /dev/null instead. False when that cannot be done.
fn detach_standard_streams() -> bool {
    let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    else {
        return false;
    };
    use std::os::fd::AsRawFd;
    // SAFETY: dup2 onto the standard descriptors from a descriptor open here.
    (0..3).all(|fd| unsafe { libc::dup2(null.as_raw_fd(), fd) } == fd)
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

/// Copies until end of file or an error, 64 KiB at a time (`io::copy` between two sockets
/// takes 8 KiB per system call).
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
