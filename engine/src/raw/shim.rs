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
#[doc(hidden)]
pub use core::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU8, AtomicU16, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};
#[cfg(loom)]
#[doc(hidden)]
pub use loom::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU8, AtomicU16, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};

#[cfg(not(loom))]
#[doc(hidden)]
pub use parking_lot_core::{
    DEFAULT_PARK_TOKEN, FilterOp, ParkResult, ParkToken, RequeueOp, SpinWait, UnparkResult,
    UnparkToken,
};

#[cfg(loom)]
#[doc(hidden)]
pub use loom::thread::yield_now;
/// The unpark token that tells a woken waiter of any syncprof queue to
/// compete for its lock again (every waiter handles it).
#[doc(hidden)]
pub const TOKEN_COMPETE: UnparkToken = UnparkToken(0);

/// Lets other threads run while a re-entered wait spins (loom's under loom,
/// so that the model schedules the holder).
#[cfg(not(loom))]
#[doc(hidden)]
pub use std::thread::yield_now;

#[doc(hidden)]
pub use self::reentry::{
    defer_wake, may_park, must_defer_wake, park, require_may_park, unpark_all, unpark_filter,
    unpark_requeue,
};

#[cfg(loom)]
#[doc(hidden)]
pub use self::loom_park::{
    DEFAULT_PARK_TOKEN, FilterOp, ParkResult, ParkToken, RequeueOp, SpinWait, UnparkResult,
    UnparkToken,
};

/// Threads queued in the loom parking model.
#[cfg(loom)]
#[doc(hidden)]
pub fn loom_queued() -> usize {
    loom_park::queued()
}

/// Threads queued in the loom parking model as of its last change, read
/// without the model's queue lock (for counters bumped by lock paths).
#[cfg(loom)]
#[doc(hidden)]
pub fn loom_queued_now() -> usize {
    loom_park::queued_now()
}

/// Under loom: runs `hook` wherever the parking model stands for code of
/// `parking_lot_core` that may allocate (inside `park` after validation and
/// inside `unpark_filter` while walking the queue, both under the model's
/// queue lock, as the real allocations run under a bucket lock), with the
/// thread marked inside `parking_lot_core`. The loom tests use it to model a
/// `#[global_allocator]` that takes a syncprof lock. `None` removes it.
#[cfg(loom)]
#[doc(hidden)]
pub fn set_loom_reentry_hook(hook: Option<fn()>) {
    loom_park::set_reentry_hook(hook);
}

/// The profiler as the raw locks see it.
#[cfg(not(loom))]
#[doc(hidden)]
pub mod profile {
    #[doc(hidden)]
    pub use crate::profile::clock::{difference_truncated, elapsed, elapsed_truncated};
    // (`block_start`/`record_block`: for a requeued condvar waiter's mutex
    // wait that ends without a park, kept out of the waiting view.)
    #[doc(hidden)]
    pub use crate::profile::{
        BlockWait, EventKind, LockSite, StackMark, begin_block_wait, block_start,
        discard_block_wait, end_block_wait, mutex_profiling_on, now, record_block, record_mutex,
    };
    #[doc(hidden)]
    pub use crate::profile::{
        begin_blocking, begin_blocking_unregistered, end_blocking, end_blocking_at,
        register_blocking,
    };

    /// Ticks per second if the clock is already calibrated (never calibrates:
    /// calibration sleeps, and the callers hold a queue lock).
    #[inline]
    #[doc(hidden)]
    pub fn ticks_per_second_if_known() -> Option<f64> {
        crate::profile::clock::ticks_per_second_if_known()
    }
}

#[cfg(loom)]
#[doc(hidden)]
pub mod profile {
    //! The profiler stub for loom: a logical clock and totals, no stacks.

    #[doc(hidden)]
    pub use crate::profile::clock::{difference_truncated, elapsed, elapsed_truncated};
    #[doc(hidden)]
    pub use crate::profile::{EventKind, LockSite, StackMark};
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};

    /// Condvar waits that a notification ended while they spun, and while
    /// they left the spinners to park (never reset: the models check that
    /// both paths were reached).
    #[doc(hidden)]
    pub static SPIN_WAKES: AtomicU64 = AtomicU64::new(0);
    #[doc(hidden)]
    pub static SPIN_LEFT_NOTIFIED: AtomicU64 = AtomicU64::new(0);
    /// Condvar waiters that met a second mutex after they released theirs
    /// to spin (and took it back before panicking); never reset.
    #[doc(hidden)]
    pub static SPIN_BAD_MUTEX: AtomicU64 = AtomicU64::new(0);
    /// Mutex unlocks that woke nobody though threads were parked (a woken
    /// waiter owed PARKED_BIT).
    #[doc(hidden)]
    pub static QUIET_UNLOCKS: AtomicU64 = AtomicU64::new(0);
    /// Fast-path mutex locks taken while threads were parked.
    #[doc(hidden)]
    pub static FAST_PAST_PARKED: AtomicU64 = AtomicU64::new(0);
    /// RwLock unlocks that handed the lock to a starving waiter (a writer or
    /// the readers), and unlocks that met a starving waiter but did not,
    /// the last hand-over being too recent (`LastHandOff`); never reset.
    #[doc(hidden)]
    pub static RW_HAND_OFFS: AtomicU64 = AtomicU64::new(0);
    #[doc(hidden)]
    pub static RW_HAND_OFFS_REFUSED: AtomicU64 = AtomicU64::new(0);
    /// Keep-outs a reader's timer ended (the woken writer had not run);
    /// never reset.
    #[doc(hidden)]
    pub static RW_KEEP_OUTS_ENDED: AtomicU64 = AtomicU64::new(0);

    /// Logical time: every read advances it, so waits are never empty.
    static CLOCK: AtomicU64 = AtomicU64::new(1);
    /// Whether the stub profiles (set by the loom tests).
    #[doc(hidden)]
    pub static ON: AtomicBool = AtomicBool::new(false);
    /// Sum of the delays passed to `record_mutex`.
    #[doc(hidden)]
    pub static MUTEX_DELAY: AtomicU64 = AtomicU64::new(0);
    /// Number of `record_mutex` calls.
    #[doc(hidden)]
    pub static MUTEX_EVENTS: AtomicU64 = AtomicU64::new(0);
    /// Number of calls to the parking model's `park`.
    #[doc(hidden)]
    pub static PARKS: AtomicU64 = AtomicU64::new(0);
    /// Threads moved by the parking model's `unpark_requeue`.
    #[doc(hidden)]
    pub static REQUEUED: AtomicU64 = AtomicU64::new(0);
    /// Number of `record_block` calls.
    #[doc(hidden)]
    pub static BLOCK_EVENTS: AtomicU64 = AtomicU64::new(0);

    #[doc(hidden)]
    pub fn now() -> u64 {
        CLOCK.fetch_add(1, SeqCst)
    }
    #[doc(hidden)]
    pub fn block_start() -> Option<u64> {
        ON.load(SeqCst).then(now)
    }
    /// `begin_blocking`: as `block_start` (the stub keeps no registry).
    #[doc(hidden)]
    pub fn begin_blocking(
        _kind: EventKind,
        _site: Option<LockSite>,
        _lock: usize,
        _mark: StackMark,
    ) -> Option<u64> {
        block_start()
    }
    /// `begin_blocking_unregistered`: as `block_start`.
    #[doc(hidden)]
    pub fn begin_blocking_unregistered() -> Option<u64> {
        block_start()
    }
    /// `register_blocking`: nothing (the stub keeps no registry).
    #[doc(hidden)]
    pub fn register_blocking(
        _start: &mut Option<u64>,
        _kind: EventKind,
        _site: Option<LockSite>,
        _lock: usize,
        _mark: StackMark,
    ) {
    }
    /// `end_blocking`: as `record_block`.
    #[doc(hidden)]
    pub fn end_blocking(start: u64, kind: EventKind, site: Option<LockSite>, mark: StackMark) {
        record_block(start, kind, site, mark);
    }
    #[doc(hidden)]
    pub fn mutex_profiling_on() -> bool {
        ON.load(SeqCst)
    }
    #[doc(hidden)]
    pub fn record_block(start: u64, _kind: EventKind, _site: Option<LockSite>, _mark: StackMark) {
        assert!(now() > start);
        BLOCK_EVENTS.fetch_add(1, SeqCst);
    }
    /// `end_blocking_at`: as `record_block`, ended at `end`.
    #[doc(hidden)]
    pub fn end_blocking_at(
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
    #[doc(hidden)]
    pub struct BlockWait(u64);
    impl BlockWait {
        #[doc(hidden)]
        pub fn restart(&mut self) {
            self.0 = now();
        }
        #[doc(hidden)]
        pub fn start_at(&mut self, tick: u64) {
            self.0 = tick;
        }
    }
    #[doc(hidden)]
    pub fn discard_block_wait(_wait: BlockWait) {}
    #[doc(hidden)]
    pub fn begin_block_wait(
        _kind: EventKind,
        _site: Option<LockSite>,
        _lock: usize,
        _mark: StackMark,
    ) -> Option<BlockWait> {
        block_start().map(BlockWait)
    }
    #[doc(hidden)]
    pub fn end_block_wait(wait: BlockWait) {
        assert!(now() > wait.0);
        BLOCK_EVENTS.fetch_add(1, SeqCst);
    }
    #[doc(hidden)]
    pub fn record_mutex(
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
    #[doc(hidden)]
    pub fn ticks_per_second_if_known() -> Option<f64> {
        Some(1e9)
    }
}

mod reentry;

#[cfg(loom)]
mod loom_park;
