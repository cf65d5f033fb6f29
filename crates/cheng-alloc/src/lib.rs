//! The `cheng` binary's global allocator.
//!
//! mimalloc for every block under [`HUGE`]: it keeps freed memory mapped between runs, so a
//! 10 MB Markdown document does not fault in fresh pages on every parse as it does with glibc.
//! Blocks of [`HUGE`] and more get an anonymous mapping of their own, grown with `mremap`
//! (the kernel moves page tables; nothing is copied) and returned with `munmap` when freed.
//! mimalloc copies a block at each `realloc` past its size, so the one huge vector a
//! pathological 16 MiB document makes (pulldown-cmark's node tree, ~770 MB) was copied at every
//! doubling, and its freed copies purged and faulted in again: twice the time of glibc,
//! which grows such blocks with `mremap` too. The mappings ask for transparent huge pages
//! (`MADV_HUGEPAGE`; hosts set to `madvise` grant them only when asked): a block that big is
//! walked end to end, and 2 MiB pages cut both the page faults and the TLB misses of that walk.
//! While such a block is filled, a thread of its own faults in its next pages (see [`ahead`]).
//! docs/performance.md, "Allocator", has the figures.

mod ahead;

use std::alloc::{GlobalAlloc, Layout};
use std::ptr;

/// Blocks from this size on get their own mapping.
pub const HUGE: usize = 32 << 20;

/// Mapping lengths are rounded to this (a transparent huge page, a multiple of every page size).
const GRANULE: usize = 2 << 20;

/// The allocator; `#[global_allocator] static GLOBAL: cheng_alloc::Allocator = cheng_alloc::Allocator;`.
pub struct Allocator;

/// Whether `layout` is served by a mapping of its own (page alignment is what a mapping gives).
fn mapped(layout: &Layout) -> bool {
    layout.size() >= HUGE && layout.align() <= 4096
}

/// `size` rounded up to [`GRANULE`]; `None` past the address space.
fn mapping_len(size: usize) -> Option<usize> {
    size.checked_add(GRANULE - 1).map(|n| n & !(GRANULE - 1))
}

/// A fresh zero-filled mapping of at least `size` bytes, or null.
fn map(size: usize) -> *mut u8 {
    let Some(len) = mapping_len(size) else {
        return ptr::null_mut();
    };
    // SAFETY: an anonymous private mapping at an address the kernel picks touches no existing
    // memory; the result is checked against MAP_FAILED before use.
    let p = unsafe {
        libc::mmap(
            ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return ptr::null_mut();
    }
    advise_huge_pages(p, len);
    ahead::follow(p.cast(), 0, len);
    p.cast()
}

/// Asks for transparent huge pages on a mapping; only a hint (refused where THP is off).
fn advise_huge_pages(p: *mut libc::c_void, len: usize) {
    // SAFETY: `p..p+len` is a mapping this allocator owns; MADV_HUGEPAGE changes no contents.
    unsafe {
        libc::madvise(p, len, libc::MADV_HUGEPAGE);
    }
}

// SAFETY: every block is either mimalloc's (layouts `mapped` says no to, which mimalloc serves
// with the alignment asked) or a mapping of its own (`mapped` layouts: page-aligned, at least
// the size asked, zero-filled); `mapped` depends only on the layout, which Rust passes
// unchanged from `alloc` to `dealloc`/`realloc`, so each block goes back to its owner.
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if mapped(&layout) {
            return map(layout.size());
        }
        // SAFETY: the caller's contract for `alloc` is passed on unchanged.
        unsafe { mimalloc::MiMalloc.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if mapped(&layout) {
            // Anonymous mappings are zero-filled.
            return map(layout.size());
        }
        // SAFETY: the caller's contract for `alloc_zeroed` is passed on unchanged.
        unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if mapped(&layout) {
            if let Some(len) = mapping_len(layout.size()) {
                ahead::forget(ptr);
                // SAFETY: `ptr` came from `map` with this layout's size, so `ptr..ptr+len` is
                // exactly that mapping, which the caller gives up.
                unsafe {
                    libc::munmap(ptr.cast(), len);
                }
            }
            return;
        }
        // SAFETY: a block mimalloc handed out for this layout.
        unsafe { mimalloc::MiMalloc.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller guarantees `new_size`, rounded up to `layout.align()`, does not
        // overflow isize, so this layout is valid.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        match (mapped(&layout), mapped(&new_layout)) {
            (false, false) => {
                // SAFETY: a mimalloc block resized by mimalloc; the caller's contract holds.
                unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) }
            }
            (true, true) => {
                let (Some(old_len), Some(new_len)) =
                    (mapping_len(layout.size()), mapping_len(new_size))
                else {
                    return ptr::null_mut();
                };
                if old_len == new_len {
                    return ptr;
                }
                ahead::forget(ptr);
                // SAFETY: `ptr..ptr+old_len` is one mapping from `map`; MREMAP_MAYMOVE lets the
                // kernel move it (contents kept, old range unmapped); checked for MAP_FAILED.
                let p = unsafe { libc::mremap(ptr.cast(), old_len, new_len, libc::MREMAP_MAYMOVE) };
                if p == libc::MAP_FAILED {
                    return ptr::null_mut();
                }
                if new_len > old_len {
                    ahead::follow(p.cast(), old_len, new_len);
                }
                p.cast()
            }
            // Crossing the threshold: a new block from the other owner, then a copy.
            _ => {
                // SAFETY: `new_layout` is valid (above) and non-zero (`new_size` is non-zero by
                // the caller's contract).
                let new = unsafe { self.alloc(new_layout) };
                if !new.is_null() {
                    // SAFETY: both blocks are live, distinct and at least this long.
                    unsafe {
                        ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                        self.dealloc(ptr, layout);
                    }
                }
                new
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(size: usize, align: usize) -> Layout {
        Layout::from_size_align(size, align).unwrap()
    }

    /// Fills `n` bytes with a pattern that differs at every offset modulo 251.
    fn fill(p: *mut u8, n: usize) {
        for i in (0..n).step_by(4093) {
            // SAFETY: test blocks are at least `n` bytes.
            unsafe { *p.add(i) = (i % 251) as u8 };
        }
    }

    fn holds_pattern(p: *const u8, n: usize) -> bool {
        // SAFETY: as in `fill`.
        (0..n)
            .step_by(4093)
            .all(|i| unsafe { *p.add(i) } == (i % 251) as u8)
    }

    /// The tests below share the one block [`ahead`] follows.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
        ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits up to two seconds for `done`.
    fn eventually(done: impl Fn() -> bool) -> bool {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while std::time::Instant::now() < deadline {
            if done() {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        false
    }

    #[test]
    fn a_block_being_filled_is_faulted_in_ahead_of_its_writer_and_no_further() {
        let _one = one_at_a_time();
        let a = Allocator;
        let (chunk, mark, lead) = (ahead::CHUNK, ahead::MARK, ahead::LEAD);
        let size = 12 * chunk;
        // SAFETY: a valid layout; the block is written within its size and freed once.
        unsafe {
            let p = a.alloc(layout(size, 8));
            assert!(!p.is_null());
            assert!(
                ahead::on(),
                "this kernel faults in ahead (MADV_POPULATE_WRITE, Linux 5.14)"
            );
            let first = p as usize + (((p as usize + mark - 1) & !(mark - 1)) - p as usize);
            let inside = |c: usize| first + c * chunk + mark;
            // Nothing written yet: the first `lead` chunks are faulted in, then the thread waits.
            assert!(
                eventually(|| ahead::resident(inside(lead - 1)) && ahead::waiting_for_writer()),
                "chunks 0..{lead} ahead"
            );
            assert!(
                !ahead::resident(inside(lead)),
                "chunk {lead} is past the lead"
            );
            // The writer goes front to back into chunk 3 (touching each mark on its way):
            // chunks up to 3 + lead are faulted in, the one after is not.
            for c in 0..=3 {
                *((first + c * chunk) as *mut u8) = 1;
            }
            assert!(
                eventually(|| ahead::resident(inside(3 + lead))),
                "chunk {} ahead",
                3 + lead
            );
            assert!(
                eventually(ahead::waiting_for_writer),
                "the thread waits for the writer again"
            );
            assert!(
                !ahead::resident(inside(3 + lead + 1)),
                "nothing was faulted in past the lead"
            );
            for c in 4..12 {
                assert!(
                    !ahead::resident(first + c * chunk),
                    "the writer's mark {c} was left to it"
                );
            }
            a.dealloc(p, layout(size, 8));
        }
    }

    #[test]
    fn growing_across_the_threshold_and_within_mappings_keeps_the_contents() {
        let _one = one_at_a_time();
        let a = Allocator;
        let small = HUGE / 4;
        // SAFETY: valid non-zero layouts; every block is used within its size and freed once.
        unsafe {
            let p = a.alloc(layout(small, 8));
            assert!(!p.is_null());
            fill(p, small);
            let p = a.realloc(p, layout(small, 8), HUGE); // mimalloc → mapping
            assert!(holds_pattern(p, small));
            fill(p, HUGE);
            let p = a.realloc(p, layout(HUGE, 8), 3 * HUGE); // mapping grown with mremap
            assert!(holds_pattern(p, HUGE));
            fill(p, 3 * HUGE);
            let p = a.realloc(p, layout(3 * HUGE, 8), HUGE + 1); // mapping shrunk
            assert!(holds_pattern(p, HUGE + 1));
            let p = a.realloc(p, layout(HUGE + 1, 8), small); // mapping → mimalloc
            assert!(holds_pattern(p, small));
            a.dealloc(p, layout(small, 8));
        }
    }

    #[test]
    fn huge_zeroed_blocks_are_zero_and_over_aligned_ones_stay_with_mimalloc() {
        let _one = one_at_a_time();
        let a = Allocator;
        // SAFETY: as above.
        unsafe {
            let p = a.alloc_zeroed(layout(HUGE, 16));
            assert!(!p.is_null());
            assert!((0..HUGE).step_by(4096).all(|i| *p.add(i) == 0));
            a.dealloc(p, layout(HUGE, 16));
            assert!(!mapped(&layout(HUGE, 8192)));
            let q = a.alloc(layout(HUGE, 8192));
            assert!(!q.is_null() && (q as usize).is_multiple_of(8192));
            a.dealloc(q, layout(HUGE, 8192));
        }
    }

    #[test]
    fn a_size_past_the_address_space_is_refused_not_wrapped() {
        assert_eq!(mapping_len(usize::MAX), None);
        assert_eq!(mapping_len(HUGE + 1), Some(HUGE + GRANULE));
        assert_eq!(mapping_len(HUGE), Some(HUGE));
    }
}
