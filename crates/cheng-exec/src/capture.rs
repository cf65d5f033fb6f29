//! Draining a child's stdout and stderr into bounded head+tail buffers.
//!
//! Both streams are read concurrently (a child that fills stderr while we wait on stdout would
//! otherwise deadlock), each into a [`HeadTail`] with its own cap, so memory stays at
//! `cap + read buffer` however much the child writes. Reads use a buffer that grows to
//! [`MAX_READ_BUFFER`] once the child writes quickly, and the pipe itself is enlarged, so a
//! flood costs few wake-ups.
//!
//! Live output: a drain may also pass each chunk, as it is read, to an
//! [`Output`](cheng_io::Output) handle (stream, bytes, byte offset). The handle sees the bytes
//! as they pass; nothing more is kept, so memory stays bounded by the cap either way.

use cheng_io::output::{Output, OutputStream};
use cheng_io::text::HeadTail;
use std::io;
use std::os::fd::OwnedFd;
use tokio::net::unix::pipe;
use tokio_util::sync::CancellationToken;

/// First read buffer; enough for typical command output without a large allocation.
const INITIAL_READ_BUFFER: usize = 16 * 1024;
/// Largest read buffer (reached after reads fill the current one).
pub const MAX_READ_BUFFER: usize = 256 * 1024;
/// Pipe capacity requested from the kernel (it may grant less; that only costs throughput).
const PIPE_SIZE: usize = 1 << 20;
/// After `stop` fires, at most this many bytes are still read from what the pipe holds.
const FINAL_DRAIN_LIMIT: u64 = 16 << 20;

/// The read end of a child's output pipe, registered with the tokio reactor.
pub struct Stream {
    rx: pipe::Receiver,
}

impl Stream {
    /// Takes ownership of a pipe's read end (sets it non-blocking). Needs a tokio runtime with
    /// I/O enabled.
    pub fn new(fd: OwnedFd) -> io::Result<Self> {
        enlarge_pipe(&fd);
        Ok(Stream {
            rx: pipe::Receiver::from_owned_fd(fd)?,
        })
    }

    /// The registered pipe, for readers that consume output as it arrives (`crate::live`).
    pub(crate) fn receiver(&self) -> &pipe::Receiver {
        &self.rx
    }
}

/// Reads `stream` until end of file (or a read error) into a buffer capped at `cap` bytes.
///
/// When `stop` is cancelled (the child is gone but something outside its process group still
/// holds the pipe open), whatever the pipe already holds is read without waiting, then the
/// drain ends.
pub async fn drain(stream: Option<Stream>, cap: usize, stop: &CancellationToken) -> HeadTail {
    drain_to(stream, Sink::new(cap, false, Live::off()), stop)
        .await
        .text
}

/// Like [`drain`], and passes every chunk to `live` as it is read (the bounded buffer is the same).
pub async fn drain_live(
    stream: Option<Stream>,
    cap: usize,
    live: Live,
    stop: &CancellationToken,
) -> HeadTail {
    drain_to(stream, Sink::new(cap, false, live), stop)
        .await
        .text
}

/// Where a drain passes its chunks while it reads: an [`Output`] handle and which stream this is.
#[derive(Debug, Clone)]
pub struct Live {
    pub output: Output,
    pub stream: OutputStream,
}

impl Live {
    pub fn new(output: Output, stream: OutputStream) -> Self {
        Live { output, stream }
    }

    /// Passes nothing on.
    pub fn off() -> Self {
        Live {
            output: Output::off(),
            stream: OutputStream::Stdout,
        }
    }
}

/// Like [`drain`], and also keeps the first `cap` bytes exactly as read, for output that is not
/// text (NUL-framed records, non-UTF-8 paths). Holds up to twice `cap` in memory.
pub async fn drain_with_bytes(
    stream: Option<Stream>,
    cap: usize,
    stop: &CancellationToken,
) -> (HeadTail, Vec<u8>) {
    drain_with_bytes_live(stream, cap, Live::off(), stop).await
}

/// [`drain_with_bytes`] passing every chunk to `live` as it is read.
pub async fn drain_with_bytes_live(
    stream: Option<Stream>,
    cap: usize,
    live: Live,
    stop: &CancellationToken,
) -> (HeadTail, Vec<u8>) {
    let sink = drain_to(stream, Sink::new(cap, true, live), stop).await;
    (sink.text, sink.bytes)
}

/// Where drained bytes go: the head+tail text buffer, optionally a raw prefix, and the live
/// output handle (with the stream's byte count so far, the next chunk's offset).
struct Sink {
    text: HeadTail,
    keep_bytes: bool,
    bytes: Vec<u8>,
    cap: usize,
    live: Live,
    offset: u64,
}

impl Sink {
    fn new(cap: usize, keep_bytes: bool, live: Live) -> Self {
        Sink {
            text: HeadTail::new(cap),
            keep_bytes,
            bytes: Vec::new(),
            cap,
            live,
            offset: 0,
        }
    }

    fn push(&mut self, chunk: &[u8]) {
        self.text.push(chunk);
        if self.live.output.is_on() {
            self.live.output.chunk(self.live.stream, chunk, self.offset);
            self.offset += chunk.len() as u64;
        }
        if self.keep_bytes && self.bytes.len() < self.cap {
            let take = (self.cap - self.bytes.len()).min(chunk.len());
            self.bytes.extend_from_slice(&chunk[..take]);
        }
    }
}

async fn drain_to(stream: Option<Stream>, mut out: Sink, stop: &CancellationToken) -> Sink {
    let Some(stream) = stream else { return out };
    let mut buf = vec![0u8; INITIAL_READ_BUFFER];
    loop {
        tokio::select! {
            biased;
            ready = stream.rx.readable() => {
                if ready.is_err() {
                    return out;
                }
                match read_available(&stream.rx, &mut buf, &mut out) {
                    Flow::More => {}
                    Flow::Done => return out,
                }
            }
            _ = stop.cancelled() => {
                read_remaining(&stream.rx, &mut buf, &mut out);
                return out;
            }
        }
    }
}

enum Flow {
    /// The pipe is empty for now.
    More,
    /// End of file, a read error, or the byte limit.
    Done,
}

/// Reads without blocking until the pipe is empty or at EOF.
fn read_available(rx: &pipe::Receiver, buf: &mut Vec<u8>, out: &mut Sink) -> Flow {
    loop {
        match rx.try_read(buf) {
            Ok(0) => return Flow::Done,
            Ok(n) => {
                out.push(&buf[..n]);
                // A full buffer means the child writes faster than we read: read bigger chunks.
                if n == buf.len() && buf.len() < MAX_READ_BUFFER {
                    buf.resize(MAX_READ_BUFFER, 0);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Flow::More,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Flow::Done,
        }
    }
}

/// Reads what the pipe holds right now, up to [`FINAL_DRAIN_LIMIT`], bypassing the reactor's
/// readiness state (which may not have caught up with the last write).
fn read_remaining(rx: &pipe::Receiver, buf: &mut [u8], out: &mut Sink) {
    let mut read = 0u64;
    while read < FINAL_DRAIN_LIMIT {
        // The descriptor is non-blocking, so this never waits.
        match rustix::io::read(rx, &mut *buf) {
            Ok(0) => return,
            Ok(n) => {
                out.push(&buf[..n]);
                read += n as u64;
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return,
        }
    }
}

/// Asks for a bigger pipe so a fast writer is woken less often. Failure is harmless.
fn enlarge_pipe(fd: &OwnedFd) {
    let _ = rustix::pipe::fcntl_setpipe_size(fd, PIPE_SIZE);
}

/// Writes `bytes` to the child's stdin, then closes it. A child that exits or closes stdin
/// early is not an error; `stop` abandons the write.
pub async fn feed(stdin: Option<OwnedFd>, bytes: Option<Vec<u8>>, stop: &CancellationToken) {
    let (Some(fd), Some(bytes)) = (stdin, bytes) else {
        return;
    };
    let Ok(tx) = pipe::Sender::from_owned_fd(fd) else {
        return;
    };
    let write = async {
        use tokio::io::AsyncWriteExt;
        let mut tx = tx;
        let _ = tx.write_all(&bytes).await;
    };
    tokio::select! {
        _ = write => {}
        _ = stop.cancelled() => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn pipe_pair() -> (OwnedFd, std::fs::File) {
        let (rx, tx) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap();
        (rx, std::fs::File::from(tx))
    }

    #[tokio::test]
    async fn drains_to_eof_with_head_and_tail() {
        let (rx, mut tx) = pipe_pair();
        let writer = std::thread::spawn(move || {
            for i in 0..1000 {
                writeln!(tx, "line {i}").unwrap();
            }
        });
        let stop = CancellationToken::new();
        let out = drain(Some(Stream::new(rx).unwrap()), 64, &stop)
            .await
            .finish();
        writer.join().unwrap();
        assert!(out.truncated);
        assert!(out.text.starts_with("line 0\n"), "{}", out.text);
        assert!(out.text.ends_with("line 999\n"), "{}", out.text);
        assert_eq!(
            out.total_bytes,
            (0..1000)
                .map(|i| format!("line {i}\n").len() as u64)
                .sum::<u64>()
        );
    }

    #[tokio::test]
    async fn stop_ends_a_drain_whose_writer_never_closes() {
        let (rx, mut tx) = pipe_pair();
        tx.write_all(b"already there").unwrap();
        let stop = CancellationToken::new();
        stop.cancel();
        let out = drain(Some(Stream::new(rx).unwrap()), 1024, &stop)
            .await
            .finish();
        assert_eq!(out.text, "already there");
        drop(tx);
    }

    #[tokio::test]
    async fn raw_bytes_keep_the_exact_prefix() {
        let (rx, mut tx) = pipe_pair();
        let writer = std::thread::spawn(move || {
            tx.write_all(b"a\xff\x00b").unwrap();
            tx.write_all(&[b'z'; 100]).unwrap();
        });
        let stop = CancellationToken::new();
        let (text, bytes) = drain_with_bytes(Some(Stream::new(rx).unwrap()), 8, &stop).await;
        writer.join().unwrap();
        assert_eq!(bytes, b"a\xff\x00bzzzz", "the first cap bytes, unaltered");
        let text = text.finish();
        assert!(text.truncated);
        assert_eq!(text.total_bytes, 104);
    }

    #[derive(Default)]
    struct Keep(std::sync::Mutex<Vec<(OutputStream, Vec<u8>, u64)>>);

    impl cheng_io::OutputSink for Keep {
        fn chunk(&self, stream: OutputStream, bytes: &[u8], offset: u64) {
            self.0
                .lock()
                .unwrap()
                .push((stream, bytes.to_vec(), offset));
        }
    }

    #[tokio::test]
    async fn live_output_sees_every_byte_in_order_while_the_buffer_stays_capped() {
        let (rx, mut tx) = pipe_pair();
        let mut written = Vec::new();
        for i in 0..5000 {
            written.extend_from_slice(format!("line {i}\n").as_bytes());
        }
        let all = written.clone();
        let writer = std::thread::spawn(move || {
            for piece in all.chunks(777) {
                tx.write_all(piece).unwrap();
            }
        });
        let keep = std::sync::Arc::new(Keep::default());
        let live = Live::new(Output::new(keep.clone()), OutputStream::Stderr);
        let stop = CancellationToken::new();
        let out = drain_live(Some(Stream::new(rx).unwrap()), 64, live, &stop)
            .await
            .finish();
        writer.join().unwrap();
        assert!(out.truncated, "the capture keeps its cap");
        assert!(out.text.len() < 200, "{}", out.text.len());
        let chunks = keep.0.lock().unwrap();
        let mut seen = Vec::new();
        for (stream, bytes, offset) in chunks.iter() {
            assert_eq!(*stream, OutputStream::Stderr);
            assert_eq!(*offset, seen.len() as u64, "offsets are contiguous");
            seen.extend_from_slice(bytes);
        }
        assert_eq!(seen, written, "the callback saw every byte, in order");
    }

    #[tokio::test]
    async fn a_missing_stream_is_empty() {
        let out = drain(None, 10, &CancellationToken::new()).await.finish();
        assert_eq!(out.total_bytes, 0);
    }
}
