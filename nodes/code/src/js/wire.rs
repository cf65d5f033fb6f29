//! What cheng and a JavaScript worker say to each other over the worker's stdin and stdout.
//!
//! A frame is a one-byte tag, a little-endian `u32` length and that many bytes. cheng sends
//! [`Job`]s (JSON); the worker answers with one [`Ready`] once it is jailed (or [`Unavailable`]
//! when it cannot be), then per job any number of console chunks (raw bytes, tagged by stream,
//! each at most [`CHUNK_BYTES`]) and one [`Done`]. Whatever a worker sends is read as untrusted:
//! a frame longer than [`MAX_FRAME_BYTES`], an unknown tag or JSON that does not parse ends the
//! worker, like a crash.

use serde::{Deserialize, Serialize};
use std::io::{Read, Write};

pub const TAG_JOB: u8 = b'J';
pub const TAG_READY: u8 = b'R';
pub const TAG_UNAVAILABLE: u8 = b'U';
pub const TAG_STDOUT: u8 = b'1';
pub const TAG_STDERR: u8 = b'2';
pub const TAG_DONE: u8 = b'D';

/// The largest frame either side accepts: a result is at most 16 MiB of JSON and each captured
/// stream 1 MiB, which even escaped stay well below this.
pub const MAX_FRAME_BYTES: usize = 192 * 1024 * 1024;
/// Console output is passed on in pieces of at most this many bytes.
pub const CHUNK_BYTES: usize = 64 * 1024;

/// One script run.
#[derive(Debug, Serialize, Deserialize)]
pub struct Job {
    pub script: String,
    pub input_json: String,
    pub timeout_ms: u64,
    pub memory_bytes: usize,
    pub max_stack_bytes: usize,
    /// Whether console output goes out live (chunk frames) besides the captured streams.
    pub live: bool,
}

/// The worker is jailed and waits for jobs.
#[derive(Debug, Serialize, Deserialize)]
pub struct Ready {
    /// The jail's layers, as `metrics.worker.layers` reports them.
    pub layers: Vec<String>,
    /// CPU time the worker has used (what RLIMIT_CPU adds `timeout_ms` to).
    pub cpu_ns: u64,
}

/// The worker could not jail itself; it runs nothing and exits.
#[derive(Debug, Serialize, Deserialize)]
pub struct Unavailable {
    pub reason: String,
}

/// A job's outcome.
#[derive(Debug, Serialize, Deserialize)]
pub struct Done {
    /// The result, or the failure as (error code, message).
    pub result: Result<serde_json::Value, (String, String)>,
    pub stdout: String,
    pub stderr: String,
    pub metrics: serde_json::Value,
    pub warnings: Vec<String>,
    pub cpu_ns: u64,
}

/// A frame's header: its tag and the length that follows.
pub fn header(tag: u8, len: usize) -> std::io::Result<[u8; 5]> {
    let len = u32::try_from(len)
        .ok()
        .filter(|l| *l as usize <= MAX_FRAME_BYTES)
        .ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("a frame of {len} bytes is longer than {MAX_FRAME_BYTES}"),
            )
        })?;
    let mut h = [tag, 0, 0, 0, 0];
    h[1..].copy_from_slice(&len.to_le_bytes());
    Ok(h)
}

/// The tag and length in a header, refusing lengths past [`MAX_FRAME_BYTES`].
pub fn parse_header(h: [u8; 5]) -> std::io::Result<(u8, usize)> {
    let len = u32::from_le_bytes([h[1], h[2], h[3], h[4]]) as usize;
    if len > MAX_FRAME_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("a frame of {len} bytes is longer than {MAX_FRAME_BYTES}"),
        ));
    }
    Ok((h[0], len))
}

/// Writes one frame (blocking: the worker's side).
pub fn write_frame(out: &mut impl Write, tag: u8, payload: &[u8]) -> std::io::Result<()> {
    out.write_all(&header(tag, payload.len())?)?;
    out.write_all(payload)?;
    out.flush()
}

/// Reads one frame (blocking: the worker's side); `None` at a clean end of input.
pub fn read_frame(input: &mut impl Read) -> std::io::Result<Option<(u8, Vec<u8>)>> {
    let mut h = [0u8; 5];
    match input.read_exact(&mut h) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let (tag, len) = parse_header(h)?;
    let mut payload = vec![0u8; len];
    input.read_exact(&mut payload)?;
    Ok(Some((tag, payload)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_oversized_lengths_are_refused() {
        let mut buf = Vec::new();
        write_frame(&mut buf, TAG_JOB, b"{}").unwrap();
        write_frame(&mut buf, TAG_STDOUT, b"").unwrap();
        let mut input = &buf[..];
        assert_eq!(
            read_frame(&mut input).unwrap(),
            Some((TAG_JOB, b"{}".to_vec()))
        );
        assert_eq!(read_frame(&mut input).unwrap(), Some((TAG_STDOUT, vec![])));
        assert_eq!(read_frame(&mut input).unwrap(), None);
        let mut huge = vec![TAG_DONE];
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(read_frame(&mut &huge[..]).is_err());
    }
}
