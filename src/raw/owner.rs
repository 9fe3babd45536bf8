//! Owner tracking (feature `owner-tracking`): the hooks a `Mutex` and the
//! write side of an `RwLock` call when they are taken and released, so that
//! the waiting view can name a lock's holder and `syncprof::deadlock` can
//! follow who waits for whom. As parking_lot's `deadlock::acquire_resource`,
//! each hook compiles to nothing without the feature (and under loom).
//!
//! With the feature, taking a lock records, in the calling thread's slot of
//! the waiting registry, the lock's address and the acquisition stack
//! (frame-pointer walks only: a process without frame pointers records no
//! acquisition stack rather than run the DWARF unwinder on every lock); a
//! release forgets it. Neither allocates, blocks nor records a profile
//! event: the hooks run inside critical sections, also those of a
//! `#[global_allocator]`.
//!
//! Order: `acquired` after the lock is taken, `released` before it is given
//! up, so that a recorded hold is always a real one (the deadlock detector
//! relies on it: it may miss a hold for an instant, never invent one).

use super::shim::profile::StackMark;

/// The calling thread has just taken the lock at `lock` (on its fast path:
/// the acquisition stack starts at the public method's caller).
#[inline(always)]
pub(crate) fn acquired(lock: usize) {
    #[cfg(all(feature = "owner-tracking", not(loom)))]
    imp::acquired(lock, None);
    #[cfg(not(all(feature = "owner-tracking", not(loom))))]
    let _ = lock;
}

/// The calling thread has just taken the lock at `lock` on a slow path that
/// marked its frame (`mark`, see [`StackMark`]).
#[inline(always)]
pub(crate) fn acquired_marked(lock: usize, mark: StackMark) {
    #[cfg(all(feature = "owner-tracking", not(loom)))]
    imp::acquired(lock, Some(mark));
    #[cfg(not(all(feature = "owner-tracking", not(loom))))]
    let _ = (lock, mark);
}

/// The calling thread is about to give up the lock at `lock`.
#[inline(always)]
pub(crate) fn released(lock: usize) {
    #[cfg(all(feature = "owner-tracking", not(loom)))]
    crate::profile::waiting::release(lock);
    #[cfg(not(all(feature = "owner-tracking", not(loom))))]
    let _ = lock;
}

#[cfg(all(feature = "owner-tracking", not(loom)))]
mod imp {
    use crate::profile::{StackMark, stack, waiting};

    /// Records the hold with the stack above `mark` (or above this
    /// function, whose caller is then the public method or the user's frame
    /// it was inlined into).
    #[inline(never)]
    pub(super) fn acquired(lock: usize, mark: Option<StackMark>) {
        let here = 0u8;
        let mark = mark.unwrap_or_else(|| StackMark::of(core::hint::black_box(&here)));
        let mut buf = stack::StackBuf::new();
        stack::capture_frame_pointers_only(mark, waiting::HELD_DEPTH + 1, &mut buf);
        waiting::hold(lock, buf.addrs(), buf.truncated());
    }
}
