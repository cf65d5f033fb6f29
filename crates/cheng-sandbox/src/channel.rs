//! A bounded channel out of the sandbox: a FIFO in the per-run I/O directory.
//!
//! Why a FIFO and not a file: the I/O directory lives on the host (on /dev/shm, see
//! [`super::io_parent`]). A writable regular file there would let the script store up to
//! RLIMIT_FSIZE (1 GiB) of host memory per run, and reading it back would cost cheng as much.
//! A FIFO stores nothing: what the script writes waits in the kernel's pipe buffer (64 KiB)
//! until cheng reads it, and cheng keeps at most `cap` bytes, counting (and dropping) the rest,
//! so neither host memory nor cheng's own grows with what the script writes.
//!
//! cheng opens the FIFO read-write before the sandbox starts, so the writer's `open` never
//! blocks and the reader never sees an end of file while a writer comes and goes; once the
//! sandbox has exited (every process of its pid namespace is gone), whatever is still buffered is
//! drained without waiting.

use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};

use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;

/// Bytes read per system call.
const CHUNK: usize = 64 << 10;

/// A FIFO created in the I/O directory, open for reading.
#[derive(Debug)]
pub struct Channel {
    path: PathBuf,
    receiver: pipe::Receiver,
    cap: usize,
}

/// What the sandbox wrote to a channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// The first bytes written, at most the channel's cap.
    pub bytes: Vec<u8>,
    /// Every byte written, kept or not.
    pub total_bytes: u64,
    /// The channel's cap.
    pub cap: usize,
}

impl Received {
    /// Whether more than `cap` bytes were written (`bytes` then holds only the first `cap`).
    pub fn exceeded(&self) -> bool {
        self.total_bytes > self.cap as u64
    }

    /// Keeps `data` within the cap, growing the buffer in steps so that it never holds more than
    /// `cap` bytes of capacity.
    fn push(&mut self, data: &[u8]) {
        self.total_bytes += data.len() as u64;
        let room = self.cap.saturating_sub(self.bytes.len());
        let take = room.min(data.len());
        if take == 0 {
            return;
        }
        if self.bytes.capacity() - self.bytes.len() < take {
            let step = self.bytes.len().max(CHUNK).min(room).max(take);
            self.bytes.reserve_exact(step);
        }
        self.bytes.extend_from_slice(&data[..take]);
    }
}

impl Channel {
    /// Creates the FIFO `dir/name` (writable by the sandbox uid; bind it with
    /// [`super::SandboxRequest::io_outputs`]) and opens it for reading. `dir` must be private to
    /// cheng, as the one [`super::io_parent`] holds.
    pub fn create(dir: &Path, name: &str, cap: usize) -> io::Result<Channel> {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join(name);
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &path,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )?;
        // The sandbox runs as another uid when cheng is root: it may write, not read.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o622))?;
        let receiver = pipe::OpenOptions::new()
            .read_write(true)
            .open_receiver(&path)?;
        Ok(Channel {
            path,
            receiver,
            cap,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `until` (the sandbox run) while reading the channel, then drains what is left.
    pub async fn collect<F: Future>(self, until: F) -> (F::Output, Received) {
        let Channel {
            mut receiver, cap, ..
        } = self;
        let mut received = Received {
            bytes: Vec::new(),
            total_bytes: 0,
            cap,
        };
        let mut chunk = vec![0u8; CHUNK];
        tokio::pin!(until);
        let output = loop {
            tokio::select! {
                output = &mut until => break output,
                read = receiver.read(&mut chunk) => match read {
                    Ok(n) => received.push(&chunk[..n]),
                    // Nothing sensible to do but stop reading; the run's result then fails to parse.
                    Err(_) => break until.await,
                },
            }
        };
        // The sandbox is gone: take what is still buffered, without waiting for more. Straight
        // from the descriptor: the reactor may not have seen the last write yet, and tokio's
        // `try_read` trusts its readiness flag rather than asking the kernel.
        if let Ok(fd) = receiver.into_nonblocking_fd() {
            let mut file = std::fs::File::from(fd);
            loop {
                match std::io::Read::read(&mut file, &mut chunk) {
                    Ok(0) => break,
                    Ok(n) => received.push(&chunk[..n]),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                }
            }
        }
        (output, received)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn the_buffer_never_outgrows_the_cap() {
        let mut r = Received {
            bytes: Vec::new(),
            total_bytes: 0,
            cap: 100_000,
        };
        for _ in 0..50 {
            r.push(&[b'x'; 7000]);
        }
        assert_eq!(
            (r.bytes.len(), r.total_bytes, r.exceeded()),
            (100_000, 350_000, true)
        );
        assert!(
            r.bytes.capacity() <= 100_000,
            "capacity {}",
            r.bytes.capacity()
        );
    }

    #[tokio::test]
    async fn a_writer_gets_everything_counted_and_only_the_cap_kept() {
        let dir = tempfile::tempdir().unwrap();
        let channel = Channel::create(dir.path(), "out", 1000).unwrap();
        let path = channel.path().to_path_buf();
        let writer = tokio::task::spawn_blocking(move || {
            let mut f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
            for _ in 0..100 {
                f.write_all(&[b'y'; 10_000]).unwrap();
            }
        });
        let (_, received) = channel.collect(async { writer.await.unwrap() }).await;
        assert_eq!(received.total_bytes, 1_000_000);
        assert_eq!(received.bytes, vec![b'y'; 1000]);
        assert!(received.exceeded());
    }

    #[tokio::test]
    async fn nothing_written_is_an_empty_channel() {
        let dir = tempfile::tempdir().unwrap();
        let channel = Channel::create(dir.path(), "out", 10).unwrap();
        let (_, received) = channel.collect(async {}).await;
        assert_eq!(
            (
                received.bytes.len(),
                received.total_bytes,
                received.exceeded()
            ),
            (0, 0, false)
        );
    }
}
