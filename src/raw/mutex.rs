//! The raw mutex: parking_lot's `RawMutex` (two state bits, a
//! `parking_lot_core` queue keyed by the lock's address, eventual fairness by
//! handing the lock over) with the mutex profile's charge at every unlock that
//! wakes a waiter, and the block profile's clock on every wait.

use core::hint::black_box;
use std::time::Instant;

use super::charge::{self, Charge, ChargedUntil, QueueScan};
use super::owner;
use super::poison;
use super::shim::profile::{self, EventKind, LockSite, StackMark};
use super::shim::{
    self, AtomicU8,
    Ordering::{Acquire, Relaxed, Release},
    ParkResult, SpinWait, UnparkResult, UnparkToken,
};

/// Unpark token: the lock was released; compete for it again.
pub(crate) const TOKEN_NORMAL: UnparkToken = shim::TOKEN_COMPETE;
/// Unpark token: the lock was handed over; the woken thread holds it.
pub(crate) const TOKEN_HANDOFF: UnparkToken = UnparkToken(1);

/// Set while the mutex is held.
const LOCKED_BIT: u8 = 0b01;
/// Set while threads are parked (or about to park) in the mutex's queue.
const PARKED_BIT: u8 = 0b10;

/// A mutex without data: one state byte, the poison flag of the safe layer
/// (kept here to share the word) and the 32-bit `charged_until`. 8 bytes.
pub(crate) struct RawMutex {
    /// The lock word.
    ///
    /// # State table
    ///
    /// PARKED_BIT | LOCKED_BIT | Meaning
    /// -----------|------------|---------------------------------------------
    ///     0      |     0      | Unlocked, nobody waiting.
    ///     0      |     1      | Locked, nobody waiting: the unlock is one CAS.
    ///     1      |     0      | Unlocked with waiters: the unlocker is about
    ///            |            | to wake one (the unlock is one `fetch_sub`,
    ///            |            | which leaves PARKED_BIT), or a woken waiter
    ///            |            | is about to compete. Fast-path locks fail
    ///            |            | (the state is not 0); slow-path ones may take
    ///            |            | the lock, and the unlocker then wakes the
    ///            |            | waiter to compete instead of handing over.
    ///     1      |     1      | Locked with waiters parked or about to park.
    ///            |            | PARKED_BIT is only cleared under the queue
    ///            |            | lock (in an unpark callback), so a parked
    ///            |            | thread is never left without a waker.
    ///
    /// Acquire on every transition that takes the lock, Release on every one
    /// that gives it up.
    state: AtomicU8,
    /// `std`'s poison flag for the [`Mutex`](crate::sync::Mutex) around this
    /// raw lock. The raw lock never reads it.
    pub(crate) poison: poison::Flag,
    /// The tick of the last charge to the mutex profile; see [`ChargedUntil`].
    charged_until: ChargedUntil,
}

impl RawMutex {
    super::const_fn! {
        pub(crate) fn new() -> RawMutex {
            RawMutex { state: AtomicU8::new(0), poison: poison::Flag::new(), charged_until: ChargedUntil::new() }
        }
    }

    /// The queue key: the lock's address.
    #[inline]
    fn key(&self) -> usize {
        core::ptr::from_ref(self) as usize
    }

    /// The fast path of `lock`: one CAS. On `false` the caller, the public
    /// method itself, calls [`Self::lock_slow`] (so that no frame or inlined
    /// frame of ours sits between the slow path's stack mark and it).
    #[inline(always)]
    pub(crate) fn lock_fast(&self) -> bool {
        owner::acquiring();
        let locked = self
            .state
            .compare_exchange_weak(0, LOCKED_BIT, Acquire, Relaxed)
            .is_ok();
        if locked {
            owner::acquired_fast(self.key());
        }
        locked
    }

    /// Takes the lock if it is free.
    #[inline(always)]
    pub(crate) fn try_lock(&self) -> bool {
        let mut state = self.state.load(Relaxed);
        loop {
            if state & LOCKED_BIT != 0 {
                return false;
            }
            match self
                .state
                .compare_exchange_weak(state, state | LOCKED_BIT, Acquire, Relaxed)
            {
                Ok(_) => {
                    owner::acquired(self.key());
                    return true;
                }
                Err(actual) => state = actual,
            }
        }
    }

    /// Whether the lock is held (a racy snapshot).
    #[inline]
    #[allow(dead_code)]
    pub(crate) fn is_locked(&self) -> bool {
        self.state.load(Relaxed) & LOCKED_BIT != 0
    }

    /// Releases the lock: one atomic subtraction (`lock sub` on x86, as
    /// cheap as `std`'s `swap`). Returns `false` when threads are parked: the
    /// lock is then released but a waiter must be woken, and the caller, the
    /// public guard's `drop`, calls [`Self::unlock_slow`].
    ///
    /// # Safety
    ///
    /// The calling thread holds the lock.
    #[inline(always)]
    pub(crate) unsafe fn unlock_fast(&self) -> bool {
        owner::released(self.key());
        self.state.fetch_sub(LOCKED_BIT, Release) == LOCKED_BIT
    }

    /// Releases the lock without recording: returns the charge (delay,
    /// waiters woken) if the unlock woke a waiter whose wait is profiled. For
    /// [`Condvar`](super::condvar) waits, which release the mutex in a
    /// `before_sleep` callback (where unparking is allowed, but recording,
    /// which may allocate, is not) and record after the park.
    ///
    /// # Safety
    ///
    /// The calling thread holds the lock.
    #[inline(always)]
    pub(crate) unsafe fn unlock_unrecorded(&self) -> Option<Charge> {
        // SAFETY: the caller holds the lock (our precondition).
        if unsafe { self.unlock_fast() } {
            return None;
        }
        if shim::must_defer_wake() {
            shim::defer_wake(self.key(), false);
            return None;
        }
        self.wake()
    }

    /// Waits for the lock and takes it; records the wait (labelled `site`).
    /// Called by the public method right after [`Self::lock_fast`] failed.
    #[cold]
    #[inline(never)]
    pub(crate) fn lock_slow(&self, site: LockSite) {
        if !shim::may_park() {
            // Re-entered from an allocation inside `parking_lot_core`: we
            // may not park (see `shim`), and we do not record.
            return self.lock_spinning();
        }
        let mark = 0u8;
        let mark = StackMark::of(black_box(&mark));
        let mut spin = SpinWait::new();
        let mut state = self.state.load(Relaxed);
        // The tick of the first park (for the starvation flag) and the block
        // profile's clock, both started when the thread first decides to park.
        let mut first_park: Option<u64> = None;
        let mut block: Option<profile::BlockWait> = None;
        // Where this waiter's next charge to the mutex profile starts: its
        // first park, then the tick each wake-up charged it up to.
        let mut wait_from = 0u64;
        loop {
            if state & LOCKED_BIT == 0 {
                match self
                    .state
                    .compare_exchange_weak(state, state | LOCKED_BIT, Acquire, Relaxed)
                {
                    Ok(_) => break,
                    Err(actual) => state = actual,
                }
                continue;
            }
            // Spin a little while nobody is parked.
            if state & PARKED_BIT == 0 && spin.spin() {
                state = self.state.load(Relaxed);
                continue;
            }
            if state & PARKED_BIT == 0 {
                if let Err(actual) =
                    self.state
                        .compare_exchange_weak(state, state | PARKED_BIT, Relaxed, Relaxed)
                {
                    state = actual;
                    continue;
                }
            }
            let now = profile::now();
            let first = *first_park.get_or_insert_with(|| {
                // Capture the stack now, while waiting anyway, so that the
                // record at the end adds only a few atomics to the
                // critical section this thread is about to enter.
                block = profile::begin_block_wait(EventKind::Mutex, Some(site), self.key(), mark);
                wait_from = now;
                now
            });
            let token = charge::park_token(
                wait_from,
                profile::mutex_profiling_on(),
                charge::starving(first, now),
            );
            let validate = || self.state.load(Relaxed) == LOCKED_BIT | PARKED_BIT;
            let timed_out = |_, _| unreachable!("lock waits have no timeout");
            // SAFETY: the key is this lock's address, which only this lock
            // parks on; `validate` and `timed_out` neither panic nor call into
            // the parking lot; there is no `before_sleep`.
            let result = unsafe {
                shim::park(
                    self.key(),
                    validate,
                    || {},
                    timed_out,
                    token,
                    None::<Instant>,
                )
            };
            match result {
                // We hold the lock: handed over.
                ParkResult::Unparked(TOKEN_HANDOFF) => break,
                // Woken to compete: the wait goes on until we hold the lock,
                // and stays one event; a further charge starts where the
                // unlocker's stopped.
                ParkResult::Unparked(token) => {
                    if let Some(tick) = charge::woken_at(token, profile::now()) {
                        wait_from = tick;
                    }
                }
                // The queue changed before we slept.
                ParkResult::Invalid => {}
                ParkResult::TimedOut => unreachable!("lock waits have no timeout"),
            }
            spin.reset();
            state = self.state.load(Relaxed);
        }
        // One event for the whole wait, however often this thread parked; its
        // stack was captured before the first park.
        if let Some(wait) = block {
            profile::end_block_wait(wait);
        }
        owner::acquired_marked(self.key(), mark);
    }

    /// Takes the lock without parking: for a thread inside
    /// `parking_lot_core`, which must not re-enter it. The holder is another
    /// thread (this one is inside a park or unpark, holding no syncprof lock:
    /// every unlock releases before it wakes), which releases without
    /// waiting for this one.
    #[cold]
    fn lock_spinning(&self) {
        while !self.try_lock() {
            shim::yield_now();
        }
        // (`try_lock` told the owner hook.)
    }

    /// Wakes a waiter after [`Self::unlock_fast`] released the lock with
    /// threads parked, and charges the mutex profile on the caller's stack
    /// (labelled `site`). Called by the public guard's `drop`.
    #[cold]
    #[inline(never)]
    pub(crate) fn unlock_slow(&self, site: LockSite) {
        if shim::must_defer_wake() {
            // Re-entered from inside `parking_lot_core`: the lock is
            // released; a waiter is woken (uncharged) when this thread
            // leaves it.
            shim::defer_wake(self.key(), false);
            return;
        }
        let mark = 0u8;
        let mark = StackMark::of(black_box(&mark));
        if let Some(charge) = self.wake() {
            profile::record_mutex(
                charge.delay,
                charge.woken,
                EventKind::Mutex,
                Some(site),
                mark,
            );
        }
    }

    /// Wakes the head waiter after an unlock that found PARKED_BIT set,
    /// handing the lock over to it if it has waited long enough and nobody
    /// took the lock in between; returns the charge, if the woken waiter's
    /// wait is profiled. Records nothing.
    #[inline(always)]
    fn wake(&self) -> Option<Charge> {
        let profiling = profile::mutex_profiling_on();
        let scan = core::cell::RefCell::new(QueueScan::default());
        let mut charge = None;
        let filter = |token| scan.borrow_mut().visit(token, profiling);
        let callback = |result: UnparkResult| {
            let scan = scan.borrow();
            let now = scan.now;
            let mut token = if now == 0 {
                TOKEN_NORMAL
            } else {
                charge::wake_token(now)
            };
            if let Some(head) = scan.head {
                if profiling || charge::is_profiled(head) {
                    let delay = scan.charge(self.charged_until.get(now), now);
                    let woken = u64::from(charge::is_profiled(head));
                    if delay > 0 || woken > 0 {
                        charge = Some(Charge { delay, woken });
                    }
                    self.charged_until.set(now);
                }
                if charge::should_hand_off(head, now) {
                    token = TOKEN_HANDOFF;
                }
            }
            if !result.have_more_threads {
                self.charged_until.clear();
            }
            if token == TOKEN_HANDOFF {
                // Take the lock on the woken thread's behalf, unless a
                // thread took it since our release (then it is woken to
                // compete, and asks again, starving, when it re-parks).
                // Acquire: the woken thread must see that thread's writes.
                let taken = self.state.fetch_update(Acquire, Relaxed, |s| {
                    (s & LOCKED_BIT == 0).then_some(if result.have_more_threads {
                        s | LOCKED_BIT
                    } else {
                        LOCKED_BIT
                    })
                });
                if taken.is_err() {
                    token = charge::wake_token(now);
                }
            }
            if token != TOKEN_HANDOFF && !result.have_more_threads {
                self.state.fetch_and(!PARKED_BIT, Relaxed);
            }
            token
        };
        // SAFETY: the key is this lock's address; `filter` and `callback` do
        // not panic (the RefCell borrows never overlap: the parking lot calls
        // them one after the other) and do not call into the parking lot.
        unsafe { shim::unpark_filter(self.key(), filter, callback) };
        charge
    }
}
