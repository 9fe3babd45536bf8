//! The one door through which the raw locks reach atomics, thread parking and
//! the profiler, so that `--cfg loom` can replace all three (crossbeam's
//! `primitive` shim, applied to `parking_lot_core` as well).
//!
//! Normally: `core::sync::atomic`, `parking_lot_core` and [`crate::profile`].
//! Under `cfg(loom)`: loom's atomics; a small model of `parking_lot_core`'s
//! `park` / `unpark_filter` / `unpark_all` (one global queue of waiters keyed
//! by address, guarded by a loom mutex); a logical clock; and a profiler stub
//! that only sums what would have been recorded, for the loom tests to check
//! the charge bookkeeping.

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU8, AtomicU32, AtomicUsize, Ordering,
};
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU8, AtomicU32, AtomicUsize, Ordering,
};

#[cfg(not(loom))]
pub(crate) use parking_lot_core::{
    DEFAULT_PARK_TOKEN, FilterOp, ParkResult, ParkToken, SpinWait, UnparkResult, UnparkToken, park,
    unpark_all, unpark_filter,
};

#[cfg(loom)]
pub(crate) use self::loom_park::{
    DEFAULT_PARK_TOKEN, FilterOp, ParkResult, ParkToken, SpinWait, UnparkResult, UnparkToken, park,
    unpark_all, unpark_filter,
};

/// The profiler as the raw locks see it.
#[cfg(not(loom))]
pub(crate) mod profile {
    pub(crate) use crate::profile::{
        EventKind, LockSite, StackMark, block_start, mutex_profiling_on, now, record_block,
        record_mutex,
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

    pub(crate) use crate::profile::{EventKind, LockSite, StackMark};
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};

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
    /// Number of `record_block` calls.
    pub(crate) static BLOCK_EVENTS: AtomicU64 = AtomicU64::new(0);

    pub(crate) fn now() -> u64 {
        CLOCK.fetch_add(1, SeqCst)
    }
    pub(crate) fn block_start() -> Option<u64> {
        ON.load(SeqCst).then(now)
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
    pub(crate) fn record_mutex(
        delay: u64,
        _kind: EventKind,
        _site: Option<LockSite>,
        _mark: StackMark,
    ) {
        assert!(delay < u64::MAX / 2, "negative charge {delay}");
        MUTEX_DELAY.fetch_add(delay, SeqCst);
        MUTEX_EVENTS.fetch_add(1, SeqCst);
    }
    pub(crate) fn ticks_per_second_if_known() -> Option<f64> {
        Some(1e9)
    }
}

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
        pub have_more_threads: bool,
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
            queue.push(Waiter {
                key,
                token: park_token,
                thread: loom::thread::current(),
                slot: slot.clone(),
            });
        }
        before_sleep();
        if timeout.is_some() {
            let mut queue = QUEUE.lock().unwrap();
            if let Some(i) = queue.iter().position(|w| Arc::ptr_eq(&w.slot, &slot)) {
                queue.remove(i);
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
}
