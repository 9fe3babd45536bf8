//! The raw reader-writer lock, on two `parking_lot_core` queues (readers on
//! the lock's address, writers on the address + 1, as in parking_lot's
//! `RawRwLock`).
//!
//! Like the mutex (and parking_lot), an unlock **releases first and then
//! wakes** waiters to compete, rather than handing the lock over while still
//! holding it: a phase change then costs ~50 ns of work instead of waiting
//! out a wake-up, and no unlock ever holds the lock while it is inside
//! `parking_lot_core` (where an allocation may re-enter it, see `shim`).
//! Fairness comes from two starvation flags set by a waiter that has waited
//! longer than the fairness bound (~0.5 ms): a starving writer keeps new
//! readers out, starving readers keep new writers out; and from a hand-over
//! of a *free* lock to a starving writer at the head of its queue (taken in
//! the unpark callback only if nobody holds it, as the mutex does).
//! A writer blocked by readers parks with a timeout of the fairness bound,
//! so that under a continuous flood of readers (where no reader is ever
//! the last out) it still gets to raise its flag: its wait is bounded by the
//! bound plus the longest read section.

use core::cell::{Cell, RefCell};
use core::hint::black_box;
use std::time::{Duration, Instant};

use super::charge::{self, Charge, ChargedUntil, QueueScan};
use super::mutex::{TOKEN_HANDOFF, TOKEN_NORMAL};
use super::poison;
use super::shim::profile::{self, EventKind, LockSite, StackMark};
use super::shim::{
    self, AtomicUsize, FilterOp,
    Ordering::{Acquire, Relaxed, Release},
    ParkResult, SpinWait, UnparkResult,
};

/// Held by a writer.
const WRITER: usize = 0b0_0001;
/// Writers are parked (or about to park) on the writer queue.
const WRITER_PARKED: usize = 0b0_0010;
/// Readers are parked (or about to park) on the reader queue.
const READER_PARKED: usize = 0b0_0100;
/// A parked writer has waited past the fairness bound: new readers stay out
/// (unless readers starve too), so the readers in drain and it gets in.
const WRITER_STARVING: usize = 0b0_1000;
/// A parked reader has waited past the fairness bound: writers stay out
/// until a reader gets in.
const READER_STARVING: usize = 0b1_0000;
/// One reader, in the count above the flag bits.
const ONE_READER: usize = 0b10_0000;
const READERS_MASK: usize = !(ONE_READER - 1);

/// A reader-writer lock without data.
pub(crate) struct RawRwLock {
    /// The lock word: reader count in the high bits, then the flags.
    ///
    /// # State table
    ///
    /// readers | W | Meaning
    /// --------|---|------------------------------------------------------
    ///    0    | 0 | Free (parked bits may be set while woken waiters race).
    ///   n>0   | 0 | Read-locked by n.
    ///    0    | 1 | Write-locked.
    ///
    /// A reader may join when W is clear and WS is clear (or RS is set: both
    /// starving, readers go first); a writer may take the lock when W, the
    /// readers and RS are clear. WP and RP are set by a waiter before it
    /// parks and cleared only under their queue's lock (when it empties), so
    /// a parked thread always has a waker: every unlock that sees a parked
    /// bit wakes that queue (all readers; one writer). WS is cleared with WP
    /// and by a writer that takes the lock; RS by a reader that joins.
    ///
    /// Acquire when taking, Release when giving up.
    state: AtomicUsize,
    /// `std`'s poison flag for the [`RwLock`](crate::sync::RwLock).
    pub(crate) poison: poison::Flag,
    /// Last charge to the mutex profile for the writer queue (under its
    /// queue lock).
    writers_charged: ChargedUntil,
    /// Last charge for the reader queue (under its queue lock).
    readers_charged: ChargedUntil,
}

/// Whether a reader may join a lock in `state` (on the slow path; the fast
/// path also refuses RS, which only the slow path clears).
#[inline(always)]
fn readable(state: usize) -> bool {
    state & WRITER == 0
        && (state & WRITER_STARVING == 0 || state & READER_STARVING != 0)
        && state & READERS_MASK != READERS_MASK
}

/// Whether a writer may take a lock in `state`.
#[inline(always)]
fn writable(state: usize) -> bool {
    state & (WRITER | READERS_MASK | READER_STARVING) == 0
}

impl RawRwLock {
    super::const_fn! {
        pub(crate) fn new() -> RawRwLock {
            RawRwLock {
                state: AtomicUsize::new(0),
                poison: poison::Flag::new(),
                writers_charged: ChargedUntil::new(),
                readers_charged: ChargedUntil::new(),
            }
        }
    }

    #[inline]
    fn reader_key(&self) -> usize {
        core::ptr::from_ref(self) as usize
    }

    #[inline]
    fn writer_key(&self) -> usize {
        self.reader_key() + 1
    }

    #[inline(always)]
    pub(crate) fn try_read(&self) -> bool {
        let mut state = self.state.load(Relaxed);
        while readable(state) {
            match self.state.compare_exchange_weak(
                state,
                (state + ONE_READER) & !READER_STARVING,
                Acquire,
                Relaxed,
            ) {
                Ok(_) => return true,
                Err(actual) => state = actual,
            }
        }
        false
    }

    /// The fast path of `read`; on `false` the public method calls
    /// [`Self::read_slow`] itself (see [`RawMutex::lock_fast`](super::mutex::RawMutex::lock_fast)).
    #[inline(always)]
    pub(crate) fn read_fast(&self) -> bool {
        let state = self.state.load(Relaxed);
        state & (WRITER | WRITER_STARVING | READER_STARVING) == 0
            && state & READERS_MASK != READERS_MASK
            && self
                .state
                .compare_exchange_weak(state, state + ONE_READER, Acquire, Relaxed)
                .is_ok()
    }

    #[inline(always)]
    pub(crate) fn try_write(&self) -> bool {
        let mut state = self.state.load(Relaxed);
        // Unlike a waiting writer, `try_write` ignores RS: it never waits,
        // so it cannot starve anyone for long.
        while state & (WRITER | READERS_MASK) == 0 {
            match self.state.compare_exchange_weak(
                state,
                (state | WRITER) & !WRITER_STARVING,
                Acquire,
                Relaxed,
            ) {
                Ok(_) => return true,
                Err(actual) => state = actual,
            }
        }
        false
    }

    /// The fast path of `write`; on `false` the public method calls
    /// [`Self::write_slow`].
    #[inline(always)]
    pub(crate) fn write_fast(&self) -> bool {
        self.state
            .compare_exchange_weak(0, WRITER, Acquire, Relaxed)
            .is_ok()
    }

    /// Releases a read lock: one atomic. Returns `false` when this was the
    /// last reader out while a writer is parked: the caller, the public
    /// guard's `drop`, must then call [`Self::read_unlock_slow`] to wake it.
    ///
    /// # Safety
    ///
    /// The calling thread holds a read lock.
    #[inline(always)]
    pub(crate) unsafe fn read_unlock_fast(&self) -> bool {
        let prev = self.state.fetch_sub(ONE_READER, Release);
        !(prev & READERS_MASK == ONE_READER && prev & WRITER_PARKED != 0)
    }

    /// The fast path of the write unlock; on `false` (threads are parked)
    /// the caller calls [`Self::write_unlock_slow`].
    ///
    /// # Safety
    ///
    /// The calling thread holds the write lock.
    #[inline(always)]
    pub(crate) unsafe fn write_unlock_fast(&self) -> bool {
        self.state
            .compare_exchange(WRITER, 0, Release, Relaxed)
            .is_ok()
    }

    /// Waits for a read lock; records the wait (labelled `site`).
    #[cold]
    #[inline(never)]
    pub(crate) fn read_slow(&self, site: LockSite) {
        let mark = 0u8;
        let mark = StackMark::of(black_box(&mark));
        self.wait(false, site, mark);
    }

    /// Waits for the write lock; records the wait (labelled `site`).
    #[cold]
    #[inline(never)]
    pub(crate) fn write_slow(&self, site: LockSite) {
        let mark = 0u8;
        let mark = StackMark::of(black_box(&mark));
        self.wait(true, site, mark);
    }

    /// The shared body of both waits. Always inlined into its two callers, so
    /// that `mark` is in the frame the public method called.
    #[inline(always)]
    fn wait(&self, writer: bool, site: LockSite, mark: StackMark) {
        if !shim::may_park() {
            // Re-entered from an allocation inside `parking_lot_core`: spin
            // instead of parking (see `shim`), and do not record.
            return self.wait_spinning(writer);
        }
        let (kind, key, parked_bit, starving_bit) = if writer {
            (
                EventKind::RwLockWrite,
                self.writer_key(),
                WRITER_PARKED,
                WRITER_STARVING,
            )
        } else {
            (
                EventKind::RwLockRead,
                self.reader_key(),
                READER_PARKED,
                READER_STARVING,
            )
        };
        let mut spin = SpinWait::new();
        let mut first_park: Option<u64> = None;
        let mut block: Option<profile::BlockWait> = None;
        // Where this waiter's next charge starts (see `RawMutex::lock_slow`).
        let mut wait_from = 0u64;
        // A writer's park timed out at the fairness bound: it is starving.
        let mut timed_out_once = false;
        let mut state = self.state.load(Relaxed);
        loop {
            let (free, next) = if writer {
                (writable(state), (state | WRITER) & !WRITER_STARVING)
            } else {
                (readable(state), (state + ONE_READER) & !READER_STARVING)
            };
            if free {
                match self
                    .state
                    .compare_exchange_weak(state, next, Acquire, Relaxed)
                {
                    Ok(_) => break,
                    Err(actual) => state = actual,
                }
                continue;
            }
            if !writer && state & READERS_MASK == READERS_MASK {
                panic!("too many readers of an RwLock");
            }
            // Spin a little while nobody of our kind is parked.
            if state & parked_bit == 0 && spin.spin() {
                state = self.state.load(Relaxed);
                continue;
            }
            let now = profile::now();
            let first = *first_park.get_or_insert_with(|| {
                // Capture the stack now, while waiting anyway (see RawMutex).
                block = profile::begin_block_wait(kind, Some(site), mark);
                wait_from = now;
                now
            });
            let starving = timed_out_once || charge::starving(first, now);
            let flags = parked_bit | if starving { starving_bit } else { 0 };
            if state & flags != flags {
                if let Err(actual) =
                    self.state
                        .compare_exchange_weak(state, state | flags, Relaxed, Relaxed)
                {
                    state = actual;
                    continue;
                }
            }
            let token = charge::park_token(wait_from, profile::mutex_profiling_on(), starving);
            // Park only while someone is bound to wake us: our parked bit is
            // set (every unlock that sees it wakes our queue) and the lock is
            // still unavailable to us.
            let validate = || {
                let s = self.state.load(Relaxed);
                s & parked_bit != 0 && if writer { !writable(s) } else { !readable(s) }
            };
            // A writer kept out by readers only (who never hand over to it
            // under a continuous flood) wakes at the fairness bound to raise
            // WS. Dropping out of the queue, the last writer clears WP (and
            // WS) under the queue lock, as an unlock that empties it would.
            let timeout = (writer && !starving && state & WRITER == 0)
                .then(|| Instant::now() + fair_duration());
            let timed_out = |_, was_last: bool| {
                if was_last {
                    self.state
                        .fetch_and(!(WRITER_PARKED | WRITER_STARVING), Relaxed);
                    self.writers_charged.clear();
                }
            };
            // SAFETY: the key is one of this lock's two addresses; the
            // closures neither panic, allocate nor call into the parking lot.
            let result = unsafe { shim::park(key, validate, || {}, timed_out, token, timeout) };
            match result {
                // We hold the lock: handed over (writers only).
                ParkResult::Unparked(TOKEN_HANDOFF) => break,
                // Woken to compete: a further charge starts where the
                // unlocker's stopped.
                ParkResult::Unparked(token) => {
                    if let Some(tick) = charge::woken_at(token, profile::now()) {
                        wait_from = tick;
                    }
                }
                ParkResult::TimedOut => timed_out_once = true,
                ParkResult::Invalid => {}
            }
            spin.reset();
            state = self.state.load(Relaxed);
        }
        // One event for the whole wait, however often this thread parked.
        if let Some(wait) = block {
            profile::end_block_wait(wait);
        }
    }

    /// Takes the lock without parking: for a thread inside
    /// `parking_lot_core`, which must not re-enter it. The holder is another
    /// thread (this one holds no syncprof lock inside `parking_lot_core`:
    /// every unlock releases before it wakes), and no hand-over is ever
    /// pending on a free lock, so the ordinary rules apply.
    #[cold]
    fn wait_spinning(&self, writer: bool) {
        loop {
            let state = self.state.load(Relaxed);
            let taken = if writer {
                // RS is ignored, as by `try_write`: the readers it protects
                // may be parked behind this very thread.
                state & (WRITER | READERS_MASK) == 0
                    && self
                        .state
                        .compare_exchange_weak(
                            state,
                            (state | WRITER) & !WRITER_STARVING,
                            Acquire,
                            Relaxed,
                        )
                        .is_ok()
            } else {
                // WS is ignored for the same reason.
                state & WRITER == 0
                    && state & READERS_MASK != READERS_MASK
                    && self
                        .state
                        .compare_exchange_weak(state, state + ONE_READER, Acquire, Relaxed)
                        .is_ok()
            };
            if taken {
                return;
            }
            shim::yield_now();
        }
    }

    /// Wakes a parked writer after the last read unlock, and charges the
    /// mutex profile on the caller's stack with the waits of the writers and
    /// of the readers still queued behind them.
    #[cold]
    #[inline(never)]
    pub(crate) fn read_unlock_slow(&self, site: LockSite) {
        if shim::must_defer_wake() {
            // Re-entered from inside `parking_lot_core`: the read lock is
            // released; a writer is woken (uncharged) when this thread
            // leaves it.
            shim::defer_wake(self.writer_key(), false);
            return;
        }
        let mark = 0u8;
        let mark = StackMark::of(black_box(&mark));
        let profiling = profile::mutex_profiling_on();
        let mut charge = self.wake_writer(profiling);
        if profiling && self.state.load(Relaxed) & READER_PARKED != 0 {
            charge.add(self.charge_queued_readers());
        }
        if charge.delay > 0 || charge.woken > 0 {
            profile::record_mutex(
                charge.delay,
                charge.woken,
                EventKind::RwLockRead,
                Some(site),
                mark,
            );
        }
    }

    /// Releases the write lock and wakes the waiters (every parked reader,
    /// one parked writer) to compete; charges the mutex profile on the
    /// caller's stack with the waits of those it wakes and of the writers
    /// still queued.
    ///
    /// # Safety
    ///
    /// The calling thread holds the write lock.
    #[cold]
    #[inline(never)]
    pub(crate) unsafe fn write_unlock_slow(&self, site: LockSite) {
        let state = self.state.fetch_and(!WRITER, Release);
        if shim::must_defer_wake() {
            // Re-entered from inside `parking_lot_core`: released; the
            // waiters are woken (uncharged) when this thread leaves it.
            if state & READER_PARKED != 0 {
                shim::defer_wake(self.reader_key(), true);
            }
            if state & WRITER_PARKED != 0 {
                shim::defer_wake(self.writer_key(), false);
            }
            return;
        }
        let mark = 0u8;
        let mark = StackMark::of(black_box(&mark));
        let profiling = profile::mutex_profiling_on();
        let mut charge = Charge::default();
        if state & READER_PARKED != 0 {
            charge.add(self.wake_readers(profiling));
        }
        if state & WRITER_PARKED != 0 {
            charge.add(self.wake_writer(profiling));
        }
        if charge.delay > 0 || charge.woken > 0 {
            profile::record_mutex(
                charge.delay,
                charge.woken,
                EventKind::RwLockWrite,
                Some(site),
                mark,
            );
        }
    }

    /// The fast path of a downgrade: the write lock becomes one read lock in
    /// one CAS when no reader is parked. On `false` the caller,
    /// `RwLockWriteGuard::downgrade`, calls [`Self::downgrade_slow`].
    ///
    /// # Safety
    ///
    /// The calling thread holds the write lock.
    #[inline(always)]
    pub(crate) unsafe fn downgrade_fast(&self) -> bool {
        let state = self.state.load(Relaxed);
        state & READER_PARKED == 0
            && self
                .state
                .compare_exchange(state, (state & !WRITER) + ONE_READER, Release, Relaxed)
                .is_ok()
    }

    /// Turns the write lock into a read lock and wakes the parked readers
    /// to join it; charges the mutex profile with their waits on the
    /// caller's stack.
    ///
    /// # Safety
    ///
    /// The calling thread holds the write lock.
    #[cold]
    #[inline(never)]
    pub(crate) unsafe fn downgrade_slow(&self, site: LockSite) {
        let state = self
            .state
            .fetch_add(ONE_READER.wrapping_sub(WRITER), Release);
        if state & READER_PARKED == 0 {
            return;
        }
        if shim::must_defer_wake() {
            shim::defer_wake(self.reader_key(), true);
            return;
        }
        let mark = 0u8;
        let mark = StackMark::of(black_box(&mark));
        let charge = self.wake_readers(profile::mutex_profiling_on());
        if charge.delay > 0 || charge.woken > 0 {
            profile::record_mutex(
                charge.delay,
                charge.woken,
                EventKind::RwLockWrite,
                Some(site),
                mark,
            );
        }
    }

    /// Wakes the head writer to compete (or hands it the lock, if it is
    /// starving and the lock is free), charging its wait and the queued
    /// writers' by the N-waiter rule. Clears WP and WS when the queue empties.
    fn wake_writer(&self, profiling: bool) -> Charge {
        let scan = RefCell::new(QueueScan::default());
        let mut charge = Charge::default();
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
                    charge = Charge {
                        delay: scan.charge(self.writers_charged.get(now), now),
                        woken: u64::from(charge::is_profiled(head)),
                    };
                    self.writers_charged.set(now);
                }
                // A starving writer gets the lock if nobody holds it: taken
                // here, on its behalf, only when free (never promised).
                if charge::should_hand_off(head, now) {
                    let more = result.have_more_threads;
                    let taken = self.state.fetch_update(Acquire, Relaxed, |s| {
                        writable(s).then(|| {
                            let s = (s | WRITER) & !WRITER_STARVING;
                            if more { s } else { s & !WRITER_PARKED }
                        })
                    });
                    if taken.is_ok() {
                        token = TOKEN_HANDOFF;
                    }
                }
            }
            if !result.have_more_threads {
                self.writers_charged.clear();
                if token != TOKEN_HANDOFF {
                    self.state
                        .fetch_and(!(WRITER_PARKED | WRITER_STARVING), Relaxed);
                }
            }
            token
        };
        // SAFETY: the key is this lock's writer queue; the closures neither
        // panic, allocate nor call into the parking lot.
        unsafe { shim::unpark_filter(self.writer_key(), filter, callback) };
        charge
    }

    /// Wakes every parked reader to compete, charging each one's wait
    /// exactly (from the reader queue's last charge). Clears RP.
    fn wake_readers(&self, profiling: bool) -> Charge {
        let now = Cell::new(0u64);
        let since = Cell::new(None);
        let mut charge = Charge::default();
        let filter = |token| {
            if now.get() == 0 {
                let tick = profile::now();
                now.set(tick);
                since.set(self.readers_charged.get(tick));
            }
            if profiling || charge::is_profiled(token) {
                charge.add(Charge {
                    delay: charge::uncharged_wait(token, since.get(), now.get()),
                    woken: u64::from(charge::is_profiled(token)),
                });
            }
            FilterOp::Unpark
        };
        let callback = |_: UnparkResult| {
            // Every reader is woken: the queue is empty.
            self.state
                .fetch_and(!(READER_PARKED | READER_STARVING), Relaxed);
            self.readers_charged.clear();
            if now.get() == 0 {
                TOKEN_NORMAL
            } else {
                charge::wake_token(now.get())
            }
        };
        // SAFETY: the key is this lock's reader queue; the closures neither
        // panic, allocate nor call into the parking lot.
        unsafe { shim::unpark_filter(self.reader_key(), filter, callback) };
        charge
    }

    /// Charges the waits of the readers that stay parked (behind a starving
    /// writer) up to now, exactly, without waking them; later charges start
    /// there. Counts no contention (none is woken).
    fn charge_queued_readers(&self) -> Charge {
        let now = Cell::new(0u64);
        let since = Cell::new(None);
        let mut delay = 0u64;
        let filter = |token| {
            if now.get() == 0 {
                let tick = profile::now();
                now.set(tick);
                since.set(self.readers_charged.get(tick));
            }
            delay = delay.saturating_add(charge::uncharged_wait(token, since.get(), now.get()));
            FilterOp::Skip
        };
        let callback = |result: UnparkResult| {
            if result.have_more_threads {
                self.readers_charged.set(now.get());
            }
            TOKEN_NORMAL
        };
        // SAFETY: the key is this lock's reader queue; nobody is woken; the
        // closures neither panic, allocate nor call into the parking lot.
        unsafe { shim::unpark_filter(self.reader_key(), filter, callback) };
        Charge { delay, woken: 0 }
    }
}

/// The fairness bound as a [`Duration`], for a writer's park timeout.
fn fair_duration() -> Duration {
    Duration::from_nanos(
        profile::ticks_per_second_if_known().map_or(500_000, |rate| {
            (charge::fair_ticks() as f64 * 1e9 / rate) as u64
        }),
    )
}
