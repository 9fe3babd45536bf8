//! The one door through which the raw locks reach atomics, thread parking and
//! the profiler, so that `--cfg loom` can replace all three (crossbeam's
//! `primitive` shim, applied to `parking_lot_core` as well).
//!
//! Normally: `core::sync::atomic`, `parking_lot_core` and [`crate::profile`].
//! Under `cfg(loom)`: loom's atomics; a small model of `parking_lot_core`'s
//! `park` / `unpark_filter` / `unpark_all` / `unpark_requeue` (one global queue of waiters keyed
//! by address, guarded by a loom mutex); a logical clock; and a profiler stub
//! that only sums what would have been recorded, for the loom tests to check
//! the charge bookkeeping.

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU8, AtomicU16, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU8, AtomicU16, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};

#[cfg(not(loom))]
pub(crate) use parking_lot_core::{
    DEFAULT_PARK_TOKEN, FilterOp, ParkResult, ParkToken, RequeueOp, SpinWait, UnparkResult,
    UnparkToken,
};

#[cfg(loom)]
pub(crate) use loom::thread::yield_now;
/// The unpark token that tells a woken waiter of any syncprof queue to
/// compete for its lock again (every waiter handles it).
pub(crate) const TOKEN_COMPETE: UnparkToken = UnparkToken(0);

/// Lets other threads run while a re-entered wait spins (loom's under loom,
/// so that the model schedules the holder).
#[cfg(not(loom))]
pub(crate) use std::thread::yield_now;

pub(crate) use self::reentry::{
    defer_wake, may_park, must_defer_wake, park, require_may_park, unpark_all, unpark_filter,
    unpark_requeue,
};

#[cfg(loom)]
pub(crate) use self::loom_park::{
    DEFAULT_PARK_TOKEN, FilterOp, ParkResult, ParkToken, RequeueOp, SpinWait, UnparkResult,
    UnparkToken,
};

/// Threads queued in the loom parking model.
#[cfg(loom)]
pub(crate) fn loom_queued() -> usize {
    loom_park::queued()
}

/// Threads queued in the loom parking model as of its last change, read
/// without the model's queue lock (for counters bumped by lock paths).
#[cfg(loom)]
pub(crate) fn loom_queued_now() -> usize {
    loom_park::queued_now()
}

/// Under loom: runs `hook` wherever the parking model stands for code of
/// `parking_lot_core` that may allocate (inside `park` after validation and
/// inside `unpark_filter` while walking the queue, both under the model's
/// queue lock, as the real allocations run under a bucket lock), with the
/// thread marked inside `parking_lot_core`. The loom tests use it to model a
/// `#[global_allocator]` that takes a syncprof lock. `None` removes it.
#[cfg(loom)]
pub(crate) fn set_loom_reentry_hook(hook: Option<fn()>) {
    loom_park::set_reentry_hook(hook);
}

/// The profiler as the raw locks see it.
#[cfg(not(loom))]
pub(crate) mod profile {
    pub(crate) use crate::profile::clock::{difference_truncated, elapsed, elapsed_truncated};
    // (`block_start`/`record_block`: for a requeued condvar waiter's mutex
    // wait that ends without a park, kept out of the waiting view.)
    pub(crate) use crate::profile::{
        BlockWait, EventKind, LockSite, StackMark, begin_block_wait, block_start,
        discard_block_wait, end_block_wait, mutex_profiling_on, now, record_block, record_mutex,
    };
    pub(crate) use crate::profile::{
        begin_blocking, begin_blocking_unregistered, end_blocking, end_blocking_at,
        register_blocking,
    };

    /// Ticks per second if the clock is already calibrated (never calibrates:
    /// calibration sleeps, and the callers hold a queue lock).
    #[inline]
    pub(crate) fn ticks_per_second_if_known() -> Option<f64> {
        crate::profile::clock::ticks_per_second_if_known()
    }
}

#[cfg(loom)]
pub(crate) mod profile {
    //! The profiler stub for loom: a logical clock and totals, no stacks.

    pub(crate) use crate::profile::clock::{difference_truncated, elapsed, elapsed_truncated};
    pub(crate) use crate::profile::{EventKind, LockSite, StackMark};
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};

    /// Condvar waits that a notification ended while they spun, and while
    /// they left the spinners to park (never reset: the models check that
    /// both paths were reached).
    pub(crate) static SPIN_WAKES: AtomicU64 = AtomicU64::new(0);
    pub(crate) static SPIN_LEFT_NOTIFIED: AtomicU64 = AtomicU64::new(0);
    /// Condvar waiters that met a second mutex after they released theirs
    /// to spin (and took it back before panicking); never reset.
    pub(crate) static SPIN_BAD_MUTEX: AtomicU64 = AtomicU64::new(0);
    /// Mutex unlocks that woke nobody though threads were parked (a woken
    /// waiter owed PARKED_BIT).
    pub(crate) static QUIET_UNLOCKS: AtomicU64 = AtomicU64::new(0);
    /// Fast-path mutex locks taken while threads were parked.
    pub(crate) static FAST_PAST_PARKED: AtomicU64 = AtomicU64::new(0);

    /// Logical time: every read advances it, so waits are never empty.
    static CLOCK: AtomicU64 = AtomicU64::new(1);
    /// Whether the stub profiles (set by the loom tests).
    pub(crate) static ON: AtomicBool = AtomicBool::new(false);
    /// Sum of the delays passed to `record_mutex`.
    pub(crate) static MUTEX_DELAY: AtomicU64 = AtomicU64::new(0);
    /// Number of `record_mutex` calls.
    pub(crate) static MUTEX_EVENTS: AtomicU64 = AtomicU64::new(0);
    /// Number of calls to the parking model's `park`.
    pub(crate) static PARKS: AtomicU64 = AtomicU64::new(0);
    /// Threads moved by the parking model's `unpark_requeue`.
    pub(crate) static REQUEUED: AtomicU64 = AtomicU64::new(0);
    /// Number of `record_block` calls.
    pub(crate) static BLOCK_EVENTS: AtomicU64 = AtomicU64::new(0);

    pub(crate) fn now() -> u64 {
        CLOCK.fetch_add(1, SeqCst)
    }
    pub(crate) fn block_start() -> Option<u64> {
        ON.load(SeqCst).then(now)
    }
    /// `begin_blocking`: as `block_start` (the stub keeps no registry).
    pub(crate) fn begin_blocking(
        _kind: EventKind,
        _site: Option<LockSite>,
        _lock: usize,
        _mark: StackMark,
    ) -> Option<u64> {
        block_start()
    }
    /// `begin_blocking_unregistered`: as `block_start`.
    pub(crate) fn begin_blocking_unregistered() -> Option<u64> {
        block_start()
    }
    /// `register_blocking`: nothing (the stub keeps no registry).
    pub(crate) fn register_blocking(
        _start: &mut Option<u64>,
        _kind: EventKind,
        _site: Option<LockSite>,
        _lock: usize,
        _mark: StackMark,
    ) {
    }
    /// `end_blocking`: as `record_block`.
    pub(crate) fn end_blocking(
        start: u64,
        kind: EventKind,
        site: Option<LockSite>,
        mark: StackMark,
    ) {
        record_block(start, kind, site, mark);
    }
    pub(crate) fn mutex_profiling_on() -> bool {
        ON.load(SeqCst)
    }
    pub(crate) fn record_block(
        start: u64,
        _kind: EventKind,
        _site: Option<LockSite>,
        _mark: StackMark,
    ) {
        assert!(now() > start);
        BLOCK_EVENTS.fetch_add(1, SeqCst);
    }
    /// `end_blocking_at`: as `record_block`, ended at `end`.
    pub(crate) fn end_blocking_at(
        start: u64,
        end: u64,
        _kind: EventKind,
        _site: Option<LockSite>,
        _mark: StackMark,
    ) {
        assert!(now() > start && end > 0);
        BLOCK_EVENTS.fetch_add(1, SeqCst);
    }
    /// A wait begun by `begin_block_wait`: its logical start.
    pub(crate) struct BlockWait(u64);
    impl BlockWait {
        pub(crate) fn restart(&mut self) {
            self.0 = now();
        }
        pub(crate) fn start_at(&mut self, tick: u64) {
            self.0 = tick;
        }
    }
    pub(crate) fn discard_block_wait(_wait: BlockWait) {}
    pub(crate) fn begin_block_wait(
        _kind: EventKind,
        _site: Option<LockSite>,
        _lock: usize,
        _mark: StackMark,
    ) -> Option<BlockWait> {
        block_start().map(BlockWait)
    }
    pub(crate) fn end_block_wait(wait: BlockWait) {
        assert!(now() > wait.0);
        BLOCK_EVENTS.fetch_add(1, SeqCst);
    }
    pub(crate) fn record_mutex(
        delay: u64,
        woken: u64,
        _kind: EventKind,
        _site: Option<LockSite>,
        _mark: StackMark,
    ) {
        assert!(delay < u64::MAX / 2, "negative charge {delay}");
        MUTEX_DELAY.fetch_add(delay, SeqCst);
        MUTEX_EVENTS.fetch_add(woken, SeqCst);
    }
    pub(crate) fn ticks_per_second_if_known() -> Option<f64> {
        Some(1e9)
    }
}

mod reentry;

#[cfg(loom)]
mod loom_park;
