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
    DEFAULT_PARK_TOKEN, FilterOp, ParkResult, ParkToken, SpinWait, UnparkResult, UnparkToken,
};

#[cfg(not(loom))]
pub(crate) use self::reentrant::{
    Deferred, defer, in_parking_lot, park, unpark_all, unpark_filter,
};

#[cfg(loom)]
pub(crate) use self::loom_park::{
    DEFAULT_PARK_TOKEN, FilterOp, ParkResult, ParkToken, SpinWait, UnparkResult, UnparkToken, park,
    unpark_all, unpark_filter,
};

/// Threads queued in the loom parking model.
#[cfg(loom)]
pub(crate) fn loom_queued() -> usize {
    loom_park::queued()
}

/// Under loom nothing allocates inside the parking model, so a thread is
/// never re-entered from it.
#[cfg(loom)]
#[inline]
pub(crate) fn in_parking_lot() -> bool {
    false
}

/// Under loom: never built ([`in_parking_lot`] is always `false`).
#[cfg(loom)]
#[derive(Clone, Copy)]
#[allow(dead_code)]
pub(crate) enum Deferred {
    /// As without loom.
    Unpark(usize),
    /// As without loom.
    RwLockReadUnlock(*const crate::raw::rwlock::RawRwLock),
    /// As without loom.
    RwLockWriteUnlock(*const crate::raw::rwlock::RawRwLock),
}

/// Under loom: never called ([`in_parking_lot`] is always `false`).
#[cfg(loom)]
#[allow(dead_code)]
pub(crate) fn defer(_: Deferred) -> bool {
    unreachable!("loom never re-enters the parking model")
}

/// The profiler as the raw locks see it.
#[cfg(not(loom))]
pub(crate) mod profile {
    pub(crate) use crate::profile::{
        BlockWait, EventKind, LockSite, StackMark, begin_block_wait, block_start, end_block_wait,
        mutex_profiling_on, now, record_block, record_mutex,
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
    /// A wait begun by `begin_block_wait`: its logical start.
    pub(crate) struct BlockWait(u64);
    pub(crate) fn begin_block_wait(
        _kind: EventKind,
        _site: Option<LockSite>,
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
        _woken: u64,
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

#[cfg(not(loom))]
mod reentrant {
    //! `parking_lot_core` allocates inside `park` and `unpark_*`: it makes its
    //! global hash table on first use, grows it (while holding every bucket
    //! lock) as threads appear, and registers each thread's data. When the
    //! program's `#[global_allocator]` takes a syncprof lock, those
    //! allocations re-enter our locks from inside `parking_lot_core`:
    //!
    //! - a contended lock would park, re-entering `parking_lot_core` (which
    //!   may hold every bucket lock: a self-deadlock);
    //! - an unlock that finds waiters would unpark, re-entering the table's
    //!   creation, which allocates, which unlocks... (unbounded recursion,
    //!   found by `tests/alloc_mutex.rs`).
    //!
    //! So every call into `parking_lot_core` sets a thread-local flag. While
    //! it is set, lock waits spin (yielding) instead of parking, and unlocks
    //! that must wake someone are queued here, in a fixed array (no
    //! allocation), and run when the thread leaves `parking_lot_core` (or
    //! just before it goes to sleep in `park`).

    use core::cell::Cell;
    use std::time::Instant;

    use parking_lot_core::{ParkResult, ParkToken, UnparkResult, UnparkToken};

    use crate::raw::mutex::TOKEN_NORMAL;
    use crate::raw::rwlock::RawRwLock;

    /// An unlock's wake-up, postponed until the thread leaves `parking_lot_core`.
    #[derive(Clone, Copy, PartialEq, Eq)]
    pub(crate) enum Deferred {
        /// Wake the first waiter parked on this key to compete for a lock
        /// that is already released. Only the key is kept, never a pointer:
        /// the lock may be gone by the time this runs, and a wake-up on a
        /// reused address is only a spurious one.
        Unpark(usize),
        /// The last read unlock, to hand over to a writer. The lock stays
        /// unavailable (no reader, `WRITER_PARKED` set) until this runs, and
        /// its parked waiters borrow it, so it outlives the deferral.
        RwLockReadUnlock(*const RawRwLock),
        /// A write unlock with waiters: the lock stays write-locked until
        /// this hands it over (which keeps it alive, as above).
        RwLockWriteUnlock(*const RawRwLock),
    }

    /// Postponed wake-ups a thread can hold at once. Re-entry happens only
    /// through allocations inside `parking_lot_core`, a handful per call.
    const MAX_DEFERRED: usize = 8;

    thread_local! {
        /// Whether this thread is inside `parking_lot_core` (excluding the
        /// `before_sleep` callback and the sleep itself).
        static INSIDE: Cell<bool> = const { Cell::new(false) };
        /// Postponed wake-ups, in order; `None` marks free entries.
        static DEFERRED: Cell<[Option<Deferred>; MAX_DEFERRED]> =
            const { Cell::new([None; MAX_DEFERRED]) };
    }

    /// Whether this thread is inside `parking_lot_core`, so that a lock must
    /// neither park nor unpark.
    #[inline]
    pub(crate) fn in_parking_lot() -> bool {
        INSIDE.try_with(Cell::get).unwrap_or(false)
    }

    /// Queues `work` to run when this thread leaves `parking_lot_core`.
    /// Returns `false` when the queue is full (the caller then does the work
    /// at once).
    pub(crate) fn defer(work: Deferred) -> bool {
        DEFERRED
            .try_with(|cell| {
                let mut queue = cell.get();
                if queue.contains(&Some(work)) {
                    return true;
                }
                let Some(free) = queue.iter_mut().find(|slot| slot.is_none()) else {
                    return false;
                };
                *free = Some(work);
                cell.set(queue);
                true
            })
            .unwrap_or(false)
    }

    /// Runs the postponed wake-ups (outside `parking_lot_core`).
    fn run_deferred() {
        loop {
            let Ok(next) = DEFERRED.try_with(|cell| {
                let mut queue = cell.get();
                let next = queue[0].take();
                queue.rotate_left(1);
                cell.set(queue);
                next
            }) else {
                return;
            };
            match next {
                None => return,
                Some(Deferred::Unpark(key)) => {
                    // SAFETY: `TOKEN_NORMAL` only asks the woken waiter to
                    // compete again, which every lock waiter handles, even
                    // one of another lock that reused the address.
                    unsafe {
                        unpark_filter(
                            key,
                            |_| parking_lot_core::FilterOp::Unpark,
                            |_| TOKEN_NORMAL,
                        )
                    };
                }
                // SAFETY: see `Deferred`: the lock is alive and in the state
                // its unlock left it.
                Some(Deferred::RwLockReadUnlock(lock)) => unsafe { (*lock).read_unlock_deferred() },
                // SAFETY: as above; the write lock is still held for the
                // unlocker.
                Some(Deferred::RwLockWriteUnlock(lock)) => unsafe {
                    (*lock).write_unlock_deferred()
                },
            }
        }
    }

    /// Marks the thread inside `parking_lot_core` while alive; on leaving the
    /// outermost call, runs what was postponed.
    struct Inside {
        outermost: bool,
    }

    impl Inside {
        #[inline]
        fn enter() -> Inside {
            let outermost = INSIDE
                .try_with(|inside| !inside.replace(true))
                .unwrap_or(false);
            Inside { outermost }
        }
    }

    impl Drop for Inside {
        #[inline]
        fn drop(&mut self) {
            if self.outermost {
                let _ = INSIDE.try_with(|inside| inside.set(false));
                run_deferred();
            }
        }
    }

    /// `parking_lot_core::park`, re-entry aware: `before_sleep` (and the
    /// sleep) run outside the flag, after the postponed wake-ups.
    ///
    /// # Safety
    ///
    /// As `parking_lot_core::park`.
    #[inline]
    pub(crate) unsafe fn park(
        key: usize,
        validate: impl FnOnce() -> bool,
        before_sleep: impl FnOnce(),
        timed_out: impl FnOnce(usize, bool),
        park_token: ParkToken,
        timeout: Option<Instant>,
    ) -> ParkResult {
        let inside = Inside::enter();
        let outermost = inside.outermost;
        let before_sleep = || {
            if outermost {
                let _ = INSIDE.try_with(|inside| inside.set(false));
                run_deferred();
            }
            before_sleep();
            if outermost {
                let _ = INSIDE.try_with(|inside| inside.set(true));
            }
        };
        // SAFETY: forwarded; the wrapper around `before_sleep` only touches
        // thread-locals and performs postponed unparks, which
        // `before_sleep` may do.
        unsafe {
            parking_lot_core::park(key, validate, before_sleep, timed_out, park_token, timeout)
        }
    }

    /// `parking_lot_core::unpark_filter`, re-entry aware.
    ///
    /// # Safety
    ///
    /// As `parking_lot_core::unpark_filter`.
    #[inline]
    pub(crate) unsafe fn unpark_filter(
        key: usize,
        filter: impl FnMut(ParkToken) -> parking_lot_core::FilterOp,
        callback: impl FnOnce(UnparkResult) -> UnparkToken,
    ) -> UnparkResult {
        let _inside = Inside::enter();
        // SAFETY: forwarded.
        unsafe { parking_lot_core::unpark_filter(key, filter, callback) }
    }

    /// `parking_lot_core::unpark_all`, re-entry aware.
    ///
    /// # Safety
    ///
    /// As `parking_lot_core::unpark_all`.
    #[inline]
    pub(crate) unsafe fn unpark_all(key: usize, token: UnparkToken) -> usize {
        let _inside = Inside::enter();
        // SAFETY: forwarded.
        unsafe { parking_lot_core::unpark_all(key, token) }
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

    /// Threads queued in the model, on any key (for the loom tests).
    pub(crate) fn queued() -> usize {
        QUEUE.lock().unwrap().len()
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
