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
//! release forgets it. The stack is most of the cost (27 ns vs 10 ns per
//! uncontended lock+unlock, `benches/ratios.rs`): `SYNCPROF_ACQUISITION_STACKS=0`
//! or `syncprof::deadlock::set_acquisition_stacks(false)` records holders
//! without it. Neither allocates, blocks nor records a profile
//! event: the hooks run inside critical sections, also those of a
//! `#[global_allocator]`.
//!
//! On the fast path the stack is walked before the CAS (`acquiring`) and
//! only published after it (`acquired_fast`), so that the walk does not
//! lengthen the critical section: with the walk inside it, a lock that a
//! `#[global_allocator]` takes on every call convoyed (threads spinning for
//! it inside `parking_lot_core`, found by `tests/alloc_reentry_mutex.rs`).
//!
//! Order: `acquired*` after the lock is taken, `released` before it is given
//! up, so that a recorded hold is always a real one (the deadlock detector
//! relies on it: it may miss a hold for an instant, never invent one).

use super::shim::profile::StackMark;

/// The calling thread is about to try a lock's fast path: its acquisition
/// stack is captured now, outside the critical section it may enter, for
/// [`acquired_fast`] to publish (the stack starts at the public method's
/// caller).
#[inline(always)]
#[doc(hidden)]
pub fn acquiring() {
    #[cfg(all(feature = "owner-tracking", not(loom)))]
    imp::stage();
}

/// The calling thread has just taken the lock at `lock` on the fast path
/// that [`acquiring`] preceded.
#[inline(always)]
#[doc(hidden)]
pub fn acquired_fast(lock: usize) {
    #[cfg(all(feature = "owner-tracking", not(loom)))]
    crate::profile::waiting::hold_staged(lock);
    #[cfg(not(all(feature = "owner-tracking", not(loom))))]
    let _ = lock;
}

/// The calling thread has just taken the lock at `lock` (`try_lock`, a
/// re-entered spin): the acquisition stack, captured now, starts at the
/// public method's caller.
#[inline(always)]
#[doc(hidden)]
pub fn acquired(lock: usize) {
    #[cfg(all(feature = "owner-tracking", not(loom)))]
    imp::acquired(lock, None);
    #[cfg(not(all(feature = "owner-tracking", not(loom))))]
    let _ = lock;
}

/// The calling thread has just taken the lock at `lock` on a slow path that
/// marked its frame (`mark`, see [`StackMark`]).
#[inline(always)]
#[doc(hidden)]
pub fn acquired_marked(lock: usize, mark: StackMark) {
    #[cfg(all(feature = "owner-tracking", not(loom)))]
    imp::acquired(lock, Some(mark));
    #[cfg(not(all(feature = "owner-tracking", not(loom))))]
    let _ = (lock, mark);
}

/// The calling thread is about to give up the lock at `lock`.
#[inline(always)]
#[doc(hidden)]
pub fn released(lock: usize) {
    #[cfg(all(feature = "owner-tracking", not(loom)))]
    crate::profile::waiting::release(lock);
    #[cfg(not(all(feature = "owner-tracking", not(loom))))]
    let _ = lock;
}

#[cfg(all(feature = "owner-tracking", not(loom)))]
#[doc(hidden)]
pub use imp::{set_stacks, stacks};

#[cfg(all(feature = "owner-tracking", not(loom)))]
mod imp {
    use core::sync::atomic::{AtomicU8, Ordering::Relaxed};

    use crate::profile::{StackMark, stack, waiting};

    /// Whether acquisitions record their stack: unset until first read
    /// (then from `SYNCPROF_ACQUISITION_STACKS`, default on), else 0 or 1.
    /// Relaxed: a switch, read once per acquisition.
    static STACKS: AtomicU8 = AtomicU8::new(UNSET);
    const UNSET: u8 = 2;

    /// Whether acquisitions record their stack (see
    /// `syncprof::deadlock::set_acquisition_stacks`).
    #[inline]
    #[doc(hidden)]
    pub fn stacks() -> bool {
        match STACKS.load(Relaxed) {
            UNSET => {
                let on = crate::profile::env::with_var(c"SYNCPROF_ACQUISITION_STACKS", |raw| {
                    !matches!(
                        raw.map(<[u8]>::trim_ascii),
                        Some(b"0" | b"false" | b"off" | b"no")
                    )
                });
                let _ = STACKS.compare_exchange(UNSET, u8::from(on), Relaxed, Relaxed);
                STACKS.load(Relaxed) == 1
            }
            on => on == 1,
        }
    }

    /// Turns acquisition stacks on or off.
    #[doc(hidden)]
    pub fn set_stacks(on: bool) {
        STACKS.store(u8::from(on), Relaxed);
    }

    /// Stages the acquisition stack above this function (whose caller is
    /// the public method or the user's frame it was inlined into), when
    /// acquisition stacks are on.
    #[inline(never)]
    pub(super) fn stage() {
        if !stacks() {
            return;
        }
        let here = 0u8;
        let mark = StackMark::of(core::hint::black_box(&here));
        let mut buf = stack::StackBuf::new();
        stack::capture_frame_pointers_only(mark, waiting::HELD_DEPTH + 1, &mut buf);
        waiting::stage(buf.addrs(), buf.truncated());
    }

    /// Records the hold with the stack above `mark` (or above this
    /// function, whose caller is then the public method or the user's frame
    /// it was inlined into), when acquisition stacks are on.
    #[inline(never)]
    pub(super) fn acquired(lock: usize, mark: Option<StackMark>) {
        if !stacks() {
            waiting::hold(lock, &[], false);
            return;
        }
        let here = 0u8;
        let mark = mark.unwrap_or_else(|| StackMark::of(core::hint::black_box(&here)));
        let mut buf = stack::StackBuf::new();
        stack::capture_frame_pointers_only(mark, waiting::HELD_DEPTH + 1, &mut buf);
        waiting::hold(lock, buf.addrs(), buf.truncated());
    }
}
