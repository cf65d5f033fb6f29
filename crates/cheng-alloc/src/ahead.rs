//! Faulting in a huge block's pages just ahead of the code filling it, on a thread of its own.
//!
//! The kernel zero-fills each page of a fresh mapping at its first touch, on the thread that
//! touches it. pulldown-cmark's node tree for a pathological 16 MiB document is ~800 MB written
//! front to back, and zero-filling it took 11–42 % of such a run (the share varies with how the
//! host backs the machine's memory), all on the thread doing the parse. A second thread now does
//! most of that work meanwhile: it faults in (`MADV_POPULATE_WRITE`) the block's next pages,
//! never more than [`LEAD`] chunks ahead of the writer.
//!
//! Where the writer is comes from pages left to it: the first huge page of each [`CHUNK`] (its
//! mark) is never faulted in ahead, so once `mincore` shows a mark resident the writer has
//! reached that chunk. The writer still faults in one huge page per chunk (an eighth of them); a
//! block whose writer stops moving is left alone after [`STALL`]. Only the block grown or mapped
//! last is followed: that is the one being filled.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A chunk's first [`MARK`] bytes are its mark.
pub(crate) const CHUNK: usize = 16 << 20;
/// A transparent huge page: marks are aligned to it, so no page faulted in ahead covers one.
pub(crate) const MARK: usize = 2 << 20;
/// How many chunks past the writer's may be faulted in.
pub(crate) const LEAD: usize = 2;
/// How often the writer's progress is read while it is not far enough ahead.
const POLL: Duration = Duration::from_millis(1);
/// A writer this thread has waited for this long without it reaching a new chunk is left alone.
const STALL: Duration = Duration::from_millis(50);

/// Bytes `start..end` of the mapping at `block`, about to be written front to back.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Job {
    block: usize,
    start: usize,
    end: usize,
}

struct State {
    job: Option<Job>,
    /// Bytes being faulted in right now (the lock is not held meanwhile).
    busy: bool,
    started: bool,
    /// The thread is waiting for the writer to move (it is [`LEAD`] chunks ahead).
    waiting: bool,
    /// The kernel refused `MADV_POPULATE_WRITE` (before Linux 5.14) or the thread could not start.
    off: bool,
}

static STATE: Mutex<State> = Mutex::new(State {
    job: None,
    busy: false,
    started: false,
    waiting: false,
    off: false,
});
/// Signalled when there is a new job, and when a fault-in step ends.
static CHANGED: Condvar = Condvar::new();

fn state() -> MutexGuard<'static, State> {
    // Nothing panics while holding the lock; a poisoned one is still consistent.
    STATE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Follows the writer of `start..end` in the mapping at `block` (replacing any other block).
pub(crate) fn follow(block: *mut u8, start: usize, end: usize) {
    let mut state = state();
    if state.off {
        return;
    }
    state.job = Some(Job {
        block: block as usize,
        start: block as usize + start,
        end: block as usize + end,
    });
    if !state.started {
        state.started = true;
        // The thread's own allocations are small ones (mimalloc's): this does not recurse here.
        let spawned = std::thread::Builder::new()
            .name("cheng-fault-ahead".into())
            .stack_size(64 << 10)
            .spawn(work);
        if spawned.is_err() {
            state.off = true;
            state.job = None;
        }
    }
    CHANGED.notify_all();
}

/// Stops following the mapping at `block`, which is about to be unmapped or moved: on return no
/// fault-in step touches it any more.
pub(crate) fn forget(block: *mut u8) {
    let mut state = state();
    if state.job.is_some_and(|job| job.block == block as usize) {
        state.job = None;
        while state.busy {
            state = CHANGED
                .wait(state)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }
}

/// The chunks of a job: aligned to [`MARK`] from the first aligned byte (bytes before it are
/// left to the writer), the last one possibly short.
fn chunks(job: &Job) -> (usize, usize) {
    let first = (job.start + MARK - 1) & !(MARK - 1);
    (first, job.end.saturating_sub(first).div_ceil(CHUNK))
}

/// Whether the page at `at` is resident.
pub(crate) fn resident(at: usize) -> bool {
    let mut vec = [0u8; 1];
    // SAFETY: `vec` has room for the one page asked about; mincore writes only into it and
    // reports an error (treated as "not resident") for an address outside every mapping.
    let r = unsafe { libc::mincore(at as *mut libc::c_void, 1, vec.as_mut_ptr()) };
    r == 0 && vec[0] & 1 == 1
}

fn work() {
    let mut state = state();
    loop {
        state.waiting = false;
        let Some(job) = state.job else {
            state = CHANGED
                .wait(state)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            continue;
        };
        let (first, count) = chunks(&job);
        // The writer has reached `reached` chunks; `next` is the next one to fault in; `waited`:
        // since when this thread has been waiting for the writer to move.
        let (mut reached, mut next, mut waited) = (0, 0, None::<Instant>);
        while state.job == Some(job) {
            while reached < count && resident(first + reached * CHUNK) {
                reached += 1;
                waited = None;
            }
            // A chunk the writer has entered is its own to finish: faulting in there too would
            // only race it. Falling behind (zero-filling is slower than some writers), skip on.
            next = next.max(reached);
            let stalled = waited.is_some_and(|since| since.elapsed() > STALL);
            if next >= count || stalled {
                state.job = None;
                break;
            }
            state.waiting = next >= reached + LEAD;
            if state.waiting {
                waited.get_or_insert_with(Instant::now);
                state = CHANGED
                    .wait_timeout(state, POLL)
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .0;
                continue;
            }
            // One huge page at a time, so `forget` never waits long.
            let chunk_end = (first + (next + 1) * CHUNK).min(job.end);
            let mut at = first + next * CHUNK + MARK;
            while at < chunk_end && state.job == Some(job) {
                let len = MARK.min(chunk_end - at);
                state.busy = true;
                drop(state);
                // SAFETY: `at..at+len` lies in the mapping `job` names, which `forget` keeps
                // mapped until `busy` is false again; populating writes no contents.
                let r = unsafe {
                    libc::madvise(at as *mut libc::c_void, len, libc::MADV_POPULATE_WRITE)
                };
                let error = (r != 0).then(|| std::io::Error::last_os_error().raw_os_error());
                state = self::state();
                state.busy = false;
                CHANGED.notify_all();
                if let Some(errno) = error {
                    // Out of memory, say: the writer will meet it itself. EINVAL: an older kernel.
                    state.job = None;
                    state.off |= errno == Some(libc::EINVAL);
                }
                at += len;
            }
            next += 1;
        }
    }
}

/// Whether pages are faulted in ahead on this kernel (known after the first job).
#[cfg(test)]
pub(crate) fn on() -> bool {
    !state().off
}

/// Whether the thread is [`LEAD`] chunks ahead of the writer, waiting for it.
#[cfg(test)]
pub(crate) fn waiting_for_writer() -> bool {
    state().waiting
}
