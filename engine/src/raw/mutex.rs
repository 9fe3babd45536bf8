//! The raw mutex: parking_lot's `RawMutex` (two state bits, a
//! `parking_lot_core` queue keyed by the lock's address, eventual fairness by
//! handing the lock over; and, as Go's mutex, no wake-up while a waiter woken
//! earlier has yet to compete) with the mutex profile's charge at every
//! unlock that wakes a waiter, and the block profile's clock on every wait.

use core::hint::black_box;
use std::time::Instant;

use super::backoff;
use super::charge::{self, Charge, ChargedUntil, LastHandOff, QueueScan};
use super::owner;
use super::park_cost;
use super::poison;
use super::poll_history::{self, Outcome};
use super::shim::profile::{self, EventKind, LockSite, StackMark};
use super::shim::{
    self, AtomicU8,
    Ordering::{Acquire, Relaxed, Release},
    ParkResult, SpinWait, UnparkResult, UnparkToken,
};

/// Unpark token: the lock was released; compete for it again.
#[doc(hidden)]
pub const TOKEN_NORMAL: UnparkToken = shim::TOKEN_COMPETE;
/// Unpark token: the lock was handed over; the woken thread holds it.
#[doc(hidden)]
pub const TOKEN_HANDOFF: UnparkToken = UnparkToken(1);

/// Set while the mutex is held.
const LOCKED_BIT: u8 = 0b01;
/// Set while threads are parked (or about to park) in the mutex's queue.
const PARKED_BIT: u8 = 0b10;

/// Pauses a waiter makes before its first park (~0.8 µs on the 2-core VM).
/// Measured with `benches/ratios.rs`, the Mutex rows, two interleaved runs
/// each, off / better of std and parking_lot: without it the 16-thread rows
/// read 0.61–0.93 (~1 µs sections) and 0.92–0.99 (~50 ns), with it
/// 0.99–1.01 and 1.00–1.01, every other row 0.97–1.04 either way (single
/// full runs since: 0.94–1.05, this VM's run-to-run spread).
#[cfg_attr(loom, allow(dead_code))]
pub(super) const PRE_PARK_PAUSES: u32 = 30;

/// A mutex without data: one state byte, the poison flag of the safe layer
/// (kept here to share the word), the 16-bit `last_hand_off` and the 32-bit
/// `charged_until`. 8 bytes.
#[doc(hidden)]
pub struct RawMutex {
    /// The lock word.
    ///
    /// # State table
    ///
    /// PARKED_BIT | LOCKED_BIT | Meaning
    /// -----------|------------|---------------------------------------------
    ///     0      |     0      | Unlocked, nobody waiting, or the waiters
    ///            |            | left to a woken one (below).
    ///     0      |     1      | Locked, as above: the unlock is one
    ///            |            | `fetch_sub` and wakes nobody.
    ///     1      |     0      | Unlocked with waiters: the unlocker is about
    ///            |            | to wake one (the unlock is one `fetch_sub`,
    ///            |            | which leaves PARKED_BIT), or a woken waiter
    ///            |            | is about to compete. Fast-path locks fail
    ///            |            | (the state is not 0); slow-path ones may take
    ///            |            | the lock, and the unlocker then wakes the
    ///            |            | waiter to compete instead of handing over.
    ///     1      |     1      | Locked with waiters parked or about to park.
    ///
    /// PARKED_BIT is only cleared under the queue lock (in an unpark or
    /// time-out callback), so a parked thread is never left without a waker:
    /// either the queue is empty, or the unlock clearing it woke a waiter to
    /// compete with a token that *owes* the bit ([`charge::owing_parked`]).
    /// That waiter sets it again as it takes the lock or before it parks
    /// again (a park validates LOCKED_BIT | PARKED_BIT), and meanwhile
    /// unlocks are one `fetch_sub` and wake nobody: the woken thread will
    /// compete anyway, and waking another per unlock, each of which mostly
    /// finds the lock retaken and parks again, was most of a long section's
    /// hand-over cost (Go's `mutexWoken`; `std`'s futex mutex too forgets
    /// its contended state at each wake-up, and its woken waiter restores
    /// it).
    ///
    /// Acquire on every transition that takes the lock, Release on every one
    /// that gives it up.
    state: AtomicU8,
    /// `std`'s poison flag for the [`Mutex`](crate::sync::Mutex) around this
    /// raw lock. The raw lock never reads it.
    #[doc(hidden)]
    pub poison: poison::Flag,
    /// When the lock last handed itself over; see [`LastHandOff`].
    last_hand_off: LastHandOff,
    /// The tick of the last charge to the mutex profile; see [`ChargedUntil`].
    charged_until: ChargedUntil,
}

impl RawMutex {
    crate::const_fn! {
        #[doc(hidden)]
        pub fn new() -> RawMutex {
            RawMutex { state: AtomicU8::new(0), poison: poison::Flag::new(), last_hand_off: LastHandOff::new(), charged_until: ChargedUntil::new() }
        }
    }

    /// The queue key: the lock's address (a condvar that moves its waiters
    /// here relies on it).
    #[inline]
    fn key(&self) -> usize {
        core::ptr::from_ref(self) as usize
    }

    /// The fast path of `lock`: one CAS. On `false` the caller, the public
    /// method itself, calls [`Self::lock_slow`] (so that no frame or inlined
    /// frame of ours sits between the slow path's stack mark and it).
    #[inline(always)]
    #[doc(hidden)]
    pub fn lock_fast(&self) -> bool {
        owner::acquiring();
        let locked = self
            .state
            .compare_exchange_weak(0, LOCKED_BIT, Acquire, Relaxed)
            .is_ok();
        if locked {
            owner::acquired_fast(self.key());
            #[cfg(loom)]
            if shim::loom_queued_now() > 0 {
                shim::profile::FAST_PAST_PARKED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        }
        locked
    }

    /// Takes the lock if it is free.
    #[inline(always)]
    #[doc(hidden)]
    pub fn try_lock(&self) -> bool {
        self.try_lock_setting(0)
    }

    /// [`Self::try_lock`], setting `also` (PARKED_BIT or nothing) with the
    /// lock.
    #[inline(always)]
    fn try_lock_setting(&self, also: u8) -> bool {
        let mut state = self.state.load(Relaxed);
        loop {
            if state & LOCKED_BIT != 0 {
                return false;
            }
            match self.state.compare_exchange_weak(
                state,
                state | LOCKED_BIT | also,
                Acquire,
                Relaxed,
            ) {
                Ok(_) => {
                    owner::acquired(self.key());
                    return true;
                }
                Err(actual) => state = actual,
            }
        }
    }

    /// Whether the lock is held (a racy snapshot).
    // Used by the parking_lot face, which is not built under loom.
    #[cfg_attr(loom, allow(dead_code))]
    #[inline]
    #[doc(hidden)]
    pub fn is_locked(&self) -> bool {
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
    #[doc(hidden)]
    pub unsafe fn unlock_fast(&self) -> bool {
        owner::released(self.key());
        let quiet = self.state.fetch_sub(LOCKED_BIT, Release) == LOCKED_BIT;
        #[cfg(loom)]
        if quiet && shim::loom_queued_now() > 0 {
            shim::profile::QUIET_UNLOCKS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        quiet
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
    #[doc(hidden)]
    pub unsafe fn unlock_unrecorded(&self) -> Option<Charge> {
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
    #[doc(hidden)]
    pub fn lock_slow(&self, site: LockSite) {
        let mark = 0u8;
        let mark = StackMark::of(black_box(&mark));
        self.lock_wait(site, mark, None, None, false);
    }

    /// As [`Self::lock_slow`], giving up at `deadline`: returns whether the
    /// lock was taken. A wait that timed out is recorded in the block profile
    /// too (it blocked); it is charged to nobody's unlock.
    #[cold]
    #[inline(never)]
    #[doc(hidden)]
    pub fn lock_slow_until(&self, site: LockSite, deadline: Instant) -> bool {
        let mark = 0u8;
        let mark = StackMark::of(black_box(&mark));
        self.lock_wait(site, mark, Some(deadline), None, false)
    }

    /// Ends a condvar waiter's wait for this mutex after a notification
    /// moved it to the mutex's queue at `since`: takes the lock unless the
    /// unlock that woke it handed it over (`held`), and records one mutex
    /// wait from `since`, with the caller, the public `Condvar::wait*`
    /// method, as leaf. `owes`: the unlock that woke it cleared PARKED_BIT
    /// for it to set again ([`charge::owes_parked`]).
    #[cold]
    #[inline(never)]
    #[doc(hidden)]
    pub fn relock_requeued(&self, site: LockSite, since: u64, held: bool, owes: bool) {
        let mark = 0u8;
        let mark = StackMark::of(black_box(&mark));
        if held || self.try_lock_setting(if owes { PARKED_BIT } else { 0 }) {
            if held {
                // Handed over by the unlock that woke us (`try_lock` tells
                // the owner hook itself).
                owner::acquired_marked(self.key(), mark);
            }
            if profile::block_start().is_some() {
                profile::record_block(since, EventKind::Mutex, Some(site), mark);
            }
            return;
        }
        self.lock_wait(site, mark, None, Some(since), owes);
    }

    /// The body of the waits, inlined into them so that `mark` is in the
    /// frame the public method called: spin, then park until the lock is
    /// taken or `deadline` passes; one block event for the whole wait, from
    /// `since` if given (a condvar waiter's requeue), else from the first
    /// park. `owes`: this thread is to set PARKED_BIT again (as every waiter
    /// woken by a token that [`charge::owes_parked`]).
    #[inline(always)]
    fn lock_wait(
        &self,
        site: LockSite,
        mark: StackMark,
        deadline: Option<Instant>,
        since: Option<u64>,
        mut owes: bool,
    ) -> bool {
        if !shim::may_park() {
            // Re-entered from an allocation inside `parking_lot_core`: we
            // may not park (see `shim`), and we do not record.
            self.lock_spinning();
            return true;
        }
        let mut spin = SpinWait::new();
        let mut state = self.state.load(Relaxed);
        // First spin while the lock is held and nobody waits, a budget of
        // ~2.6 µs (100 pauses on the reference machine, as `std`'s futex
        // mutex spins 100 times; at most what rule 1 leaves at the measured
        // park cost: see `park_cost`). The last read is the first one at
        // or past the budget, so a poll that runs out lasts up to twice it
        // (127 pauses on the reference machine; 511, ~4.8 µs, on the Xeon
        // VM, whose budget is ~276 pauses). That covers a µs-long critical
        // section without a park (parking_lot's `SpinWait` below alone gives up
        // after ~0.3 µs of pauses and a few yields, and parks on 0.85
        // sections in 1 with 8 threads at ~1 µs). Pauses, not yields: they
        // do not give the core away. The state is read after 1, 2, 4, 8, …
        // pauses, each step twice the last (exponential back-off, Anderson,
        // *The performance of spin lock alternatives for shared-memory
        // multiprocessors*, IEEE TPDS 1990): each read pulls the holder's
        // cache line away, and with ~50 ns sections at 16 threads reads
        // every 16 pauses kept the line moving (`benches/ratios.rs` on the
        // Xeon VM, 2026-12-04, off / the better peer: 0.80–0.88 with steps
        // capped at 16 or 32 pauses, 1.02–1.04 doubling; see
        // `docs/performance.md`). A poll gets the whole budget while this
        // thread's recent polls of the lock found it free early, an eighth
        // of it while they found it only late (`poll_history`); its first
        // read comes one line transfer in (16, 48, 112, … pauses) while
        // they found it past two (threads that re-lock at once, whose
        // early reads only pull the holder's line away). The model
        // checker gains nothing from it (a loop of loads): `poll_spaced`
        // returns at once under loom.
        if state == LOCKED_BIT {
            let plan = poll_history::plan(self.key(), park_cost::mutex_poll_pauses());
            let found = backoff::poll_spaced(plan.pauses, plan.first_step, u32::MAX, |spent| {
                state = self.state.load(Relaxed);
                (state != LOCKED_BIT).then_some(spent)
            });
            let outcome = match found {
                Some(spent) if state & LOCKED_BIT == 0 => Outcome::Free(spent),
                Some(_) => Outcome::Queued,
                None => Outcome::RanOut,
            };
            poll_history::learn(plan, outcome);
        }
        // The tick of the first park (for the starvation flag) and the block
        // profile's clock, both started when the thread first decides to park.
        let mut first_park: Option<u64> = None;
        let mut block: Option<profile::BlockWait> = None;
        // Where this waiter's next charge to the mutex profile starts: its
        // first park, then the tick each wake-up charged it up to.
        let mut wait_from = 0u64;
        loop {
            if state & LOCKED_BIT == 0 {
                // A waiter that owes PARKED_BIT sets it with the lock, so
                // that its unlock wakes the next.
                let taken = state | LOCKED_BIT | if owes { PARKED_BIT } else { 0 };
                match self
                    .state
                    .compare_exchange_weak(state, taken, Acquire, Relaxed)
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
            // Before the first park, pause ~0.8 µs (PARKED_BIT is set, so
            // newcomers park instead of spinning meanwhile); a lock freed in
            // between fails the park's `validate` and is competed for at
            // once. See PRE_PARK_PAUSES. The model checker gains nothing
            // from it.
            #[cfg(not(loom))]
            if first_park.is_none() {
                backoff::pause(PRE_PARK_PAUSES);
            }
            let now = profile::now();
            let first = *first_park.get_or_insert_with(|| {
                // Capture the stack now, while waiting anyway, so that the
                // record at the end adds only a few atomics to the
                // critical section this thread is about to enter.
                block = profile::begin_block_wait(EventKind::Mutex, Some(site), self.key(), mark);
                if let (Some(wait), Some(since)) = (block.as_mut(), since) {
                    wait.start_at(since);
                }
                wait_from = now;
                now
            });
            let token = charge::park_token(
                wait_from,
                profile::mutex_profiling_on(),
                charge::starving(first, now),
            );
            // PARKED_BIT is set (by the CAS above, or was): whoever clears
            // it now wakes a waiter, so this thread owes it no more.
            owes = false;
            let validate = || self.state.load(Relaxed) == LOCKED_BIT | PARKED_BIT;
            // A timed-out waiter that was the last one queued clears
            // PARKED_BIT (under the queue lock, as every clear) and the
            // queue's charge.
            let timed_out = |_, was_last: bool| {
                if was_last {
                    self.state.fetch_and(!PARKED_BIT, Relaxed);
                    self.charged_until.clear();
                }
            };
            // One park in `park_cost::SAMPLE_EVERY` reads the thread's CPU
            // clock around it, to size the poll above.
            let sample = park_cost::before_park();
            // SAFETY: the key is this lock's address, which only this lock
            // parks on; `validate` and `timed_out` neither panic nor call into
            // the parking lot; there is no `before_sleep`.
            let result =
                unsafe { shim::park(self.key(), validate, || {}, timed_out, token, deadline) };
            if result != ParkResult::Invalid {
                // (A park that `validate` refused did not sleep.)
                park_cost::after_park(sample);
            }
            match result {
                // We hold the lock: handed over.
                ParkResult::Unparked(TOKEN_HANDOFF) => break,
                // Woken to compete: the wait goes on until we hold the lock,
                // and stays one event; a further charge starts where the
                // unlocker's stopped.
                ParkResult::Unparked(token) => {
                    owes = charge::owes_parked(token);
                    if let Some(tick) = charge::woken_at(token, profile::now()) {
                        wait_from = tick;
                    }
                }
                // The queue changed before we slept.
                ParkResult::Invalid => {}
                ParkResult::TimedOut => {
                    if let Some(wait) = block {
                        profile::end_block_wait(wait);
                    }
                    return false;
                }
            }
            spin.reset();
            state = self.state.load(Relaxed);
        }
        // One event for the whole wait, however often this thread parked; its
        // stack was captured before the first park.
        if let Some(wait) = block {
            profile::end_block_wait(wait);
        } else if let Some(since) = since {
            // A requeued condvar waiter that took the lock without parking.
            if first_park.is_none() && profile::block_start().is_some() {
                profile::record_block(since, EventKind::Mutex, Some(site), mark);
            }
        }
        owner::acquired_marked(self.key(), mark);
        true
    }

    /// Sets PARKED_BIT if the lock is held, for a condvar about to move its
    /// waiters to this lock's queue; `false` (nothing changed) if free. Under
    /// the queue locks of both (in `unpark_requeue`'s `validate`).
    #[inline]
    #[doc(hidden)]
    pub fn mark_parked_if_locked(&self) -> bool {
        let mut state = self.state.load(Relaxed);
        loop {
            if state & LOCKED_BIT == 0 {
                return false;
            }
            match self
                .state
                .compare_exchange_weak(state, state | PARKED_BIT, Relaxed, Relaxed)
            {
                Ok(_) => return true,
                Err(actual) => state = actual,
            }
        }
    }

    /// Sets PARKED_BIT: a condvar moved waiters to this lock's queue (under
    /// the queue locks of both). A free lock with the bit set is a state the
    /// lock already knows (a woken waiter about to compete).
    #[inline]
    #[doc(hidden)]
    pub fn mark_parked(&self) {
        self.state.fetch_or(PARKED_BIT, Relaxed);
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
    #[doc(hidden)]
    pub fn unlock_slow(&self, site: LockSite) {
        let mark = 0u8;
        let mark = StackMark::of(black_box(&mark));
        self.unlock_wake(site, mark, false);
    }

    /// As [`Self::unlock_slow`], for a fair unlock (parking_lot's
    /// `unlock_fair`): the lock is handed over to the head waiter if nobody
    /// took it since the release, whatever its wait.
    #[cold]
    #[inline(never)]
    #[doc(hidden)]
    pub fn unlock_fair_slow(&self, site: LockSite) {
        let mark = 0u8;
        let mark = StackMark::of(black_box(&mark));
        self.unlock_wake(site, mark, true);
    }

    /// Whether threads are parked (or about to park) on the lock (a racy
    /// snapshot, for `bump`).
    // Used by the parking_lot face, which is not built under loom.
    #[cfg_attr(loom, allow(dead_code))]
    #[inline]
    #[doc(hidden)]
    pub fn has_parked(&self) -> bool {
        self.state.load(Relaxed) & PARKED_BIT != 0
    }

    /// The body of both unlocks' slow paths, inlined into them.
    #[inline(always)]
    fn unlock_wake(&self, site: LockSite, mark: StackMark, fair: bool) {
        if shim::must_defer_wake() {
            // Re-entered from inside `parking_lot_core`: the lock is
            // released; a waiter is woken (uncharged) when this thread
            // leaves it.
            shim::defer_wake(self.key(), false);
            return;
        }
        if let Some(charge) = self.wake_with(fair) {
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
        self.wake_with(false)
    }

    /// [`Self::wake`], handing the lock over to the head waiter (if free)
    /// whatever its wait when `fair`.
    #[inline(always)]
    fn wake_with(&self, fair: bool) -> Option<Charge> {
        let profiling = profile::mutex_profiling_on();
        let scan = core::cell::RefCell::new(QueueScan::default());
        let mut charge = None;
        // SAFETY: the parking lot passes the filter the tokens of threads
        // parked in this lock's queue, whose lock it holds.
        let filter = |token| unsafe { scan.borrow_mut().visit_mutex_queue(token, profiling) };
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
                // A fair unlock always hands over; eventual fairness at most
                // once per bound (see `LastHandOff`).
                if fair || (charge::should_hand_off(head, now) && self.last_hand_off.allows(now)) {
                    token = TOKEN_HANDOFF;
                }
            }
            if !result.have_more_threads {
                self.charged_until.clear();
                self.last_hand_off.clear();
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
                } else if result.have_more_threads {
                    self.last_hand_off.set(now);
                }
            }
            if token != TOKEN_HANDOFF {
                if !result.have_more_threads {
                    self.state.fetch_and(!PARKED_BIT, Relaxed);
                } else if result.unparked_threads > 0 {
                    // Woken to compete while others stay parked: the woken
                    // thread sets PARKED_BIT again (see the state table),
                    // and unlocks until then wake nobody.
                    self.state.fetch_and(!PARKED_BIT, Relaxed);
                    token = charge::owing_parked(token);
                }
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
