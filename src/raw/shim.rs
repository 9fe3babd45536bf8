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
mod loom_park {
    //! A model of `parking_lot_core` for loom: one FIFO queue of waiters for
    //! every key, guarded by one loom mutex (the model of a bucket lock).
    //! Timeouts fire at once, at the first point the waiter looks.

    use loom::sync::Arc;
    use loom::sync::Mutex;
    use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use loom::thread::Thread;
    use std::time::Instant;

    #[derive(Copy, Clone, Eq, PartialEq, Debug)]
    pub(crate) struct ParkToken(pub usize);
    #[derive(Copy, Clone, Eq, PartialEq, Debug)]
    pub(crate) struct UnparkToken(pub usize);
    pub(crate) const DEFAULT_PARK_TOKEN: ParkToken = ParkToken(0);

    #[derive(Copy, Clone, Eq, PartialEq, Debug)]
    pub(crate) enum ParkResult {
        Unparked(UnparkToken),
        Invalid,
        TimedOut,
    }

    #[derive(Copy, Clone, Default, Eq, PartialEq, Debug)]
    pub(crate) struct UnparkResult {
        pub unparked_threads: usize,
        pub requeued_threads: usize,
        pub have_more_threads: bool,
    }

    #[derive(Copy, Clone, Eq, PartialEq, Debug)]
    #[allow(dead_code)]
    pub(crate) enum RequeueOp {
        Abort,
        UnparkOneRequeueRest,
        RequeueAll,
        UnparkOne,
        RequeueOne,
    }

    #[derive(Copy, Clone, Eq, PartialEq, Debug)]
    #[allow(dead_code)]
    pub(crate) enum FilterOp {
        Unpark,
        Skip,
        Stop,
    }

    /// Never spins under loom: spinning only multiplies the interleavings.
    pub(crate) struct SpinWait;
    impl SpinWait {
        pub(crate) fn new() -> Self {
            SpinWait
        }
        pub(crate) fn spin(&mut self) -> bool {
            false
        }
        pub(crate) fn spin_no_yield(&mut self) {}
        pub(crate) fn reset(&mut self) {}
    }

    struct Waiter {
        key: usize,
        token: ParkToken,
        thread: Thread,
        /// 0 while parked, else the unpark token + 1.
        slot: Arc<AtomicUsize>,
    }

    loom::lazy_static! {
        static ref QUEUE: Mutex<Vec<Waiter>> = Mutex::new(Vec::new());
    }

    /// The re-entry hook (a `fn()` as `usize`, 0 for none). A plain atomic:
    /// set by a test before the model runs, never part of the modelled state.
    static REENTRY_HOOK: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    pub(crate) fn set_reentry_hook(hook: Option<fn()>) {
        REENTRY_HOOK.store(
            hook.map_or(0, |f| f as usize),
            std::sync::atomic::Ordering::SeqCst,
        );
    }

    /// Runs the hook where `parking_lot_core` may allocate.
    fn reentry_point() {
        let hook = REENTRY_HOOK.load(std::sync::atomic::Ordering::SeqCst);
        if hook != 0 {
            // SAFETY: only `set_reentry_hook` stores non-zero values, each a
            // `fn()` cast to `usize`.
            let hook: fn() = unsafe { core::mem::transmute::<usize, fn()>(hook) };
            hook();
        }
    }

    /// Threads queued in the model, on any key (for the loom tests).
    pub(crate) fn queued() -> usize {
        QUEUE.lock().unwrap().len()
    }

    /// The queue's length as of its last change: a plain atomic, outside the
    /// modelled state, for the stub's counters, which the lock paths bump
    /// where taking the model's queue lock would deadlock (the re-entry hook
    /// runs under it) or add schedule points.
    static LEN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    /// Publishes the queue's length (under its lock) to [`queued_now`].
    fn publish(queue: &[Waiter]) {
        LEN.store(queue.len(), std::sync::atomic::Ordering::SeqCst);
    }

    /// Threads queued as of the queue's last change, without its lock.
    pub(crate) fn queued_now() -> usize {
        LEN.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// # Safety
    /// As `parking_lot_core::park` (nothing extra for the model).
    pub(crate) unsafe fn park(
        key: usize,
        validate: impl FnOnce() -> bool,
        before_sleep: impl FnOnce(),
        timed_out: impl FnOnce(usize, bool),
        park_token: ParkToken,
        timeout: Option<Instant>,
    ) -> ParkResult {
        let slot = Arc::new(AtomicUsize::new(0));
        super::profile::PARKS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        {
            let mut queue = QUEUE.lock().unwrap();
            if !validate() {
                return ParkResult::Invalid;
            }
            // Registering the thread may allocate, under the bucket lock.
            reentry_point();
            queue.push(Waiter {
                key,
                token: park_token,
                thread: loom::thread::current(),
                slot: slot.clone(),
            });
            publish(&queue);
        }
        before_sleep();
        if timeout.is_some() {
            let mut queue = QUEUE.lock().unwrap();
            if let Some(i) = queue.iter().position(|w| Arc::ptr_eq(&w.slot, &slot)) {
                // The key it is parked on now: a requeue may have moved it.
                let key = queue.remove(i).key;
                publish(&queue);
                let last = !queue.iter().any(|w| w.key == key);
                timed_out(key, last);
                return ParkResult::TimedOut;
            }
        }
        loop {
            let got = slot.load(SeqCst);
            if got != 0 {
                return ParkResult::Unparked(UnparkToken(got - 1));
            }
            loom::thread::park();
        }
    }

    /// # Safety
    /// As `parking_lot_core::unpark_filter`.
    pub(crate) unsafe fn unpark_filter(
        key: usize,
        mut filter: impl FnMut(ParkToken) -> FilterOp,
        callback: impl FnOnce(UnparkResult) -> UnparkToken,
    ) -> UnparkResult {
        let mut queue = QUEUE.lock().unwrap();
        // Finding the bucket (making the table) or spilling the list of
        // threads to wake may allocate, under the bucket lock.
        reentry_point();
        let mut result = UnparkResult::default();
        let mut woken = Vec::new();
        let mut i = 0;
        while i < queue.len() {
            if queue[i].key != key {
                i += 1;
                continue;
            }
            match filter(queue[i].token) {
                FilterOp::Unpark => woken.push(queue.remove(i)),
                FilterOp::Skip => {
                    result.have_more_threads = true;
                    i += 1;
                }
                FilterOp::Stop => {
                    result.have_more_threads = true;
                    break;
                }
            }
        }
        result.unparked_threads = woken.len();
        publish(&queue);
        let token = callback(result);
        drop(queue);
        for waiter in woken {
            waiter.slot.store(token.0 + 1, SeqCst);
            waiter.thread.unpark();
        }
        result
    }

    /// # Safety
    /// As `parking_lot_core::unpark_all`.
    pub(crate) unsafe fn unpark_all(key: usize, token: UnparkToken) -> usize {
        // SAFETY: forwarded.
        unsafe { unpark_filter(key, |_| FilterOp::Unpark, |_| token) }.unparked_threads
    }

    /// # Safety
    /// As `parking_lot_core::unpark_requeue`.
    pub(crate) unsafe fn unpark_requeue(
        key_from: usize,
        key_to: usize,
        validate: impl FnOnce() -> RequeueOp,
        callback: impl FnOnce(RequeueOp, UnparkResult) -> UnparkToken,
    ) -> UnparkResult {
        let mut queue = QUEUE.lock().unwrap();
        let op = validate();
        if op == RequeueOp::Abort {
            return UnparkResult::default();
        }
        reentry_point();
        let mut result = UnparkResult::default();
        let mut woken = None;
        // Waiters keep their places in the one FIFO: a requeued waiter moves
        // behind the target key's waiters by going to the back.
        let from: Vec<usize> = (0..queue.len())
            .filter(|&i| queue[i].key == key_from)
            .collect();
        let mut moved = Vec::new();
        for (n, &i) in from.iter().enumerate() {
            let unpark =
                n == 0 && matches!(op, RequeueOp::UnparkOne | RequeueOp::UnparkOneRequeueRest);
            let requeue = match op {
                RequeueOp::RequeueAll => true,
                RequeueOp::UnparkOneRequeueRest => n > 0,
                RequeueOp::RequeueOne => n == 0,
                _ => false,
            };
            if unpark {
                woken = Some(i);
            } else if requeue {
                moved.push(i);
            } else {
                result.have_more_threads = true;
            }
        }
        result.requeued_threads = moved.len();
        super::profile::REQUEUED.fetch_add(moved.len() as u64, std::sync::atomic::Ordering::SeqCst);
        result.unparked_threads = usize::from(woken.is_some());
        // Remove from the back so the indices stay right.
        let mut taken: Vec<(usize, Waiter)> = Vec::new();
        let mut indices: Vec<usize> = moved.iter().copied().chain(woken).collect();
        indices.sort_unstable();
        for &i in indices.iter().rev() {
            taken.push((i, queue.remove(i)));
        }
        taken.reverse();
        let mut unparked = None;
        for (i, mut waiter) in taken {
            if Some(i) == woken {
                unparked = Some(waiter);
            } else {
                waiter.key = key_to;
                queue.push(waiter);
            }
        }
        publish(&queue);
        let token = callback(op, result);
        drop(queue);
        if let Some(waiter) = unparked {
            waiter.slot.store(token.0 + 1, SeqCst);
            waiter.thread.unpark();
        }
        result
    }
}
